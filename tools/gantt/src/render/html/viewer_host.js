// The host thread lanes of the page: each thread's NVTX ranges nested by depth, as build_scene
// draws them under the device sections (render_host_lanes.cpp), and the link between ranges
// and kernels: a kernel carries the innermost range its launch was made in (Model's
// events.range), so a range's kernels are those whose range is it or one nested in it.
// Under the ranges, the thread's host calls (viewer_calls.js).
'use strict';
const viewerHost = function (data, env) {
  const { upper } = viewerData;
  const R = data.ranges || { n: 0, packed: '', names: [], colours: [] };
  const RANGE_H = 10, RANGE_STEP = 12, TITLE_H = 18;
  const n = R.n;
  const lane = new Uint32Array(n), start = new Float64Array(n), end = new Float64Array(n);
  const depth = new Uint16Array(n), parent = new Int32Array(n), name = new Uint32Array(n), colour = new Uint32Array(n);
  {
    const b = viewerData.b64bytes(R.packed);
    let p = 0;
    const rd = () => { let v = 0, mul = 1, c; do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128); return v; };
    const unzig = (z) => (z % 2 === 1 ? -(z + 1) / 2 : z / 2);
    let t = 0;
    for (let i = 0; i < n; i++) {
      lane[i] = rd();
      t += unzig(rd());
      start[i] = t;
      const e = rd();
      end[i] = e === 0 ? data.span_ns : t + e - 1;  // never closed: open to the window's end
      depth[i] = rd();
      parent[i] = rd() - 1;
      name[i] = rd();
      colour[i] = rd();
    }
  }
  // Per lane, its ranges in start order with the running maximum of their ends (viewport search).
  const lanes = (data.host_lanes || []).map((label) => ({ label, idx: [], starts: null, runEnd: null, depth: 0, y: 0, h: 0, callRow: false }));
  for (let i = 0; i < n; i++) {
    const l = lanes[lane[i]];
    l.idx.push(i);
    l.depth = Math.max(l.depth, depth[i] + 1);
  }
  for (const l of lanes) {
    l.starts = Float64Array.from(l.idx, (i) => start[i]);
    let m = -Infinity;
    l.runEnd = Float64Array.from(l.idx, (i) => (m = Math.max(m, end[i])));
  }
  const calls = viewerCalls(data, env, lanes);
  for (const l of lanes) l.h = Math.max(18, l.depth * RANGE_STEP + 6 + (l.callRow ? calls.CALL_STEP : 0));
  let titleY = 0, selected = -1;
  let marked = -1;  // the range the selected kernel was launched in, outlined dashed
  let lit = null;  // Uint8Array over range index + 1: 1 where the range is the selected one or nested in it

  function path(r) {
    const parts = [];
    for (; r >= 0; r = parent[r]) parts.push(R.names[name[r]]);
    return parts.reverse().join('/');
  }
  // Outermost first: the frames of a flame graph.
  function frames(r) {
    const out = [];
    for (; r >= 0; r = parent[r]) out.push(r);
    return out.reverse();
  }
  function layout(y) {
    if (!lanes.length) return y;
    titleY = y;
    y += TITLE_H;
    for (const l of lanes) { l.y = y; y += l.h; }
    return y;
  }
  function inView(l, a, b) {
    const k = l.idx.length;
    return [upper(l.runEnd, a, 0, k), upper(l.starts, b - 1e-9, 0, k)];
  }
  function draw(oy) {
    if (!lanes.length) return;
    const { ctx, X, P } = env;
    const L = env.plotL(), Rt = env.plotR();
    ctx.font = 'bold 12px "DejaVu Sans", sans-serif';
    ctx.fillStyle = P.text;
    ctx.textAlign = 'left';
    ctx.fillText('host threads', 12, titleY + oy + 13);
    for (const l of lanes) {
      const y = l.y + oy;
      if (y > env.H() || y + l.h < 0) continue;
      ctx.fillStyle = P.band;
      ctx.fillRect(L, y, Rt - L, l.h - 2);
      ctx.font = '11px "DejaVu Sans", sans-serif';
      ctx.fillStyle = P.text;
      ctx.textAlign = 'right';
      ctx.fillText(env.fitText(l.label, data.geometry.label_width - 20), L - 8, y + 13);
      if (l.callRow) calls.draw(lanes.indexOf(l), y + 2 + l.depth * RANGE_STEP);
      const [k0, k1] = inView(l, env.view.a, env.view.b);
      // Ranges under a pixel wide, one per column and depth: thousands of them still cost a
      // few hundred rectangles.
      const lastCol = new Float64Array(l.depth).fill(-1);
      ctx.textAlign = 'left';
      for (let k = k0; k < k1; k++) {
        const r = l.idx[k];
        if (end[r] < env.view.a) continue;
        const x0 = Math.max(L, X(start[r])), x1 = Math.min(Rt, X(end[r]));
        const w = Math.max(1, x1 - x0), ry = y + 2 + depth[r] * RANGE_STEP;
        if (w <= 1) {
          const c = Math.floor(x0);
          if (c === lastCol[depth[r]]) continue;
          lastCol[depth[r]] = c;
        }
        const dim = lit !== null && !lit[r + 1];
        ctx.globalAlpha = dim ? 0.3 : 1;
        ctx.fillStyle = R.colours[colour[r]];
        ctx.fillRect(x0, ry, w, RANGE_H);
        ctx.globalAlpha = 1;
        if (w > 30) {
          ctx.font = '8px "DejaVu Sans", sans-serif';
          ctx.fillStyle = '#ffffff';
          ctx.fillText(env.fitText(R.names[name[r]], w - 4), x0 + 2, ry + 8);
        }
        if (r === selected || r === marked) {
          ctx.strokeStyle = '#000000';
          ctx.lineWidth = 2;
          if (r === marked) ctx.setLineDash([4, 2]);
          ctx.strokeRect(x0 - 1, ry - 1, w + 2, RANGE_H + 2);
          ctx.setLineDash([]);
          ctx.lineWidth = 1;
        }
      }
    }
  }
  // The innermost range under (x, y) in canvas pixels, or -1.
  function rangeAt(x, y, scroll) {
    const cy = y + scroll;
    const l = lanes.find((l) => cy >= l.y && cy < l.y + l.h);
    if (!l || x < env.plotL() || x > env.plotR()) return -1;
    const d = Math.floor((cy - l.y - 2) / RANGE_STEP);
    const tol = 2 / env.pxPerNs(), t = env.T(x);
    const [k0, k1] = inView(l, t - tol, t + tol);
    let best = -1;
    for (let k = k0; k < k1; k++) {
      const r = l.idx[k];
      if (depth[r] === d && start[r] - tol <= t && end[r] + tol >= t) best = r;
    }
    return best;
  }
  // The host call under (x, y) in canvas pixels, as its tooltip text, or null (an NCCL call
  // drawn over the others first).
  function callAt(x, y, scroll) {
    const cy = y + scroll;
    const li = lanes.findIndex((l) => cy >= l.y && cy < l.y + l.h);
    if (li < 0 || !lanes[li].callRow || x < env.plotL() || x > env.plotR()) return null;
    const top = lanes[li].y + 2 + lanes[li].depth * RANGE_STEP;
    if (cy < top - 1 || cy > top + calls.CALL_H + 1) return null;
    const t = env.T(x), tol = 2 / env.pxPerNs();
    const n = calls.ncclAt(li, t, tol);
    if (n >= 0) return calls.describeNccl(li, n);
    const k = calls.at(li, t, tol);
    return k < 0 ? null : calls.describe(li, k);
  }
  function describe(r) {
    const closed = end[r] < data.span_ns || start[r] === end[r];
    return 'NVTX range ' + path(r) + ' \u00b7 ' + lanes[lane[r]].label + '\n' + env.rel(start[r]) + ' \u2026 ' +
      (closed ? env.rel(end[r]) + ' (' + viewerData.fmtDuration(end[r] - start[r]) + ')' : 'not closed in the capture');
  }
  // Selects range r (-1: none); `lit` then marks it and every range nested in it (a parent
  // always comes before its children in the page's order, so one pass does).
  function select(r) {
    selected = r;
    marked = -1;
    if (r < 0) { lit = null; return; }
    lit = new Uint8Array(n + 1);
    for (let i = r; i < n; i++) if (i === r || (parent[i] >= 0 && lit[parent[i] + 1])) lit[i + 1] = 1;
  }
  return {
    n, lanes, layout, draw, rangeAt, describe, select, path, frames, calls, callAt,
    // Client-space point in the middle of host call k of lane li (for tests).
    callPoint: (li, k, scroll, isNccl) => {
      const c = isNccl ? calls.ncclCall(li, k) : calls.call(li, k);
      const x0 = Math.max(env.plotL(), env.X(c.start_ns)), x1 = Math.min(env.plotR(), env.X(c.start_ns + (c.dur_ns || 0)));
      return { x: (x0 + x1) / 2, y: lanes[li].y - scroll + 2 + lanes[li].depth * RANGE_STEP + calls.CALL_H / 2 };
    },
    name: (r) => R.names[name[r]], colour: (r) => R.colours[colour[r]],
    get selected() { return selected; },
    get marked() { return marked; },
    mark: (r) => { marked = r; },
    get lit() { return lit; },
    range: (r) => ({ name: R.names[name[r]], path: path(r), lane: lane[r], start_ns: start[r], end_ns: end[r], depth: depth[r], parent: parent[r] }),
    // Client-space point in the middle of range r's bar (for tests).
    point: (r, scroll) => ({ x: (Math.max(env.plotL(), env.X(start[r])) + Math.min(env.plotR(), env.X(end[r]))) / 2,
                             y: lanes[lane[r]].y - scroll + 2 + depth[r] * RANGE_STEP + RANGE_H / 2 }),
  };
};
