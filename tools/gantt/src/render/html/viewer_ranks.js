// The collectives of a page of several ranks, as html_data.cpp write_collectives lists them
// (collective_links: the links the PNG/SVG chart draws): a thin line joins a collective's
// kernels across the ranks at its end, the last to arrive is outlined in red and named
// ("rank 5 +64 us"), and n / p centre the view on the next / previous collective.
'use strict';
const viewerRanks = function (data, env) {
  const { upper, fmtDuration } = viewerData;
  const C = data.collectives || { n: 0, packed: '' };
  const n = C.n;
  const LATE = '#c81e1e', LINK = 'rgba(90, 90, 90, 0.8)';
  const start = new Float64Array(n), end = new Float64Array(n), runEnd = new Float64Array(n);
  const lastRank = new Int32Array(n), spread = new Float64Array(n), lastAt = new Int32Array(n);
  const first = new Uint32Array(n + 1);  // collective k's kernels: evLane/evIndex[first[k] .. first[k + 1])
  const evLane = [], evIndex = [];
  {
    const b = viewerData.b64bytes(C.packed);
    let p = 0;
    const rd = () => { let v = 0, mul = 1, c; do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128); return v; };
    let t = 0, m = -Infinity;
    for (let k = 0; k < n; k++) {
      const z = rd();
      t += z % 2 === 1 ? -(z + 1) / 2 : z / 2;
      start[k] = t;
      end[k] = t + rd();
      runEnd[k] = m = Math.max(m, end[k]);
      lastRank[k] = rd() - 1;
      spread[k] = rd();
      const count = rd();
      first[k] = evLane.length;
      for (let j = 0; j < count; j++) { evLane.push(rd()); evIndex.push(rd()); }
      first[k + 1] = evLane.length;
      lastAt[k] = rd() - 1;
    }
  }
  // The collective an event belongs to, per lane: index -> collective.
  const byEvent = env.lanes.map(() => new Map());
  for (let k = 0; k < n; k++)
    for (let j = first[k]; j < first[k + 1]; j++) byEvent[evLane[j]].set(evIndex[j], k);
  const lastOf = (k) => (lastAt[k] < 0 ? null : [evLane[first[k] + lastAt[k]], evIndex[first[k] + lastAt[k]]]);
  const name = (k) => {
    const l = env.lanes[evLane[first[k]]];
    return l.ev ? env.labels[l.ev.label[evIndex[first[k]]]][0] : 'collective';
  };
  let current = -1, currentView = null;

  function draw(oy) {
    if (!n) return;
    const { ctx, X, lanes } = env;
    const view = env.view, L = env.plotL(), R = env.plotR(), G = data.geometry;
    const k0 = upper(runEnd, view.a, 0, n), k1 = upper(start, view.b, 0, n);
    // Where collectives are denser than a few pixels apart, one link per column.
    let lastCol = -1, lastLabel = -Infinity;
    ctx.font = '8px "DejaVu Sans", sans-serif';
    ctx.textAlign = 'left';
    for (let k = k0; k < k1; k++) {
      const x = X(end[k]);
      if (x < L - 1 || X(start[k]) > R + 1) continue;
      const col = Math.floor(x / 3);
      if (col === lastCol && k !== current) continue;
      lastCol = col;
      let top = Infinity, bottom = -Infinity;
      for (let j = first[k]; j < first[k + 1]; j++) {
        const l = lanes[evLane[j]];
        const y = l.y + oy + (l.ev ? l.ev.row[evIndex[j]] * G.row : 0) + env.EXEC_Y + env.EXEC_H / 2;
        top = Math.min(top, y);
        bottom = Math.max(bottom, y);
      }
      if (x >= L && x <= R && bottom > top) {
        ctx.strokeStyle = k === current ? LATE : LINK;
        ctx.lineWidth = k === current ? 2 : 0.75;
        ctx.beginPath();
        ctx.moveTo(Math.round(x) + 0.5, top);
        ctx.lineTo(Math.round(x) + 0.5, bottom);
        ctx.stroke();
      }
      const last = lastOf(k);
      const l = last && lanes[last[0]];
      if (!l || !l.ev) continue;
      const i = last[1];
      const x0 = Math.max(L, X(l.ev.start[i])), x1 = Math.min(R, X(l.ev.end[i]));
      if (x1 < L || x0 > R) continue;
      const y = l.y + oy + l.ev.row[i] * G.row + env.EXEC_Y;
      ctx.strokeStyle = LATE;
      ctx.lineWidth = 1.25;
      ctx.strokeRect(x0 - 0.5, y - 0.5, Math.max(1, x1 - x0) + 1, env.EXEC_H + 1);
      // Named where the name does not run into the one before.
      if (x0 - lastLabel > 70) {
        ctx.fillStyle = LATE;
        ctx.fillText('rank ' + lastRank[k] + ' +' + fmtDuration(spread[k]), Math.max(L, x1 + 3), y - 1);
        lastLabel = x0;
      }
    }
    ctx.lineWidth = 1;
  }

  // Lines for the tooltip of event i on lane li: which collective, and who came last.
  function describe(li, i) {
    const k = byEvent[li] ? byEvent[li].get(i) : undefined;
    if (k === undefined) return [];
    const last = lastOf(k);
    const isLast = last && last[0] === li && last[1] === i;
    return [(isLast ? '\u25b2 last to arrive at ' : 'collective ') + (k + 1) + ' of ' + n + ': ' +
            (isLast ? '' : 'last to arrive ') + 'rank ' + lastRank[k] + ', ' + fmtDuration(spread[k]) +
            ' after the first (' + (first[k + 1] - first[k]) + ' ranks on the page)'];
  }

  // Centres the view on the next (dir 1) or previous (-1) collective's first arrival: after a
  // jump the one after it; else the first that starts after (before) the view's centre. A view
  // far wider than the collective is narrowed so it can be seen.
  function jump(dir) {
    if (!n) return -1;
    const view = env.view;
    let k;
    if (current >= 0 && currentView && currentView.a === view.a && currentView.b === view.b) k = current + dir;
    else {
      const c = (view.a + view.b) / 2;
      k = dir > 0 ? upper(start, c + 0.5, 0, n) : upper(start, c - 0.5, 0, n) - 1;
    }
    k = Math.max(0, Math.min(n - 1, k));
    current = k;
    const span = Math.min(view.b - view.a, Math.max(20 * (end[k] - start[k]), 10000));
    env.setView(start[k] - span / 2, start[k] + span / 2);
    currentView = { a: view.a, b: view.b };
    env.say('collective ' + (k + 1) + ' of ' + n + ': ' + name(k) + ', first arrival ' + env.rel(start[k]) +
            ', last to arrive rank ' + lastRank[k] + ', ' + fmtDuration(spread[k]) + ' after the first (n / p: next / previous)');
    return k;
  }

  return {
    n, draw, describe, jump,
    get current() { return current; },
    list: () => Array.from({ length: n }, (_, k) => ({
      start_ns: start[k], end_ns: end[k], last_rank: lastRank[k], spread_ns: spread[k], last: lastOf(k),
      ranks: first[k + 1] - first[k],
    })),
  };
};
