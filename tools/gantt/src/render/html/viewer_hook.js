// The page's test hook, window.gpuhookViewer: the state of viewer.js without reading pixels,
// for tests/browser and the benchmark. Times are ns from the window's start; the *Point
// functions give the client coordinates to move or click the mouse at (scrolled into view
// first), `toClient` a time's client x.
'use strict';
const viewerHook = function (v) {
  const { data, lanes, labels, calls, sections, A, G, view, stats, totalEvents, host, panels, canvas, tip, searchBox,
          RULER_H, EXEC_Y, EXEC_H, X, plotL, plotR, setView, runSearch, select, describe, eventBox, draw, clampScroll,
          selectRange, setMeasure, updatePanels, ranks, foldNote } = v;
  return {
    get ready() { return v.state().ready && stats.frames > 0; },
    get readyMs() { return stats.readyMs; },
    get callsMs() { return stats.callsMs; },
    lanes: lanes.length,
    events: totalEvents,
    sections: sections.length,
    annotations: A.kind.length,
    span_ns: data.span_ns,
    origin_ns: data.origin_ns,
    window_start_ns: data.window_start_ns,
    view: () => ({ start_ns: view.a, end_ns: view.b, scroll: view.scroll }),
    setView: (a, b) => setView(a, b),
    stats: () => ({
      frames: stats.frames, firstPaintMs: stats.firstPaintMs, individual: stats.individual,
      aggregatedLanes: stats.aggregatedLanes, frameMs: stats.frameMs.slice(), modes: lanes.map((l) => l.mode),
    }),
    laneLabels: () => lanes.map((l) => l.label),
    // Lane li's top in canvas pixels (scrolled), and the page's colours.
    laneTop: (li) => lanes[li].y - view.scroll,
    palette: () => Object.assign({}, data.palette),
    sectionLabels: () => sections.map((s) => s.label),
    laneCounts: () => lanes.map((l) => l.n),
    // A scanned page: per lane, the events folded into its coverage (not written one by one),
    // and what the page says of those around [a, b] on lane li ('' where none are).
    laneFolded: () => lanes.map((l) => l.folded),
    foldNote: (li, a, b) => foldNote(lanes[li], a, b),
    // Client coordinates of time t on lane li (scrolled into view first).
    lanePoint: (li, t) => {
      const l = lanes[li];
      if (l.y - view.scroll < RULER_H || l.y - view.scroll + l.h > v.state().H) { view.scroll = l.y - RULER_H - 20; clampScroll(); }
      draw();
      const r = canvas.getBoundingClientRect();
      return { x: r.left + X(t), y: r.top + l.y - view.scroll + EXEC_Y + EXEC_H / 2 };
    },
    search: (text) => { searchBox.value = text; return runSearch(text); },
    matches: () => { const { search } = v.state(); return search ? search.count : 0; },
    measure: () => { const { measure } = v.state(); return measure ? { start_ns: measure.a, end_ns: measure.b, events: measure.events } : null; },
    select: (lane, index) => select(lane === null ? null : [lane, index]),
    selected: () => { const { selected } = v.state(); return selected ? Object.assign({ text: describe(selected.lane, selected.index) }, selected) : null; },
    event: (lane, i) => {
      const ev = lanes[lane].ev;
      return { name: labels[ev.label[i]][0], start_ns: ev.start[i], end_ns: ev.end[i], queued_ns: ev.queued[i],
               submitted_ns: ev.submitted[i], launch_ns: ev.launch[i], row: ev.row[i], call: calls[ev.call[i]] };
    },
    // Client coordinates of the middle of an event's bar (scrolled into view first).
    eventPoint: (lane, i) => {
      const l = lanes[lane];
      if (l.y - view.scroll < RULER_H || l.y - view.scroll + l.h > v.state().H) { view.scroll = l.y - RULER_H - 20; clampScroll(); }
      draw();
      const b = eventBox(l, i, -view.scroll);
      const r = canvas.getBoundingClientRect();
      return { x: r.left + b.x + b.w / 2, y: r.top + b.y + EXEC_Y + EXEC_H / 2 };
    },
    toClient: (t) => canvas.getBoundingClientRect().left + X(t),
    plot: () => { const r = canvas.getBoundingClientRect(); return { left: r.left + plotL(), right: r.left + plotR(), top: r.top, bottom: r.bottom }; },
    tooltip: () => (tip.hidden ? '' : tip.textContent),
    // The memory strip of a section: bytes in use at t, the peak, and the client point of t on it.
    memory: (si) => (sections[si].memory ? { peak_bytes: sections[si].memory.peak, n: sections[si].memory.n } : null),
    memoryAt: (si, t) => sections[si].memory.at(t),
    memoryPoint: (si, t) => {
      const r = canvas.getBoundingClientRect();
      return { x: r.left + X(t), y: r.top + sections[si].memY - view.scroll + G.util / 2 };
    },
    selectionText: () => document.getElementById('selection').textContent,
    // NVTX ranges on the host thread lanes, by page index (start order).
    ranges: host.n,
    hostLanes: () => host.lanes.map((l) => l.label),
    range: (r) => host.range(r),
    selectRange: (r) => { selectRange(r); return v.state().litCount; },
    selectedRange: () => host.selected,
    markedRange: () => host.marked,
    litEvents: () => v.state().litCount,
    // Host calls on the host lanes: how many on lane li, call k's fields, its client point.
    hostCalls: (li) => host.calls.count(li),
    hostCall: (li, k) => host.calls.call(li, k),
    hostNccl: (li) => host.calls.ncclCount(li),
    hostNcclCall: (li, k) => host.calls.ncclCall(li, k),
    callPoint: (li, k, isNccl = false) => {
      const hl = host.lanes[li];
      if (hl.y - view.scroll < RULER_H || hl.y - view.scroll + hl.h > v.state().H) { view.scroll = hl.y - RULER_H - 20; clampScroll(); }
      draw();
      const p = host.callPoint(li, k, view.scroll, isNccl), rc = canvas.getBoundingClientRect();
      return { x: rc.left + p.x, y: rc.top + p.y };
    },
    rangePoint: (r) => {
      const hl = host.lanes[host.range(r).lane];
      if (hl.y - view.scroll < RULER_H || hl.y - view.scroll + hl.h > v.state().H) { view.scroll = hl.y - RULER_H - 20; clampScroll(); }
      draw();
      const p = host.point(r, view.scroll), rc = canvas.getBoundingClientRect();
      return { x: rc.left + p.x, y: rc.top + p.y };
    },
    // The stats table and flame graph of the measured span (else the view), brought up to date now.
    setMeasure: (a, b) => setMeasure(a, b),
    statsRows: () => { updatePanels(); return panels.rows(); },
    flameFrames: () => { updatePanels(); return panels.frames(); },
    flameZoom: () => panels.zoom(),
    flameTooltip: () => panels.tooltip(),
    flamePoint: (path) => {
      const f = panels.frames().find((x) => x.path === path);
      if (!f) return null;
      const r = document.getElementById('flame').getBoundingClientRect();
      return { x: r.left + f.x + Math.min(f.w / 2, 20), y: r.top + f.y + 8 };
    },
    draw: () => { draw(); return stats.frameMs[stats.frameMs.length - 1]; },
    // Several ranks: the collectives (first arrival, end, last rank, its event as [lane, index])
    // and the one the last n / p centred.
    collectives: () => ranks.list(),
    currentCollective: () => ranks.current,
  };
};
