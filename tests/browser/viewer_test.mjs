// Drives gantt-cli's HTML page in headless chromium (puppeteer-core) and checks it through
// the page's test hook (window.gpuhookViewer) and real input events.
//   node viewer_test.mjs viewer PAGE.html OUT_DIR EXPECT.json   # counts, zoom, pan, search, hover
//   node viewer_test.mjs hostile PAGE.html OUT_DIR EXPECT.json  # names that try to break out
//   node viewer_test.mjs smoke PAGE.html OUT_DIR EXPECT.json    # counts, and no error on input
//   node viewer_test.mjs nvtx PAGE.html OUT_DIR EXPECT.json     # ranges <-> kernels, stats table, flame graph
//   node viewer_test.mjs ranks PAGE.html OUT_DIR EXPECT.json    # collectives' last arrivals, n / p
//   node viewer_test.mjs diff PAGE.html OUT_DIR EXPECT.json     # diff -o x.html: alignment, differential flame graph
//   node viewer_test.mjs calls PAGE.html OUT_DIR EXPECT.json    # host calls on the host lanes
//   node viewer_test.mjs png PAGE.html OUT_DIR EXPECT.json      # a screenshot against render -o x.png
// EXPECT.json comes from `gantt-cli dump` (viewer_test.sh). Prints "ok"/"FAIL" lines; exit 1
// on any failure.
import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { nvtxChecks } from './viewer_nvtx.mjs';
import { rankChecks } from './viewer_ranks.mjs';
import { diffChecks } from './viewer_diff.mjs';
import { callChecks } from './viewer_calls.mjs';
import { pngChecks } from './viewer_png.mjs';
import { foldedChecks } from './viewer_folded.mjs';

const [mode, pagePath, outDir, expectPath] = process.argv.slice(2);
const expect = JSON.parse(fs.readFileSync(expectPath, 'utf8'));
let fails = 0;
function check(ok, what) {
  console.log((ok ? 'ok   ' : 'FAIL ') + what);
  if (!ok) fails++;
}

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  // --no-sandbox: CI containers run as root, where chromium's sandbox cannot start.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--font-render-hinting=none'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 900 });
  const errors = [], dialogs = [], fetched = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('page: ' + e.message));
  page.on('dialog', async (d) => { dialogs.push(d.type() + ': ' + d.message()); await d.dismiss(); });
  page.on('request', (r) => { if (!/^(file|data):/.test(r.url())) fetched.push(r.url()); });
  await page.goto('file://' + path.resolve(pagePath), { waitUntil: 'load' });
  await page.waitForFunction(() => window.gpuhookViewer && window.gpuhookViewer.ready, { timeout: 60000 });
  const V = (fn, ...args) => page.evaluate(fn, ...args);

  const lanes = await V(() => gpuhookViewer.lanes);
  const events = await V(() => gpuhookViewer.events);
  if (expect.lanes !== null && mode !== 'folded') {  // folded: written + folded, viewer_folded.mjs
    check(lanes === expect.lanes, `lanes: the page has ${lanes}, dump says ${expect.lanes}`);
    check(events === expect.events, `events: the page has ${events}, dump says ${expect.events}`);
  }

  // An event dump printed, found on the page by its start: the same stage times to the ns.
  const t0 = BigInt(await V(() => gpuhookViewer.window_start_ns));
  const rel = (abs) => Number(BigInt(abs) - t0);
  let sl, si, ev;
  if (mode === 'viewer' || mode === 'hostile') {
    const s = expect.sample;
    const found = await V((start) => {
      const V = gpuhookViewer;
      const counts = V.laneCounts();
      for (let l = 0; l < counts.length; l++)
        for (let i = 0; i < counts[l]; i++) if (V.event(l, i).start_ns === start) return [l, i, V.event(l, i)];
      return null;
    }, rel(s.start_ns));
    check(found !== null, `the event dump prints at start_ns=${s.start_ns} is on the page`);
    if (!found) throw new Error('no sample event');
    [sl, si, ev] = found;
    check(ev.end_ns === rel(s.end_ns) && ev.queued_ns === rel(s.queued_ns) && ev.submitted_ns === rel(s.submitted_ns),
          `its end, queued and submitted times match dump's (${JSON.stringify(ev)})`);
    check(ev.launch_ns === rel(s.launch_ns), `its launch is its host call's start (${ev.launch_ns} vs ${rel(s.launch_ns)})`);
  }

  if (mode === 'viewer') {
    // Zoomed out on many events: the lanes are drawn from the pyramid, not event by event.
    let st = await V(() => gpuhookViewer.stats());
    check(st.modes.includes('pyramid'), `whole window: lanes drawn as coverage (${[...new Set(st.modes)]})`);

    // Wheel: zoom in around the pointer; the time under it stays under it.
    const plot = await V(() => gpuhookViewer.plot());
    const before = await V(() => gpuhookViewer.view());
    const x = plot.left + 0.3 * (plot.right - plot.left), y = plot.top + 80;
    const tAt = (v) => v.start_ns + ((x - plot.left) / (plot.right - plot.left)) * (v.end_ns - v.start_ns);
    await page.mouse.move(x, y);
    for (let k = 0; k < 8; k++) {
      await page.mouse.wheel({ deltaY: -240 });
      await new Promise((r) => setTimeout(r, 30));
    }
    await V(() => new Promise((r) => requestAnimationFrame(() => r())));
    const zoomed = await V(() => gpuhookViewer.view());
    const span0 = before.end_ns - before.start_ns, span1 = zoomed.end_ns - zoomed.start_ns;
    check(span1 < span0 / 5, `wheel zoomed in: span ${span0.toFixed(0)} -> ${span1.toFixed(0)} ns`);
    check(Math.abs(tAt(zoomed) - tAt(before)) < span1 * 0.01,
          `the time under the pointer stayed there (${tAt(before).toFixed(0)} -> ${tAt(zoomed).toFixed(0)} ns)`);
    check(zoomed.start_ns > before.start_ns && zoomed.end_ns < before.end_ns, 'the new view lies inside the old');

    // Drag: pan right by 200 px; the view moves back in time by 200 px worth.
    await page.mouse.move(x, y);
    await page.mouse.down();
    for (let k = 1; k <= 10; k++) await page.mouse.move(x + 20 * k, y);
    await page.mouse.up();
    await V(() => new Promise((r) => requestAnimationFrame(() => r())));
    const panned = await V(() => gpuhookViewer.view());
    const want = (200 / (plot.right - plot.left)) * span1;
    check(Math.abs(zoomed.start_ns - panned.start_ns - want) < want * 0.02 &&
          Math.abs(panned.end_ns - panned.start_ns - span1) < 1,
          `drag panned by 200 px: ${(zoomed.start_ns - panned.start_ns).toFixed(0)} ns, want ${want.toFixed(0)}`);

    // Shift+drag: measure 300 px of the view; the events starting in it, counted on the page,
    // against a count from the decoded starts.
    await page.keyboard.down('Shift');
    await page.mouse.move(x, y);
    await page.mouse.down();
    for (let k = 1; k <= 10; k++) await page.mouse.move(x + 30 * k, y);
    await page.mouse.up();
    await page.keyboard.up('Shift');
    const m = await V(() => gpuhookViewer.measure());
    const spanPx = (m ? m.end_ns - m.start_ns : 0) * (plot.right - plot.left) / span1;
    const startsIn = await V((a, b) => {
      let n = 0;
      const counts = gpuhookViewer.laneCounts();
      for (let l = 0; l < counts.length; l++)
        for (let i = 0; i < counts[l]; i++) { const t = gpuhookViewer.event(l, i).start_ns; if (t >= a && t <= b) n++; }
      return n;
    }, m ? m.start_ns : 0, m ? m.end_ns : 0);
    check(m && Math.abs(spanPx - 300) < 2 && m.events === startsIn && m.events > 0,
          `shift+drag measured ${spanPx.toFixed(1)} px with ${m && m.events} events starting in it (counted: ${startsIn})`);
    const still = await V(() => gpuhookViewer.view());
    check(still.start_ns === panned.start_ns, 'measuring did not pan');

    // Zoomed in on the sample event: it is drawn on its own; hover shows every stage.
    await V((a, b) => gpuhookViewer.setView(a, b), ev.start_ns - 20000, ev.end_ns + 20000);
    const pt = await V((l, i) => gpuhookViewer.eventPoint(l, i), sl, si);
    st = await V(() => gpuhookViewer.stats());
    check(st.modes[sl] === 'events' && st.individual > 0, `zoomed in: its lane is drawn event by event (${st.individual} events)`);
    await page.mouse.move(pt.x, pt.y);
    const tipText = await V(() => gpuhookViewer.tooltip());
    for (const stage of ['launch +', 'queued +', 'submitted +', 'start +', 'end +', 'exec ', 'host call: cudaLaunchKernel'])
      check(tipText.includes(stage), `tooltip has "${stage}"`);
    check(tipText.split('\n')[0] === ev.name && ev.name.includes(expect.search),
          `tooltip names the kernel (${JSON.stringify(tipText.split('\n')[0].slice(0, 60))})`);
    await page.mouse.click(pt.x, pt.y);
    const sel = await V(() => gpuhookViewer.selected());
    check(sel && sel.lane === sl && sel.index === si, `click selected it (${JSON.stringify(sel && [sel.lane, sel.index])})`);

    // Search through the box, as a person types it.
    await V(() => gpuhookViewer.setView(0, gpuhookViewer.span_ns));
    await page.click('#search');
    await page.keyboard.type(expect.search);
    const shown = await page.$eval('#matches', (e) => e.textContent);
    const n = await V(() => gpuhookViewer.matches());
    check(n === expect.search_count && shown.startsWith(String(n)),
          `search "${expect.search}": ${n} highlighted ("${shown}"), dump has ${expect.search_count}`);

    // Frame cost at the whole window with the search on (a sanity bound, not a benchmark).
    const ms = await V(() => gpuhookViewer.draw());
    check(ms < 2000, `a frame of the whole window took ${ms.toFixed(1)} ms`);
    await page.screenshot({ path: path.join(outDir, 'viewer.png') });
  } else if (mode === 'png') {
    const X = expect.png;
    await pngChecks(page, V, { png: fs.readFileSync(X.path).toString('base64'), lanes: X.lanes }, check, X.tolerance);
    await page.screenshot({ path: path.join(outDir, 'png-' + path.basename(pagePath, '.html') + '.png') });
  } else if (mode === 'folded') {
    await foldedChecks(page, V, expect, check);
    await page.screenshot({ path: path.join(outDir, 'folded.png') });
  } else if (mode === 'calls') {
    await callChecks(page, V, expect.host, rel, check);
    await page.screenshot({ path: path.join(outDir, 'calls.png') });
  } else if (mode === 'nvtx') {
    await nvtxChecks(page, V, expect.nvtx, rel, check);
    await callChecks(page, V, expect.host, rel, check);
    await page.screenshot({ path: path.join(outDir, "nvtx.png") });
  } else if (mode === 'diff' || mode === 'diff-hostile') {
    await diffChecks(page, V, expect.diff, check);
    if (mode === 'diff-hostile') {
      const scripts = await page.$$eval('script', (l) => l.length);
      const injected = await page.$$eval('body img, body iframe, body svg', (l) => l.length);
      check(scripts === 2 && injected === 0, `the document has only its own 2 scripts (${scripts}) and no injected elements (${injected})`);
      const paths = (await V(() => gpuhookViewer.flameFrames())).map((f) => f.path);
      check(paths.includes(expect.sample_display), `the flame graph shows ${JSON.stringify(expect.sample_display)} as a frame`);
    }
    await page.screenshot({ path: path.join(outDir, mode + '.png') });
  } else if (mode === 'ranks') {
    await rankChecks(page, V, expect.ranks, check);
    await page.screenshot({ path: path.join(outDir, 'ranks.png') });
  } else if (mode === 'smoke') {
    // Whatever the capture (empty, several ranks, other lane groupings): zoom, pan and hover
    // across the chart raise no error.
    const plot = await V(() => gpuhookViewer.plot());
    const x = (plot.left + plot.right) / 2;
    for (const y of [plot.top + 60, plot.top + 120, plot.top + 200]) {
      await page.mouse.move(x, y);
      await page.mouse.wheel({ deltaY: -500 });
      await page.mouse.down();
      await page.mouse.move(x + 50, y + 10);
      await page.mouse.up();
    }
    await V(() => gpuhookViewer.setView(0, gpuhookViewer.span_ns));
    await page.screenshot({ path: path.join(outDir, `smoke-${path.basename(pagePath, '.html')}.png`) });
  } else {
    check(dialogs.length === 0, `no dialog opened (${dialogs.join('; ')})`);
    const scripts = await page.$$eval('script', (l) => l.length);
    const injected = await page.$$eval('body img, body iframe, body svg', (l) => l.length);
    check(scripts === 2 && injected === 0, `the document has only its own 2 scripts (${scripts}) and no injected elements (${injected})`);
    const n = await V(() => gpuhookViewer.search('alert\\(1\\)'));
    check(n === expect.search_count, `the names are data: search finds ${n} events named with alert(1), dump has ${expect.search_count}`);
    await V((a, b) => gpuhookViewer.setView(a, b), ev.start_ns - 2000, ev.end_ns + 2000);
    const pt = await V((l, i) => gpuhookViewer.eventPoint(l, i), sl, si);
    await page.mouse.move(pt.x, pt.y);
    const tipText = await V(() => gpuhookViewer.tooltip());
    check(tipText.split('\n')[0] === expect.sample_display, `the tooltip shows the name as text: ${JSON.stringify(tipText.split('\n')[0])}`);
    await page.screenshot({ path: path.join(outDir, 'hostile.png') });
  }
  check(errors.length === 0, `no console or page errors (${errors.join('; ')})`);
  check(dialogs.length === 0, 'no dialogs');
  check(fetched.length === 0, `nothing fetched from the network (${fetched.join(' ')})`);
} catch (e) {
  check(false, 'the test ran to its end: ' + (e && e.stack ? e.stack : e));
} finally {
  await browser.close();
}
process.exit(fails ? 1 : 0);
