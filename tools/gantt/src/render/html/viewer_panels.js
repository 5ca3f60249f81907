// The panels under the chart, both of one time span (the measured one, shift+drag, else the
// view) and both from the packed events the page already holds, events counted where they
// start in the span (as the measure counts them), with their whole exec time:
// - the stats table: per name, count, total and mean exec time, share of the span's GPU time;
// - the flame graph: NVTX range path (outermost first) -> name, widths by exec time, the
//   search's matches outlined, click to zoom into a frame, click the top frame to zoom out.
//   On a diff page it is the differential flame graph of the whole runs instead (data.diff:
//   the stacks diff -o x.svg draws): widths by the new run's time, red where the new run is
//   slower, blue where faster, the deeper the colour the larger the share of change.
// Names are shown with textContent and fillText only.
'use strict';
const viewerPanels = function (data, env) {
  const { upper, fmtDuration } = viewerData;
  const table = document.getElementById('stats');
  const flame = document.getElementById('flame');
  const fctx = flame.getContext('2d');
  const ROW_H = 16;
  let span = null;       // { a, b, measured }
  let rows = [];         // stats rows, most time first
  let tree = null;       // flame graph: { name, ns, children: Map, range }
  let zoom = [];         // names from the root to the zoomed frame
  let boxes = [];        // frames drawn: { x, y, w, node, path }
  const D = data.diff || null;
  // The differential tree: per frame the new run's time (ns, the width) and the base's.
  let diffTree = null;
  if (D) {
    diffTree = { name: 'all', ns: 0, base: 0, children: new Map() };
    for (const st of D.stacks) {
      const base = st[st.length - 2], next = st[st.length - 1];
      let node = diffTree;
      node.ns += next;
      node.base += base;
      for (let d = 0; d < st.length - 2; d++) {
        let c = node.children.get(st[d]);
        if (!c) node.children.set(st[d], (c = { name: st[d], ns: 0, base: 0, children: new Map() }));
        c.ns += next;
        c.base += base;
        node = c;
      }
    }
  }
  // Red (slower) or blue (faster) by the share of change, (new - base) / the larger; a change
  // of half or more in full colour.
  function diffColour(node) {
    const c = (node.ns - node.base) / Math.max(node.ns, node.base, 1);
    const k = Math.min(1, Math.abs(c) * 2);
    const to = c > 0 ? [214, 39, 40] : [31, 119, 180];
    return 'rgb(' + to.map((v) => Math.round(255 + (v - 255) * k)).join(',') + ')';
  }
  function change(node) {
    if (!node.base) return node.ns ? 'new in ' + D.next : '';
    const c = 100 * (node.ns - node.base) / node.base;
    return (c >= 0 ? '+' : '') + c.toFixed(1) + '%';
  }

  function eventsIn(a, b, visit) {
    for (const l of env.lanes) {
      if (!l.ev) continue;
      const ev = l.ev;
      const i1 = upper(ev.start, b, 0, l.n);
      for (let i = upper(ev.start, a - 1e-9, 0, l.n); i < i1; i++) visit(ev, i);
    }
  }
  function compute(a, b, measured) {
    span = { a, b, measured };
    const chains = new Map();  // range + 1 -> its frames: [name, colour], outermost first
    const chainOf = (r) => {
      let c = chains.get(r);
      if (!c) chains.set(r, (c = r ? env.host.frames(r - 1).map((k) => [env.host.name(k), env.host.colour(k)]) : []));
      return c;
    };
    const by = new Map();
    const root = { name: 'all', ns: 0, children: new Map() };
    eventsIn(a, b, (ev, i) => {
      const lab = ev.label[i], ns = ev.end[i] - ev.start[i];
      let s = by.get(lab);
      if (!s) by.set(lab, (s = { label: lab, count: 0, ns: 0 }));
      s.count++;
      s.ns += ns;
      let node = root;
      node.ns += ns;
      const chain = chainOf(ev.range ? ev.range[i] : 0);
      for (let d = 0; d <= chain.length; d++) {
        const [name, colour] = d < chain.length ? chain[d] : [env.labels[lab][0], env.labels[lab][2]];
        let c = node.children.get(name);
        if (!c) node.children.set(name, (c = { name, ns: 0, children: new Map(), colour }));
        c.ns += ns;
        node = c;
      }
    });
    const total = root.ns;
    rows = [...by.values()].sort((x, y) => y.ns - x.ns || x.label - y.label).map((s) => ({
      name: env.labels[s.label][0], kind: env.labels[s.label][1], count: s.count, total_ns: s.ns,
      mean_ns: s.ns / s.count, share: total ? s.ns / total : 0,
    }));
    tree = diffTree || root;
    if (!nodeAt(zoom)) zoom = [];
    renderTable();
    drawFlame();
  }

  function renderTable() {
    table.textContent = '';
    const cap = document.createElement('caption');
    cap.textContent = (span.measured ? 'measured span ' : 'in view ') + fmtDuration(span.b - span.a) + ': ' +
      rows.reduce((s, r) => s + r.count, 0) + ' events start in it' + (rows.length > 25 ? ' (25 names with the most time)' : '');
    // A scanned page: the table and the flame graph count the events written one by one.
    const folded = env.lanes.reduce((s, l) => s + (l.fold ? env.foldedIn(l, span.a, span.b) : 0), 0);
    if (folded) cap.textContent += '; ' + folded.toLocaleString('en-US') + ' more folded into coverage are not counted here';
    table.appendChild(cap);
    const head = table.insertRow();
    for (const h of ['name', 'kind', 'count', 'total', 'mean', 'share']) {
      const th = document.createElement('th');
      th.textContent = h;
      head.appendChild(th);
    }
    for (const r of rows.slice(0, 25)) {
      const tr = table.insertRow();
      for (const v of [r.name, r.kind, String(r.count), fmtDuration(r.total_ns), fmtDuration(r.mean_ns), (100 * r.share).toFixed(1) + '%'])
        tr.insertCell().textContent = v;
    }
  }

  function nodeAt(names) {
    let node = tree;
    for (const n of names) { node = node && node.children.get(n); }
    return node || null;
  }
  function drawFlame() {
    const W = flame.clientWidth, H = flame.clientHeight, dpr = window.devicePixelRatio || 1;
    flame.width = Math.round(W * dpr);
    flame.height = Math.round(H * dpr);
    fctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    fctx.fillStyle = '#ffffff';
    fctx.fillRect(0, 0, W, H);
    boxes = [];
    const top = nodeAt(zoom);
    if (!top || !top.ns) {
      fctx.fillStyle = env.P.muted;
      fctx.font = '12px "DejaVu Sans", sans-serif';
      fctx.fillText('no GPU time in the span', 8, 16);
      return;
    }
    const re = env.searchRe();
    const visit = (node, names, x, w, d) => {
      const y = d * ROW_H;
      if (y + ROW_H > H + ROW_H * 20) return;
      const match = re && re.test(node.name);
      fctx.globalAlpha = re && !match ? 0.35 : 1;
      fctx.fillStyle = D ? diffColour(node) : d === 0 ? '#b0b0b0' : node.colour || '#76b900';
      fctx.fillRect(x, y, Math.max(1, w - 1), ROW_H - 1);
      fctx.globalAlpha = 1;
      if (match) {
        fctx.strokeStyle = '#ff00aa';
        fctx.lineWidth = 2;
        fctx.strokeRect(x + 1, y + 1, Math.max(1, w - 3), ROW_H - 3);
        fctx.lineWidth = 1;
      }
      if (w > 30) {
        fctx.fillStyle = D ? '#1e1e1e' : '#ffffff';
        fctx.font = '10px "DejaVu Sans", sans-serif';
        fctx.fillText(env.fitText(d === 0 ? zoomLabel(node) : node.name + ' ' + fmtDuration(node.ns), w - 6), x + 3, y + 12);
      }
      boxes.push({ x, y, w, node, names, match });
      let cx = x;
      const kids = [...node.children.values()].sort((p, q) => (p.name < q.name ? -1 : p.name > q.name ? 1 : 0));
      for (const c of kids) {
        const cw = w * c.ns / node.ns;
        if (cw >= 0.5) visit(c, names.concat([c.name]), cx, cw, d + 1);
        cx += cw;
      }
    };
    visit(top, zoom.slice(), 0, W, 0);
  }
  function zoomLabel(node) {
    if (D) return (zoom.length ? zoom.join(' / ') + ' (click: out)' : 'GPU time of the whole runs, ' + D.base + ' \u2192 ' + D.next +
      ' (width: ' + D.next + '; red slower, blue faster)') + ' ' + fmtDuration(node.base) + ' \u2192 ' + fmtDuration(node.ns);
    return (zoom.length ? zoom.join(' / ') + ' (click: out)' : 'all GPU time') + ' ' + fmtDuration(node.ns);
  }
  function frameAt(x, y) {
    for (const b of boxes) if (x >= b.x && x < b.x + b.w && y >= b.y && y < b.y + ROW_H) return b;
    return null;
  }
  function click(names) {
    // The top frame zooms out a level; any other zooms in to it.
    zoom = names.length <= zoom.length ? zoom.slice(0, Math.max(0, zoom.length - 1)) : names;
    drawFlame();
  }
  flame.addEventListener('click', (e) => {
    const b = frameAt(e.offsetX, e.offsetY);
    if (b) click(b.names);
  });
  flame.addEventListener('mousemove', (e) => {
    const b = frameAt(e.offsetX, e.offsetY);
    if (b && D) {
      flame.title = (b.names.join(' / ') || 'all') + '\n' + D.base + ' ' + fmtDuration(b.node.base) + ', ' + D.next + ' ' +
        fmtDuration(b.node.ns) + ' GPU time (' + change(b.node) + ')';
      return;
    }
    flame.title = b ? (b.names.join(' / ') || 'all') + '\n' + fmtDuration(b.node.ns) + ' GPU time, ' +
      (100 * b.node.ns / tree.ns).toFixed(1) + '% of the span' : '';
  });

  return {
    compute, redraw: () => { if (tree) drawFlame(); },
    get span() { return span; },
    rows: () => rows.map((r) => Object.assign({}, r)),
    // The flame graph as drawn: frames with their path and GPU time, and which the search matched.
    // On a diff page `ns` is the new run's time and `base_ns` the base's.
    frames: () => boxes.map((b) => ({ path: b.names.join('/'), ns: b.node.ns, base_ns: b.node.base, x: b.x, y: b.y, w: b.w,
                                      match: !!b.match, colour: D ? diffColour(b.node) : b.node.colour })),
    tooltip: () => flame.title,
    click: (path) => click(path ? path.split('/') : []),
    zoom: () => zoom.join('/'),
  };
};
