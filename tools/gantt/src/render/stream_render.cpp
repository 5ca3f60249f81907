// render of one capture, streamed (stream_render.h): the two reads (stream_read.h), then the
// model of the drawn events through the loaded chart's own scene builder.
#include "gantt/render/stream_render.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "gantt/model/model_builder.h"
#include "gantt/analysis/stream_stats.h"
#include "gantt/model/text.h"
#include "gantt/scan/open.h"
#include "stream_read.h"

namespace gantt {

using namespace streamed;

std::string stream_render_refusal(const RenderOptions& o) {
  if (o.lanes == LaneMode::kThread) return "lanes per thread";
  if (o.annotate.enabled && !o.annotate.streamed) return "annotations (queue-delay causes, overlaps, the host call behind a gap)";
  if (o.memory_strip) return "--memory-strip";
  if (o.deps) return "--deps";
  return {};
}

std::optional<StreamedChart> stream_render(const std::string& path, const StreamRenderOptions& o, std::string* why_not) {
  std::optional<StreamedParts> parts = stream_chart_parts(path, o, why_not);
  if (!parts) return std::nullopt;
  StreamedChart out;
  out.scene = build_scene(parts->held, parts->drawn, parts->render, parts->rest, &out.stats);
  out.context = std::move(parts->context);
  out.warnings = std::move(parts->warnings);
  out.corrupt = parts->corrupt;
  out.threads = parts->threads;
  return out;
}

std::optional<StreamedParts> stream_chart_parts(const std::string& path, const StreamRenderOptions& o, std::string* why_not) {
  std::string why;
  const auto refuse = [&](std::string reason) -> std::optional<StreamedParts> {
    if (why_not) *why_not = std::move(reason);
    return std::nullopt;
  };
  if (std::string no = stream_render_refusal(o.render); !no.empty()) return refuse(std::move(no));
  const unsigned thread_count = o.threads != 0 ? o.threads : analysis::default_scan_threads();
  // --from and --to count from the capture's first time, which only read 1 tells. It is read
  // with the header's start for it, nearly always the first time; when a record is earlier,
  // read 1 runs again with the time it found. With --range they count from the range's start.
  const EventFilter& filter = o.filter;
  const bool ranged = !filter.range.empty();
  const bool windowed = filter.from_ns >= 0 || filter.to_ns >= 0;
  // --kernel: a bad pattern is select_events()' error. Only kernels are streamed by name: an
  // event without its call is named after its kind, which the pattern must not match.
  std::optional<KernelPattern> kernel;
  if (!filter.kernel_regex.empty()) {
    kernel.emplace(filter.kernel_regex);
    if (std::string no = analysis::pattern_refusal(*kernel); !no.empty()) return refuse(std::move(no));
  }
  uint64_t first_guess = 0;
  std::optional<v1::ChunkIndex> index;
  {
    const std::unique_ptr<gpuhook::CaptureReader> opened_probe = gantt::scan::open_capture(path, gpuhook::ReaderOptions{o.load.strict, 0, 0});
    gpuhook::CaptureReader& probe = *opened_probe;
    if (!analysis::index_within_guard(probe, o.load)) return refuse(analysis::kOverGuard);
    index = probe.index();
    v1::Record r;
    for (int i = 0; windowed && !ranged && i < 64 && probe.next(r); ++i)
      if (r.kind_case() == v1::Record::kHeader) {
        first_guess = r.header().start_monotonic_raw_ns();
        break;
      }
  }
  const std::vector<ChunkRange> ranges = analysis::plan_chunk_ranges(index, thread_count);
  const size_t k = o.render.max_individual_events;
  // The widest 2k + 1: the threshold needs the (k + 1)-th; those drawn one by one are among
  // them unless float rounding at the threshold lets more through (then the model is loaded).
  // A page takes the widest k as they are (StreamRenderOptions::coverage_columns).
  const size_t keep = o.coverage_columns > 0 ? k : 2 * k + 1;

  // Read 1 of every share with `select`, merged into `scanned`; false with `why` set when the
  // capture needs the model. `launched`: the launch times whose events' last end it measures.
  std::vector<Scan> scans;
  std::optional<Scanned> scanned;
  int64_t gap_tolerance = o.render.annotate.idle_gap_ns;
  const auto read_1 = [&](const Selector& select, std::pair<uint64_t, uint64_t> launched) {
    scans.assign(ranges.size(), Scan{});
    for (size_t i = 0; i < scans.size(); ++i) {
      scans[i].range = ranges[i];
      scans[i].index = i;
      scans[i].keep_widest = keep;
      scans[i].lanes_by = o.render.lanes;
      scans[i].select = select;
      scans[i].launched_from = launched.first;
      scans[i].launched_to = launched.second;
      scans[i].host_lanes = o.render.host_lanes;
      scans[i].idle_gaps = o.render.annotate.enabled;
      scans[i].idle_gap_ns = gap_tolerance;
    }
    std::atomic<bool> stop{false};
    analysis::run_shares(scans, stop, [&](Scan& sc) { read_scan(path, o.load, sc, stop); });
    uint32_t headers = 0;
    for (Scan& sc : scans) {
      if (sc.error) std::rethrow_exception(sc.error);
      if ((headers += sc.headers) > 1) why = "a merged file (several ranks, put on one clock when loaded)";
      else if (!sc.needs_model.empty()) why = sc.needs_model;
      else if (sc.integrity.error) why = "a damaged capture (read up to the damage when loaded)";
      if (!why.empty()) return false;
    }
    scanned = merge_scans(scans, keep, &why);
    return scanned.has_value();
  };

  // --range: its occurrence, from a read of only the ranges; the window stays open until the
  // GPU work launched in it ends (filter.cpp resolve_range), which a first read 1 measures
  // over every event from the range's start on, on every device: those that could end later
  // than the range.
  uint64_t range_from = 0, range_to = 0;
  if (ranged) {
    Model range_model;
    if (!analysis::read_range_model(path, o.load, ranges, kMaxRanges, &range_model))
      return refuse("more NVTX range records than a streamed chart keeps");
    const uint32_t r = range_occurrence(range_model, filter.range);  // throws as select_events() does
    range_from = range_model.ranges.start_ns[r];
    const uint64_t range_end = range_model.ranges.end_ns[r];
    Selector after;
    after.from = range_from;
    if (!read_1(after, {range_from, range_end ? range_end : UINT64_MAX})) return refuse(why);
    // Unclosed: to the capture's last time, which no launched work ends after.
    range_to = range_end ? std::max(range_end, scanned->launched_end) : scanned->last_ns;
  }

  // The events the reads keep, the capture's first time taken to be `first_ns`. Its last is not
  // known yet: no event begins after it, nor ends before its first.
  const auto origin = [&](uint64_t first_ns) {
    return ranged ? range_from : o.window_origin_ns != 0 ? o.window_origin_ns : first_ns;
  };
  const auto selector = [&](uint64_t first_ns) {
    std::optional<std::pair<uint64_t, uint64_t>> range;
    if (ranged) range = std::make_pair(range_from, range_to);
    analysis::ScanSelector s = analysis::selector_of(filter, first_ns, origin(first_ns), range, kernel ? &*kernel : nullptr);
    // Overlapping both the filter's window and the chart's is overlapping where they meet.
    if (o.chart_window) {
      s.from = std::max(s.from, o.chart_window->first);
      s.to = std::min(s.to, o.chart_window->second);
    }
    return s;
  };
  // The idle-gap threshold of a window asked for is known before the read: the activity unions
  // merge at that tolerance (at the least one, without --to), not at one grown with the spans.
  if (o.chart_window && gap_tolerance < 0) {
    const auto [from, to] = *o.chart_window;
    gap_tolerance = idle_gap_threshold_ns(o.render.annotate, to - std::min(from, to));
  } else if (o.window_length != 0 && gap_tolerance < 0) {
    gap_tolerance = idle_gap_threshold_ns(o.render.annotate, o.window_length);
  } else if ((windowed || ranged) && gap_tolerance < 0) {
    uint64_t from = ranged ? range_from : 0, to = ranged ? range_to : UINT64_MAX;  // without a range: from the first time
    narrow_to_window(filter, from, &from, &to);
    gap_tolerance = to != UINT64_MAX && to >= from ? idle_gap_threshold_ns(o.render.annotate, to - from) : kMinIdleGapNs;
  }

  // Read 1: the window, the lanes, the counts, the widest events.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!read_1(selector(first_guess), {})) return refuse(why);
    if (!windowed || ranged || scanned->first_ns == first_guess) break;
    if (attempt == 1) return refuse("a capture whose first time moved between reads");
    first_guess = scanned->first_ns;
  }
  const Scanned& sd = *scanned;

  StreamedParts out;
  out.threads = static_cast<unsigned>(scans.size());
  // A damaged capture was refused above: the integrity carries no error.
  const gpuhook::Integrity integrity = analysis::file_integrity(scans);
  out.context = analysis::context_model(path, scans, integrity);
  if (out.context.captures.empty()) return refuse("no header");
  out.context.captures.front().first_ns = sd.first_ns;
  out.context.captures.front().last_ns = sd.last_ns;
  out.warnings = integrity_warnings(out.context, &out.corrupt);

  // select_events(): without a window, the selected events and the window fitted to them;
  // with one, those that overlap it (an empty window is the same error as when loaded).
  Selection sel;
  sel.origin_ns = sd.first_ns;
  sel.window_start_ns = sd.first_ns;
  sel.window_end_ns = std::max(sd.last_ns, sd.first_ns);
  if (ranged) {
    sel.origin_ns = sel.window_start_ns = range_from;
    sel.window_end_ns = range_to;
    sel.origin_name = "the start of range " + filter.range;
  }
  if (windowed || ranged) {
    const uint64_t span_end = sel.window_end_ns;
    narrow_to_window(filter, origin(sd.first_ns), &sel.window_start_ns, &sel.window_end_ns);
    // The loaded chart's error, without loading the capture to say it.
    if (sel.window_end_ns < sel.window_start_ns) throw_empty_window(filter, sel, span_end);
    sel.window_asked = true;
  }
  sel.description = describe_filter(filter);
  if (o.chart_window) {
    // The chart's own window, counted from the capture's first time, and the filter's flags
    // other than its window and range (which the window stands for).
    EventFilter drawn = filter;
    drawn.range.clear();
    drawn.from_ns = drawn.to_ns = 0;
    sel.description = describe_filter(drawn);
    sel.origin_ns = sd.first_ns;
    sel.origin_name = Selection{}.origin_name;
    sel.window_start_ns = o.chart_window->first;
    sel.window_end_ns = std::max(o.chart_window->second, o.chart_window->first);
    sel.window_asked = true;
  }
  if (o.window_length != 0 && sel.window_end_ns - sel.window_start_ns < o.window_length)
    sel.window_end_ns = sel.window_start_ns > UINT64_MAX - o.window_length ? UINT64_MAX : sel.window_start_ns + o.window_length;
  if (o.window_only) {
    out.drawn = std::move(sel);
    return out;
  }
  RenderOptions render = o.render;
  if (!sel.description.empty()) render.filter_description = sel.description;
  if (!o.chart_window && !windowed && !ranged && sd.events + sd.syncs != 0 && sd.lo != UINT64_MAX && sd.hi >= sd.lo)
    fit_window(sel.window_start_ns, sel.window_end_ns, sd.lo, sd.hi, &sel);
  Frame f = detail::make_frame(out.context, sel, sel.window_start_ns, sel.window_end_ns,
                               detail::begin_view("", render).width);
  // The page: its own columns (one per finest bucket of its pyramids), fewer with many lanes.
  const bool page = o.coverage_columns > 0;
  if (page) {
    const size_t lanes = std::max<size_t>(sd.lanes.size() + sd.streams.size(), 1);
    const size_t columns = std::bit_floor(std::clamp<size_t>(kPageCoverageCells / lanes, 64, static_cast<size_t>(o.coverage_columns)));
    f.right = f.left + static_cast<float>(columns);
    f.px_per_ns = static_cast<double>(columns) / static_cast<double>(f.t1 - f.t0);
    if (o.refuse_unfolded && sd.timed <= k && sd.events == sd.timed) return refuse(kEveryEventFits);
  }

  // Builder::bucket_lanes(): the threshold from the widths' histogram, which needs only the
  // widest k + 1 (any other is no wider than those).
  ChartRest rest;
  rest.events = sd.events;
  rest.syncs = sd.syncs;
  rest.in_capture = sd.in_capture;
  {
    WidthHistogram h;
    const size_t n = std::min(sd.widest.size(), k + 1);
    h.add(0.0, sd.events - n);
    for (size_t i = 0; i < n; ++i) h.add(static_cast<double>(sd.widest[i].width) * f.px_per_ns);
    rest.threshold_px = h.threshold(k);
  }
  for (const auto& [key, lane] : sd.lanes) {
    ChartRest::Lane& r = rest.lanes[key];
    r.events = lane.events;
    r.exec = r.wait = Coverage(f.columns());
    r.priority = lane_priority(lane, sd.stream_priority);
  }
  // The events drawn one by one: Builder::draw_gpu_lane()'s test on their float x.
  std::vector<uint64_t> held_seq;
  analysis::CorrSet held_corr;
  std::vector<detail::WaitKernel> split;
  size_t barrier_queries = 0;
  std::set<uint32_t> non_blocking;  // streams created non-blocking (ModelBuilder: the last record says)
  for (const Scan& sc : scans)
    for (const v1::Record& r : sc.context)
      if (r.kind_case() == v1::Record::kStream && (r.stream().flags() & 0xFFFF) == StreamTable::kNonBlocking)
        non_blocking.insert(r.stream().stream());
      else if (r.kind_case() == v1::Record::kStream)
        non_blocking.erase(r.stream().stream());
  size_t taken = 0;
  for (const Candidate& c : sd.widest) {
    // The page keeps the widest k whatever their width (ties: earlier in the file first, as the
    // candidates are ordered); the chart those wide enough to see at its width.
    if (page ? taken++ >= k : !(f.x(c.gpu.end) - f.x(c.gpu.start) >= rest.threshold_px)) continue;
    held_seq.push_back(c.seq);
    if (c.gpu.corr) held_corr.insert(c.gpu.corr);
    const Gpu& g = c.gpu;
    // The page draws each stage from the event's own times and has no use for the split.
    if (!page && g.kind == EventKind::kKernel && g.queued && g.start > g.queued) {
      detail::WaitKernel w{g.device, g.stream, g.priority, c.seq, c.launch ? c.launch : g.queued, g.queued, g.start, g.end, {}};
      // waits.cpp: the legacy stream waits for the blocking streams' work, and they for its.
      const auto blocking = [&](uint32_t stream) { return stream != kLegacyStreamId && !non_blocking.count(stream); };
      for (const auto& [other, ops] : sd.streams.at(g.device))
        if (other != g.stream && ((g.stream == kLegacyStreamId && blocking(other)) || (blocking(g.stream) && other == kLegacyStreamId)))
          w.barrier_streams.push_back(other);
      barrier_queries += w.barrier_streams.size();
      split.push_back(std::move(w));
    }
  }
  std::sort(held_seq.begin(), held_seq.end());
  if (barrier_queries > (size_t{1} << 20)) return refuse("too many streams beside the legacy default stream");
  if (!page && sd.timed > sd.widest.size() && !sd.widest.empty()) {
    // An event outside the widest is no wider than the narrowest of them; float rounding of
    // x moves a width by far less than 0.01 px.
    if (static_cast<double>(sd.widest.back().width) * f.px_per_ns + 0.01 >= rest.threshold_px)
      return refuse("more events near the width drawn one by one than a streamed chart keeps");
  }
  std::vector<Candidate>().swap(scanned->widest);  // held_seq and split have what read 2 needs

  // Streamed annotations: each device's idle gaps, from the activity read 1 gathered; those
  // that get a host label are looked for in read 2.
  const bool annotate = o.render.annotate.enabled;
  std::vector<IdleGap> idle;
  std::map<uint32_t, std::vector<Fold::LabelledGap>> labelled;
  std::unordered_set<uint32_t> gap_corrs;
  if (annotate && !idle_gaps(scans, sel, o.render.annotate, &idle)) return refuse("idle gaps past the union's tolerance");
  size_t labels = 0;
  for (IdleGap& g : idle) {
    if (!g.explain) continue;
    g.label = labels++;
    labelled[g.device].push_back({g.begin, g.end, g.label});
    if (g.next.corr) gap_corrs.insert(g.next.corr);
  }

  // Read 2: the narrow events folded, the held ones kept.
  std::vector<Fold> folds(ranges.size());
  const detail::WaitContext waits(split);
  for (size_t i = 0; i < folds.size(); ++i) {
    folds[i].range = ranges[i];
    folds[i].index = i;
    folds[i].frame = &f;
    folds[i].lanes_by = o.render.lanes;
    folds[i].select = scans[i].select;
    folds[i].outside = &sd.outside;
    folds[i].held_seq = &held_seq;
    folds[i].held_corr = &held_corr;
    folds[i].waits = waits;
    folds[i].host_lanes = o.render.host_lanes;
    folds[i].gpu_corrs = &sd.gpu_corrs;
    folds[i].annotate = annotate;
    if (annotate) folds[i].occupancy.emplace(out.context.captures.front().devices);
    folds[i].low_occupancy = o.render.annotate.low_occupancy;
    folds[i].gaps = &labelled;
    folds[i].gap_corrs = &gap_corrs;
    folds[i].gap_calls.resize(labels);
  }
  std::atomic<bool> stop{false};
  analysis::run_shares(folds, stop, [&](Fold& fo) { read_fold(path, o.load, fo, stop); });
  for (const Fold& fo : folds) {
    if (fo.error) std::rethrow_exception(fo.error);
    if (!fo.needs_model.empty()) return refuse(fo.needs_model);
  }
  std::map<std::pair<uint32_t, BusyClass>, SpanUnion> busy;
  std::map<uint32_t, std::pair<uint64_t, const v1::Record*>> launches;
  detail::WaitContext wait_context = waits;
  for (size_t i = 0; i < folds.size(); ++i) {
    Fold& fo = folds[i];
    for (auto& [key, lane] : fo.lanes) {
      ChartRest::Lane& r = rest.lanes[key];
      r.exec.merge(lane.exec);
      r.wait.merge(lane.wait);
      r.aggregated += lane.aggregated;
    }
    for (const auto& [key, spans] : fo.busy) busy[key].absorb(spans);
    for (const auto& [corr, l] : fo.launches) launches[corr] = {l.first, &l.second};  // later shares: later in the file
    // Operations read before their launch: it may be in another share.
    for (const auto& [corr, w] : fo.waiting) {
      uint64_t launch = 0;
      if (!analysis::value_across(folds, i, corr, [corr](const Fold& x) { return x.launch_of(corr); }, &launch))
        return refuse(kTooFar);
      fo.offer(w, launch);
    }
    wait_context.absorb(fo.waits);
  }
  // The host lanes' bar candidates by thread, (seq, call): for the model of the drawn events.
  std::map<uint64_t, std::vector<std::pair<uint64_t, v1::Record>>> bars;
  if (o.render.host_lanes) {
    std::map<uint64_t, Fold::HostThread*> first;  // each thread's state in the first share that has it
    for (Fold& fo : folds) {
      rest.host_threads.insert(fo.host_threads.begin(), fo.host_threads.end());
      if (rest.host_threads.size() > kMaxHostThreads) return refuse("more host threads than a streamed chart keeps");
      for (auto& [tid, th] : fo.host) {
        auto [at, fresh] = first.try_emplace(tid, &th);
        if (fresh) continue;
        Fold::HostThread& all = *at->second;  // later shares' calls after it, in file order
        all.calls.other.merge(th.calls.other);
        all.calls.ticks.merge(th.calls.ticks);
        all.blocking.insert(all.blocking.end(), th.blocking.begin(), th.blocking.end());
      }
    }
    // Each share kept the smallest ids it saw, so the smallest of all are among them.
    for (auto& [tid, th] : first) {
      if (rest.host.size() >= detail::kMaxHostLanes) break;
      ChartRest::HostCalls& calls = rest.host[tid];
      calls.other = std::move(th->calls.other);
      calls.ticks = std::move(th->calls.ticks);
      std::vector<std::pair<uint64_t, v1::Record>>& kept = bars[tid];
      for (const auto& [seq, call] : th->blocking) {
        if (kept.size() < detail::kMaxHostBars) kept.emplace_back(seq, gpuhook::to_record(call));
        else detail::add_host_call(f, calls.other, builder::known(call.start_ns), builder::known(call.end_ns));
      }
    }
  }
  for (const auto& [key, spans] : busy) {
    ChartRest::Device& d = rest.devices[{0, key.first}];
    if (d.compute.columns() == 0) d.compute = d.copy = Coverage(f.columns());
    const bool compute = key.second == BusyClass::kCompute;
    for (const auto& [b, e] : spans.spans())
      detail::add_busy(f, compute ? d.compute : d.copy, compute ? d.compute_ns : d.copy_ns, b, e);
  }

  // The model of the held events and what they need: the context, the NCCL join's records,
  // their launch calls, in file order.
  Model held_model;
  // The held events and the NCCL join's kernels in file order, each share's two lists merged
  // as they were read (both in its order), the shares in theirs: the events' places, and
  // `add_records(f)` giving each record to f in that order (the NCCL kernels parsed one at a time).
  std::vector<uint64_t> record_seqs;
  const auto add_records = [&](auto&& f) {
    for (const Fold& fo : folds) {
      size_t h = 0, k = 0;
      fo.nccl_kernels.for_each([&](const v1::Record& kernel) {
        for (; h < fo.held.size() && fo.held[h].first < fo.nccl_kernel_seqs[k]; ++h) f(fo.held[h].first, fo.held[h].second);
        f(fo.nccl_kernel_seqs[k++], kernel);
      });
      for (; h < fo.held.size(); ++h) f(fo.held[h].first, fo.held[h].second);
    }
  };
  add_records([&](uint64_t seq, const v1::Record&) { record_seqs.push_back(seq); });
  {
    std::vector<std::pair<uint64_t, const v1::Record*>> calls;
    for (const auto& [corr, l] : launches) calls.push_back(l);
    for (const auto& [tid, kept] : bars)
      for (const auto& [seq, r] : kept) calls.emplace_back(seq, &r);
    std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    // A launch call that is also a bar candidate is one call.
    calls.erase(std::unique(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
                calls.end());
    ModelBuilder builder(held_model);
    builder.begin_capture(path);
    ModelBuilder::Rows rows{record_seqs.size(), calls.size(), 0, 0};
    for (const Fold& fo : folds) {
      rows.nccl += fo.nccl_calls.size();
      rows.external += fo.externals.size();
    }
    builder.reserve(rows);
    for (const Scan& sc : scans)
      for (const v1::Record& r : sc.context) builder.add(r);
    size_t ranges = 0;
    for (const Scan& sc : scans) ranges += sc.ranges.size();
    if (ranges > kMaxRanges) return refuse("more NVTX range records than a streamed chart keeps");
    for (const Scan& sc : scans)
      sc.ranges.for_each([&](const v1::Record& r) { builder.add(r); });
    size_t samples = 0;
    for (const Scan& sc : scans) samples += sc.samples.size();
    if (samples > kMaxSamples) return refuse("more GPU counter samples than a streamed chart keeps");
    for (const Scan& sc : scans)
      sc.samples.for_each([&](const v1::Record& r) { builder.add(r); });
    for (const Fold& fo : folds) fo.externals.for_each([&](const v1::Record& r) { builder.add(r); });
    for (const Fold& fo : folds) fo.nccl_calls.for_each([&](const v1::Record& r) { builder.add(r); });
    const size_t api0 = held_model.api.size();
    for (const auto& [seq, r] : calls) builder.add(*r);
    // The calls became the model's API calls in their order: the bars' rows.
    for (const auto& [tid, kept] : bars) {
      std::vector<uint32_t>& rows = rest.host[tid].blocking;
      for (const auto& [seq, r] : kept)
        rows.push_back(static_cast<uint32_t>(
            api0 + (std::lower_bound(calls.begin(), calls.end(), seq, [](const auto& c, uint64_t v) { return c.first < v; }) -
                    calls.begin())));
    }
    add_records([&](uint64_t, const v1::Record& r) { builder.add(r); });
    builder.end_capture(integrity);
  }
  held_model.captures.front().first_ns = sd.first_ns;
  held_model.captures.front().last_ns = sd.last_ns;
  Selection drawn = sel;
  const std::map<uint64_t, analysis::WaitSplit> splits = wait_context.splits(sd.stream_priority);
  std::vector<analysis::WaitSplit>& held_waits = rest.waits;
  const EventTable& ev = held_model.events;
  for (uint32_t e = 0; e < ev.size() && e < record_seqs.size(); ++e) {
    if (!std::binary_search(held_seq.begin(), held_seq.end(), record_seqs[e])) continue;
    drawn.events.push_back(e);
    // wait_causes() splits the waits of kernels (not of NCCL's, which the join names).
    if (ev.kind[e] != EventKind::kKernel) continue;
    if (auto it = splits.find(record_seqs[e]); it != splits.end()) {
      held_waits.push_back(it->second);
      held_waits.back().event = e;
    }
  }
  std::stable_sort(drawn.events.begin(), drawn.events.end(),
                   [&](uint32_t a, uint32_t b) { return ev.start_ns[a] < ev.start_ns[b]; });
  if (annotate) {
    uint64_t low = 0, unplaced = 0;
    for (const Fold& fo : folds) {
      low += fo.low_occupied;
      unplaced += fo.low_unplaced;
    }
    if (low > kMaxAnnotationsPerKind && unplaced != 0)
      return refuse("more kernels of low occupancy than flagged, some without GPU times (placed by their launch calls)");
    const std::vector<uint64_t>& seq_of_event = record_seqs;
    rest.annotations = streamed_annotations(held_model, drawn, o.render.annotate, seq_of_event, held_waits, folds, busy, idle);
  }
  out.render = std::move(render);
  out.rest = std::move(rest);
  out.held = std::move(held_model);
  out.drawn = std::move(drawn);
  const CaptureInfo& capture = out.context.captures.front();
  if (sd.events != 0 && capture.alignment.method == AlignMethod::kNone)
    out.warnings.push_back(capture.path + ": " + describe(capture.alignment));
  return out;
}

}  // namespace gantt
