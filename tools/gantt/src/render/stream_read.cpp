// The two reads of a streamed render (stream_read.h). What they compute mirrors the loaded
// path step by step: select_events() (the fitted window, first launch to last end),
// Builder::bucket_lanes() (the lanes, their priority, the widths), draw_gpu_lane() (narrow
// events into coverage) and device_busy() (the busy unions); the record fields are read as
// ModelBuilder reads them.
#include "stream_read.h"

#include <cctype>

#include "gantt/render/annotate.h"
#include "gantt/model/text.h"

#include "gantt/model/model_builder.h"

namespace gantt::streamed {

using builder::kHookExternalKind;
using builder::known;
using builder::t;

// False for records that are not GPU events (a synchronisation that returned at once).
bool gpu_of(const gpuhook::RecordView& v, Gpu* g) {
  if (v.kind == v1::Record::kKernel) {
    const gpuhook::KernelFields& k = v.kernel;
    *g = {EventKind::kKernel, k.device, k.stream, k.correlation_id, k.name_id, k.stream_priority, known(k.queued_ns),
          known(k.start_ns), known(k.end_ns)};
    return true;
  }
  if (v.kind == v1::Record::kApi) return false;
  const v1::Record& r = *v.record;
  switch (r.kind_case()) {
    case v1::Record::kMemcpy: {
      const auto& k = r.memcpy();
      *g = {EventKind::kMemcpy, k.device(), k.stream(), k.correlation_id(), 0, 0, 0, t(k.has_start_ns(), k.start_ns()),
            t(k.has_end_ns(), k.end_ns())};
      return true;
    }
    case v1::Record::kMemset: {
      const auto& k = r.memset();
      *g = {EventKind::kMemset, k.device(), k.stream(), k.correlation_id(), 0, 0, 0, t(k.has_start_ns(), k.start_ns()),
            t(k.has_end_ns(), k.end_ns())};
      return true;
    }
    case v1::Record::kSync: {
      const auto& k = r.sync();
      if (k.return_value() != 0) return false;
      *g = {EventKind::kSync, k.device(), k.stream(), k.correlation_id(), 0, 0, 0, t(k.has_start_ns(), k.start_ns()),
            t(k.has_end_ns(), k.end_ns())};
      return true;
    }
    default: return false;
  }
}

// Why a record stops the stream ("" when it does not).
std::string refusal_of(const gpuhook::RecordView& v) {
  if (v.kind == v1::Record::kKernel)
    return v.kernel.graph_id ? "CUDA graph launches (brackets need all their nodes)" : "";
  if (v.kind == v1::Record::kApi) return "";
  const v1::Record& r = *v.record;
  switch (r.kind_case()) {
    case v1::Record::kSync:
      return r.sync().type() == v1::SYNC_STREAM_WAIT_EVENT ? "stream waits on CUDA events (dependencies)" : "";
    case v1::Record::kHostFunction: return "host functions on streams";
    case v1::Record::kMemcpy: return r.memcpy().graph_id() ? "CUDA graph launches (brackets need all their nodes)" : "";
    case v1::Record::kMemset: return r.memset().graph_id() ? "CUDA graph launches (brackets need all their nodes)" : "";
    case v1::Record::kNccl:
      return r.nccl().has_start_ns() && r.nccl().start_ns() > 0 && r.nccl().external_id() == 0
                 ? "NCCL calls recorded without external ids (joined to their launches on the whole capture)"
                 : "";
    default: return "";
  }
}

bool is_context(const v1::Record& r) {
  switch (r.kind_case()) {
    case v1::Record::kHeader:
    case v1::Record::kDevice:
    case v1::Record::kThread:
    case v1::Record::kStringDef:
    case v1::Record::kDrops:
    case v1::Record::kNotice:
    case v1::Record::kFooter:
    case v1::Record::kStream: return true;
    default: return false;
  }
}

LaneKey lane_of(const Gpu& g, LaneMode mode) {
  LaneKey k;
  k.device = mode == LaneMode::kRank ? kNone : g.device;  // one capture: one rank, one lane
  if (mode == LaneMode::kStream) k.group = g.stream;
  return k;
}

namespace {

constexpr const char* kIdsTooLarge = "correlation ids too large to keep for the host lanes";
constexpr const char* kSharedIds = "host calls that share correlation ids";

// An event into its device's activity (annotate.cpp: every event with a start but the
// synchronisations). With the default threshold, at least kMinIdleGapNs and an fiftieth of
// the window, the union's tolerance grows with what it has seen; with a given one, it is that.
void add_activity(Scan& sc, const Gpu& g, uint64_t seq) {
  const bool given = sc.idle_gap_ns >= 0;
  auto [it, fresh] = sc.activity.try_emplace(g.device, given ? static_cast<uint64_t>(sc.idle_gap_ns) : kMinIdleGapNs, !given);
  it->second.add(g.start, g.end, {g.start, seq, g.corr});
  if (given && it->second.size() > kMaxSpans) sc.needs_model = "more idle gaps than a streamed chart keeps";
}

void scan_event(Scan& sc, const Gpu& g, uint64_t seq, bool named) {
  sc.see(g.queued);
  sc.see(g.start);
  sc.see(g.end);
  ++sc.in_capture;
  const bool sync = g.kind == EventKind::kSync;
  const LaneKey lane = lane_of(g, sc.lanes_by);
  if (sc.host_lanes && g.corr) {
    sc.gpu_corrs.insert(g.corr);
    if (sc.gpu_corrs.sparse_size() > kMaxSparseIds) sc.needs_model = kIdsTooLarge;
  }
  // An event without a start or queued stamp is begun by its launch call: Scan::place() counts
  // it once that is known.
  const uint64_t begin = g.start ? g.start : g.queued;
  const bool kept = named && sc.select.on(g.device, g.stream) && (begin == 0 || sc.select.in_time(begin, g.end));
  if (sync) {
    sc.syncs += begin != 0 && kept;
  } else {
    if (begin != 0 && kept) {
      ++sc.events;
      ++sc.lanes[lane].events;
    }
    // Every operation, in the window or not: the waits of the drawn kernels look at all (waits.cpp).
    if (g.start && g.end >= g.start) ++sc.streams[g.device][g.stream];
    if (kept && g.start && g.end >= g.start) {
      if (sc.idle_gaps) add_activity(sc, g, seq);
      ++sc.timed;
      const Candidate c{g.end - g.start, seq, g, g.corr ? sc.launch_of(g.corr) : 0};
      if (sc.keep_widest != 0 && (!sc.widest_cut || c > *sc.widest_cut)) {
        sc.widest.push_back(c);
        if (g.corr && c.launch == 0) sc.widest_launch.emplace(seq, 0);
        if (sc.widest.size() >= 2 * sc.keep_widest) sc.prune_widest();
      }
    }
  }
  if (!kept) return;  // the window and the lanes' first priorities are the drawn events'
  const uint64_t launch = g.corr ? sc.launch_of(g.corr) : 0;
  if (g.corr && launch == 0) {
    if (sc.waiting.size() >= kMaxWaiting) {
      sc.needs_model = "too many GPU records read before their launch calls";
      return;
    }
    sc.waiting.emplace(g.corr, Scan::Waiting{lane, g.stream, g.priority, seq, begin, g.end, sync});
    return;
  }
  sc.place(lane, g.stream, g.priority, seq, begin, g.end, launch, sync);
}

void scan_api(Scan& sc, const gpuhook::ApiFields& a, const gpuhook::CaptureReader& reader) {
  const uint64_t s = known(a.start_ns), e = known(a.end_ns);
  // Copies, memsets and synchronisations are named after the call that issued them (the
  // model's join): one that --kernel could match needs that join.
  if (sc.select.call_named(sc.api_names, a.name_id, reader))
    sc.needs_model = "--kernel matching the name of an API call (copies, memsets and synchronisations are named after theirs)";
  sc.see(s);
  sc.see(e);
  if (sc.host_lanes && a.correlation_id != 0 && a.domain != v1::API_DOMAIN_NCCL) {
    if (sc.call_corrs.contains(a.correlation_id)) sc.calls_share_ids = true;
    else sc.call_corrs.insert(a.correlation_id);
    if (sc.call_corrs.sparse_size() > kMaxSparseIds) sc.needs_model = kIdsTooLarge;
  }
  if (a.correlation_id == 0 || a.domain == v1::API_DOMAIN_NCCL || s == 0) return;
  sc.calls.set(a.correlation_id, s);
  if (sc.waiting.empty()) return;
  const auto [from, to] = sc.waiting.equal_range(a.correlation_id);
  for (auto it = from; it != to; ++it) {
    const Scan::Waiting& w = it->second;
    sc.place(w.lane, w.stream, w.priority, w.seq, w.begin, w.end, s, w.sync);
  }
  sc.waiting.erase(from, to);
}

}  // namespace

void read_scan(const std::string& path, const LoadOptions& load, Scan& sc, std::atomic<bool>& stop) {
  sc.integrity = read_range(path, load, sc.range, stop, [&](const gpuhook::RecordView& v, uint64_t n, const gpuhook::CaptureReader& reader) {
    if (std::string why = refusal_of(v); !why.empty()) {
      sc.needs_model = std::move(why);
      return false;
    }
    Gpu g;
    if (gpu_of(v, &g)) {
      if (sc.select.kernel && g.kind == EventKind::kKernel && g.name == 0) {
        sc.needs_model = "--kernel and a kernel record without a name (named after its launch call)";
        return false;
      }
      scan_event(sc, g, seq_of(sc.index, n), sc.select.named(sc.kernel_names, g.kind, g.name, reader));
      return sc.needs_model.empty();
    }
    if (v.kind == v1::Record::kApi) {
      scan_api(sc, v.api, reader);
      return sc.needs_model.empty();
    }
    const v1::Record& r = *v.record;
    if (r.kind_case() == v1::Record::kNccl) {
      const auto& c = r.nccl();
      sc.see(t(c.has_start_ns(), c.start_ns()));
      sc.see(t(c.has_end_ns(), c.end_ns()));
    } else if (r.kind_case() == v1::Record::kRange) {
      sc.see(t(r.range().has_time_ns(), r.range().time_ns()));
      if (sc.ranges.size() >= kMaxRanges) sc.needs_model = "more NVTX range records than a streamed chart keeps";
      sc.ranges.add(r);
    } else if (r.kind_case() == v1::Record::kMetricSample) {
      if (sc.samples.size() >= kMaxSamples) sc.needs_model = "more GPU counter samples than a streamed chart keeps";
      sc.samples.add(r);
    } else if (r.kind_case() == v1::Record::kHeader) {
      ++sc.headers;
      sc.see(r.header().start_monotonic_raw_ns());
      sc.context.push_back(r);
    } else if (is_context(r)) {
      sc.context.push_back(r);
    }
    return sc.needs_model.empty();
  });
}

namespace {

// The record a view stands for, as next(v1::Record&) would have given it.
v1::Record record_of(const gpuhook::RecordView& v) {
  if (v.kind == v1::Record::kKernel) return gpuhook::to_record(v.kernel);
  if (v.kind == v1::Record::kApi) return gpuhook::to_record(v.api);
  return *v.record;
}

// A kernel of low occupancy (annotate.cpp) counted, and its place in selection order kept
// while it is among the first the flag keeps.
void count_low_occupancy(Fold& fo, const gpuhook::KernelFields& k, const Gpu& g, uint64_t seq) {
  if (!fo.occupancy || !fo.occupancy->any_device()) return;
  const Occupancy& o = fo.occupancy->of(k.device, {k.block_x, k.block_y, k.block_z}, k.registers_per_thread,
                                        uint64_t{k.static_shared_memory_bytes} + k.dynamic_shared_memory_bytes);
  // As the model stores it: a float.
  if (o.limit == OccupancyLimit::kUnknown || !(static_cast<double>(static_cast<float>(o.fraction)) < fo.low_occupancy))
    return;
  if (fo.occupancy->fits_at_once(k.device, o, dim3_count({k.grid_x, k.grid_y, k.grid_z}))) return;
  ++fo.low_occupied;
  const uint64_t begin = g.start ? g.start : g.queued;
  if (begin == 0) {  // placed by its launch call: matters only past the flags kept (stream_render.cpp)
    ++fo.low_unplaced;
    return;
  }
  fo.low_first.push_back(order_of(begin, seq));
  std::push_heap(fo.low_first.begin(), fo.low_first.end());
  if (fo.low_first.size() > kMaxAnnotationsPerKind) {
    std::pop_heap(fo.low_first.begin(), fo.low_first.end());
    fo.low_first.pop_back();
  }
}

// A host call, for the labels of the gaps that get one (annotate.cpp host_activity()): the
// launch of an event that ended a gap, and the call's cover of each gap it overlaps.
void note_gap_call(Fold& fo, const gpuhook::ApiFields& a, uint64_t seq, const gpuhook::CaptureReader& reader) {
  const uint64_t s = known(a.start_ns), e = known(a.end_ns);
  if (a.correlation_id != 0 && a.domain != v1::API_DOMAIN_NCCL && fo.gap_corrs->count(a.correlation_id))
    fo.gap_launches[a.correlation_id] = {seq, a.thread_id, s};
  if (e == 0) return;
  for (const auto& [device, gaps] : *fo.gaps) {
    // A device's gaps are disjoint: from the first that ends after the call starts, while
    // they begin before it ends.
    auto it = std::upper_bound(gaps.begin(), gaps.end(), s, [](uint64_t t, const Fold::LabelledGap& g) { return t < g.end; });
    for (; it != gaps.end() && it->begin < e; ++it) {
      Fold::Cover c;
      c.cover = std::min(it->end, e) - std::max(it->begin, s);
      c.seq = seq;
      c.blocking = fo.blocking_names.test(reader, a.name_id, [&](std::string_view name) {
        if (name.empty() && a.name_id != 0) fo.needs_model = "host calls named before their names are defined";
        return is_blocking_call(name);
      });
      std::map<uint64_t, Fold::Cover>& by_thread = fo.gap_calls[it->index];
      auto [at, fresh] = by_thread.try_emplace(a.thread_id);
      if (fresh && ++fo.gap_threads > kMaxHostThreads) fo.needs_model = "more host threads than a streamed chart keeps";
      if (fresh || c.better_than(at->second)) {
        c.name = reader.string(a.name_id);
        at->second = std::move(c);
      }
    }
  }
}

void fold_event(Fold& fo, const gpuhook::RecordView& v, const Gpu& g, uint64_t seq, bool nccl, bool named) {
  if (g.kind == EventKind::kSync) return;
  const uint64_t begin = g.start ? g.start : g.queued;
  const bool kept = named && fo.select.on(g.device, g.stream) &&
                    (begin != 0 ? fo.select.in_time(begin, g.end) : fo.outside->count(seq) == 0);
  if (kept && fo.annotate && v.kind == v1::Record::kKernel) count_low_occupancy(fo, v.kernel, g, seq);
  const Frame& f = *fo.frame;
  const uint64_t b = g.start, en = g.end;
  const bool held = kept && !fo.held_seq->empty() && fo.is_held(seq);
  if (held) fo.held.emplace_back(seq, record_of(v));
  else if (nccl) {
    fo.nccl_kernels.add(record_of(v));
    fo.nccl_kernel_seqs.push_back(seq);
  }
  if (!b || en < b) return;
  if (fo.waits.wants_stream(g.device, g.stream)) {
    const Fold::Waiting w{g.device, g.stream, seq, g.queued, b, en};
    const uint64_t launch = g.corr ? fo.launch_of(g.corr) : 0;
    if (g.corr && launch == 0) {
      if (fo.waiting.size() >= kMaxWaiting) {
        fo.needs_model = "too many GPU records read before their launch calls";
        return;
      }
      fo.waiting.emplace(g.corr, w);
    } else {
      fo.offer(w, launch);
    }
  }
  if (g.kind == EventKind::kKernel) fo.waits.offer_start(g.device, g.stream, g.priority, seq, b, en);
  if (!kept) return;  // the busy unions, the copies and the coverage are the drawn events'
  if (fo.annotate && g.kind == EventKind::kMemcpy && !fo.too_many_copies) {
    if (fo.copies.size() < kMaxCopies) {
      fo.copies.push_back({b, en, seq, g.device});
    } else {
      fo.too_many_copies = true;
      fo.copies = {};
    }
  }
  fo.busy[{g.device, g.kind == EventKind::kKernel ? BusyClass::kCompute : BusyClass::kCopy}].add(b, en);
  if (++fo.spans > kMaxSpans) {
    fo.spans = 0;
    for (const auto& [key, u] : fo.busy) fo.spans += u.size();
    if (fo.spans > kMaxSpans) {
      fo.needs_model = "more separate busy spans than a streamed chart keeps";
      return;
    }
  }
  if (held) return;
  auto [lane, fresh] = fo.lanes.try_emplace(lane_of(g, fo.lanes_by));
  if (fresh) lane->second.exec = lane->second.wait = Coverage(f.columns());
  detail::fold_narrow(f, lane->second.exec, lane->second.wait, g.queued, b, f.x(b), f.x(en));
  ++lane->second.aggregated;
}

// A host call into its thread's lane, as Builder::draw_host_lanes() folds it.
void fold_host_call(Fold& fo, const gpuhook::ApiFields& a, uint64_t seq, const gpuhook::CaptureReader& reader) {
  const Frame& f = *fo.frame;
  const uint64_t s = known(a.start_ns), e = known(a.end_ns);
  if (!detail::host_call_in_window(f, s, e)) return;
  const uint64_t tid = a.thread_id;
  if (fo.host_threads.insert(tid).second && fo.host_threads.size() > kMaxHostThreads) {
    fo.needs_model = "more host threads than a streamed chart keeps";
    return;
  }
  auto it = fo.host.find(tid);
  if (it == fo.host.end()) {
    // Only the threads with the smallest ids get lanes: one with a larger id than all those
    // kept so far never will.
    if (fo.host.size() >= detail::kMaxHostLanes) {
      if (tid > fo.host.rbegin()->first) return;
      fo.host.erase(std::prev(fo.host.end()));
    }
    it = fo.host.try_emplace(tid).first;
    it->second.calls.other = it->second.calls.ticks = Coverage(f.columns());
  }
  // A name not defined yet stops the stream (the loaded capture would know it).
  const bool blocking = fo.blocking_names.test(reader, a.name_id, [&](std::string_view name) {
    if (name.empty() && a.name_id != 0) fo.needs_model = "host calls named before their names are defined";
    return is_blocking_call(name);
  });
  if (!fo.needs_model.empty()) return;
  const bool launched = a.correlation_id != 0 && a.domain != v1::API_DOMAIN_NCCL && fo.gpu_corrs->contains(a.correlation_id);
  Fold::HostThread& th = it->second;
  if (!detail::fold_host_call(f, th.calls, s, e, launched, blocking)) return;
  if (th.blocking.size() < detail::kMaxHostBars) {
    th.blocking.emplace_back(seq, a);
  } else {  // past the bars any chart draws: coverage
    detail::add_host_call(f, th.calls.other, s, e);
  }
}

void fold_api(Fold& fo, const gpuhook::ApiFields& a, uint64_t seq, const gpuhook::CaptureReader& reader) {
  if (fo.host_lanes) fold_host_call(fo, a, seq, reader);
  if (fo.annotate && !fo.gaps->empty()) note_gap_call(fo, a, seq, reader);
  const uint32_t corr = a.correlation_id;
  if (corr == 0 || a.domain == v1::API_DOMAIN_NCCL) return;
  if (!fo.held_corr->empty() && fo.held_corr->contains(corr)) fo.launches[corr] = {seq, gpuhook::to_record(a)};
  const uint64_t s = known(a.start_ns);
  if (s == 0 || !fo.waits.wants_any()) return;
  fo.calls.set(corr, s);
  if (fo.waiting.empty()) return;
  const auto [from, to] = fo.waiting.equal_range(corr);
  for (auto it = from; it != to; ++it) fo.offer(it->second, s);
  fo.waiting.erase(from, to);
}

}  // namespace

void read_fold(const std::string& path, const LoadOptions& load, Fold& fo, std::atomic<bool>& stop) {
  read_range(path, load, fo.range, stop, [&](const gpuhook::RecordView& v, uint64_t n, const gpuhook::CaptureReader& reader) {
    Gpu g;
    if (gpu_of(v, &g)) {
      const bool nccl =
          v.kind == v1::Record::kKernel && fo.nccl.maybe(reader, v.kernel.correlation_id, v.kernel.name_id, n);
      fold_event(fo, v, g, seq_of(fo.index, n), nccl, fo.select.named(fo.kernel_names, g.kind, g.name, reader));
      return fo.needs_model.empty();
    }
    if (v.kind == v1::Record::kApi) {
      fold_api(fo, v.api, seq_of(fo.index, n), reader);
      return fo.needs_model.empty();
    }
    const v1::Record& r = *v.record;
    if (r.kind_case() == v1::Record::kNccl) {
      fo.nccl_calls.add(r);
    } else if (r.kind_case() == v1::Record::kExternalCorrelation) {
      const auto& x = r.external_correlation();
      if (x.kind() == kHookExternalKind && x.external_id() != 0 && x.correlation_id() != 0) {
        fo.nccl.under_external(x.correlation_id());
        fo.externals.add(r);
      }
    }
    return fo.needs_model.empty();
  });
}

std::optional<Scanned> merge_scans(std::vector<Scan>& scans, size_t keep, std::string* why_not) {
  // Records read before their launch: the launch may be in another share.
  for (size_t i = 0; i < scans.size(); ++i) {
    for (const auto& [corr, w] : scans[i].waiting) {
      uint64_t launch = 0;
      if (!analysis::value_across(scans, i, corr, [corr](const Scan& s) { return s.launch_of(corr); }, &launch)) {
        *why_not = kTooFar;
        return std::nullopt;
      }
      scans[i].place(w.lane, w.stream, w.priority, w.seq, w.begin, w.end, launch, w.sync);
    }
    scans[i].waiting.clear();
  }
  Scanned m;
  size_t candidates = 0;
  for (const Scan& sc : scans) candidates += sc.widest.size();
  m.widest.reserve(candidates);
  for (Scan& sc : scans) {
    if (sc.first_ns) m.first_ns = m.first_ns ? std::min(m.first_ns, sc.first_ns) : sc.first_ns;
    m.last_ns = std::max(m.last_ns, sc.last_ns);
    m.events += sc.events;
    m.syncs += sc.syncs;
    m.in_capture += sc.in_capture;
    m.timed += sc.timed;
    m.lo = std::min(m.lo, sc.lo);
    m.hi = std::max(m.hi, sc.hi);
    m.launched_end = std::max(m.launched_end, sc.launched_end);
    if (m.outside.size() + sc.outside.size() > kMaxWaiting) {
      *why_not = "too many GPU records begun by launch calls outside the window";
      return std::nullopt;
    }
    m.outside.insert(sc.outside.begin(), sc.outside.end());
    for (Candidate& c : sc.widest) {
      if (auto it = sc.widest_launch.find(c.seq); it != sc.widest_launch.end()) c.launch = it->second;
      m.widest.push_back(c);
    }
    std::vector<Candidate>().swap(sc.widest);  // a page's are tens of MB: not kept twice
    sc.widest_launch = {};
    for (auto& [key, lane] : sc.lanes) {
      LaneScan& all = m.lanes[key];
      all.events += lane.events;
      for (const auto& [stream, first] : lane.by_stream) all.by_stream[stream].merge(first);
    }
    for (const auto& [device, streams] : sc.streams)
      for (const auto& [stream, n] : streams) m.streams[device][stream] += n;
    for (const v1::Record& r : sc.context)
      if (r.kind_case() == v1::Record::kStream && m.stream_priority.size() < (1u << 20))
        m.stream_priority[r.stream().stream()] = r.stream().priority();
    if (sc.host_lanes) {
      if (sc.calls_share_ids) {
        *why_not = kSharedIds;
        return std::nullopt;
      }
      m.gpu_corrs.absorb(sc.gpu_corrs);
    }
  }
  // Calls of different shares that share an id.
  for (size_t i = 0; i < scans.size(); ++i)
    for (size_t j = i + 1; j < scans.size(); ++j)
      if (scans[i].host_lanes && scans[i].call_corrs.intersects(scans[j].call_corrs)) {
        *why_not = kSharedIds;
        return std::nullopt;
      }
  // Only the widest `keep` in order: a page keeps 100,000 of up to twice that per share.
  if (m.widest.size() > keep) {
    std::nth_element(m.widest.begin(), m.widest.begin() + static_cast<std::ptrdiff_t>(keep), m.widest.end(), std::greater<>());
    m.widest.resize(keep);
  }
  std::sort(m.widest.begin(), m.widest.end(), std::greater<>());
  return m;
}

// The first priority in selection order of each lane (Builder::bucket_lanes()).
int32_t lane_priority(const LaneScan& lane, const std::map<uint32_t, int32_t>& stream_priority) {
  std::optional<std::pair<Order, int32_t>> first;
  for (const auto& [stream, fp] : lane.by_stream) {
    if (fp.recorded && (!first || fp.recorded->first < first->first)) first = fp.recorded;
    auto table = stream_priority.find(stream);
    if (fp.unrecorded && table != stream_priority.end() && table->second != 0 && (!first || *fp.unrecorded < first->first))
      first = std::make_pair(*fp.unrecorded, table->second);
  }
  return first ? first->second : 0;
}

}  // namespace gantt::streamed
