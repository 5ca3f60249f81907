// The page's NVTX linkage, stats table, flame graph and memory strip, checked against figures computed from
// `gantt-cli dump`'s raw push/pop records (expect_nvtx.py), through real clicks where a
// person would click. `rel` maps dump's absolute ns to the page's (from the window start).
export async function nvtxChecks(page, V, X, rel, check) {
  const ranges = await V(() => gpuhookViewer.ranges);
  const hostLanes = await V(() => gpuhookViewer.hostLanes());
  check(ranges === X.ranges, `ranges: the page has ${ranges}, dump's push/pop records make ${X.ranges}`);
  check(hostLanes.length === X.threads, `host thread lanes: ${hostLanes.length} (${hostLanes}), dump has ranges on ${X.threads} threads`);

  // Select one range occurrence by clicking its bar: the GPU events launched in it (or in a
  // range nested in it) light up, as many as dump's launches inside it.
  const r = await V((start, p) => {
    for (let r = 0; r < gpuhookViewer.ranges; r++) {
      const g = gpuhookViewer.range(r);
      if (g.start_ns === start && g.path === p) return r;
    }
    return -1;
  }, rel(X.picked.start), X.picked.path);
  check(r >= 0, `the range dump opens at ${X.picked.start} (${X.picked.path}) is on the page`);
  const g = await V((r) => gpuhookViewer.range(r), r);
  await V((a, b) => gpuhookViewer.setView(a, b), g.start_ns - 2000, g.end_ns + 2000);
  const rp = await V((r) => gpuhookViewer.rangePoint(r), r);
  await page.mouse.move(rp.x, rp.y);
  const rangeTip = await V(() => gpuhookViewer.tooltip());
  check(rangeTip.startsWith('NVTX range ' + X.picked.path), `hovering the range names its path (${JSON.stringify(rangeTip.split('\n')[0])})`);
  await page.mouse.click(rp.x, rp.y);
  const picked = await V(() => gpuhookViewer.selectedRange());
  const lit = await V(() => gpuhookViewer.litEvents());
  check(picked === r, `clicking the bar selected the range (${picked}, want ${r})`);
  check(lit === X.picked.launched && lit > 0, `it lights up ${lit} GPU events; dump has ${X.picked.launched} launched inside it`);
  const text = await V(() => gpuhookViewer.selectionText());
  check(text.includes(lit + ' GPU events launched in it'), `the selection panel says so (${JSON.stringify(text.split('\n').pop())})`);

  // Select a kernel launched in a nested range: the panel shows the range path dump gives.
  const hit = await V((start) => {
    const V = gpuhookViewer, counts = V.laneCounts();
    for (let l = 0; l < counts.length; l++)
      for (let i = 0; i < counts[l]; i++) if (V.event(l, i).start_ns === start) return [l, i, V.event(l, i).name];
    return null;
  }, rel(X.sample.start));
  check(hit && hit[2] === X.sample.name, `the ${X.sample.name} dump has at ${X.sample.start} is on the page (${hit && hit[2]})`);
  if (hit) {
    const ev = await V((l, i) => gpuhookViewer.event(l, i), hit[0], hit[1]);
    await V((a, b) => gpuhookViewer.setView(a, b), ev.start_ns - 5000, ev.end_ns + 5000);
    const pt = await V((l, i) => gpuhookViewer.eventPoint(l, i), hit[0], hit[1]);
    await page.mouse.click(pt.x, pt.y);
    const sel = await V(() => gpuhookViewer.selectionText());
    check(sel.includes('launched in NVTX range ' + X.sample.path + '\n') || sel.endsWith('launched in NVTX range ' + X.sample.path),
          `selecting it shows the range path ${X.sample.path} (${JSON.stringify(sel.split('\n').find((l) => l.includes('NVTX')))})`);
    check((await V(() => gpuhookViewer.selectedRange())) === -1, 'selecting a kernel drops the range selection');
    const marked = await V(() => { const r = gpuhookViewer.markedRange(); return r < 0 ? null : gpuhookViewer.range(r).path; });
    check(marked === X.sample.path, `and outlines the range it was launched in on the host lane (${marked})`);
  }

  // The stats table of a measured span (the top-level range around the picked one): per
  // name, the count and total exec time of the events starting in it, as dump's records sum.
  await V(() => gpuhookViewer.setView(0, gpuhookViewer.span_ns));
  await V((a, b) => gpuhookViewer.setMeasure(a, b), rel(X.span.start), rel(X.span.end));
  const rows = await V(() => gpuhookViewer.statsRows());
  const count = rows.reduce((s, r) => s + r.count, 0);
  check(count === X.span.events, `stats table: ${count} events start in the span; dump has ${X.span.events}`);
  for (const [name, want] of Object.entries(X.span.stats)) {
    const row = rows.find((r) => r.name === name);
    check(row && row.count === want.count && row.total_ns === want.total_ns && Math.abs(row.mean_ns - want.total_ns / want.count) < 1e-6,
          `stats table ${name}: ${row && row.count} events, ${row && row.total_ns} ns; dump: ${want.count}, ${want.total_ns} ns`);
  }
  const shares = rows.reduce((s, r) => s + r.share, 0);
  check(Math.abs(shares - 1) < 1e-9, `the shares add up to 1 (${shares})`);
  const cells = await page.$$eval('#stats tr', (l) => l.length);
  check(cells === rows.length + 1, `the table shows ${cells - 1} rows for ${rows.length} names`);

  // The flame graph of the same span: each frame's GPU time, range path -> kernel name.
  const frames = await V(() => gpuhookViewer.flameFrames());
  const byPath = new Map(frames.map((f) => [f.path, f]));
  check(byPath.get('') && byPath.get('').ns === X.span.all_ns, `flame graph: all ${byPath.get('') && byPath.get('').ns} ns, dump ${X.span.all_ns}`);
  for (const [p, ns] of Object.entries(X.span.flame))
    check(byPath.get(p) && byPath.get(p).ns === ns, `flame frame ${p}: ${byPath.get(p) && byPath.get(p).ns} ns, dump ${ns}`);

  // Search: the matching frames are marked in the flame graph, the events in the chart.
  await V(() => gpuhookViewer.search('relu'));
  const marked = (await V(() => gpuhookViewer.flameFrames())).filter((f) => f.match).map((f) => f.path).sort();
  const want = Object.keys(X.span.flame).filter((p) => /relu/i.test(p.split('/').pop())).sort();
  check(JSON.stringify(marked) === JSON.stringify(want), `search relu marks frames ${marked}; want ${want}`);
  check((await V(() => gpuhookViewer.matches())) === X.relu_events, `and ${X.relu_events} relu events in the chart`);
  await V(() => gpuhookViewer.search(''));

  // Click-to-zoom: a frame fills the graph; its top frame zooms back out.
  const zp = await V((p) => gpuhookViewer.flamePoint(p), X.zoom_into);
  check(zp !== null, `the frame ${X.zoom_into} is drawn`);
  if (zp) {
    await page.mouse.click(zp.x, zp.y);
    const z = await V(() => gpuhookViewer.flameZoom());
    const top = (await V(() => gpuhookViewer.flameFrames()))[0];
    const width = await page.$eval('#flame', (e) => e.clientWidth);
    check(z === X.zoom_into && top.path === X.zoom_into && top.w === width,
          `clicking it zoomed in: top frame ${top.path} across ${top.w} of ${width} px`);
    const out = await V(() => gpuhookViewer.flamePoint(gpuhookViewer.flameZoom()));
    await page.mouse.click(out.x, out.y);
    const z2 = await V(() => gpuhookViewer.flameZoom());
    check(z2 === X.zoom_into.split('/').slice(0, -1).join('/'), `clicking the top frame zoomed out a level (to "${z2}")`);
  }

  // The memory strip (render --memory-strip): the peak, and the bytes in use right after each
  // allocation and free dump records, to the byte; hovering it says so.
  const mem = await V(() => gpuhookViewer.memory(0));
  check(mem && mem.peak_bytes === X.memory_peak, `memory strip: peak ${mem && mem.peak_bytes} bytes, dump ${X.memory_peak}`);
  let wrong = 0;
  for (const [t, bytes] of X.memory) if ((await V((t) => gpuhookViewer.memoryAt(0, t), rel(t))) !== bytes) wrong++;
  check(X.memory.length > 0 && wrong === 0, `memory in use after each of dump's ${X.memory.length} allocations and frees: ${wrong} differ`);
  await V(() => gpuhookViewer.setView(0, gpuhookViewer.span_ns));
  const [tPeak] = X.memory.find(([, b]) => b === X.memory_peak);
  const mp = await V((t) => gpuhookViewer.memoryPoint(0, t + 1), rel(tPeak));
  await page.mouse.move(mp.x, mp.y);
  const memTip = await V(() => gpuhookViewer.tooltip());
  check(/^memory in use at .*: 70\.0 MiB/.test(memTip) && X.memory_peak === 70 << 20, `hovering the strip at the peak: ${JSON.stringify(memTip)}`);
}
