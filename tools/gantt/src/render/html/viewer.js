// The Gantt chart of `gantt-cli render -o x.html`, drawn on a canvas from the data block the CLI
// wrote (tools/gantt/src/render/html_data.cpp says what each field holds).
//
// Cost follows the picture, not the event count: zoomed out, each lane is drawn from its
// level-of-detail pyramid (busy share per time bucket, the level whose buckets are about a
// pixel wide); zoomed in, only the events in view, found by binary search on the lanes' start
// order (and a running maximum of their ends, so long events are not missed). The first frame
// is drawn from the pyramids alone; the events are decoded lane by lane after it. The formats
// and searches are viewer_data.js's, which comes first in the page's script.
// Names are shown with textContent and fillText only: nothing from the capture becomes markup.
'use strict';
(function () {
  const { pyramid, decodeEvents, upper, inView, addSpan, fmtDuration, fmtTime } = viewerData;
  const data = JSON.parse(document.getElementById('gpuhook-data').textContent);
  const G = data.geometry;
  const P = data.palette;
  const LABEL_W = G.label_width, RIGHT_MARGIN = 24, RULER_H = 26;
  const SECTION_TITLE_H = 18, SECTION_GAP = 6, STRIP_GAP = 4;
  const WAIT_Y = 1, WAIT_H = 5, EXEC_Y = 7, EXEC_H = 14;
  // Events drawn one by one per frame, all lanes together; past it, or where more than two
  // would share a pixel column, a lane is drawn as coverage (which then says more, and costs
  // a rectangle per run of columns, not per event).
  const INDIVIDUAL_BUDGET = 8000, EVENTS_PER_COLUMN = 2;

  const canvas = document.getElementById('canvas');
  const ctx = canvas.getContext('2d', { alpha: false });
  const chart = document.getElementById('chart');
  const tip = document.getElementById('tip');
  const searchBox = document.getElementById('search');
  document.title = data.title;
  document.getElementById('title').textContent = data.title;
  const footer = document.getElementById('footer');
  for (const line of data.footer) {
    const div = document.createElement('div');
    div.textContent = line;
    footer.appendChild(div);
  }

  // ---- data ---------------------------------------------------------------------------------
  const labels = data.labels;  // [display name, kind, colour]
  const calls = data.calls;
  const lanes = data.lanes.map((l, i) => ({
    index: i, label: l.label, section: l.section, n: l.n, rows: l.rows, packed: l.events,
    lod: pyramid(l.lod, l.lod_buckets, data.span_ns / l.lod_buckets), ev: null, y: 0, h: 0,
    ann: [],  // annotation indices on this lane's events, by event index
  }));
  const sections = data.sections.map((s) => ({
    label: s.label, lanes: s.lanes, busyLabel: s.busy_label || '',
    compute: s.compute ? pyramid(s.compute, data.util_buckets, data.util_bucket_ns) : null,
    copy: s.copy ? pyramid(s.copy, data.util_buckets, data.util_bucket_ns) : null,
    y: 0, stripY: 0, gaps: [],
  }));
  const A = data.annotations;
  for (let i = 0; i < A.kind.length; i++) {
    if (A.lane[i] >= 0) lanes[A.lane[i]].ann.push(i);
    else if (A.section[i] >= 0) sections[A.section[i]].gaps.push(i);
  }
  for (const l of lanes) l.ann.sort((a, b) => A.index[a] - A.index[b]);
  const totalEvents = lanes.reduce((s, l) => s + l.n, 0);

  // ---- layout -------------------------------------------------------------------------------
  let contentH = 0;
  function layout() {
    let y = RULER_H + 4;
    for (const s of sections) {
      s.y = y;
      y += SECTION_TITLE_H;
      if (s.compute) { s.stripY = y; y += G.util + STRIP_GAP; }
      for (const li of s.lanes) {
        const l = lanes[li];
        l.y = y;
        l.h = G.lane + (l.rows - 1) * G.row;
        y += l.h;
      }
      y += SECTION_GAP;
    }
    contentH = y + 8;
  }
  layout();

  // ---- view state ---------------------------------------------------------------------------
  const view = { a: 0, b: data.span_ns, scroll: 0 };
  let W = 0, H = 0, dpr = 1;
  let search = null;          // { re, labels: Uint8Array, count, starts: per lane Float64Array of matches }
  let selected = null;        // { lane, index }
  let hover = null;
  const stats = { frames: 0, frameMs: [], individual: 0, aggregatedLanes: 0, firstPaintMs: null, readyMs: null, decoded: 0 };
  const plotL = () => LABEL_W, plotR = () => W - RIGHT_MARGIN;
  const pxPerNs = () => (plotR() - plotL()) / (view.b - view.a);
  const X = (t) => plotL() + (t - view.a) * pxPerNs();
  const T = (x) => view.a + (x - plotL()) / pxPerNs();

  const rel = (t, resolution = 1) => fmtTime(t - data.origin_ns, resolution);
  function decodeLane(l) {
    l.ev = decodeEvents(l.packed, l.n);
    l.packed = null;
  }

  function resize() {
    dpr = window.devicePixelRatio || 1;
    W = chart.clientWidth;
    H = chart.clientHeight;
    canvas.width = Math.round(W * dpr);
    canvas.height = Math.round(H * dpr);
    canvas.style.width = W + 'px';
    canvas.style.height = H + 'px';
    clampScroll();
    requestDraw();
  }
  function clampScroll() { view.scroll = Math.max(0, Math.min(view.scroll, Math.max(0, contentH - H))); }
  function setView(a, b) {
    const minSpan = 100;  // ns: below this, nothing more to see
    if (b - a < minSpan) { const m = (a + b) / 2; a = m - minSpan / 2; b = m + minSpan / 2; }
    const span = Math.min(b - a, data.span_ns * 1.2);
    a = Math.max(-data.span_ns * 0.1, Math.min(a, data.span_ns * 1.1 - span));
    view.a = a;
    view.b = a + span;
    requestDraw();
  }

  // ---- drawing ------------------------------------------------------------------------------
  let pending = false;
  function requestDraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }
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

  function fitText(text, width) {
    const max = Math.floor(width / 5.6);
    if (max <= 1) return '';
    return text.length > max ? text.slice(0, max - 1) + '\u2026' : text;
  }

  function drawLane(l, oy, budget) {
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
      drawEvents(l, y, i0, i1);
      l.mode = 'events';
      stats.individual += i1 - i0;
      return i1 - i0;
    }
    stats.aggregatedLanes++;
    let c;
    if (!l.ev || finest.w * pxPerNs() <= 1.5) {
      c = columnsFromPyramid(l.lod, cols);
      l.mode = 'pyramid';
    } else {
      // Zoomed in past the finest level but still too many events: their coverage, per column.
      c = new Float32Array(cols);
      const ev = l.ev, ppn = pxPerNs();
      for (let i = i0; i < i1; i++) addSpan(c, (ev.start[i] - view.a) * ppn, (ev.end[i] - view.a) * ppn, 1);
      l.mode = 'coverage';
    }
    drawColumns(c, y + EXEC_Y, EXEC_H, P.compute, false, false);
    if (search) drawMatchTicks(l, y, cols);
    return 0;
  }

  // With a search on, coverage cannot show which events match: a tick per column that has one.
  function drawMatchTicks(l, y, cols) {
    const starts = search.starts[l.index];
    if (!starts || !starts.length) return;
    const ppn = pxPerNs();
    const lo = upper(starts, view.a - 1e-9, 0, starts.length), hi = upper(starts, view.b, 0, starts.length);
    ctx.fillStyle = '#ff00aa';
    let last = -1;
    for (let i = lo; i < hi && i - lo < 200000; i++) {
      const c = Math.floor((starts[i] - view.a) * ppn);
      if (c === last || c < 0 || c >= cols) continue;
      last = c;
      ctx.fillRect(plotL() + c, y + EXEC_Y - 2, 1, EXEC_H + 4);
    }
  }

  function eventBox(l, i, oy) {
    const ev = l.ev;
    const x0 = Math.max(plotL() - 1, X(ev.start[i])), x1 = Math.min(plotR() + 1, X(ev.end[i]));
    return { x: x0, y: l.y + oy + ev.row[i] * G.row, w: Math.max(1, x1 - x0) };
  }

  // In passes, one colour each where it can be: setting fillStyle parses a colour, and with
  // thousands of events in view that cost more than the rectangles.
  function drawEvents(l, y, i0, i1) {
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
    const dim = search !== null;
    let colour = '';
    for (let i = i0; i < i1; i++) {
      const lab = ev.label[i];
      if (dim && !search.labels[lab]) continue;
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
        if (search.labels[lab]) continue;
        if (labels[lab][2] !== colour) { colour = labels[lab][2]; ctx.fillStyle = colour; }
        const x0 = clip(X(ev.start[i]));
        ctx.fillRect(x0, y + ev.row[i] * G.row + EXEC_Y, Math.max(1, clip(X(ev.end[i])) - x0), EXEC_H);
      }
      ctx.globalAlpha = 1;
      ctx.strokeStyle = '#ff00aa';
      ctx.lineWidth = 2;
      for (let i = i0; i < i1; i++) {
        if (!search.labels[ev.label[i]]) continue;
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

  function draw() {
    const t0 = performance.now();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, W, H);
    stats.individual = 0;
    stats.aggregatedLanes = 0;
    const oy = -view.scroll;
    if (!lanes.length) {
      ctx.fillStyle = P.muted;
      ctx.font = '16px "DejaVu Sans", sans-serif';
      ctx.textAlign = 'center';
      ctx.fillText(data.events_in_capture ? 'no events match the window and filters' : 'no GPU activity in this capture',
                   W / 2, 80);
    }
    // Visible lanes share the budget of events drawn one by one.
    const visible = lanes.filter((l) => l.y + oy + l.h > RULER_H && l.y + oy < H);
    let budget = INDIVIDUAL_BUDGET;
    for (const s of sections) if (s.y + oy < H && s.y + oy + SECTION_TITLE_H + G.util > RULER_H) drawSection(s, oy);
    visible.forEach((l, k) => {
      budget -= drawLane(l, oy, Math.max(200, Math.floor(budget / (visible.length - k))));
    });
    for (const l of lanes) if (!visible.includes(l)) l.mode = 'hidden';
    if (selected && lanes[selected.lane].ev) {
      const b = eventBox(lanes[selected.lane], selected.index, oy);
      ctx.strokeStyle = '#000000';
      ctx.lineWidth = 2;
      ctx.strokeRect(b.x - 1.5, b.y + EXEC_Y - 1.5, b.w + 3, EXEC_H + 3);
      ctx.lineWidth = 1;
    }
    drawMeasure();
    // Lane labels and the ruler stay put over the content.
    drawRuler();
    stats.frames++;
    const ms = performance.now() - t0;
    stats.frameMs.push(ms);
    if (stats.frameMs.length > 500) stats.frameMs.shift();
    // From navigation start (performance's time origin), as a person waits for it.
    if (stats.firstPaintMs === null) stats.firstPaintMs = performance.now();
    const res = Math.pow(10, Math.floor(Math.log10(Math.max(1, (view.b - view.a) / 1000))));
    document.getElementById('range').textContent =
      rel(view.a, res) + ' \u2026 ' + rel(view.b, res) + ' (' + fmtDuration(view.b - view.a) + ')';
  }

  // ---- interaction ----------------------------------------------------------------------------
  function laneAt(y) {
    const cy = y + view.scroll;
    for (const l of lanes) if (cy >= l.y && cy < l.y + l.h) return l;
    return null;
  }
  // The event under (x, y) in canvas pixels, on a lane drawn event by event: [lane, index].
  function eventAt(x, y) {
    const l = laneAt(y);
    if (!l || !l.ev || l.mode !== 'events' || x < plotL() || x > plotR()) return null;
    const row = Math.max(0, Math.min(l.rows - 1, Math.floor((y + view.scroll - l.y - EXEC_Y + G.row) / G.row) - 1));
    const tol = 2 / pxPerNs();
    const t = T(x);
    const ev = l.ev;
    const [i0, i1] = inView(l.ev, t - tol, t + tol);
    let best = null, bestD = Infinity;
    for (let i = i0; i < i1; i++) {
      if (ev.row[i] !== row) continue;
      const d = t < ev.start[i] ? ev.start[i] - t : t > ev.end[i] ? t - ev.end[i] : 0;
      if (d <= tol && d < bestD) { best = i; bestD = d; }
    }
    return best === null ? null : [l.index, best];
  }
  function describe(li, i) {
    const l = lanes[li], ev = l.ev;
    const lab = labels[ev.label[i]];
    const lines = [lab[0], lab[1] + ' \u00b7 ' + l.label + ' \u00b7 ' + sections[l.section].label];
    lines.push('launch ' + rel(ev.launch[i]) + ', queued ' + rel(ev.queued[i]) + ', submitted ' + rel(ev.submitted[i]) +
               ', start ' + rel(ev.start[i]) + ', end ' + rel(ev.end[i]));
    const d = (a, b) => (Number.isNaN(a) || Number.isNaN(b) ? '?' : fmtDuration(b - a));
    lines.push('launch\u2192queued ' + d(ev.launch[i], ev.queued[i]) + ', queued\u2192submitted ' +
               d(ev.queued[i], ev.submitted[i]) + ', submitted\u2192start ' + d(ev.submitted[i], ev.start[i]) +
               ', exec ' + d(ev.start[i], ev.end[i]));
    lines.push(ev.call[i] ? 'host call: ' + calls[ev.call[i]] + ', ' + fmtDuration(ev.callNs[i]) : 'host call: unknown');
    for (const a of l.ann) if (A.index[a] === i) lines.push('\u25b2 ' + A.label[a]);
    return lines.join('\n');
  }
  function gapAt(x, y) {
    const cy = y + view.scroll;
    for (const s of sections) {
      if (!s.compute || cy < s.stripY || cy >= s.stripY + G.util) continue;
      const t = T(x);
      for (const i of s.gaps) if (t >= A.start[i] && t <= A.end[i]) return A.label[i];
      return s.busyLabel;
    }
    return null;
  }
  function showTip(text, x, y) {
    if (!text) { tip.hidden = true; tip.textContent = ''; return; }
    tip.textContent = text;
    tip.hidden = false;
    const w = tip.offsetWidth, h = tip.offsetHeight;
    tip.style.left = Math.min(x + 14, Math.max(0, W - w - 4)) + 'px';
    tip.style.top = (y + 16 + h > H ? Math.max(0, y - h - 8) : y + 16) + 'px';
  }
  function pointerTip(x, y) {
    const hit = eventAt(x, y);
    hover = hit;
    if (hit) return showTip(describe(hit[0], hit[1]), x, y);
    const l = laneAt(y);
    if (l && l.mode !== 'events' && x >= plotL() && x <= plotR())
      return showTip(l.label + ': ' + l.n + ' events, drawn as coverage here (busy share per pixel); zoom in to see them one by one', x, y);
    showTip(gapAt(x, y), x, y);
  }

  let drag = null;
  // Shift+drag measures a span: its length, and how many events start in it.
  let measure = null;  // { a, b } in ns
  function setMeasure(a, b) {
    measure = { a: Math.min(a, b), b: Math.max(a, b) };
    let n = 0;
    for (const l of lanes) if (l.ev) n += upper(l.ev.start, measure.b, 0, l.n) - upper(l.ev.start, measure.a - 1e-9, 0, l.n);
    measure.events = n;
    document.getElementById('selection').textContent = 'span ' + fmtDuration(measure.b - measure.a) + ', ' + rel(measure.a) +
      ' \u2026 ' + rel(measure.b) + ': ' + n + ' events start in it (Escape clears)';
    requestDraw();
  }
  function drawMeasure() {
    if (!measure) return;
    const x0 = Math.max(plotL(), X(measure.a)), x1 = Math.min(plotR(), X(measure.b));
    if (x1 < plotL() || x0 > plotR()) return;
    ctx.fillStyle = 'rgba(40, 40, 40, 0.10)';
    ctx.fillRect(x0, RULER_H, Math.max(1, x1 - x0), H - RULER_H);
    ctx.fillStyle = P.text;
    ctx.textAlign = 'center';
    ctx.font = 'bold 11px "DejaVu Sans", sans-serif';
    ctx.fillText(fmtDuration(measure.b - measure.a), (x0 + x1) / 2, RULER_H + 12);
  }

  canvas.addEventListener('pointerdown', (e) => {
    drag = { x: e.offsetX, y: e.offsetY, a: view.a, b: view.b, scroll: view.scroll, moved: false, measure: e.shiftKey };
    canvas.setPointerCapture(e.pointerId);
    canvas.classList.add('dragging');
  });
  canvas.addEventListener('pointermove', (e) => {
    if (drag) {
      const dx = e.offsetX - drag.x, dy = e.offsetY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved && drag.measure) {
        setMeasure(T(drag.x), T(e.offsetX));
        return;
      }
      if (drag.moved) {
        const dt = dx / pxPerNs();
        view.scroll = drag.scroll - dy;
        clampScroll();
        setView(drag.a - dt, drag.b - dt);
        showTip(null);
        return;
      }
    }
    pointerTip(e.offsetX, e.offsetY);
  });
  canvas.addEventListener('pointerup', (e) => {
    canvas.classList.remove('dragging');
    const d = drag;
    drag = null;
    if (d && !d.moved) select(eventAt(e.offsetX, e.offsetY));
  });
  canvas.addEventListener('pointerleave', () => { if (!drag) showTip(null); });
  canvas.addEventListener('dblclick', (e) => {
    const hit = eventAt(e.offsetX, e.offsetY);
    if (!hit) return;
    const ev = lanes[hit[0]].ev, i = hit[1];
    const pad = Math.max(1000, (ev.end[i] - ev.start[i]) * 0.5);
    setView(ev.start[i] - pad, ev.end[i] + pad);
  });
  canvas.addEventListener('wheel', (e) => {
    e.preventDefault();
    const x = Math.max(plotL(), Math.min(plotR(), e.offsetX));
    const delta = e.deltaMode === 1 ? e.deltaY * 16 : e.deltaY;
    if (e.shiftKey) {  // shift + wheel: scroll the lanes
      view.scroll += delta;
      clampScroll();
      requestDraw();
      return;
    }
    const f = Math.exp(delta * 0.002);
    const t = T(x);  // the time under the pointer stays under it
    setView(t - (t - view.a) * f, t + (view.b - t) * f);
  }, { passive: false });
  window.addEventListener('keydown', (e) => {
    if (e.target === searchBox) { if (e.key === 'Escape') searchBox.blur(); return; }
    if (e.key === 'Escape' && measure) { measure = null; document.getElementById('selection').textContent = ''; requestDraw(); }
    if (e.key === '/') { e.preventDefault(); searchBox.focus(); }
    else if (e.key === '0') setView(0, data.span_ns);
  });
  document.getElementById('reset').addEventListener('click', () => setView(0, data.span_ns));
  window.addEventListener('resize', resize);

  function select(hit) {
    selected = hit ? { lane: hit[0], index: hit[1] } : null;
    document.getElementById('selection').textContent = hit ? describe(hit[0], hit[1]) : '';
    requestDraw();
  }

  function runSearch(text) {
    searchBox.classList.remove('bad');
    if (!text) { search = null; document.getElementById('matches').textContent = ''; requestDraw(); return 0; }
    let re;
    try { re = new RegExp(text, 'i'); } catch (err) {
      searchBox.classList.add('bad');
      re = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    }
    const match = new Uint8Array(labels.length);
    labels.forEach((lab, i) => { match[i] = re.test(lab[0]) ? 1 : 0; });
    let count = 0;
    const starts = lanes.map((l) => {
      if (!l.ev) return null;
      const out = [];
      for (let i = 0; i < l.n; i++) if (match[l.ev.label[i]]) out.push(l.ev.start[i]);
      count += out.length;
      return Float64Array.from(out);
    });
    search = { re: re, labels: match, count: count, starts: starts };
    document.getElementById('matches').textContent = count + (count === 1 ? ' match' : ' matches');
    requestDraw();
    return count;
  }
  searchBox.addEventListener('input', () => runSearch(searchBox.value));

  // ---- start: a first frame from the pyramids, then the events lane by lane ------------------
  resize();
  let next = 0;
  function decodeSome() {
    const until = performance.now() + 30;
    while (next < lanes.length && performance.now() < until) {
      decodeLane(lanes[next++]);
      stats.decoded = next;
    }
    requestDraw();
    if (next < lanes.length) { setTimeout(decodeSome, 0); return; }
    stats.readyMs = performance.now();
    if (searchBox.value) runSearch(searchBox.value);
  }
  requestAnimationFrame(() => setTimeout(decodeSome, 0));

  // For tests and benchmarks: the state without reading pixels. Times are ns from the
  // window's start; `toClient` maps one to the canvas's client x.
  window.gpuhookViewer = {
    get ready() { return next >= lanes.length && stats.frames > 0; },
    get readyMs() { return stats.readyMs; },
    lanes: lanes.length,
    events: totalEvents,
    sections: sections.length,
    annotations: A.kind.length,
    span_ns: data.span_ns,
    origin_ns: data.origin_ns,
    window_start_ns: data.window_start_ns,
    view: () => ({ start_ns: view.a, end_ns: view.b, scroll: view.scroll }),
    setView: (a, b) => setView(a, b),
    stats: () => ({
      frames: stats.frames, firstPaintMs: stats.firstPaintMs, individual: stats.individual,
      aggregatedLanes: stats.aggregatedLanes, frameMs: stats.frameMs.slice(), modes: lanes.map((l) => l.mode),
    }),
    laneLabels: () => lanes.map((l) => l.label),
    laneCounts: () => lanes.map((l) => l.n),
    search: (text) => { searchBox.value = text; return runSearch(text); },
    matches: () => (search ? search.count : 0),
    measure: () => (measure ? { start_ns: measure.a, end_ns: measure.b, events: measure.events } : null),
    select: (lane, index) => select(lane === null ? null : [lane, index]),
    selected: () => (selected ? Object.assign({ text: describe(selected.lane, selected.index) }, selected) : null),
    event: (lane, i) => {
      const ev = lanes[lane].ev;
      return { name: labels[ev.label[i]][0], start_ns: ev.start[i], end_ns: ev.end[i], queued_ns: ev.queued[i],
               submitted_ns: ev.submitted[i], launch_ns: ev.launch[i], row: ev.row[i], call: calls[ev.call[i]] };
    },
    // Client coordinates of the middle of an event's bar (scrolled into view first).
    eventPoint: (lane, i) => {
      const l = lanes[lane];
      if (l.y - view.scroll < RULER_H || l.y - view.scroll + l.h > H) { view.scroll = l.y - RULER_H - 20; clampScroll(); }
      draw();
      const b = eventBox(l, i, -view.scroll);
      const r = canvas.getBoundingClientRect();
      return { x: r.left + b.x + b.w / 2, y: r.top + b.y + EXEC_Y + EXEC_H / 2 };
    },
    toClient: (t) => canvas.getBoundingClientRect().left + X(t),
    plot: () => { const r = canvas.getBoundingClientRect(); return { left: r.left + plotL(), right: r.left + plotR(), top: r.top, bottom: r.bottom }; },
    tooltip: () => (tip.hidden ? '' : tip.textContent),
    draw: () => { draw(); return stats.frameMs[stats.frameMs.length - 1]; },
  };
})();
