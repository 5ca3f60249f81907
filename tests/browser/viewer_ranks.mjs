// A page of several ranks: the collectives' last arrivals against the SVG chart of the same
// captures (render -o x.svg outlines each one's last to arrive, "last to arrive: rank R"), and
// n / p centring the view on the next / previous collective, pressed as a person presses them.
export async function rankChecks(page, V, X, check) {
  const list = await V(() => gpuhookViewer.collectives());
  const ranks = list.map((c) => c.last_rank);
  check(list.length === X.last_ranks.length && list.length > 0,
        `collectives: the page has ${list.length}, the SVG chart outlines ${X.last_ranks.length} last arrivals`);
  // A diff page holds both runs' collectives in page time order, the SVG each run's in turn.
  const order = (r) => (X.any_order ? [...r].sort((a, b) => a - b) : r);
  check(JSON.stringify(order(ranks)) === JSON.stringify(order(X.last_ranks)),
        `the last to arrive of each${X.any_order ? '' : ', in order,'} is the SVG's (${ranks.join(',')} vs ${X.last_ranks.join(',')})`);
  check(list.every((c, k) => k === 0 || c.start_ns >= list[k - 1].start_ns), 'they are in page time order');
  check(list.every((c) => c.last && c.ranks === X.ranks), `each joins its ${X.ranks} ranks' kernels and outlines one of them`);

  // The NCCL calls on the host lanes (one thread per rank): as many as dump's nccl records.
  if (X.nccl) {
    const got = await V(() => gpuhookViewer.hostLanes().map((_, li) => gpuhookViewer.hostNccl(li)));
    check(JSON.stringify(got) === JSON.stringify(X.nccl), `NCCL calls per host lane: ${got}; dump: ${X.nccl}`);
    const c = await V(() => gpuhookViewer.hostNcclCall(0, 0));
    await V((a, b) => gpuhookViewer.setView(a, b), c.start_ns - 2 * c.dur_ns, c.start_ns + 3 * c.dur_ns);
    const p = await V(() => gpuhookViewer.callPoint(0, 0, true));
    await page.mouse.move(p.x, p.y);
    const tip = await V(() => gpuhookViewer.tooltip());
    check(tip.startsWith(c.name + ' 4.0 MiB rank ') && tip.includes('NCCL call on the host'), `hovering one: ${JSON.stringify(tip)}`);
  }

  // The last arriver's kernel: its tooltip says so.
  const c0 = list[0];
  await V((a, b) => gpuhookViewer.setView(a, b), c0.start_ns - 20000, c0.end_ns + 20000);
  const pt = await V((l, i) => gpuhookViewer.eventPoint(l, i), c0.last[0], c0.last[1]);
  await page.mouse.move(pt.x, pt.y);
  const tip = await V(() => gpuhookViewer.tooltip());
  check(tip.includes('\u25b2 last to arrive at 1 of ' + list.length + ': rank ' + c0.last_rank),
        `hovering it: ${JSON.stringify(tip.split('\n').find((l) => l.includes('arrive')))}`);

  // n from a view at the start: the first collective after the view's centre comes to the
  // centre; n again the one after it; p back.
  const span = Math.max(50000, (list[1].start_ns - list[0].start_ns) / 4);
  await V((a, b) => gpuhookViewer.setView(a, b), 0, span);
  const centre = (v) => (v.start_ns + v.end_ns) / 2;
  const c = centre(await V(() => gpuhookViewer.view()));
  let want = list.findIndex((x) => x.start_ns > c + 0.5);
  await page.mouse.move(pt.x, 5);
  const keys = [['n', 0], ['n', 1], ['p', 0]];
  for (const [key, step] of keys) {
    await page.keyboard.press(key);
    const v = await V(() => gpuhookViewer.view());
    const k = await V(() => gpuhookViewer.currentCollective());
    const target = list[want + step].start_ns;
    check(k === want + step && Math.abs(centre(v) - target) <= 1 && v.end_ns - v.start_ns <= span,
          `key ${key}: collective ${k + 1} (want ${want + step + 1}) at the centre: ${centre(v).toFixed(0)} ns vs its start ${target}`);
  }
  const text = await V(() => gpuhookViewer.selectionText());
  check(text.startsWith('collective ' + (want + 1) + ' of ' + list.length) && text.includes('last to arrive rank ' + list[want].last_rank),
        `the panel names it: ${JSON.stringify(text.slice(0, 90))}`);
  // The button does what n does.
  await page.click('#coll-next');
  check((await V(() => gpuhookViewer.currentCollective())) === want + 1, 'the "collective \u25b6" button moved to the next');
}
