// The Gantt chart of `gantt-cli render -o x.html`, drawn on a canvas from the data block the CLI
// wrote (tools/gantt/src/render/html_data.cpp says what each field holds).
//
// Cost follows the picture, not the event count: zoomed out, each lane is drawn from its
// level-of-detail pyramid (busy share per time bucket, the level whose buckets are about a
// pixel wide); zoomed in, only the events in view, found by binary search on the lanes' start
// order (and a running maximum of their ends, so long events are not missed). The first frame
// is drawn from the pyramids alone; the events are decoded lane by lane after it. The formats
// and searches are viewer_data.js's, which comes first in the page's script; the drawing of
// the ruler, sections and lanes viewer_draw.js's; the host thread lanes (NVTX ranges)
// viewer_host.js's; the collectives of several ranks viewer_ranks.js's; the stats table and
// flame graph viewer_panels.js's; the test hook
// viewer_hook.js's. This file holds the data, the layout, the view and the input.
// Names are shown with textContent and fillText only: nothing from the capture becomes markup.
'use strict';
(function () {
  const { pyramid, decodeEvents, decodeCounts, upper, inView, addSpan, fmtDuration, fmtTime } = viewerData;
  const data = JSON.parse(document.getElementById('gpuhook-data').textContent);
  const G = data.geometry;
  const P = data.palette;
  const LABEL_W = G.label_width, RIGHT_MARGIN = 24, RULER_H = 26;
  const SECTION_TITLE_H = 18, SECTION_GAP = 6, STRIP_GAP = 4;
  // Events drawn one by one per frame, all lanes together; past it (or where more than two
  // would share a pixel column, viewer_draw.js) a lane is drawn as coverage.
  const INDIVIDUAL_BUDGET = 8000;

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
    // A scanned page (html.h): the lane's events not written one by one, folded into `lod` and,
    // on their own, `fold` (their coverage and how many touch each finest bucket).
    folded: l.folded || 0,
    fold: l.fold ? { lod: pyramid(l.fold, l.lod_buckets, data.span_ns / l.lod_buckets), sum: decodeCounts(l.fold_n, l.lod_buckets),
                     n: l.lod_buckets, w: data.span_ns / l.lod_buckets } : null,
  }));
  // The folded events of lane l that touch the finest buckets over [a, b]: [count, bucket a, bucket b end].
  function foldedIn(l, a, b) {
    const f = l.fold;
    if (!f) return [0, a, b];
    const b0 = Math.max(0, Math.min(f.n, Math.floor(a / f.w))), b1 = Math.max(b0, Math.min(f.n, Math.floor(b / f.w) + 1));
    return [f.sum[b1] - f.sum[b0], b0 * f.w, b1 * f.w];
  }
  // What the page says of a lane's folded events around [a, b] ('' where it has none there).
  function foldNote(l, a, b) {
    const [n, fa, fb] = foldedIn(l, a, b);
    if (!n) return '';
    const res = Math.pow(10, Math.floor(Math.log10(Math.max(1, (fb - fa) / 1000))));
    return l.label + ': ' + n.toLocaleString('en-US') + ' events folded into coverage here (' + rel(fa, res) + ' \u2026 ' +
           rel(fb, res) + '; the page holds the widest ' + l.n.toLocaleString('en-US') + ' of the lane\'s ' +
           (l.n + l.folded).toLocaleString('en-US') + ' one by one): render with --from/--to for them one by one';
  }
  const sections = data.sections.map((s) => ({
    label: s.label, lanes: s.lanes, busyLabel: s.busy_label || '',
    compute: s.compute ? pyramid(s.compute, data.util_buckets, data.util_bucket_ns) : null,
    copy: s.copy ? pyramid(s.copy, data.util_buckets, data.util_bucket_ns) : null,
    memory: s.memory ? viewerData.decodeMemory(s.memory) : null, memY: 0,
    y: 0, stripY: 0, gaps: [],
  }));
  const A = data.annotations;
  for (let i = 0; i < A.kind.length; i++) {
    if (A.lane[i] >= 0) lanes[A.lane[i]].ann.push(i);
    else if (A.section[i] >= 0) sections[A.section[i]].gaps.push(i);
  }
  for (const l of lanes) l.ann.sort((a, b) => A.index[a] - A.index[b]);
  const totalEvents = lanes.reduce((s, l) => s + l.n, 0);
  const hasRanges = !!(data.ranges && data.ranges.n);
  // What the other files draw with: wrappers, as the view's functions are defined below.
  const env = {
    ctx, P, lanes, labels, view: null,
    X: (t) => X(t), T: (x) => T(x), plotL: () => plotL(), plotR: () => plotR(), pxPerNs: () => pxPerNs(),
    W: () => W, H: () => H, rel: (t, res) => rel(t, res), fitText: (t, w) => fitText(t, w),
    searchRe: () => (search ? search.re : null), search: () => search, marks: () => marks, stats: null,
    foldedIn: (l, a, b) => foldedIn(l, a, b)[0],
    RULER_H, LABEL_W,
  };
  const host = viewerHost(data, env);
  const panels = viewerPanels(data, env);
  env.host = host;

  // ---- layout -------------------------------------------------------------------------------
  let contentH = 0;
  function layout() {
    let y = RULER_H + 4;
    for (const s of sections) {
      s.y = y;
      y += SECTION_TITLE_H;
      if (s.compute) { s.stripY = y; y += G.util + STRIP_GAP; }
      if (s.memory) { s.memY = y; y += G.util + STRIP_GAP; }
      for (const li of s.lanes) {
        const l = lanes[li];
        l.y = y;
        l.h = G.lane + (l.rows - 1) * G.row;
        y += l.h;
      }
      y += SECTION_GAP;
    }
    y = host.layout(y);
    contentH = y + 8;
  }
  layout();

  // ---- view state ---------------------------------------------------------------------------
  const view = { a: 0, b: data.span_ns, scroll: 0 };
  env.view = view;
  const drawing = viewerDraw(data, env);
  const { EXEC_Y, EXEC_H, fitText, drawRuler, drawSection, drawLane } = drawing;
  Object.assign(env, { EXEC_Y, EXEC_H, setView: (a, b) => setView(a, b),
                       say: (text) => { document.getElementById('selection').textContent = text; } });
  const ranks = viewerRanks(data, env);
  let W = 0, H = 0, dpr = 1;
  let search = null;          // { re, labels: Uint8Array, count }
  let marks = null;           // per lane, Float64Array of the starts of the events search or a range picks out
  let selected = null;        // { lane, index }
  let hover = null;
  const stats = { frames: 0, frameMs: [], individual: 0, aggregatedLanes: 0, firstPaintMs: null, readyMs: null, decoded: 0 };
  env.stats = stats;
  const plotL = () => LABEL_W, plotR = () => W - RIGHT_MARGIN;
  const pxPerNs = () => (plotR() - plotL()) / (view.b - view.a);
  const X = (t) => plotL() + (t - view.a) * pxPerNs();
  const T = (x) => view.a + (x - plotL()) / pxPerNs();

  const rel = (t, resolution = 1) => fmtTime(t - data.origin_ns, resolution);
  const bytesText = (b) => (b >= 1 << 30 ? (b / (1 << 30)).toFixed(2) + ' GiB' : b >= 1 << 20 ? (b / (1 << 20)).toFixed(1) + ' MiB'
    : b >= 1024 ? (b / 1024).toFixed(1) + ' KiB' : b + ' B');
  function decodeLane(l) {
    l.ev = decodeEvents(l.packed, l.n, hasRanges);
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
    if (!measure) schedulePanels();
  }

  // ---- drawing ------------------------------------------------------------------------------
  let pending = false;
  function requestDraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; draw(); });
  }
  function eventBox(l, i, oy) {
    const ev = l.ev;
    const x0 = Math.max(plotL() - 1, X(ev.start[i])), x1 = Math.min(plotR() + 1, X(ev.end[i]));
    return { x: x0, y: l.y + oy + ev.row[i] * G.row, w: Math.max(1, x1 - x0) };
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
    host.draw(oy);
    ranks.draw(oy);
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
    if (hasRanges) lines.push(ev.range[i] ? 'launched in NVTX range ' + host.path(ev.range[i] - 1) : 'launched in no NVTX range');
    for (const a of l.ann) if (A.index[a] === i) lines.push('\u25b2 ' + A.label[a]);
    lines.push(...ranks.describe(li, i));
    return lines.join('\n');
  }
  function gapAt(x, y) {
    const cy = y + view.scroll;
    for (const s of sections) {
      if (s.memory && cy >= s.memY && cy < s.memY + G.util)
        return 'memory in use at ' + rel(T(x)) + ': ' + bytesText(s.memory.at(T(x))) + ' (' + s.memory.label + ')';
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
    const r = host.rangeAt(x, y, view.scroll);
    if (r >= 0) return showTip(host.describe(r), x, y);
    const c = host.callAt(x, y, view.scroll);
    if (c) return showTip(c, x, y);
    const l = laneAt(y);
    if (l && l.fold && x >= plotL() && x <= plotR()) {
      const note = foldNote(l, T(x - 2), T(x + 2));
      if (note) return showTip(note, x, y);
    }
    if (l && l.mode !== 'events' && x >= plotL() && x <= plotR())
      return showTip(l.label + ': ' + l.n + ' events, drawn as coverage here (busy share per pixel); zoom in to see them one by one', x, y);
    showTip(gapAt(x, y), x, y);
  }

  let drag = null;
  // The panels follow the span a little after it stops moving: a whole window of a million
  // events costs them a few hundred ms, not to be paid per frame of a drag or a zoom.
  let panelsTimer = 0;
  function schedulePanels() {
    clearTimeout(panelsTimer);
    panelsTimer = setTimeout(updatePanels, 150);
  }
  function updatePanels() {
    clearTimeout(panelsTimer);
    if (next < lanes.length) return;  // the events are still being decoded; decodeSome calls again
    if (measure) panels.compute(measure.a, measure.b, true);
    else panels.compute(Math.max(0, view.a), Math.min(data.span_ns, view.b), false);
  }
  // Shift+drag measures a span: its length, and how many events start in it.
  let measure = null;  // { a, b } in ns
  function setMeasure(a, b) {
    measure = { a: Math.min(a, b), b: Math.max(a, b) };
    let n = 0;
    for (const l of lanes) if (l.ev) n += upper(l.ev.start, measure.b, 0, l.n) - upper(l.ev.start, measure.a - 1e-9, 0, l.n);
    measure.events = n;
    schedulePanels();
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
    if (d && !d.moved) {
      const hit = eventAt(e.offsetX, e.offsetY);
      if (hit) select(hit);
      else selectRange(host.rangeAt(e.offsetX, e.offsetY, view.scroll));
    }
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
    if (e.key === 'Escape' && measure) {
      measure = null;
      document.getElementById('selection').textContent = '';
      requestDraw();
      schedulePanels();
    }
    if (e.key === '/') { e.preventDefault(); searchBox.focus(); }
    else if (e.key === '0') setView(0, data.span_ns);
    else if (e.key === 'n' || e.key === 'p') ranks.jump(e.key === 'n' ? 1 : -1);
  });
  if (ranks.n) {
    document.getElementById('collectives').hidden = false;
    document.getElementById('help').textContent += ' \u00b7 n / p: next / previous collective (its last to arrive outlined in red)';
  }
  document.getElementById('coll-prev').addEventListener('click', () => ranks.jump(-1));
  document.getElementById('coll-next').addEventListener('click', () => ranks.jump(1));
  document.getElementById('reset').addEventListener('click', () => setView(0, data.span_ns));
  window.addEventListener('resize', resize);

  function select(hit) {
    selected = hit ? { lane: hit[0], index: hit[1] } : null;
    host.select(-1);
    // Its range on the host lanes, outlined: the other way of the link.
    if (hit && hasRanges) host.mark(lanes[hit[0]].ev.range[hit[1]] - 1);
    document.getElementById('selection').textContent = hit ? describe(hit[0], hit[1]) : '';
    updateMarks();
  }
  // A range selected lights up the kernels launched in it or in a range nested in it.
  let litCount = 0;
  function selectRange(r) {
    selected = null;
    host.select(r);
    updateMarks();
    document.getElementById('selection').textContent =
      r >= 0 ? host.describe(r) + '\n' + litCount + ' GPU events launched in it (outlined in blue)' : '';
  }
  function updateMarks() {
    const lit = host.lit;
    litCount = 0;
    if (!search && !lit) { marks = null; requestDraw(); return; }
    marks = lanes.map((l) => {
      if (!l.ev) return null;
      const ev = l.ev, out = [];
      for (let i = 0; i < l.n; i++) {
        const inRange = lit && ev.range && lit[ev.range[i]];
        if (inRange) litCount++;
        if ((!search || search.labels[ev.label[i]]) && (!lit || inRange)) out.push(ev.start[i]);
      }
      return Float64Array.from(out);
    });
    requestDraw();
  }

  function runSearch(text) {
    searchBox.classList.remove('bad');
    if (!text) { search = null; document.getElementById('matches').textContent = ''; updateMarks(); panels.redraw(); return 0; }
    let re;
    try { re = new RegExp(text, 'i'); } catch (err) {
      searchBox.classList.add('bad');
      re = new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
    }
    const match = new Uint8Array(labels.length);
    labels.forEach((lab, i) => { match[i] = re.test(lab[0]) ? 1 : 0; });
    let count = 0;
    for (const l of lanes) if (l.ev) for (let i = 0; i < l.n; i++) count += match[l.ev.label[i]];
    search = { re: re, labels: match, count: count };
    document.getElementById('matches').textContent = count + (count === 1 ? ' match' : ' matches');
    updateMarks();
    panels.redraw();
    return count;
  }
  searchBox.addEventListener('input', () => runSearch(searchBox.value));

  // ---- start: a first frame from the pyramids, then the events lane by lane ------------------
  resize();
  // A diff page aligned on a range occurrence opens on it (the longer of the two).
  if (data.diff && data.diff.view_ns) setView(data.origin_ns - data.diff.view_ns * 0.05, data.origin_ns + data.diff.view_ns * 1.05);
  let next = 0;
  function decodeSome() {
    const until = performance.now() + 30;
    while (next < lanes.length && performance.now() < until) {
      decodeLane(lanes[next++]);
      stats.decoded = next;
    }
    requestDraw();
    if (next < lanes.length) { setTimeout(decodeSome, 0); return; }
    const t0 = performance.now();
    host.calls.build(lanes);
    stats.callsMs = performance.now() - t0;
    stats.readyMs = performance.now();
    if (searchBox.value) runSearch(searchBox.value);
    updatePanels();
  }
  requestAnimationFrame(() => setTimeout(decodeSome, 0));

  // For tests and benchmarks (viewer_hook.js): the state without reading pixels.
  window.gpuhookViewer = viewerHook({
    data, lanes, labels, calls, sections, A, G, view, stats, totalEvents, host, panels, canvas, tip, searchBox,
    RULER_H, EXEC_Y, EXEC_H, X, plotL, plotR, setView, runSearch, select, describe, eventBox, draw, clampScroll,
    selectRange, setMeasure, updatePanels, ranks, foldNote,
    state: () => ({ ready: next >= lanes.length, H, search, measure, selected, litCount }),
  });
})();
