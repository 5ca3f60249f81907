// The host calls on the host thread lanes, a row under each thread's NVTX ranges as the PNG
// chart draws them (render_host_lanes.cpp): calls the host blocks in (synchronise, blocking
// copies) in red, calls that launched GPU work dark, the others grey, NCCL calls pink over
// them. A call that launched an event on the page is rebuilt from the events (their call,
// launch time and its duration); html_host_data.cpp writes only the others (host_calls), and
// the NCCL calls (host_nccl).
'use strict';
const viewerCalls = function (data, env, hostLanes) {
  const { upper, fmtDuration } = viewerData;
  const callLane = data.call_lane || [], blocking = data.call_blocking || [];
  const HC = data.host_calls || { n: 0, packed: '' };
  const CALL_H = 8, CALL_STEP = 11;
  // Per host lane, until build(): the written calls; after it, all, in start order.
  const parts = hostLanes.map(() => ({ start: [], dur: [], call: [], launched: [] }));
  {
    const b = viewerData.b64bytes(HC.packed);
    let p = 0, t = 0;
    const rd = () => { let v = 0, mul = 1, c; do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128); return v; };
    for (let k = 0; k < HC.n; k++) {
      const q = parts[rd()];
      const z = rd();
      t += z % 2 === 1 ? -(z + 1) / 2 : z / 2;
      const d = rd();
      q.start.push(t);
      q.dur.push(d === 0 ? NaN : d - 1);
      q.call.push(rd());
      q.launched.push(0);
    }
  }
  // NCCL calls, per host lane in start order: start, duration (NaN: never returned), name,
  // bytes, rank, ranks.
  const HN = data.host_nccl || { n: 0, packed: '', names: [] };
  const nccl = hostLanes.map(() => ({ start: [], dur: [], name: [], bytes: [], rank: [], nranks: [], runEnd: [] }));
  {
    const b = viewerData.b64bytes(HN.packed);
    let p = 0, t = 0;
    const rd = () => { let v = 0, mul = 1, c; do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128); return v; };
    for (let k = 0; k < HN.n; k++) {
      const q = nccl[rd()];
      const z = rd();
      t += z % 2 === 1 ? -(z + 1) / 2 : z / 2;
      const d = rd();
      q.start.push(t);
      q.dur.push(d === 0 ? NaN : d - 1);
      q.name.push(HN.names[rd()]);
      q.bytes.push(rd());
      q.rank.push(rd() - 1);
      q.nranks.push(rd());
      q.runEnd.push(Math.max(q.runEnd.length ? q.runEnd[q.runEnd.length - 1] : -Infinity, t + (d ? d - 1 : data.span_ns)));
    }
  }
  for (let c = 1; c < callLane.length; c++) if (callLane[c] >= 0) hostLanes[callLane[c]].callRow = true;
  hostLanes.forEach((l, i) => { if (parts[i].start.length || nccl[i].start.length) l.callRow = true; });
  let rows = null;  // per host lane: { start, dur, call, launched, runEnd } typed, start order

  // After every lane's events are decoded: each host lane's calls in start order, a call that
  // launched several events (a graph, a grouped NCCL call) once. Typed arrays filled in place:
  // a million launches cost about a second through JavaScript arrays, a fifth of it so.
  function build(gpuLanes) {
    const counts = parts.map((q) => q.start.length);
    for (const g of gpuLanes)
      for (let i = 0; i < g.n; i++) { const c = g.ev.call[i]; if (c && callLane[c] >= 0) counts[callLane[c]]++; }
    const all = counts.map((n, li) => {
      const q = parts[li];
      const a = { start: new Float64Array(n), dur: new Float64Array(n), call: new Uint32Array(n), launched: new Uint8Array(n), n: q.start.length };
      a.start.set(q.start); a.dur.set(q.dur); a.call.set(q.call);
      return a;
    });
    for (const g of gpuLanes) {
      const ev = g.ev;
      for (let i = 0; i < g.n; i++) {
        const c = ev.call[i];
        if (!c || callLane[c] < 0) continue;
        const a = all[callLane[c]], k = a.n++;
        a.start[k] = ev.launch[i];
        a.dur[k] = ev.callNs[i];
        a.call[k] = c;
        a.launched[k] = 1;
      }
    }
    rows = all.map((a) => {
      const idx = order(a.start);
      const r = { start: new Float64Array(a.n), dur: new Float64Array(a.n), call: new Uint32Array(a.n), launched: new Uint8Array(a.n) };
      let n = 0;
      for (let o = 0; o < a.n; o++) {
        const i = idx ? idx[o] : o;
        if (n && r.start[n - 1] === a.start[i] && r.call[n - 1] === a.call[i]) continue;
        r.start[n] = a.start[i]; r.dur[n] = a.dur[i]; r.call[n] = a.call[i]; r.launched[n] = a.launched[i];
        n++;
      }
      for (const k of ['start', 'dur', 'call', 'launched']) r[k] = r[k].subarray(0, n);
      r.runEnd = new Float64Array(n);
      let m = -Infinity;
      for (let k = 0; k < n; k++) r.runEnd[k] = m = Math.max(m, r.start[k] + (Number.isNaN(r.dur[k]) ? 0 : r.dur[k]));
      return r;
    });
    parts.length = 0;
  }
  // The order of `start` as indices (null: already in order). It is made of runs already in
  // order (the written calls, then each GPU lane's launches, in launch order on one stream):
  // few runs are merged; many (lanes of several streams), sorted.
  function order(start) {
    const n = start.length, runs = [0];
    for (let i = 1; i < n; i++) if (start[i] < start[i - 1]) runs.push(i);
    runs.push(n);
    if (runs.length === 2) return null;
    if (runs.length > 34) return new Uint32Array(n).map((_, i) => i).sort((a, b) => start[a] - start[b] || a - b);
    const head = runs.slice(0, -1), out = new Uint32Array(n);
    for (let o = 0; o < n; o++) {
      let best = -1, bt = Infinity;
      for (let r = 0; r < head.length; r++)
        if (head[r] < runs[r + 1] && start[head[r]] < bt) { best = r; bt = start[head[r]]; }
      out[o] = head[best]++;
    }
    return out;
  }
  const endOf = (r, k) => r.start[k] + (Number.isNaN(r.dur[k]) ? data.span_ns - r.start[k] : r.dur[k]);
  function inView(r, a, b) { return [upper(r.runEnd, a, 0, r.start.length), upper(r.start, b - 1e-9, 0, r.start.length)]; }

  // The row of host lane li at y (its top), one call per pixel column unless it blocks; the
  // NCCL calls over it.
  function draw(li, y) {
    const { ctx, X, P, view } = env;
    const L = env.plotL(), R = env.plotR();
    const q = nccl[li];
    if (q.start.length) {
      const k1 = upper(q.start, view.b - 1e-9, 0, q.start.length);
      ctx.fillStyle = P.nccl;
      for (let k = upper(q.runEnd, view.a, 0, q.start.length); k < k1; k++) {
        const x0 = Math.max(L, X(q.start[k])), x1 = Math.min(R, X(q.start[k] + (Number.isNaN(q.dur[k]) ? data.span_ns : q.dur[k])));
        if (x1 >= L && x0 <= R) ctx.fillRect(x0, y - 1, Math.max(1, x1 - x0), CALL_H + 2);
      }
    }
    if (!rows) return;
    const r = rows[li];
    const [k0, k1] = inView(r, view.a, view.b);
    let lastCol = -1;
    for (let k = k0; k < k1; k++) {
      const x0 = Math.max(L, X(r.start[k])), x1 = Math.min(R, X(endOf(r, k)));
      if (x1 < L || x0 > R) continue;
      const block = blocking[r.call[k]];
      if (x1 - x0 < 1 && !block) {
        const c = Math.floor(x0);
        if (c === lastCol) continue;
        lastCol = c;
      }
      ctx.fillStyle = block ? P.blocking : r.launched[k] ? P.launch_tick : P.api;
      ctx.fillRect(x0, y, Math.max(1, x1 - x0), CALL_H);
    }
  }
  // The NCCL call under time t (tolerance tol ns) on host lane li: its index, or -1.
  function ncclAt(li, t, tol) {
    const q = nccl[li];
    let best = -1;
    const k1 = upper(q.start, t + tol, 0, q.start.length);
    for (let k = upper(q.runEnd, t - tol, 0, q.start.length); k < k1; k++)
      if (q.start[k] - tol <= t && q.start[k] + (Number.isNaN(q.dur[k]) ? data.span_ns : q.dur[k]) + tol >= t) best = k;
    return best;
  }
  function describeNccl(li, k) {
    const q = nccl[li];
    const b = q.bytes[k], done = !Number.isNaN(q.dur[k]);
    const bytes = b >= 1 << 20 ? (b / (1 << 20)).toFixed(1) + ' MiB' : b >= 1024 ? (b / 1024).toFixed(1) + ' KiB' : b + ' B';
    return q.name[k] + ' ' + bytes + ' rank ' + q.rank[k] + '/' + q.nranks[k] + (done ? ', ' + fmtDuration(q.dur[k]) : ', never returned in the capture') +
      '\n' + env.rel(q.start[k]) + ' \u2026 ' + (done ? env.rel(q.start[k] + q.dur[k]) : '?') + '\n(NCCL call on the host)';
  }
  // The call under time t (tolerance tol ns) on host lane li: its index, or -1.
  function at(li, t, tol) {
    if (!rows) return -1;
    const r = rows[li];
    const [k0, k1] = inView(r, t - tol, t + tol);
    let best = -1;
    for (let k = k0; k < k1; k++) if (r.start[k] - tol <= t && endOf(r, k) + tol >= t) best = k;
    return best;
  }
  function describe(li, k) {
    const r = rows[li], c = r.call[k];
    const done = !Number.isNaN(r.dur[k]);
    return data.calls[c] + (done ? ', ' + fmtDuration(r.dur[k]) : ', never returned in the capture') +
      (blocking[c] ? ' (host blocked)' : '') + '\n' + env.rel(r.start[k]) + ' \u2026 ' + (done ? env.rel(r.start[k] + r.dur[k]) : '?') +
      (r.launched[k] ? '\nlaunched GPU work on the page' : '');
  }
  return {
    CALL_H, CALL_STEP, build, draw, at, describe, ncclAt, describeNccl,
    ncclCount: (li) => nccl[li].start.length,
    ncclCall: (li, k) => ({ name: nccl[li].name[k], start_ns: nccl[li].start[k], dur_ns: nccl[li].dur[k], bytes: nccl[li].bytes[k],
                            rank: nccl[li].rank[k], nranks: nccl[li].nranks[k] }),
    get built() { return rows !== null; },
    count: (li) => (rows ? rows[li].start.length : 0),
    call: (li, k) => ({ name: data.calls[rows[li].call[k]], start_ns: rows[li].start[k], dur_ns: rows[li].dur[k],
                        launched: !!rows[li].launched[k], blocking: !!blocking[rows[li].call[k]] }),
  };
};
