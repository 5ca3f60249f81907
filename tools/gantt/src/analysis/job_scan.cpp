// A job's captures scanned one after another (analysis/job_scan.h): collectives on one clock
// for stats --by collective, graph launches for stats --by graph.
#include "gantt/analysis/job_scan.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gantt/analysis/intervals.h"
#include "gantt/analysis/stream_stats.h"
#include "gantt/model/model_builder.h"
#include "gantt/scan/open.h"
#include "seen_times.h"

namespace gantt::analysis {

std::optional<JobScan> scan_job(const std::vector<std::string>& paths, const EventScanOptions& options,
                                const EventFilter* filter, const ShareConsumers& consumers, const CaptureScanned& done,
                                std::string* why_not, WindowEnd end) {
  const auto refuse = [why_not](const std::string& why) -> std::optional<JobScan> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (paths.empty()) return refuse("no capture");
  if (paths.size() > UINT16_MAX) return refuse("more than 65535 captures");
  std::optional<std::vector<std::unique_ptr<EventScanner>>> opened = open_scanners(paths, options, why_not);
  if (!opened) return std::nullopt;
  std::vector<std::unique_ptr<EventScanner>>& scanners = *opened;
  JobScan out;
  for (const auto& scanner : scanners) out.context.captures.push_back(scanner->context().captures.front());
  out.unusable = unusable_capture(out.context);
  if (!out.unusable.empty()) return out;
  if (filter) {
    std::vector<const EventScanner*> contexts;
    for (const auto& scanner : scanners) contexts.push_back(scanner.get());
    out.clock = job_clock(paths, contexts, options, why_not, filter);
    if (!out.clock) return std::nullopt;
    // Held open: no --from past the indexes' end, no --to before --from is refused before the
    // scan (nothing lies there, and the caller says its error after the scan's warnings). A
    // range without an end ends at the job's last time, which only a load tells (settle()):
    // held open too.
    JobClock selecting = *out.clock;
    EventFilter select = *filter;
    if (end == WindowEnd::kSettledAfter && select.from_ns >= 0) {
      constexpr uint64_t kOpen = UINT64_MAX / 4;
      if (select.range.empty())
        selecting.last_ns = std::max(selecting.last_ns, selecting.first_ns + static_cast<uint64_t>(select.from_ns));
      else if (!selecting.range)  // one capture's range, found in its context
        selecting.last_ns = std::max(selecting.last_ns, kOpen);
      else if (selecting.range->second >= selecting.last_ns)
        selecting.range->second = kOpen;
      if (select.to_ns >= 0) select.to_ns = std::max(select.to_ns, select.from_ns);
    }
    if (!select_on_job_clock(selecting, paths, scanners, select, why_not)) return std::nullopt;
    if (!filter->range.empty()) {
      if (out.clock->range) {  // found among several captures, on the job's clock
        Selection& w = out.range_window.emplace();
        w.origin_ns = out.clock->range->first;
        w.origin_name = "the start of range " + filter->range;
        set_window(*filter, out.clock->range->first, out.clock->range->second, &w);
        out.range_open = out.clock->range->second >= out.clock->last_ns;  // (or its work ends last)
      } else if (const ScanFilter* one = scanners.front()->filter()) {
        out.range_window = one->window;
        const Model& context = scanners.front()->context();
        out.range_open = context.ranges.end_ns[range_occurrence(context, filter->range)] == 0;
      }
    }
  }
  for (size_t c = 0; c < paths.size(); ++c) {
    EventScanner& scanner = *scanners[c];
    std::string why;
    const bool ran = scanner.run(consumers(c, scanner, out.context), &why);
    const std::string load = done(c, scanner, ran, why);
    if (!load.empty()) return refuse(about_capture(paths, c, load));
    for (const std::string& line : scanner.warnings()) out.warnings.push_back(line);
    out.corrupt = out.corrupt || scanner.corrupt();
    out.gpu_events += scanner.events_read();
    out.selected_events += scanner.events_selected();
    scanners[c].reset();  // its readers and context are let go
  }
  return out;
}

std::vector<int64_t> job_offsets(const JobScan& job, const std::vector<RankClockInput>& clocks,
                                 RankAlignment* alignment) {
  if (job.clock) {
    if (alignment) *alignment = job.clock->alignment;
    return job.clock->offsets;
  }
  const size_t captures = job.context.captures.size();
  std::vector<int64_t> offsets(captures, 0);
  if (captures < 2) return offsets;
  RankAlignment aligned = align_ranks(clocks);
  for (size_t c = 0; c < captures && c < aligned.captures.size(); ++c) offsets[c] = aligned.captures[c].offset_ns;
  if (alignment) *alignment = std::move(aligned);
  return offsets;
}

void move_calls(std::vector<RankCollectiveCall>& calls, const std::vector<int64_t>& offsets) {
  for (RankCollectiveCall& call : calls) {
    call.kernel_start_ns = shifted(call.kernel_start_ns, offsets[call.capture]);
    call.kernel_end_ns = shifted(call.kernel_end_ns, offsets[call.capture]);
  }
}

namespace {

// select_events()' origin and window of a job without a filter: its first to its last time
// (`records`' captures, as a load has them), fitted to the events of every capture (`times`,
// moved by their `offsets`).
Selection job_window(const Model& records, const std::vector<SeenTimes>& times, const std::vector<int64_t>& offsets) {
  SeenTimes all;
  for (size_t c = 0; c < times.size(); ++c) all.absorb(times[c].fit_moved(offsets[c]));
  Selection window;
  const uint64_t t0 = records.first_ns();
  window.origin_ns = t0;
  window.window_start_ns = t0;
  window.window_end_ns = std::max(records.last_ns(), t0);
  if (all.any_event && all.lo != UINT64_MAX && all.hi >= all.lo)
    fit_window(window.window_start_ns, window.window_end_ns, all.lo, all.hi, &window);
  return window;
}

// One share's collective calls (collective_call()), at most `budget`.
class CollectiveCalls : public EventConsumer {
 public:
  CollectiveCalls(uint16_t capture, int32_t global_rank, size_t budget)
      : capture_(capture), global_rank_(global_rank), budget_(budget) {}
  void event(const ScannedEvent& e, const gpuhook::CaptureReader&) override {
    shared_kernel = shared_kernel || several_collectives(e);
    RankCollectiveCall call;
    if (!collective_call(e, capture_, global_rank_, &call)) return;
    if (calls.size() >= budget_) too_many = true;
    else calls.push_back(call);
  }
  bool stopped() const override { return too_many; }

  std::vector<RankCollectiveCall> calls;
  bool shared_kernel = false;
  bool too_many = false;

 private:
  uint16_t capture_;
  int32_t global_rank_;
  size_t budget_;
};

// A share's collectives, and the times a load would see of it: the first and last of every
// record ModelBuilder times, and what select_events() fits its window to.
class TimedCalls : public CollectiveCalls {
 public:
  using CollectiveCalls::CollectiveCalls;
  void event(const ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
    CollectiveCalls::event(e, reader);
    times.see_event(e);
  }
  void unselected(const ScannedEvent& e) override { times.see_unselected(e); }
  void api(const gpuhook::ApiFields& a, const gpuhook::CaptureReader&) override { times.see_call(a); }
  void record(const gpuhook::v1::Record& r, const gpuhook::CaptureReader&) override { times.see_record(r); }
  SeenTimes times;
};

constexpr const char* kTooManyCollectives = "more collectives than a scan keeps";

// Keeps one consumer of type T per share of the capture being scanned.
template <class T>
struct ShareSet {
  std::vector<std::unique_ptr<T>> shares;
  template <class Make>
  std::vector<EventConsumer*> make(size_t n, Make&& one) {
    shares.clear();
    std::vector<EventConsumer*> out;
    for (size_t i = 0; i < n; ++i) {
      shares.push_back(one());
      out.push_back(shares.back().get());
    }
    return out;
  }
};

}  // namespace

std::optional<ScannedCollectives> scan_collective_calls(const std::vector<std::string>& paths,
                                                        const EventScanOptions& options, const EventFilter* filter,
                                                        std::string* why_not) {
  EventScanOptions so = options;
  so.join_nccl = true;
  ScannedCollectives out;
  ShareSet<CollectiveCalls> set;
  // Without a filter the clocks come from the collectives the scans keep, as diagnose_scan()
  // puts them; with one, scan_job() put the job on its clock first.
  std::vector<RankClockInput> clocks;
  bool shared_kernel = false;
  const auto consumers = [&](size_t c, const EventScanner& scanner, const Model& context) {
    const size_t budget = (kMaxScannedCollectives - out.calls.size()) / std::max<size_t>(scanner.shares(), 1) + 1;
    const auto capture = static_cast<uint16_t>(c);
    return set.make(scanner.shares(), [&] { return std::make_unique<CollectiveCalls>(capture, global_rank(context, capture), budget); });
  };
  const auto done = [&](size_t, const EventScanner& scanner, bool ran, const std::string& why) -> std::string {
    const bool too_many = std::any_of(set.shares.begin(), set.shares.end(), [](const auto& sh) { return sh->too_many; });
    if (!ran) return too_many ? kTooManyCollectives : why;
    const size_t first = out.calls.size();
    for (const auto& sh : set.shares) {
      out.calls.insert(out.calls.end(), sh->calls.begin(), sh->calls.end());
      shared_kernel = shared_kernel || sh->shared_kernel;
    }
    if (out.calls.size() > kMaxScannedCollectives) return kTooManyCollectives;
    if (paths.size() > 1 && !filter) clocks.push_back(clock_input(scanner, out.calls.begin() + static_cast<ptrdiff_t>(first), out.calls.end()));
    return {};
  };
  std::optional<JobScan> job = scan_job(paths, so, filter, consumers, done, why_not);
  if (!job) return std::nullopt;
  out.job = std::move(*job);
  if (!out.job.unusable.empty()) return out;
  const auto refuse = [why_not](const std::string& why) -> std::optional<ScannedCollectives> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (shared_kernel)
    return refuse("a group of NCCL calls that launched fewer kernels than it had collectives (a load lists each call)");
  if (!one_call_each(out.calls))
    return refuse("a capture that ran one collective more than once (a process driving it on several devices): a load "
                  "keeps the first of its calls");
  move_calls(out.calls, job_offsets(out.job, clocks));
  return out;
}

namespace {

// One share's graph nodes by launch (graph id, the launch's correlation id): graph_launches()
// takes the kernels, copies and memsets with a graph id, and the launch call of its first node.
class GraphNodes : public EventConsumer {
 public:
  explicit GraphNodes(size_t budget) : budget_(budget) {}
  struct Launch {
    uint64_t nodes = 0;
    uint64_t start_ns = 0, end_ns = 0;
    std::vector<Interval> work;  // nodes that are GPU work (is_gpu_work())
    int64_t call_ns = -1;
  };
  void event(const ScannedEvent& e, const gpuhook::CaptureReader&) override {
    if (e.graph_id == 0 || (e.kind != EventKind::kKernel && e.kind != EventKind::kMemcpy && e.kind != EventKind::kMemset))
      return;
    if (held_ >= budget_) {
      too_many = true;
      return;
    }
    ++held_;  // every node counts: a launch of one node costs its entry in `launches`
    Launch& l = launches[{e.graph_id, e.correlation_id}];
    ++l.nodes;
    if (l.call_ns < 0 && e.launched && e.launch_ns != 0 && e.launch_end_ns >= e.launch_ns)
      l.call_ns = static_cast<int64_t>(e.launch_end_ns - e.launch_ns);
    if (e.start_ns == 0 || e.end_ns < e.start_ns) return;
    l.start_ns = l.start_ns == 0 ? e.start_ns : std::min(l.start_ns, e.start_ns);
    l.end_ns = std::max(l.end_ns, e.end_ns);
    if (e.end_ns > e.start_ns) l.work.emplace_back(e.start_ns, e.end_ns);
  }
  bool stopped() const override { return too_many; }

  std::map<std::pair<uint64_t, uint32_t>, Launch> launches;
  bool too_many = false;

 private:
  size_t budget_;
  size_t held_ = 0;
};

}  // namespace

std::optional<ScannedGraphs> scan_graph_launches(const std::vector<std::string>& paths, const EventScanOptions& options,
                                                 const EventFilter* filter, std::string* why_not) {
  EventScanOptions so = options;
  so.join_nccl = true;     // an NCCL kernel a graph ran is no kernel node for graph_launches()
  so.launch_ends = true;   // the launch call's time
  ScannedGraphs out;
  ShareSet<GraphNodes> set;
  size_t held = 0;
  const auto consumers = [&](size_t, const EventScanner& scanner, const Model&) {
    const size_t budget = (kMaxScannedGraphNodes - held) / std::max<size_t>(scanner.shares(), 1) + 1;
    return set.make(scanner.shares(), [&] { return std::make_unique<GraphNodes>(budget); });
  };
  const auto done = [&](size_t c, const EventScanner&, bool ran, const std::string& why) -> std::string {
    const bool too_many = std::any_of(set.shares.begin(), set.shares.end(), [](const auto& sh) { return sh->too_many; });
    if (too_many) return "more CUDA graph nodes than a scan keeps";
    if (!ran) return why;
    // A launch's nodes may lie in several shares: their figures join by launch, the earliest
    // share's call first (graph_launches() takes the first node's, in start order; every node
    // of a launch has its call).
    std::map<std::pair<uint64_t, uint32_t>, GraphNodes::Launch> joined;
    for (const auto& sh : set.shares)
      for (auto& [key, part] : sh->launches) {
        GraphNodes::Launch& l = joined[key];
        l.nodes += part.nodes;
        if (part.start_ns != 0) l.start_ns = l.start_ns == 0 ? part.start_ns : std::min(l.start_ns, part.start_ns);
        l.end_ns = std::max(l.end_ns, part.end_ns);
        l.work.insert(l.work.end(), part.work.begin(), part.work.end());
        held += part.nodes;
        if (l.call_ns < 0) l.call_ns = part.call_ns;
      }
    if (held > kMaxScannedGraphNodes) return "more CUDA graph nodes than a scan keeps";
    for (auto& [key, l] : joined) {
      GraphLaunchFigures f;
      f.capture = static_cast<uint16_t>(c);
      f.graph_id = key.first;
      f.nodes = l.nodes;
      f.start_ns = l.start_ns;
      f.end_ns = l.end_ns;
      merge_intervals(l.work);
      f.busy_ns = total_length(l.work);
      f.call_ns = l.call_ns;
      out.launches.push_back(f);
    }
    set.shares.clear();
    return {};
  };
  std::optional<JobScan> job = scan_job(paths, so, filter, consumers, done, why_not);
  if (!job) return std::nullopt;
  out.job = std::move(*job);
  return out;
}

namespace {
// A reader of a capture's records of `kinds` (bits of Record::KindCase) besides its context,
// under the load's options: of the chunks `range` names, or of the whole file.
std::unique_ptr<gpuhook::CaptureReader> open_kinds(const std::string& path, const LoadOptions& load, uint64_t kinds,
                                                   const ChunkRange& range = {}) {
  gpuhook::ReaderOptions ro;
  ro.strict = load.strict;
  ro.from_ns = load.from_ns;
  ro.to_ns = load.to_ns;
  ro.only_kinds = kinds;
  ro.first_chunk = range.first_chunk;
  ro.end_chunk = range.end_chunk;
  ro.outside_strings_only = range.end_chunk != 0;
  return gantt::scan::open_capture(path, ro);
}

// What one share of a read_shared() keeps: `Part` is its own, and the read's outcome.
template <class Part>
struct SharedPart {
  ChunkRange range;
  Part part;
  gpuhook::Integrity integrity;
  std::exception_ptr error;
};

// One read of a capture's records of `kinds` on the shares of its chunk index side by side, on
// every core, each share's reader under the load's amplification guard: `take(view, reader,
// part)` for each record on its share's thread (kernels and calls as fields, the other kinds
// parsed into *view.record); the parts in file order. A file without an index, or a damaged one
// (one reader stops at the damage, the shares after it would not), is read as one share.
template <class Part, class Take>
std::vector<Part> read_shared(const std::string& path, const LoadOptions& load, uint64_t kinds, Take&& take) {
  std::optional<gpuhook::v1::ChunkIndex> index;
  {
    const std::unique_ptr<gpuhook::CaptureReader> probe =
        gantt::scan::open_capture(path, gpuhook::ReaderOptions{load.strict, 0, 0});
    if (index_within_guard(*probe, load)) index = probe->index();
  }
  const auto run = [&](const std::vector<ChunkRange>& ranges) {
    std::vector<SharedPart<Part>> shares(ranges.size());
    for (size_t i = 0; i < shares.size(); ++i) shares[i].range = ranges[i];
    std::atomic<bool> stop{false};
    run_shares(shares, stop, [&](SharedPart<Part>& sh) {
      const std::unique_ptr<gpuhook::CaptureReader> reader = open_kinds(path, load, kinds, sh.range);
      const AmplificationGuard guard(*reader, load);
      gpuhook::v1::Record parsed;
      gpuhook::RecordView view;
      view.record = &parsed;
      while (!stop.load(std::memory_order_relaxed) && reader->next(view)) {
        guard.check(*reader);
        take(static_cast<const gpuhook::RecordView&>(view), static_cast<const gpuhook::CaptureReader&>(*reader), sh.part);
      }
      sh.integrity = reader->integrity();
    });
    for (const auto& sh : shares)
      if (sh.error) std::rethrow_exception(sh.error);
    return shares;
  };
  std::vector<SharedPart<Part>> shares = run(plan_chunk_ranges(index, default_scan_threads()));
  if (shares.size() > 1 && std::any_of(shares.begin(), shares.end(), [](const auto& sh) { return static_cast<bool>(sh.integrity.error); }))
    shares = run({ChunkRange{}});
  std::vector<Part> parts;
  for (auto& sh : shares) parts.push_back(std::move(sh.part));
  return parts;
}

// One read of a capture's records of `kinds`, each given to `take`, under the load's
// amplification guard.
void read_kinds(const std::string& path, const LoadOptions& load, uint64_t kinds,
                const std::function<void(const gpuhook::v1::Record&)>& take) {
  const std::unique_ptr<gpuhook::CaptureReader> reader = open_kinds(path, load, kinds);
  const AmplificationGuard guard(*reader, load);
  gpuhook::v1::Record r;
  while (reader->next(r)) {
    guard.check(*reader);
    take(r);
  }
}
}  // namespace

std::optional<RecordSpool> memory_records(const std::string& path, const LoadOptions& load, bool with_uses,
                                          std::string* why_not) {
  namespace v1 = gpuhook::v1;
  RecordSpool out;
  const auto bit = [](v1::Record::KindCase k) { return uint64_t{1} << k; };
  std::unordered_set<uint32_t> made_by;  // the allocations' correlation ids
  size_t memory = 0, uses = 0;
  uint64_t kinds = bit(v1::Record::kRange) | bit(v1::Record::kMemory) | bit(v1::Record::kMemoryTag);
  if (with_uses) kinds |= bit(v1::Record::kMemoryUse);
  read_kinds(path, load, kinds, [&](const v1::Record& r) {
    if (r.kind_case() == v1::Record::kMemoryUse) {
      if (++uses > kMaxMemoryUses) return;
    } else if (r.kind_case() == v1::Record::kMemory || r.kind_case() == v1::Record::kMemoryTag) {
      if (++memory > kMaxMemoryRecords) return;
      if (r.kind_case() == v1::Record::kMemory && r.memory().correlation_id() != 0)
        made_by.insert(r.memory().correlation_id());
    }
    out.add(r);
  });
  if (memory > kMaxMemoryRecords || uses > kMaxMemoryUses) {
    if (why_not)
      *why_not = memory > kMaxMemoryRecords ? "more allocation records and memory tags than a scan keeps"
                                            : "more memory uses (GPUHOOK_MEM_USE) than a scan keeps";
    return std::nullopt;
  }
  if (made_by.empty()) return out;
  // The calls that made them: every call's fields read on every core, a message for the few kept.
  const std::vector<RecordSpool> calls = read_shared<RecordSpool>(
      path, load, bit(v1::Record::kApi), [&](const gpuhook::RecordView& view, const gpuhook::CaptureReader&, RecordSpool& part) {
        if (view.kind == v1::Record::kApi && made_by.count(view.api.correlation_id) != 0) part.add(gpuhook::to_record(view.api));
      });
  for (const RecordSpool& part : calls) part.for_each([&](const v1::Record& r) { out.add(r); });
  return out;
}

RecordSpool launch_records(const std::string& path, const LoadOptions& load, const std::unordered_set<uint32_t>& correlations,
                           const ScanSelector* select) {
  namespace v1 = gpuhook::v1;
  const auto bit = [](v1::Record::KindCase k) { return uint64_t{1} << k; };
  const uint64_t kinds = bit(v1::Record::kKernel) | bit(v1::Record::kMemcpy) | bit(v1::Record::kMemset) | bit(v1::Record::kApi);
  // Each share's records with those ids, kernels and calls read as fields (a message for the
  // few kept). Under a selection, the operations are judged once every call is read: one
  // without a GPU time is placed by its launch (filter.cpp event_begin_ns), which may come after it.
  struct Part {
    RecordSpool kept;                     // in file order: the operations and calls, or only the calls under a selection
    std::vector<v1::Record> operations;  // under a selection: those its devices, streams and names keep
    NameFlags named;                      // --kernel's verdict per name the share met
  };
  const std::vector<Part> parts = read_shared<Part>(
      path, load, kinds, [&](const gpuhook::RecordView& view, const gpuhook::CaptureReader& reader, Part& part) {
        const v1::Record& parsed = *view.record;
        uint32_t correlation = 0, device = 0, stream = 0, name = 0;
        switch (view.kind) {
          case v1::Record::kKernel:
            correlation = view.kernel.correlation_id, device = view.kernel.device, stream = view.kernel.stream;
            name = view.kernel.name_id;
            break;
          case v1::Record::kMemcpy:
            correlation = parsed.memcpy().correlation_id(), device = parsed.memcpy().device(), stream = parsed.memcpy().stream();
            break;
          case v1::Record::kMemset:
            correlation = parsed.memset().correlation_id(), device = parsed.memset().device(), stream = parsed.memset().stream();
            break;
          case v1::Record::kApi: correlation = view.api.correlation_id; break;
          default: return;
        }
        if (correlation == 0 || correlations.count(correlation) == 0) return;
        const v1::Record r = view.kind == v1::Record::kKernel ? gpuhook::to_record(view.kernel)
                             : view.kind == v1::Record::kApi  ? gpuhook::to_record(view.api)
                                                              : parsed;
        if (!select || view.kind == v1::Record::kApi) {
          part.kept.add(r);
          return;
        }
        // --device, --stream and --kernel as the scan selected the events (a kernel by its own name).
        const bool kernel = view.kind == v1::Record::kKernel;
        if (select->on(device, stream) && select->named(part.named, kernel ? EventKind::kKernel : EventKind::kMemcpy, name, reader))
          part.operations.push_back(r);
      });
  RecordSpool out;
  std::unordered_map<uint32_t, uint64_t> launch_ns;  // correlation id -> its last call's start
  for (const Part& part : parts)
    part.kept.for_each([&](const v1::Record& r) {
      if (select && r.kind_case() == v1::Record::kApi)
        launch_ns[r.api().correlation_id()] = static_cast<uint64_t>(std::max<int64_t>(r.api().start_ns(), 0));
      out.add(r);
    });
  if (!select) return out;
  const auto known = [](int64_t ns) { return static_cast<uint64_t>(std::max<int64_t>(ns, 0)); };
  for (const Part& part : parts)
    for (const v1::Record& op : part.operations) {
      uint32_t correlation = 0;
      uint64_t begin = 0, end = 0;
      switch (op.kind_case()) {
        case v1::Record::kKernel: {
          const v1::Kernel& k = op.kernel();
          correlation = k.correlation_id(), begin = known(k.start_ns()), end = known(k.end_ns());
          if (begin == 0) begin = known(k.queued_ns());
          break;
        }
        case v1::Record::kMemcpy:
          correlation = op.memcpy().correlation_id(), begin = known(op.memcpy().start_ns()), end = known(op.memcpy().end_ns());
          break;
        default:
          correlation = op.memset().correlation_id(), begin = known(op.memset().start_ns()), end = known(op.memset().end_ns());
          break;
      }
      if (begin == 0) {
        auto it = launch_ns.find(correlation);
        if (it != launch_ns.end()) begin = it->second;
      }
      if (select->in_time(begin, end)) out.add(op);
    }
  return out;
}

Model records_model(const std::vector<std::string>& paths, const AddRecords& add,
                    const std::vector<std::pair<uint64_t, uint64_t>>& spans, const std::vector<int64_t>& offsets) {
  Model records;
  ModelBuilder builder(records);
  for (size_t c = 0; c < paths.size(); ++c) {
    builder.begin_capture(paths[c]);
    add(c, builder);
    builder.end_capture({});
    records.captures[c].first_ns = spans[c].first;
    records.captures[c].last_ns = spans[c].second;
  }
  if (paths.size() > 1) {
    RankAlignment alignment;
    alignment.captures.resize(paths.size());
    for (size_t c = 0; c < paths.size(); ++c) alignment.captures[c].offset_ns = offsets[c];
    apply_rank_alignment(records, alignment);
  }
  return records;
}

namespace {

// `records`' captures given their headers and devices as a job scan read them (`context`): a
// trace read from another tool's format says so in its header, and the charts name the devices.
void with_contexts(Model& records, const Model& context) {
  for (size_t c = 0; c < records.captures.size() && c < context.captures.size(); ++c) {
    records.captures[c].header = context.captures[c].header;
    records.captures[c].devices = context.captures[c].devices;
  }
}

// What a scan of a job keeps beside its own figures, its shares being TimedCalls: the
// collectives that put the captures on one clock (as scan_collective_calls() takes them), and
// each capture's times as a load has them. Then the model of the records the scan kept, on
// that clock, and the window a load of the job selects.
class TimedJob {
 public:
  explicit TimedJob(size_t captures) : times_(captures) {}

  // The collectives each of a capture's shares may keep: the job's at most kMaxScannedCollectives.
  size_t budget(const EventScanner& scanner) const {
    return (kMaxScannedCollectives - calls_.size()) / std::max<size_t>(scanner.shares(), 1) + 1;
  }
  // After capture c's scan: its context's and its shares' times and collectives. "" or why the
  // job must be loaded.
  template <class Share>
  std::string gather(size_t c, const EventScanner& scanner, const std::vector<std::unique_ptr<Share>>& shares) {
    const size_t first = calls_.size();
    times_[c].see_context(scanner);
    for (const auto& sh : shares) {
      calls_.insert(calls_.end(), sh->calls.begin(), sh->calls.end());
      shared_kernel_ = shared_kernel_ || sh->shared_kernel;
      times_[c].absorb(sh->times);
    }
    if (calls_.size() > kMaxScannedCollectives) return kTooManyCollectives;
    if (times_.size() > 1) clocks_.push_back(clock_input(scanner, calls_.begin() + static_cast<ptrdiff_t>(first), calls_.end()));
    return {};
  }
  // After the job's scan (`job`): out's job, each capture's offset onto the job's clock and the
  // alignment that gave them, the model of what `add` gives each capture on that clock, and the
  // windows a load of the job selects, `filter`'s settled (settle()). False with *why_not where
  // the job must be loaded; true with nothing more for an unusable capture.
  bool finish(JobScan job, const std::vector<std::string>& paths, const AddRecords& add, const EventFilter* filter,
              TimedScan* out, std::string* why_not) const {
    out->job = std::move(job);
    if (!out->job.unusable.empty()) return true;
    std::optional<std::vector<int64_t>> offsets_of = offsets(out->job, &out->alignment, why_not);
    if (!offsets_of) return false;
    out->offsets = std::move(*offsets_of);
    out->records = records(paths, add, out->offsets, out->job.context, &out->window);
    return settle(&out->job, filter, out->records, &out->asked, why_not);
  }

 private:
  // Each capture's offset onto the job's clock and the alignment that gave them
  // (job_offsets()); nullopt with *why_not where the collectives cannot tell them as a load's
  // do (not where a kernel ran several of them or a capture ran one twice).
  std::optional<std::vector<int64_t>> offsets(const JobScan& job, RankAlignment* alignment, std::string* why_not) const {
    if (shared_kernel_ || !one_call_each(calls_)) {
      if (why_not) *why_not = "collectives a scan cannot tell as a load does, to put the captures on one clock";
      return std::nullopt;
    }
    return job_offsets(job, clocks_, alignment);
  }
  // records_model() of what `add` gives each capture, its first and last times a load's, moved
  // by `offsets`, with the headers and devices of the job scan's `context`; and in *window the
  // origin and window select_events() gives a load of the job without a filter.
  Model records(const std::vector<std::string>& paths, const AddRecords& add, const std::vector<int64_t>& offsets,
                const Model& context, Selection* window) const {
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    for (const SeenTimes& t : times_) spans.emplace_back(t.first, t.last);
    Model out = records_model(paths, add, spans, offsets);
    with_contexts(out, context);
    *window = job_window(out, times_, offsets);
    return out;
  }
  // A time window the job scan held open (WindowEnd::kSettledAfter), settled on `records`' first
  // and last times, a load's: in *asked select_events()' window, or its error in
  // job->empty_window. False with *why_not where the window was counted from another origin
  // than a load's (a chunk index that knows an earlier time than the records a load times):
  // load instead. A --range's window is the scan's (JobScan::range_window); a range without an
  // end (or whose work ends the job) ends at the job's last time, a load's: settled here too.
  static bool settle(JobScan* job, const EventFilter* filter, const Model& records, std::optional<Selection>* asked,
                     std::string* why_not) {
    // select_events()' window from `origin` to `end`, or its error.
    const auto window = [&](Selection sel, uint64_t end) {
      try {
        set_window(*filter, sel.origin_ns, std::max(end, sel.origin_ns), &sel);
        sel.description = describe_filter(*filter);
        *asked = std::move(sel);
      } catch (const std::invalid_argument& e) {
        job->empty_window = e.what();
      }
      return true;
    };
    if (filter && job->range_window) {
      if (!job->range_open) {
        *asked = job->range_window;
        (*asked)->description = describe_filter(*filter);
        return true;
      }
      // The scan ended it at the indexes' last time, or at its work's end where that came
      // last: a load ends it at its last time, which every end of that work is within.
      uint64_t end = records.last_ns();
      if (job->clock && job->clock->range) end = std::min(end, job->clock->range->second);
      Selection sel;
      sel.origin_ns = job->range_window->origin_ns;
      sel.origin_name = job->range_window->origin_name;
      return window(std::move(sel), end);
    }
    if (!filter || !job->clock || !filter->range.empty() || (filter->from_ns < 0 && filter->to_ns < 0)) return true;
    const uint64_t first = records.first_ns();
    if (first != job->clock->first_ns) {
      if (why_not) *why_not = "a time window counted from the capture's first time, which its chunk index does not tell";
      return false;
    }
    Selection sel;
    sel.origin_ns = first;
    return window(std::move(sel), records.last_ns());
  }

  std::vector<SeenTimes> times_;
  std::vector<RankCollectiveCall> calls_;
  std::vector<RankClockInput> clocks_;
  bool shared_kernel_ = false;
};

// The scan behind scan_memory() and scan_comm(): the event scan of each capture (its damage,
// its warnings, its span and, for a job, the collectives that put the captures on one clock, as
// scan_collective_calls() reads them), then, where it met a record `wanted` names (NVTX ranges
// among its context), `read` of
// that capture's records by kind, given the NCCL kernels a filter left out where `left_out`
// keeps them; a model of them on the job's clock.
using WantedKind = std::function<bool(gpuhook::v1::Record::KindCase)>;
using ReadRecords = std::function<std::optional<RecordSpool>(const std::string& path, const LeftOutKernels& left_out,
                                                             std::string* why_not)>;
enum class LeftOut { kIgnored, kKept };
std::optional<ScannedRecords> scan_records(const std::vector<std::string>& paths, const EventScanOptions& options,
                                           const WantedKind& wanted, const ReadRecords& read, std::string* why_not,
                                           const EventFilter* filter = nullptr, LeftOut left_out = LeftOut::kIgnored) {
  class RecordsShare final : public TimedCalls {
   public:
    RecordsShare(uint16_t capture, int32_t rank, size_t budget, const WantedKind& wanted, LeftOut keep)
        : TimedCalls(capture, rank, budget), wanted_(wanted), keep_(keep) {}
    void record(const gpuhook::v1::Record& r, const gpuhook::CaptureReader& reader) override {
      TimedCalls::record(r, reader);
      seen = seen || wanted_(r.kind_case());
    }
    void unselected(const ScannedEvent& e) override {
      TimedCalls::unselected(e);
      if (keep_ == LeftOut::kIgnored || (e.kind != EventKind::kNccl && !e.maybe_nccl)) return;
      if (left_out.size() < kMaxCommRecords) left_out.insert({e.correlation_id, e.start_ns});
      else too_many_left_out = true;
    }
    bool stopped() const override { return TimedCalls::stopped() || too_many_left_out; }
    bool seen = false;  // read again after the scan, by kind
    LeftOutKernels left_out;  // the NCCL kernels a filter left out, which a restricted load unties from their calls
    bool too_many_left_out = false;

   private:
    const WantedKind& wanted_;
    LeftOut keep_;
  };
  EventScanOptions so = options;
  so.join_nccl = so.join_nccl || paths.size() > 1;  // the collectives' kernels, for the job's clock
  ShareSet<RecordsShare> set;
  TimedJob timed(paths.size());
  std::vector<RecordSpool> held(paths.size());
  const auto consumers = [&](size_t c, const EventScanner& scanner, const Model& context) {
    const size_t budget = timed.budget(scanner);
    const auto capture = static_cast<uint16_t>(c);
    return set.make(scanner.shares(),
                    [&] { return std::make_unique<RecordsShare>(capture, global_rank(context, capture), budget, wanted, left_out); });
  };
  const auto done = [&](size_t c, const EventScanner& scanner, bool ran, const std::string& why) -> std::string {
    const auto any = [&](bool RecordsShare::*flag) {
      return std::any_of(set.shares.begin(), set.shares.end(), [&](const auto& sh) { return (*sh).*flag; });
    };
    if (!ran)
      return any(&RecordsShare::too_many)            ? kTooManyCollectives
             : any(&RecordsShare::too_many_left_out) ? "more NCCL kernels left out by the filter than a scan keeps"
                                                     : why;
    if (std::string load = timed.gather(c, scanner, set.shares); !load.empty()) return load;
    if (std::any_of(set.shares.begin(), set.shares.end(), [](const auto& sh) { return sh->seen; }) ||
        (scanner.context().ranges.size() != 0 && wanted(gpuhook::v1::Record::kRange))) {
      LeftOutKernels unselected;
      for (const auto& sh : set.shares) unselected.insert(sh->left_out.begin(), sh->left_out.end());
      std::string why_records;
      std::optional<RecordSpool> records = read(paths[c], unselected, &why_records);
      if (!records) return why_records;
      held[c] = std::move(*records);
    }
    return {};
  };
  std::optional<JobScan> scanned = scan_job(paths, so, filter, consumers, done, why_not, WindowEnd::kSettledAfter);
  if (!scanned) return std::nullopt;
  ScannedRecords out;
  const auto add = [&](size_t c, ModelBuilder& builder) {
    held[c].for_each([&](const gpuhook::v1::Record& r) { builder.add(r); });
  };
  if (!timed.finish(std::move(*scanned), paths, add, filter, &out, why_not)) return std::nullopt;
  return out;
}

}  // namespace

std::optional<ScannedRecords> scan_memory(const std::vector<std::string>& paths, const EventScanOptions& options,
                                          const EventFilter* filter, std::string* why_not) {
  namespace v1 = gpuhook::v1;
  return scan_records(
      paths, options,
      [](v1::Record::KindCase k) { return k == v1::Record::kMemory || k == v1::Record::kMemoryTag || k == v1::Record::kMemoryUse; },
      [&](const std::string& path, const LeftOutKernels&, std::string* why) {
        return memory_records(path, options.load, true, why);
      },
      why_not, filter);
}

std::optional<ScannedRecords> scan_ranges(const std::vector<std::string>& paths, const EventScanOptions& options,
                                          const EventFilter* filter, std::string* why_not) {
  namespace v1 = gpuhook::v1;
  const auto kinds = [](v1::Record::KindCase k) { return k == v1::Record::kRange || k == v1::Record::kNotice; };
  return scan_records(
      paths, options, kinds,
      [&](const std::string& path, const LeftOutKernels&, std::string* why) -> std::optional<RecordSpool> {
        RecordSpool out;
        size_t ranges = 0;
        read_kinds(path, options.load, (uint64_t{1} << v1::Record::kRange) | (uint64_t{1} << v1::Record::kNotice),
                   [&](const v1::Record& r) {
                     if (r.kind_case() != v1::Record::kRange || ++ranges <= kMaxScannedRanges) out.add(r);
                   });
        if (ranges <= kMaxScannedRanges) return out;
        if (why) *why = "more NVTX range records than a scan keeps";
        return std::nullopt;
      },
      why_not, filter);
}

std::optional<RecordSpool> comm_records(const std::string& path, const LoadOptions& load, const LeftOutKernels& left_out,
                                        std::string* why_not) {
  namespace v1 = gpuhook::v1;
  const auto bit = [](v1::Record::KindCase k) { return uint64_t{1} << k; };
  // The NCCL calls and the external ids around them, share by share (each share's at most
  // kMaxCommRecords, the file's counted after), then in file order.
  struct Calls {
    RecordSpool calls;
    std::vector<v1::ExternalCorrelation> externals;
    size_t count = 0;
    bool untied = false;
  };
  const std::vector<Calls> parts = read_shared<Calls>(
      path, load, bit(v1::Record::kNccl) | bit(v1::Record::kExternalCorrelation),
      [](const gpuhook::RecordView& view, const gpuhook::CaptureReader&, Calls& part) {
        const v1::Record& r = *view.record;
        if (view.kind == v1::Record::kExternalCorrelation) {
          if (part.externals.size() < kMaxCommRecords) part.externals.push_back(r.external_correlation());
          return;
        }
        if (view.kind != v1::Record::kNccl || ++part.count > kMaxCommRecords) return;
        if (r.nccl().external_id() == 0 && r.nccl().start_ns() != 0) part.untied = true;
        part.calls.add(r);
      });
  size_t calls = 0, externals = 0;
  for (const Calls& p : parts) calls += p.count, externals += p.externals.size();
  if (calls > kMaxCommRecords || externals >= kMaxCommRecords) {
    if (why_not) *why_not = "more NCCL calls than a scan keeps";
    return std::nullopt;
  }
  if (std::any_of(parts.begin(), parts.end(), [](const Calls& p) { return p.untied; })) {
    // The loader finds their kernels among the launches on the call's thread.
    if (why_not) *why_not = "NCCL calls recorded without external correlation ids (an older hook)";
    return std::nullopt;
  }
  RecordSpool out;
  std::unordered_set<uint64_t> nccl_ids;  // the external ids the hook pushed around NCCL calls
  for (const Calls& p : parts)
    p.calls.for_each([&](const v1::Record& r) {
      if (r.nccl().external_id() != 0) nccl_ids.insert(r.nccl().external_id());
      out.add(r);
    });
  std::unordered_set<uint32_t> launched;  // the correlation ids of the CUDA calls inside them
  v1::Record r;
  for (const Calls& p : parts)
    for (const v1::ExternalCorrelation& x : p.externals) {
      if (nccl_ids.count(x.external_id()) == 0) continue;
      launched.insert(x.correlation_id());
      *r.mutable_external_correlation() = x;
      out.add(r);
    }
  // Their kernels, share by share: plain values (no message for each of millions), a message
  // for the few kept.
  const std::vector<RecordSpool> kernels = read_shared<RecordSpool>(
      path, load, bit(v1::Record::kKernel), [&](const gpuhook::RecordView& view, const gpuhook::CaptureReader&, RecordSpool& part) {
        if (view.kind == v1::Record::kKernel && launched.count(view.kernel.correlation_id) != 0 &&
            left_out.count({view.kernel.correlation_id, builder::known(view.kernel.start_ns)}) == 0)
          part.add(gpuhook::to_record(view.kernel));
      });
  for (const RecordSpool& part : kernels) part.for_each([&](const v1::Record& k) { out.add(k); });
  return out;
}

std::optional<ScannedRecords> scan_comm(const std::vector<std::string>& paths, const EventScanOptions& options,
                                        const EventFilter* filter, std::string* why_not) {
  namespace v1 = gpuhook::v1;
  EventScanOptions so = options;
  so.join_nccl = so.join_nccl || filter != nullptr;  // the NCCL kernels a filter leaves out, by their calls
  return scan_records(
      paths, so, [](v1::Record::KindCase k) { return k == v1::Record::kNccl; },
      [&](const std::string& path, const LeftOutKernels& left_out, std::string* why) {
        return comm_records(path, options.load, left_out, why);
      },
      why_not, filter, LeftOut::kKept);
}

std::optional<ScannedRecords> scan_samples(const std::vector<std::string>& paths, const EventScanOptions& options,
                                           const EventFilter* filter, std::string* why_not) {
  namespace v1 = gpuhook::v1;
  const auto read = [&](const std::string& path, const LeftOutKernels&, std::string* why) -> std::optional<RecordSpool> {
    RecordSpool out;
    size_t samples = 0;
    read_kinds(path, options.load, uint64_t{1} << v1::Record::kMetricSample, [&](const v1::Record& r) {
      if (++samples <= kMaxScannedMetricSamples) out.add(r);
    });
    if (samples <= kMaxScannedMetricSamples) return out;
    if (why) *why = "more GPU counter samples than a scan keeps";
    return std::nullopt;
  };
  return scan_records(paths, options, [](v1::Record::KindCase k) { return k == v1::Record::kMetricSample; }, read,
                      why_not, filter);
}

std::optional<ScannedMetrics> scan_metrics(const std::vector<std::string>& paths, const EventScanOptions& options,
                                           const EventFilter* filter, std::string* why_not) {
  std::optional<ScannedRecords> scanned = scan_samples(paths, options, filter, why_not);
  if (!scanned) return std::nullopt;
  // (The samples' times are read from the model before it moves.)
  KernelsAtSamples kernels(scanned->records);
  ScannedMetrics out{std::move(scanned->job), std::move(scanned->records), std::move(kernels)};
  if (!out.job.unusable.empty() || !out.job.empty_window.empty() || out.records.metrics.size() == 0) return out;
  // The kernels, on the records' clock: each one that covers a sample is named there (demangled
  // as a load names it, once per name a share meets). NCCL's kernels are claimed by the join
  // (EventKind::kNccl) and left out, as metric_stats() of a load leaves them.
  class Marks final : public EventConsumer {
   public:
    Marks(KernelsAtSamples& at, uint16_t capture, int64_t offset) : at_(at), capture_(capture), offset_(offset) {}
    void event(const ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
      if (e.kind != EventKind::kKernel || e.start_ns == 0 || e.end_ns <= e.start_ns) return;
      const uint64_t start = shifted(e.start_ns, offset_), end = shifted(e.end_ns, offset_);
      if (!at_.covers_sample(capture_, e.device, start, end)) return;
      auto [it, added] = names_.try_emplace(e.name_id);
      if (added) it->second = demangle(reader.string(e.name_id));
      at_.add(capture_, e.device, start, end, it->second);
    }

   private:
    KernelsAtSamples& at_;
    uint16_t capture_;
    int64_t offset_;
    std::unordered_map<uint32_t, std::string> names_;
  };
  EventScanOptions so = options;
  so.join_nccl = true;
  ShareSet<Marks> set;
  const auto consumers = [&](size_t c, const EventScanner& scanner, const Model&) {
    const int64_t offset = c < scanned->offsets.size() ? scanned->offsets[c] : 0;
    return set.make(scanner.shares(), [&] { return std::make_unique<Marks>(out.kernels, static_cast<uint16_t>(c), offset); });
  };
  const auto done = [](size_t, const EventScanner&, bool ran, const std::string& why) { return ran ? std::string() : why; };
  if (!scan_job(paths, so, filter, consumers, done, why_not, WindowEnd::kSettledAfter)) return std::nullopt;
  return out;
}


namespace {

// One share's unions and times, beside the collectives that put a job on one clock.
class TimelineShare final : public TimedCalls {
 public:
  // Each kind of work once: the busy union is made of the three at the end (busy()), so that a
  // device of kernels alone holds its stretches of work once while it is scanned.
  struct Unions {
    IntervalUnion compute, copy, other;  // kernels and NCCL; copies; memsets
  };
  TimelineShare(uint16_t capture, int32_t rank, size_t budget, size_t span_budget, size_t sample_budget)
      : TimedCalls(capture, rank, budget), span_budget_(span_budget), sample_budget_(sample_budget) {}
  void event(const ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
    TimedCalls::event(e, reader);
    if (!e.start_ns || e.end_ns <= e.start_ns) return;
    const TimelineWork work = timeline_work(e.kind);
    if (work == TimelineWork::kNone) return;
    Unions& u = devices[e.device];
    (work == TimelineWork::kCompute ? u.compute : work == TimelineWork::kCopy ? u.copy : u.other).add(e.start_ns, e.end_ns);
    if ((++added_ & 4095) == 0) too_many_spans = too_many_spans || held() > span_budget_;
  }
  void record(const gpuhook::v1::Record& r, const gpuhook::CaptureReader& reader) override {
    TimedCalls::record(r, reader);
    if (r.kind_case() == gpuhook::v1::Record::kMetricSample && sample_budget_ > 0) {
      if (sample_count_++ < sample_budget_) samples.add(r);
      else too_many_samples = true;
    }
  }
  bool stopped() const override { return CollectiveCalls::stopped() || too_many_spans || too_many_samples; }
  size_t held() const {
    size_t n = 0;
    for (const auto& [device, u] : devices) n += u.compute.held() + u.copy.held() + u.other.held();
    return n;
  }

  std::map<uint32_t, Unions> devices;
  RecordSpool samples;  // GPU counter samples, with a sample budget
  bool too_many_spans = false, too_many_samples = false;
  size_t sample_count() const { return sample_count_; }

 private:
  size_t span_budget_, sample_budget_;
  uint64_t added_ = 0;
  size_t sample_count_ = 0;
};

constexpr const char* kTooManySpans = "more idle gaps than a scan's timeline keeps";
constexpr const char* kTooManySamples = "more GPU counter samples than a scan keeps";

}  // namespace

std::optional<ScannedTimeline> scan_timeline(const std::vector<std::string>& paths, const EventScanOptions& options,
                                             const EventFilter* filter, bool with_samples, std::string* why_not) {
  EventScanOptions so = options;
  so.join_nccl = paths.size() > 1;  // the collectives' kernels, for the job's clock
  ShareSet<TimelineShare> set;
  TimedJob timed(paths.size());
  std::vector<std::map<uint32_t, TimelineShare::Unions>> unions(paths.size());
  std::vector<RecordSpool> samples(paths.size());
  size_t span_count = 0, sample_count = 0;
  const auto consumers = [&](size_t c, const EventScanner& scanner, const Model& context) {
    const size_t shares = std::max<size_t>(scanner.shares(), 1);
    const size_t budget = timed.budget(scanner);
    const size_t span_budget = (kMaxTimelineSpans - span_count) / shares + 1;
    const size_t sample_budget = with_samples ? (kMaxScannedMetricSamples - sample_count) / shares + 1 : 0;
    const auto capture = static_cast<uint16_t>(c);
    return set.make(scanner.shares(), [&] {
      return std::make_unique<TimelineShare>(capture, global_rank(context, capture), budget, span_budget, sample_budget);
    });
  };
  const auto done = [&](size_t c, const EventScanner& scanner, bool ran, const std::string& why) -> std::string {
    const auto any = [&](bool TimelineShare::*flag) {
      return std::any_of(set.shares.begin(), set.shares.end(), [&](const auto& sh) { return (*sh).*flag; });
    };
    if (!ran)
      return any(&TimelineShare::too_many)         ? kTooManyCollectives
             : any(&TimelineShare::too_many_spans)   ? kTooManySpans
             : any(&TimelineShare::too_many_samples) ? kTooManySamples
                                                     : why;
    if (std::string load = timed.gather(c, scanner, set.shares); !load.empty()) return load;
    for (auto& sh : set.shares) {
      sample_count += sh->sample_count();
      sh->samples.for_each([&](const gpuhook::v1::Record& r) { samples[c].add(r); });
      for (auto& [device, u] : sh->devices) {
        TimelineShare::Unions& to = unions[c][device];
        to.compute.absorb(u.compute);
        to.copy.absorb(u.copy);
        to.other.absorb(u.other);
      }
      sh.reset();  // its unions are let go as they are absorbed
    }
    if (sample_count > kMaxScannedMetricSamples) return kTooManySamples;
    for (const auto& [device, u] : unions[c]) span_count += u.compute.size() + u.copy.size() + u.other.size();
    if (span_count > kMaxTimelineSpans) return kTooManySpans;
    return {};
  };
  std::optional<JobScan> scanned = scan_job(paths, so, filter, consumers, done, why_not, WindowEnd::kSettledAfter);
  if (!scanned) return std::nullopt;
  ScannedTimeline out;
  // The samples on the job's clock (records_model() moves them).
  const auto add = [&](size_t c, ModelBuilder& builder) {
    samples[c].for_each([&](const gpuhook::v1::Record& r) { builder.add(r); });
  };
  if (!timed.finish(std::move(*scanned), paths, add, filter, &out, why_not)) return std::nullopt;
  if (!out.job.unusable.empty()) return out;
  // The unions on the job's clock, as align_model_ranks() moves a loaded job.
  for (size_t c = 0; c < paths.size(); ++c) {
    const int64_t offset = out.offsets[c];
    for (auto& [device, u] : unions[c]) {
      DeviceUnions& to = out.unions[{static_cast<uint16_t>(c), device}];
      const auto moved = [offset](IntervalUnion& from) {
        std::vector<Interval> spans = from.take();
        for (auto& [b, e] : spans) b = shifted(b, offset), e = shifted(e, offset);
        return spans;
      };
      if (u.copy.size() == 0 && u.other.size() == 0) {  // kernels alone: busy is their union
        to.compute = moved(u.compute);
        to.busy = to.compute;
        continue;
      }
      IntervalUnion busy;  // the three merged
      for (const IntervalUnion* part : {&u.compute, &u.copy, &u.other})
        for (const auto& [b, e] : part->spans()) busy.add(b, e);
      to.compute = moved(u.compute);
      to.copy = moved(u.copy);
      to.busy = moved(busy);
    }
    unions[c].clear();
  }
  return out;
}

}  // namespace gantt::analysis
