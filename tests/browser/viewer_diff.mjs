// The page of `gantt-cli diff A B -o x.html`: both runs' lanes, aligned on a range occurrence,
// and the differential flame graph, checked against `gantt-cli diff --format json` (X.report)
// and dump's counts; with hostile names, that they stay text.
export async function diffChecks(page, V, X, check) {
  const labels = await V(() => gpuhookViewer.sectionLabels());
  const half = labels.length / 2;
  check(labels.length === 2 * X.sections_per_run && labels.slice(0, half).every((l) => l.startsWith('base \u00b7 ')) &&
        labels.slice(half).every((l) => l.startsWith('new \u00b7 ')), `lanes of the base, then of the new run: ${JSON.stringify(labels)}`);

  if (X.align) {
    // The occurrence both runs are aligned on starts at the same page time in both: the axis' origin.
    const [name, k] = X.align.split('@');
    const starts = await V((name, k) => {
      const V = gpuhookViewer, out = [];
      for (let lane = 0; lane < V.hostLanes().length; lane++) {
        const hits = [];
        for (let r = 0; r < V.ranges; r++) { const g = V.range(r); if (g.lane === lane && g.path === name) hits.push(g.start_ns); }
        out.push(hits[k - 1]);
      }
      return out;
    }, name, Number(k));
    const origin = await V(() => gpuhookViewer.origin_ns);
    check(starts.length === 2 && starts.every((t) => t === origin),
          `${X.align} starts at the axis' origin in both runs (${starts} vs ${origin})`);
    const v = await V(() => gpuhookViewer.view());
    check(v.start_ns <= origin && v.start_ns > origin - (v.end_ns - v.start_ns) * 0.1,
          `the page opens on it (${v.start_ns.toFixed(0)} \u2026 ${v.end_ns.toFixed(0)} ns)`);
  }

  // The differential flame graph: every kernel diff reports, with both runs' total exec time.
  const frames = await V(() => gpuhookViewer.flameFrames());
  const byPath = new Map(frames.map((f) => [f.path, f]));
  let slower = null;
  // Frame names are cleaned for display as analysis/flame.cpp does (printable_utf8, ';' -> ':').
  const clean = (n) => n.replace(/;/g, ':').replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
  for (const k of X.report.kernels) {
    const p = (k.range ? k.range + '/' : '') + clean(k.name);
    const f = byPath.get(p);
    check(f && f.base_ns === k.total_ns[0] && f.ns === k.total_ns[1],
          `flame frame ${JSON.stringify(p)}: ${f && f.base_ns} -> ${f && f.ns} ns; diff --format json: ${k.total_ns.join(' -> ')}`);
    if (f && k.verdict === 'regression') slower = f;
  }
  if (X.slower) {
    check(slower !== null, 'diff reports a regression and its frame is drawn');
    if (slower) {
      const [r, , b] = slower.colour.match(/\d+/g).map(Number);
      check(r > 200 && b < r - 60, `the slower kernel's frame is red (${slower.colour})`);
      const unchanged = frames.find((f) => f.path.endsWith(X.unchanged));
      const [ur, ug, ub] = unchanged.colour.match(/\d+/g).map(Number);
      check(Math.min(ur, ug, ub) > 215, `an unchanged one stays pale (${unchanged.colour})`);
      const pt = await V((p) => gpuhookViewer.flamePoint(p), slower.path);
      await page.mouse.move(pt.x, pt.y);
      const tip = await V(() => gpuhookViewer.flameTooltip());
      const fmt = (ns) => (ns / 1000).toFixed(ns >= 100000 ? 0 : 1) + ' us';
      check(tip.includes('base ' + fmt(slower.base_ns)) && tip.includes('new ' + fmt(slower.ns)) && tip.includes('+'),
            `hovering it gives both times: ${JSON.stringify(tip)}`);
    }
  }
}
