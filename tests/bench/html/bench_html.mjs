// Opens a gantt-cli HTML page in headless chromium and measures it: time to first paint (from
// navigation start to the viewer's first frame), time until every event is decoded, and the
// frame times while zooming in and out around the middle by wheel events.
//   node bench_html.mjs PAGE.html   # prints one JSON object
// Resolves puppeteer-core from tests/browser/node_modules (scripts/setup.sh).
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../../browser/package.json'));
const puppeteer = (await import(require.resolve('puppeteer-core'))).default;

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1600, height: 900 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto('file://' + path.resolve(process.argv[2]), { waitUntil: 'load', timeout: 120000 });
  await page.waitForFunction(() => window.gpuhookViewer && window.gpuhookViewer.ready, { timeout: 120000, polling: 50 });
  const first = await page.evaluate(() => ({ paint: gpuhookViewer.stats().firstPaintMs, ready: gpuhookViewer.readyMs,
                                             host_calls_ms: gpuhookViewer.callsMs,
                                             events: gpuhookViewer.events, lanes: gpuhookViewer.lanes }));
  const plot = await page.evaluate(() => gpuhookViewer.plot());
  const x = (plot.left + plot.right) / 2, y = plot.top + 120;
  await page.mouse.move(x, y);
  const frames = [], steps = [];
  const modes = new Set();
  for (const dir of [-1, 1]) {
    for (let k = 0; k < 40; k++) {
      const before = await page.evaluate(() => gpuhookViewer.stats().frames);
      const t = Date.now();
      await page.mouse.wheel({ deltaY: 300 * dir });
      await page.waitForFunction((n) => gpuhookViewer.stats().frames > n, { polling: 'raf' }, before);
      steps.push(Date.now() - t);
      const st = await page.evaluate(() => gpuhookViewer.stats());
      frames.push(st.frameMs[st.frameMs.length - 1]);
      st.modes.forEach((m) => modes.add(m));
    }
  }
  const median = (a) => { const s = [...a].sort((p, q) => p - q); return s[Math.floor(s.length / 2)]; };
  const max = (a) => Math.max(...a);
  const p90 = (a) => { const s = [...a].sort((p, q) => p - q); return s[Math.floor(s.length * 0.9)]; };
  console.log(JSON.stringify({ ...first, frame_median_ms: median(frames), frame_p90_ms: p90(frames), frame_max_ms: max(frames),
                               frames: frames.map((f) => Math.round(f)),
                               step_median_ms: median(steps), modes: [...modes], errors }));
} finally {
  await browser.close();
}
