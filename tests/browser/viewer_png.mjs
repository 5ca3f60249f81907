// The page against the PNG chart of the same window at the same width (render -o x.png
// --width W draws the same lanes with the same plot margins): per GPU lane, which pixel
// columns of its exec bar hold drawn work, in a screenshot of the page and in the PNG.
// Both are read in the page itself (the PNG and the screenshot as data: images, which its
// Content-Security-Policy allows, drawn on a canvas). A column is drawn where the pixel is
// neither the lane band, nor white (names on the bars), nor the grid (the page draws its
// ruler's lines over the lanes, the PNG under them: a grid column takes its left neighbour's
// value). Two rows of the bar are read, above the names and at the bar's foot, and a column
// counts if either row has work.
// X: { png: base64 of the PNG, lanes: [[label, y of its label's baseline in the PNG], ...] }.
export async function pngChecks(page, V, X, check, tolerance) {
  await V(() => gpuhookViewer.setView(0, gpuhookViewer.span_ns));
  await page.mouse.move(2, 2);
  await V(() => gpuhookViewer.draw());
  const box = await page.$eval('#canvas', (c) => { const r = c.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
  const shot = await page.screenshot({ encoding: 'base64' });
  const res = await page.evaluate(async (png, shot, svgLanes, box) => {
    const V = gpuhookViewer;
    async function pixels(b64) {
      const img = new Image();
      img.src = 'data:image/png;base64,' + b64;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.width;
      c.height = img.height;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      return g.getImageData(0, 0, img.width, img.height);
    }
    const P = V.palette();
    const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    const near = (p, q) => Math.abs(q[0] - p[0]) + Math.abs(q[1] - p[1]) + Math.abs(q[2] - p[2]) < 24;
    const px = (im, x, y) => { const o = (y * im.width + x) * 4; return [im.data[o], im.data[o + 1], im.data[o + 2]]; };
    // 1: work, 0: none, -1: a grid line.
    const drawn = (im, x, y) => {
      const p = px(im, x, y);
      if (near(p, rgb(P.grid))) return -1;
      return near(p, rgb(P.band)) || near(p, [255, 255, 255]) ? 0 : 1;
    };
    const [pi, si] = [await pixels(png), await pixels(shot)];
    const plot = V.plot();
    const L = Math.round(plot.left - box.x), R = Math.round(plot.right - box.x);
    const labels = V.laneLabels(), out = [];
    let from = 0;
    for (let k = 0; k < labels.length; k++) {
      const at = svgLanes.findIndex(([label], i) => i >= from && label === labels[k]);
      if (at < 0) { out.push({ lane: labels[k], missing: true }); continue; }
      from = at + 1;
      const pngTop = svgLanes[at][1] - 15;   // the chart writes a lane's label 15 px under its top
      const pageTop = Math.round(box.y + V.laneTop(k));
      const cols = (im, top, dx) => {
        const c = [];
        for (let x = L; x < R; x++) {
          const a = drawn(im, x + dx, top + 8), b = drawn(im, x + dx, top + 20);
          c.push(a === 1 || b === 1 ? 1 : a === -1 && b === -1 ? (c.length ? c[c.length - 1] : 0) : 0);
        }
        return c;
      };
      out.push({ lane: labels[k], png: cols(pi, pngTop, 0), page: cols(si, pageTop, Math.round(box.x)) });
    }
    return { out, width: pi.width, shotWidth: si.width };
  }, X.png, shot, X.lanes, box);
  // Runs of drawn columns, a gap of one column closed: where two events meet within a pixel,
  // the PNG's antialiasing may leave a pale column the page's does not (or the other way).
  const runs = (c) => {
    const r = [];
    for (let x = 0; x < c.length; x++) {
      if (!c[x]) continue;
      if (r.length && x - r[r.length - 1][1] <= 2) r[r.length - 1][1] = x;
      else r.push([x, x]);
    }
    return r;
  };
  // Columns drawn in `c` with nothing drawn within `px` columns of them in `d`.
  const unmatched = (c, d, px) => {
    let n = 0;
    for (let x = 0; x < c.length; x++) {
      if (!c[x]) continue;
      let hit = false;
      for (let k = Math.max(0, x - px); k <= Math.min(d.length - 1, x + px) && !hit; k++) hit = !!d[k];
      if (!hit) n++;
    }
    return n;
  };
  check(res.out.length > 0, `the PNG is ${res.width} px wide, the screenshot ${res.shotWidth} px`);
  for (const l of res.out) {
    if (l.missing) { check(false, `lane ${l.lane} found in the PNG`); continue; }
    const a = runs(l.png), b = runs(l.page);
    const first = (r) => (r.length ? r[0][0] : -1), last = (r) => (r.length ? r[r.length - 1][1] : -1);
    let either = 0;
    for (let x = 0; x < l.png.length; x++) either += l.png[x] | l.page[x];
    const share = either ? (unmatched(l.png, l.page, tolerance.px) + unmatched(l.page, l.png, tolerance.px)) / either : 0;
    check(a.length > 0 && Math.abs(first(a) - first(b)) <= tolerance.px && Math.abs(last(a) - last(b)) <= tolerance.px,
          `lane ${l.lane}: drawn from column ${first(b)} to ${last(b)} on the page, ${first(a)} to ${last(a)} in the PNG (within ${tolerance.px} px)`);
    check(share <= tolerance.share,
          `lane ${l.lane}: ${(100 * share).toFixed(1)}% of the columns drawn in one have nothing drawn within ${tolerance.px} px in the other (at most ${100 * tolerance.share}%; ${either} drawn in either)`);
    if (tolerance.runs) {
      const same = a.length === b.length && a.every(([x0, x1], i) => Math.abs(x0 - b[i][0]) <= tolerance.px && Math.abs(x1 - b[i][1]) <= tolerance.px);
      // On a failure, both lists of runs, to see where they part.
      check(same, `lane ${l.lane}: ${b.length} runs of drawn columns on the page, ${a.length} in the PNG, each end within ${tolerance.px} px` +
                  (same ? '' : ': page ' + JSON.stringify(b) + ', PNG ' + JSON.stringify(a)));
    }
  }
}
