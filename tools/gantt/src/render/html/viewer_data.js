// The data block's formats, as tools/gantt/src/render/html_data.cpp writes them: base64,
// the level-of-detail pyramids, the events' varint runs; the binary searches over them, and
// the time formats. No drawing here: viewer.js draws.
'use strict';
const viewerData = (function () {
  function b64bytes(s) {
    const bin = atob(s);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  // A pyramid: levels finest first, each half the buckets of the one before.
  function pyramid(b64, buckets, bucketNs) {
    const bytes = b64bytes(b64);
    const levels = [];
    let off = 0, n = buckets, w = bucketNs;
    while (off + n <= bytes.length && n >= 1) {
      levels.push({ v: bytes.subarray(off, off + n), n: n, w: w });
      off += n;
      n >>= 1;
      w *= 2;
    }
    return levels;
  }
  // The fields of one event, in the order html_data.cpp writes them: start delta (zigzag),
  // duration, overlap row, label, queued/submitted/launch as zigzag(start - t) + 1 (0 = unknown),
  // host call (0 = none) and, with one, its duration; where the page has NVTX ranges, the
  // innermost one the launch was made in (page index + 1, 0 = none), as a zigzag delta from
  // the event before's.
  function decodeEvents(packed, n, hasRanges) {
    const b = b64bytes(packed);
    let p = 0;
    function rd() {
      let v = 0, mul = 1, c;
      do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128);
      return v;
    }
    const unzig = (z) => (z % 2 === 1 ? -(z + 1) / 2 : z / 2);
    const ev = {
      start: new Float64Array(n), end: new Float64Array(n), runEnd: new Float64Array(n),
      queued: new Float64Array(n), submitted: new Float64Array(n), launch: new Float64Array(n),
      row: new Uint8Array(n), label: new Uint32Array(n), call: new Uint32Array(n), callNs: new Float64Array(n),
      range: hasRanges ? new Uint32Array(n) : null,
    };
    let t = 0, maxEnd = -Infinity, range = 0;
    for (let i = 0; i < n; i++) {
      t += unzig(rd());
      ev.start[i] = t;
      ev.end[i] = t + rd();
      maxEnd = Math.max(maxEnd, ev.end[i]);
      ev.runEnd[i] = maxEnd;
      ev.row[i] = rd();
      ev.label[i] = rd();
      for (const col of [ev.queued, ev.submitted, ev.launch]) {
        const z = rd();
        col[i] = z === 0 ? NaN : t - unzig(z - 1);
      }
      const c = rd();
      ev.call[i] = c;
      ev.callNs[i] = c ? rd() : NaN;
      if (hasRanges) ev.range[i] = (range += unzig(rd()));
    }
    return ev;
  }
  // A device's memory in use (html_data.cpp): per change, time delta (zigzag) and bytes after
  // it. `at(t)`: the bytes in use at t (0 before the first change).
  function decodeMemory(m) {
    const b = b64bytes(m.steps);
    let p = 0;
    const rd = () => { let v = 0, mul = 1, c; do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128); return v; };
    const t = new Float64Array(m.n), bytes = new Float64Array(m.n);
    let at = 0;
    for (let i = 0; i < m.n; i++) {
      const z = rd();
      at += z % 2 === 1 ? -(z + 1) / 2 : z / 2;
      t[i] = at;
      bytes[i] = rd();
    }
    return { n: m.n, t, bytes, peak: m.peak_bytes, label: m.label,
             at: (x) => { const i = upper(t, x, 0, m.n) - 1; return i < 0 ? 0 : bytes[i]; } };
  }
  // First index whose value is > x (arr ascending).
  function upper(arr, x, lo, hi) {
    while (lo < hi) { const m = (lo + hi) >> 1; if (arr[m] > x) hi = m; else lo = m + 1; }
    return lo;
  }
  // Events that meet [a, b): their running end passes a, their start is before b.
  function inView(ev, a, b) {
    const n = ev.start.length;
    return [upper(ev.runEnd, a, 0, n), upper(ev.start, b - 1e-9, 0, n)];
  }

  function addSpan(cols, x0, x1, weight) {
    const n = cols.length;
    if (x1 <= 0 || x0 >= n) return;
    x0 = Math.max(0, x0); x1 = Math.min(n, x1);
    const c0 = Math.floor(x0), c1 = Math.floor(x1);
    if (c0 === c1) { cols[c0] += (x1 - x0) * weight; return; }
    cols[c0] += (c0 + 1 - x0) * weight;
    for (let c = c0 + 1; c < c1 && c < n; c++) cols[c] += weight;
    if (c1 < n) cols[c1] += (x1 - c1) * weight;
  }
  function fmtDuration(ns) {
    const a = Math.abs(ns);
    let v = ns, unit = 'ns';
    if (a >= 1e9) { v = ns / 1e9; unit = 's'; } else if (a >= 1e6) { v = ns / 1e6; unit = 'ms'; } else if (a >= 1e3) { v = ns / 1e3; unit = 'us'; }
    if (unit === 'ns') return Math.round(ns) + ' ns';
    const av = Math.abs(v);
    return v.toFixed(av >= 100 ? 0 : av >= 10 ? 1 : 2) + ' ' + unit;
  }
  // A time `d` ns from the origin, in the unit of its size with decimals down to
  // `resolution` ns: the tooltips give every ns (1), the ruler as many digits as its step needs.
  function fmtTime(d, resolution = 1) {
    if (Number.isNaN(d)) return '?';
    const a = Math.abs(d);
    const unit = a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1;
    const name = { 1e9: 's', 1e6: 'ms', 1e3: 'us', 1: 'ns' }[unit];
    const decimals = Math.max(0, Math.min(9, Math.ceil(Math.log10(unit / resolution) - 1e-9)));
    return (d >= 0 ? '+' : '') + (d / unit).toFixed(decimals) + ' ' + name;
  }

  // A scanned page's folded events per finest bucket of a lane ("fold_n": a varint each), as a
  // running sum of n + 1 entries: the count over buckets [b0, b1) is sum[b1] - sum[b0].
  function decodeCounts(b64, n) {
    const b = b64bytes(b64);
    const sum = new Float64Array(n + 1);
    let p = 0;
    for (let i = 0; i < n; i++) {
      let v = 0, mul = 1, c;
      do { c = b[p++]; v += (c & 127) * mul; mul *= 128; } while (c & 128);
      sum[i + 1] = sum[i] + v;
    }
    return sum;
  }
  return { b64bytes, pyramid, decodeEvents, decodeMemory, decodeCounts, upper, inView, addSpan, fmtDuration, fmtTime };
})();
