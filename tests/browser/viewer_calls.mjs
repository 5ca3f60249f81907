// The host calls on the page's host thread lanes against `gantt-cli dump`'s api records (X.calls:
// [thread id, start, end, name], absolute ns): per thread, as many as dump has in the page's
// window, each at its start with its duration; hovering one names it, blocking ones say so.
export async function callChecks(page, V, X, rel, check) {
  const span = await V(() => gpuhookViewer.span_ns);
  const labels = await V(() => gpuhookViewer.hostLanes());
  for (const [tid, want] of Object.entries(X.calls)) {
    const li = labels.findIndex((l) => l === 'tid ' + tid || l.startsWith('tid ' + tid + ' '));
    check(li >= 0, `thread ${tid} has a host lane (${labels})`);
    if (li < 0) continue;
    const inWindow = want.filter(([s, e]) => rel(s) <= span && rel(e || s) >= 0).map(([s, e, n]) => [rel(s), rel(e) - rel(s), n]);
    const got = await V((li) => Array.from({ length: gpuhookViewer.hostCalls(li) }, (_, k) => gpuhookViewer.hostCall(li, k)), li);
    check(got.length === inWindow.length && got.length > 0,
          `tid ${tid}: ${got.length} host calls on its lane, dump has ${inWindow.length} in the window`);
    const key = (s, d, n) => s + ':' + d + ':' + n;
    const gotKeys = new Set(got.map((c) => key(c.start_ns, c.dur_ns, c.name.split(',')[0])));
    const missing = inWindow.filter(([s, d, n]) => !gotKeys.has(key(s, d, n)));
    check(missing.length === 0, `each at dump's start with dump's duration and name (${missing.length} differ: ${JSON.stringify(missing.slice(0, 3))})`);
    // Hover a blocking call and a launch.
    for (const which of ['blocking', 'launched']) {
      const k = got.findIndex((c) => c[which]);
      const expected = which === 'launched' || inWindow.some(([, , n]) => /Synchronize/.test(n));
      if (k < 0) { check(!expected, `tid ${tid} has a ${which} call`); continue; }
      const c = got[k];
      await V((a, b) => gpuhookViewer.setView(a, b), c.start_ns - 3 * c.dur_ns - 500, c.start_ns + 4 * c.dur_ns + 500);
      const pt = await V((li, k) => gpuhookViewer.callPoint(li, k), li, k);
      await page.mouse.move(pt.x, pt.y);
      const tip = await V(() => gpuhookViewer.tooltip());
      check(tip.startsWith(c.name) && (which !== 'blocking' || tip.includes('(host blocked)')) &&
            (which !== 'launched' || tip.includes('launched GPU work')),
            `hovering a ${which} call: ${JSON.stringify(tip)}`);
    }
  }
  await V(() => gpuhookViewer.setView(0, gpuhookViewer.span_ns));
}
