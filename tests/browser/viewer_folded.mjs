// A scanned page (render --page-events N of a capture with more events): the N widest events
// written one by one, every other one folded into its lane's coverage, and the page naming
// the folded ones where it draws the written ones. X (from dump): events, lanes, and
// widest.nth_ns, the width of the N-th widest event.
export async function foldedChecks(page, V, X, check) {
  const written = await V(() => gpuhookViewer.events);
  const folded = await V(() => gpuhookViewer.laneFolded());
  const lanes = await V(() => gpuhookViewer.lanes);
  const total = folded.reduce((a, b) => a + b, 0);
  check(lanes === X.lanes, `lanes: the page has ${lanes}, dump says ${X.lanes}`);
  check(written === X.widest.n, `the page writes ${written} events one by one, --page-events says ${X.widest.n}`);
  check(written + total === X.events, `written ${written} + folded ${total} = dump's ${X.events} events`);
  // The written ones are the widest: none narrower than dump's N-th widest.
  const narrowest = await V(() => {
    const G = gpuhookViewer, counts = G.laneCounts();
    let min = Infinity;
    for (let l = 0; l < counts.length; l++)
      for (let i = 0; i < counts[l]; i++) { const e = G.event(l, i); min = Math.min(min, e.end_ns - e.start_ns); }
    return min;
  });
  check(narrowest >= X.widest.nth_ns, `the narrowest written event (${narrowest} ns) is at least dump's ${X.widest.n}-th widest (${X.widest.nth_ns} ns)`);
  const footer = await page.$eval('#footer', (f) => f.textContent);
  check(footer.includes(`${total} folded into the lanes' coverage`), `the footer says how many are folded (${JSON.stringify(footer.slice(0, 300))})`);

  // Zoomed in on the busiest lane until its written events are drawn one by one: the folded
  // ones there are named, on the lane and in the tooltip over them.
  const li = folded.indexOf(Math.max(...folded));
  const span = await V(() => gpuhookViewer.span_ns);
  const a = span * 0.5, b = a + span / 400;
  await V((a, b) => gpuhookViewer.setView(a, b), a, b);
  const modes = (await V(() => gpuhookViewer.stats())).modes;
  check(modes[li] === 'events', `zoomed to ${span / 400} ns, lane ${li} is drawn event by event (${modes[li]})`);
  const note = await V((li, a, b) => gpuhookViewer.foldNote(li, a, b), li, a, b);
  const n = Number((note.match(/: ([\d,]+) events folded into coverage here/) || [, '0'])[1].replace(/,/g, ''));
  check(n > 0 && n <= folded[li], `the view's folded events are counted: ${n} of the lane's ${folded[li]} (${JSON.stringify(note)})`);
  // Hover along the lane: where no written event is under the pointer, the tooltip names the
  // folded ones and says how to get them one by one.
  const plot = await V(() => gpuhookViewer.plot());
  let tip = '';
  for (let k = 1; k < 200 && !tip.includes('folded into coverage here'); k++) {
    const p = await V((li, t) => gpuhookViewer.lanePoint(li, t), li, a + (b - a) * k / 200);
    if (p.x <= plot.left || p.x >= plot.right) continue;
    await page.mouse.move(p.x, p.y);
    tip = await V(() => gpuhookViewer.tooltip());
  }
  check(/[\d,]+ events folded into coverage here .*--from\/--to for them one by one/.test(tip),
        `hovering the lane between written events names the folded ones: ${JSON.stringify(tip)}`);
  // The stats table counts the written events and says the folded ones are not.
  const caption = await V(() => { gpuhookViewer.statsRows(); return document.querySelector('#stats caption').textContent; });
  check(/more folded into coverage are not counted here/.test(caption), `the stats table says what it leaves out: ${JSON.stringify(caption)}`);
  // Where a lane has nothing folded, nothing is said.
  const quiet = folded.indexOf(0);
  if (quiet >= 0) check((await V((li) => gpuhookViewer.foldNote(li, 0, gpuhookViewer.span_ns), quiet)) === '', `lane ${quiet}, none folded, says nothing`);
  await V(() => gpuhookViewer.setView(0, gpuhookViewer.span_ns));
}
