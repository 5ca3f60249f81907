// The drawing of the chart's parts on the canvas, for viewer.js: the ruler, a section's
// header and utilisation strip, a lane (its events one by one where few enough are in view,
// else its coverage) and the flags on the events. Where it draws and what is in view are
// viewer.js's (env).
'use strict';
const viewerDraw = function (data, env) {
  const { inView, addSpan, upper, fmtDuration } = viewerData;
  const G = data.geometry, P = data.palette, A = data.annotations, labels = data.labels;
  const { ctx, X, plotL, plotR, pxPerNs, rel, view, RULER_H, LABEL_W } = env;
  const WAIT_Y = 1, WAIT_H = 5, EXEC_Y = 7, EXEC_H = 14;
  // Where more than two events would share a pixel column, a lane is drawn as coverage (which
  // then says more, and costs a rectangle per run of columns, not per event).
  const EVENTS_PER_COLUMN = 2;
  const MEMORY_COLOUR = '#8c6bb1';
  function alphaColour(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a + ')';
  }
  // Busy share per pixel column of [view.a, view.b) from a pyramid: the coarsest level whose
  // buckets are at most a pixel wide (or the finest, zoomed in past it).
  function columnsFromPyramid(levels, cols) {
    const ppn = pxPerNs();
    let lv = levels[0];
    for (const l of levels) if (l.w * ppn <= 1) lv = l;
    const out = new Float32Array(cols);
    const b0 = Math.max(0, Math.floor(view.a / lv.w)), b1 = Math.min(lv.n, Math.ceil(view.b / lv.w));
    for (let b = b0; b < b1; b++) {
      const v = lv.v[b];
      if (!v) continue;
      addSpan(out, (b * lv.w - view.a) * ppn, ((b + 1) * lv.w - view.a) * ppn, v / 255);
    }
    return out;
  }
  // Columns as runs of four alpha levels, as the PNG chart draws coverage.
  function drawColumns(cols, y, h, colour, fromBottom, scale) {
    const x0 = plotL();
    let c = 0;
    const n = cols.length;
    while (c < n) {
      const v = Math.min(1, cols[c]);
      const level = v <= 0 ? 0 : Math.ceil(v * 4);
      let e = c + 1;
      while (e < n && (cols[e] <= 0 ? 0 : Math.ceil(Math.min(1, cols[e]) * 4)) === level) e++;
      if (level) {
        if (scale) {
          const hh = h * level / 4;
          ctx.fillStyle = colour;
          ctx.fillRect(x0 + c, fromBottom ? y + h - hh : y, e - c, hh);
        } else {
          ctx.fillStyle = alphaColour(colour, (60 + 180 * level / 4) / 255);
          ctx.fillRect(x0 + c, y, e - c, h);
        }
      }
      c = e;
    }
  }

  function drawRuler() {
    const W = env.W(), H = env.H();
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, W, RULER_H);
    const span = view.b - view.a;
    const target = Math.max(2, Math.floor((plotR() - plotL()) / 110));
    const raw = span / target;
    const p10 = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((k) => k * p10).find((s) => s >= raw);
    const first = Math.ceil((view.a - data.origin_ns) / step) * step + data.origin_ns;
    ctx.font = '11px "DejaVu Sans", sans-serif';
    ctx.textAlign = 'center';
    ctx.fillStyle = P.text;
    ctx.strokeStyle = P.grid;
    for (let t = first; t <= view.b; t += step) {
      const x = Math.round(X(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, RULER_H - 6);
      ctx.lineTo(x, H);
      ctx.stroke();
      ctx.fillText(rel(t, step), x, RULER_H - 9);
    }
    ctx.strokeStyle = '#999';
    ctx.beginPath();
    ctx.moveTo(plotL(), RULER_H - 0.5);
    ctx.lineTo(plotR(), RULER_H - 0.5);
    ctx.stroke();
    ctx.textAlign = 'left';
    ctx.fillStyle = P.muted;
    ctx.fillText('from ' + data.origin_name, 8, RULER_H - 9);
  }

  function drawSection(s, oy) {
    ctx.font = 'bold 12px "DejaVu Sans", sans-serif';
    ctx.fillStyle = P.text;
    ctx.textAlign = 'left';
    ctx.fillText(s.label, 12, s.y + oy + 13);
    if (s.memory) drawMemory(s.memory, s.memY + oy);
    if (!s.compute) return;
    const y = s.stripY + oy;
    ctx.fillStyle = P.band;
    ctx.fillRect(plotL(), y, plotR() - plotL(), G.util);
    const cols = Math.max(1, Math.floor(plotR() - plotL()));
    drawColumns(columnsFromPyramid(s.compute, cols), y, G.util, P.compute, true, true);
    drawColumns(columnsFromPyramid(s.copy, cols), y, G.util / 2, P.copy, false, true);
    for (const i of s.gaps) {
      const x0 = Math.max(plotL(), X(A.start[i])), x1 = Math.min(plotR(), X(A.end[i]));
      if (x1 <= plotL() || x0 >= plotR()) continue;
      ctx.fillStyle = alphaColour(P.idle, 50 / 255);
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), G.util);
    }
    ctx.font = '10px "DejaVu Sans", sans-serif';
    ctx.fillStyle = P.muted;
    ctx.textAlign = 'right';
    ctx.fillText(s.busyLabel, plotL() - 8, y + 15);
  }

  // Memory in use under the utilisation strip, scaled to the device's peak as the PNG chart's:
  // per pixel column the most in use during it, so a short peak is not lost between columns.
  function drawMemory(m, y) {
    const L = plotL(), cols = Math.max(1, Math.floor(plotR() - L));
    ctx.fillStyle = P.band;
    ctx.fillRect(L, y, cols, G.util);
    const col = new Float64Array(cols).fill(-1);
    const ppn = pxPerNs();
    for (let i = Math.max(0, upper(m.t, view.a, 0, m.n) - 1); i < m.n && m.t[i] < view.b; i++) {
      const c0 = Math.max(0, Math.floor((m.t[i] - view.a) * ppn));
      const c1 = Math.min(cols - 1, i + 1 < m.n ? Math.floor((m.t[i + 1] - view.a) * ppn) : cols - 1);
      for (let c = c0; c <= c1; c++) if (m.bytes[i] > col[c]) col[c] = m.bytes[i];
    }
    ctx.fillStyle = MEMORY_COLOUR;
    for (let c = 0; c < cols; c++) {
      if (col[c] <= 0 || !m.peak) continue;
      const h = Math.max(1, G.util * col[c] / m.peak);
      ctx.fillRect(L + c, y + G.util - h, 1, h);
    }
    ctx.font = '10px "DejaVu Sans", sans-serif';
    ctx.fillStyle = P.muted;
    ctx.textAlign = 'right';
    ctx.fillText(m.label, L - 8, y + 15);
  }

  function fitText(text, width) {
    const max = Math.floor(width / 5.6);
    if (max <= 1) return '';
    return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
  }

  function drawLane(l, oy, budget) {
    const search = env.search(), marks = env.marks();
    const y = l.y + oy;
    ctx.fillStyle = P.band;
    ctx.fillRect(plotL(), y, plotR() - plotL(), l.h - 2);
    ctx.font = '11px "DejaVu Sans", sans-serif';
    ctx.fillStyle = P.text;
    ctx.textAlign = 'right';
    ctx.fillText(fitText(l.label, LABEL_W - 20), plotL() - 8, y + 15);
    const cols = Math.max(1, Math.floor(plotR() - plotL()));
    let i0 = 0, i1 = 0;
    if (l.ev) [i0, i1] = inView(l.ev, view.a, view.b);
    const finest = l.lod[0];
    if (l.ev && i1 - i0 <= budget && i1 - i0 <= EVENTS_PER_COLUMN * cols) {
      // A scanned page's folded events in view: their coverage under the events written one by
      // one, and how many there are at the lane's right end (the tooltip says where).
      const folded = l.fold ? env.foldedIn(l, view.a, view.b) : 0;
      if (folded) drawColumns(columnsFromPyramid(l.fold.lod, cols), y + EXEC_Y, EXEC_H, P.compute, false, false);
      drawEvents(l, y, i0, i1);
      if (folded) {
        const text = '+' + folded.toLocaleString('en-US') + ' folded';
        ctx.font = '9px "DejaVu Sans", sans-serif';
        const w = ctx.measureText(text).width + 6;
        ctx.fillStyle = 'rgba(255,255,255,0.85)';
        ctx.fillRect(plotR() - w, y + 1, w, 11);
        ctx.fillStyle = P.muted;
        ctx.textAlign = 'right';
        ctx.fillText(text, plotR() - 3, y + 10);
      }
      l.mode = 'events';
      env.stats.individual += i1 - i0;
      return i1 - i0;
    }
    env.stats.aggregatedLanes++;
    let c;
    if (!l.ev || finest.w * pxPerNs() <= 1.5) {
      c = columnsFromPyramid(l.lod, cols);
      l.mode = 'pyramid';
    } else {
      // Zoomed in past the finest level but still too many events: their coverage, per column.
      c = new Float32Array(cols);
      const ev = l.ev, ppn = pxPerNs();
      for (let i = i0; i < i1; i++) addSpan(c, (ev.start[i] - view.a) * ppn, (ev.end[i] - view.a) * ppn, 1);
      if (l.fold) {
        const f = columnsFromPyramid(l.fold.lod, cols);
        for (let k = 0; k < cols; k++) c[k] += f[k];
      }
      l.mode = 'coverage';
    }
    drawColumns(c, y + EXEC_Y, EXEC_H, P.compute, false, false);
    if (marks) drawMatchTicks(l, y, cols);
    return 0;
  }

  // With a search or a range on, coverage cannot show which events match: a tick per column
  // that has one.
  function drawMatchTicks(l, y, cols) {
    const search = env.search(), marks = env.marks();
    const starts = marks[l.index];
    if (!starts || !starts.length) return;
    const ppn = pxPerNs();
    const lo = upper(starts, view.a - 1e-9, 0, starts.length), hi = upper(starts, view.b, 0, starts.length);
    ctx.fillStyle = search ? '#ff00aa' : '#0050d0';
    let last = -1;
    for (let i = lo; i < hi && i - lo < 200000; i++) {
      const c = Math.floor((starts[i] - view.a) * ppn);
      if (c === last || c < 0 || c >= cols) continue;
      last = c;
      ctx.fillRect(plotL() + c, y + EXEC_Y - 2, 1, EXEC_H + 4);
    }
  }

  // In passes, one colour each where it can be: setting fillStyle parses a colour, and with
  // thousands of events in view that cost more than the rectangles.
  function drawEvents(l, y, i0, i1) {
    const search = env.search(), host = env.host;
    const ev = l.ev;
    const L = plotL(), R = plotR();
    const clip = (x) => Math.max(L, Math.min(R, x));
    ctx.fillStyle = P.launch_to_queued;
    for (let i = i0; i < i1; i++) {
      const a = clip(X(ev.launch[i])), b = clip(X(ev.queued[i]));
      if (b - a >= 0.5) ctx.fillRect(a, y + ev.row[i] * G.row + WAIT_Y, b - a, WAIT_H);  // NaN (unknown) fails the test
    }
    ctx.fillStyle = P.queued_to_start;
    for (let i = i0; i < i1; i++) {
      const a = clip(X(ev.queued[i])), b = clip(X(ev.start[i]));
      if (b - a >= 0.5) ctx.fillRect(a, y + ev.row[i] * G.row + WAIT_Y, b - a, WAIT_H);
    }
    // Picked out: what the search matches and what the selected range launched (both, with both on).
    const lit = host.lit;
    const dim = search !== null || lit !== null;
    const picked = (i) => (!search || search.labels[ev.label[i]]) && (!lit || (ev.range && lit[ev.range[i]]));
    let colour = '';
    for (let i = i0; i < i1; i++) {
      const lab = ev.label[i];
      if (dim && !picked(i)) continue;
      if (labels[lab][2] !== colour) { colour = labels[lab][2]; ctx.fillStyle = colour; }
      const x0 = clip(X(ev.start[i]));
      ctx.fillRect(x0, y + ev.row[i] * G.row + EXEC_Y, Math.max(1, clip(X(ev.end[i])) - x0), EXEC_H);
    }
    if (dim) {
      // What the search does not match, faded; what it does, outlined.
      ctx.globalAlpha = 0.25;
      colour = '';
      for (let i = i0; i < i1; i++) {
        const lab = ev.label[i];
        if (picked(i)) continue;
        if (labels[lab][2] !== colour) { colour = labels[lab][2]; ctx.fillStyle = colour; }
        const x0 = clip(X(ev.start[i]));
        ctx.fillRect(x0, y + ev.row[i] * G.row + EXEC_Y, Math.max(1, clip(X(ev.end[i])) - x0), EXEC_H);
      }
      ctx.globalAlpha = 1;
      ctx.strokeStyle = search ? '#ff00aa' : '#0050d0';
      ctx.lineWidth = 2;
      for (let i = i0; i < i1; i++) {
        if (!picked(i)) continue;
        const x0 = clip(X(ev.start[i]));
        ctx.strokeRect(x0 - 1, y + ev.row[i] * G.row + EXEC_Y - 1, Math.max(1, clip(X(ev.end[i])) - x0) + 2, EXEC_H + 2);
      }
      ctx.lineWidth = 1;
    }
    ctx.font = '9px "DejaVu Sans", sans-serif';
    ctx.fillStyle = '#ffffff';
    ctx.textAlign = 'left';
    for (let i = i0; i < i1; i++) {
      const x0 = clip(X(ev.start[i])), x1 = clip(X(ev.end[i]));
      if (x1 - x0 > 40) ctx.fillText(fitText(labels[ev.label[i]][0], x1 - x0 - 6), x0 + 3, y + ev.row[i] * G.row + 18);
    }
    drawAnnotations(l, y, i0, i1);
  }

  // The flags of build_scene on the events in view: queue delay (red dashed, queued -> start),
  // low occupancy (yellow square), copy overlapped (green line) or not (orange dashed).
  function drawAnnotations(l, y, i0, i1) {
    const ann = l.ann;
    if (!ann.length) return;
    let k = 0, hi = ann.length;
    while (k < hi) { const m = (k + hi) >> 1; if (A.index[ann[m]] < i0) k = m + 1; else hi = m; }
    const ev = l.ev;
    for (; k < ann.length && A.index[ann[k]] < i1; k++) {
      const a = ann[k], i = A.index[a];
      const ry = y + ev.row[i] * G.row;
      const x0 = Math.max(plotL(), X(ev.start[i])), x1 = Math.min(plotR(), X(ev.end[i]));
      switch (A.kind[a]) {
        case 0: {
          const q = Math.max(plotL(), X(ev.queued[i]));
          ctx.setLineDash([3, 2]);
          ctx.strokeStyle = P.queue_delay;
          ctx.lineWidth = 1.5;
          ctx.strokeRect(q, ry, Math.max(1, x0 - q), 7);
          ctx.setLineDash([]);
          ctx.lineWidth = 1;
          ctx.fillStyle = P.queue_delay;
          ctx.fillRect(q - 1, ry - 3, 3, 10);
          break;
        }
        case 1:
          ctx.fillStyle = P.low_occupancy;
          ctx.fillRect(x0 + 1, ry + 8, 6, 6);
          break;
        case 2:
          ctx.fillStyle = P.overlap;
          ctx.fillRect(x0, ry + 20, Math.max(1, x1 - x0), 2.5);
          break;
        case 3:
          ctx.setLineDash([3, 2]);
          ctx.strokeStyle = P.missed_overlap;
          ctx.lineWidth = 1.5;
          ctx.strokeRect(x0, ry + 6, Math.max(1, x1 - x0), 16);
          ctx.setLineDash([]);
          ctx.lineWidth = 1;
          break;
      }
    }
  }

  return { WAIT_Y, WAIT_H, EXEC_Y, EXEC_H, fitText, alphaColour, drawRuler, drawSection, drawLane };
};
