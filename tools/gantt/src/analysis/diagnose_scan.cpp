// diagnose of captures scanned (diagnose.h diagnose_scan): each share's events and calls
// feed a DiagnoseWork of its own, absorbed in file order, capture after capture, and the rules
// of GPU work read it as they read a loaded model's (diagnose_work.h). The rules of records
// read a model of only the records kept whole: the GPU counter samples (NVML's few a second),
// and, for a capture that has any, its allocation records and memory tags with its NVTX ranges
// and the calls that made them, read again after the scan (memory_records). pipeline-bubble and
// slow-link read only NCCL's point-to-point calls (pipeline.cpp, p2p.cpp), so a capture of
// collectives gives them none, and its calls are not kept; a capture with sends or receives is
// read for them by scans of their own (scan_pipelines). throttled and stalled judge the
// kernels that ran during a throttle stretch or PM sampling's SM-active samples: one more scan
// of the events gathers them (scan_sample_kernels). Memory uses (GPUHOOK_MEM_USE) are read
// with the allocations, and memory-idle's judged allocations' last uses once more by their
// correlation ids (launch_records), with the last work each capture's CUDA graphs ran from the
// scan; under a filter, only the operations it selects, as a load restricted to it names them. Several
// captures are the ranks of one job: imbalance compares their busy time, and names the
// straggler from their collectives' kernels, which are kept (one per collective and rank).
#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gpuhook/nccl_types.h>

#include "gantt/analysis/clock_scan.h"
#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/event_scan.h"
#include "gantt/analysis/job_scan.h"
#include "gantt/analysis/stats.h"
#include "gantt/model/model_builder.h"
#include "gantt/model/occupancy.h"
#include "gantt/model/record_spool.h"
#include "gantt/scan/open.h"
#include "gantt/ranks/collectives.h"
#include "diagnose_rules.h"
#include "diagnose_work.h"
#include "seen_times.h"

namespace gantt::analysis {
namespace {

namespace v1 = gpuhook::v1;
using namespace detail;

// Counter samples kept for the rules of records; past them, the captures are loaded.
constexpr size_t kMaxSamples = size_t{1} << 21;  // 32 bytes each

struct Sample {
  int64_t time_ns;
  uint64_t value;
  uint32_t device;
  int32_t metric;  // v1::GpuMetric
  bool has_time;
};

// The strings of a job's captures under one set of ids: a capture's ids follow the earlier
// captures' (0, the empty string in every file, stays 0), so names of two files never share an
// id, and the first capture's are its own. Each capture's strings are kept once its scan ends.
class JobStrings {
 public:
  // What capture ids of the capture being scanned are moved by.
  uint32_t offset() const { return next_; }
  // False when the ids would pass 32 bits.
  bool end_capture(const std::vector<std::string>& strings) {
    if (strings.size() > UINT32_MAX - next_) return false;
    tables_.push_back({next_, strings});
    next_ += static_cast<uint32_t>(strings.size());
    return true;
  }
  std::string get(uint32_t id) const {
    const auto after = std::upper_bound(tables_.begin(), tables_.end(), id,
                                        [](uint32_t v, const Table& t) { return v < t.first_id; });
    if (id == 0 || after == tables_.begin()) return {};
    const Table& t = *(after - 1);
    return id - t.first_id < t.strings.size() ? t.strings[id - t.first_id] : std::string();
  }

 private:
  struct Table {
    uint32_t first_id;
    std::vector<std::string> strings;
  };
  std::vector<Table> tables_;
  uint32_t next_ = 0;
};

class DiagnoseShare final : public EventConsumer {
 public:
  // `context`: the job's captures; this share reads capture `capture`, whose string ids become
  // the job's by adding `name_offset`. It keeps up to `collective_budget` of its collectives'
  // kernels (several ranks; 0: none).
  DiagnoseShare(const Model& context, uint16_t capture, uint32_t name_offset, size_t collective_budget)
      : work(context),
        capture_(capture),
        global_rank_(global_rank(context, capture)),
        name_offset_(name_offset),
        collective_budget_(collective_budget) {}

  void event(const ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
    times.see_event(e);
    if (collective_budget_ != 0) keep_collective(e);
    // A kernel a load's collective_calls() lists under several calls: the straggler would miss
    // all but the first.
    if (collective_budget_ != 0 && several_collectives(e)) shared_kernel = true;
    if (e.graph_id != 0) last_graph_ns = std::max(last_graph_ns, e.start_ns);
    // stats.h is_gpu_work: a synchronisation and a host function are no GPU work.
    if (e.kind == EventKind::kSync || e.kind == EventKind::kHostFunc || e.start_ns == 0 || e.end_ns <= e.start_ns) return;
    WorkEvent x{e.kind, capture_, e.device, e.stream, e.priority, job_id(e.name_id != 0 ? e.name_id : e.launch_name_id),
                e.start_ns, e.end_ns, e.queued_ns, e.bytes, e.grid, e.block, static_cast<uint16_t>(e.registers_per_thread),
                e.shared_memory_bytes, e.graph_id != 0, false};
    if (e.kind == EventKind::kMemcpy)
      x.host_waits = copy_host_wait(e.launched && async_copy_call(reader.string(e.launch_name_id)), e.copy_kind,
                                    (e.copy_flags & kCopyAsync) != 0, (e.copy_flags & kCopyPageable) != 0,
                                    e.graph_id != 0) != CopyHostWait::kNone;
    if (e.launched && e.launch_ns != 0) {
      x.launch_ns = e.launch_ns;
      x.launch_thread = e.launch_thread_id;
    }
    work.add(x);
    reader_ = &reader;
  }

  void unselected(const ScannedEvent& e) override { times.see_unselected(e); }

  void api(const gpuhook::ApiFields& a, const gpuhook::CaptureReader& reader) override {
    times.see_call(a);
    if (a.start_ns <= 0 || a.end_ns <= a.start_ns) return;
    reader_ = &reader;
    if (!is_sync(a.name_id, reader)) return;
    work.add_sync({static_cast<uint64_t>(a.start_ns), static_cast<uint64_t>(a.end_ns), capture_, job_id(a.name_id)});
  }

  void record(const v1::Record& r, const gpuhook::CaptureReader&) override {
    times.see_record(r);
    switch (r.kind_case()) {
      case v1::Record::kMemory:
      case v1::Record::kMemoryTag:
        memory = true;  // read again after the scan, with the calls that made them (memory_records)
        break;
      case v1::Record::kMemoryUse:
        memory = uses = true;  // read with the allocations; memory-idle names the last use's call from one more read
        break;
      case v1::Record::kMetricSample: {
        const auto& x = r.metric_sample();
        if (samples.size() < kMaxSamples)
          samples.push_back({x.time_ns(), x.value(), x.device(), static_cast<int32_t>(x.metric()), x.has_time_ns()});
        else
          needs_load = "more GPU counter samples than a scan keeps";
        break;
      }
      case v1::Record::kNccl:
        // pipeline-bubble and slow-link read them from scans of their own (scan_pipelines).
        if (r.nccl().op() == v1::NCCL_SEND || r.nccl().op() == v1::NCCL_RECV) p2p = true;
        break;
      default: break;
    }
  }
  bool stopped() const override { return !needs_load.empty(); }

  // The share's reader, once it has handed anything on: it has read every string of the file.
  const gpuhook::CaptureReader* reader() const { return reader_; }

  DiagnoseWork work;
  std::vector<Sample> samples;
  std::vector<RankCollectiveCall> collectives;  // on the capture's own clock
  bool memory = false;                           // allocation records or memory tags read
  bool uses = false;                             // memory uses (GPUHOOK_MEM_USE) read
  uint64_t last_graph_ns = 0;                    // the last start of work a CUDA graph ran
  bool shared_kernel = false;                    // an NCCL kernel with several collective calls
  bool p2p = false;                              // an NCCL send or receive read
  // The times a load of the capture sees (ModelBuilder's see()), not the chunk index's, which
  // count the counter samples that go on after the program's last call.
  SeenTimes times;
  std::string needs_load;

 private:
  uint32_t job_id(uint32_t id) const { return id == 0 ? 0 : id + name_offset_; }
  void keep_collective(const ScannedEvent& e) {
    RankCollectiveCall call;
    if (!collective_call(e, capture_, global_rank_, &call)) return;
    if (collectives.size() >= collective_budget_) needs_load = "more collectives than a scan keeps for the straggler";
    else collectives.push_back(call);
  }
  // A capture has a few call names and millions of calls: each name is judged once.
  bool is_sync(uint32_t name_id, const gpuhook::CaptureReader& reader) {
    if (name_id >= kCachedNames) return is_sync_call(reader.string(name_id));
    if (name_id >= sync_name_.size()) sync_name_.resize(size_t{name_id} + 1, 0);
    if (sync_name_[name_id] == 0) sync_name_[name_id] = is_sync_call(reader.string(name_id)) ? 2 : 1;
    return sync_name_[name_id] == 2;
  }
  static constexpr uint32_t kCachedNames = 1u << 20;
  std::vector<uint8_t> sync_name_;  // by name id: 0 not judged yet, 1 no, 2 a synchronize call
  const gpuhook::CaptureReader* reader_ = nullptr;
  uint16_t capture_ = 0;
  int32_t global_rank_ = 0;
  uint32_t name_offset_ = 0;
  size_t collective_budget_ = 0;
};

// Each rank's busy time as rank_busy_intervals() has it loaded: the union of its GPU work
// without NCCL's kernels, its devices together (DiagnoseWork::rank_balance). Nothing, with
// *why_not, for a rank two captures share: the union would need their intervals.
std::optional<std::vector<RankBusy>> rank_busy(const DiagnoseWork& w, const Model& context, std::string* why_not) {
  std::vector<RankBusy> ranks(context.captures.size());
  for (size_t c = 0; c < ranks.size(); ++c) {
    ranks[c].global_rank = global_rank(context, static_cast<uint16_t>(c));
    if (c < w.rank_balance().size()) {
      const BusyTracker::Totals& t = w.rank_balance()[c];
      ranks[c].busy_ns = t.busy_ns;
      ranks[c].span_ns = t.last_ns - t.first_ns;
    }
  }
  for (size_t c = 1; c < ranks.size(); ++c)
    for (size_t o = 0; o < c; ++o)
      if (ranks[o].global_rank == ranks[c].global_rank) {
        *why_not = "two captures of rank " + std::to_string(ranks[c].global_rank) + " (its busy time is their union)";
        return std::nullopt;
      }
  return ranks;
}

// The straggler line of imbalance, as rule_imbalance(const Model&) finds it: the ranks'
// collectives matched on the job's clock.
std::string straggler_line(std::vector<RankCollectiveCall> calls, const std::vector<int64_t>& offsets) {
  move_calls(calls, offsets);
  return straggler_text(find_straggler(match_collectives(calls)));
}

// What the rules of records read of one capture, kept from its scan.
struct CaptureRecords {
  RecordSpool memory;                          // memory_records(), when its scan met any
  bool uses = false;                           // with memory uses
  RecordSpool last_uses;                       // the operations last given an allocation live at a peak, and their calls
  std::optional<ScanSelector> select;          // under a filter, its selection on this capture's clock
  uint64_t last_graph_ns = 0;                  // the last start of work a CUDA graph ran, on its own clock
  std::vector<Sample> samples;                 // GPU counter samples
  std::pair<uint64_t, uint64_t> span{0, 0};    // its first and last times, as a load has them
};


// The kernels throttled and stalled judge beside the samples (ThrottleKernels, StallKernels),
// by one more scan of the job's events, selected as the first scan selected them, each
// capture's moved by its offset onto the records' clock: only when the records hold a throttle
// stretch long enough to judge, or SM-active samples.
struct SampleKernels {
  ThrottleKernels throttle;
  StallKernels stall;
  explicit SampleKernels(const Model& records) : throttle(records), stall(records) {}
  bool empty() const { return throttle.empty() && stall.empty(); }
};
std::optional<SampleKernels> scan_sample_kernels(const std::vector<std::string>& paths, const EventScanOptions& so,
                                                 const EventFilter* filter, const Model& records,
                                                 const std::vector<int64_t>& offsets, std::string* why_not) {
  class Share final : public EventConsumer {
   public:
    Share(const SampleKernels& none, const CaptureInfo& capture_info, uint16_t capture, int64_t offset)
        : kernels(none), occupancy_(capture_info.devices), capture_(capture), offset_(offset) {}
    void event(const ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
      if (e.kind != EventKind::kKernel) return;
      const bool throttle = kernels.throttle.wants(capture_, e.device), stall = kernels.stall.wants(capture_, e.device);
      if (!throttle && !stall) return;
      // Named as the loader names a kernel: its own name, else its launch call's (WorkNames).
      const uint32_t id = e.name_id != 0 ? e.name_id : e.launch_name_id;
      auto [it, added] = names_.try_emplace(id);
      if (added) it->second = demangle(reader.string(id));
      const uint64_t start = shifted(e.start_ns, offset_), end = shifted(e.end_ns, offset_);
      if (throttle) kernels.throttle.add(capture_, e.device, start, end, it->second);
      if (stall) {
        // The theoretical occupancy ModelBuilder stores for it (a float; NaN: unknown).
        const Occupancy& o = occupancy_.of(e.device, e.block, e.registers_per_thread, e.shared_memory_bytes);
        const float fraction =
            o.limit == OccupancyLimit::kUnknown ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(o.fraction);
        kernels.stall.add(capture_, e.device, start, end, it->second, fraction);
      }
    }
    SampleKernels kernels;

   private:
    KernelOccupancy occupancy_;
    uint16_t capture_;
    int64_t offset_;
    std::unordered_map<uint32_t, std::string> names_;
  };
  SampleKernels all(records);
  const SampleKernels none = all;  // each share's copy holds its own kernels, the samples shared
  std::vector<std::unique_ptr<Share>> shares;
  const auto consumers = [&](size_t c, const EventScanner& scanner, const Model& context) {
    shares.clear();
    std::vector<EventConsumer*> out;
    for (size_t i = 0; i < scanner.shares(); ++i) {
      shares.push_back(std::make_unique<Share>(none, context.captures.at(c), static_cast<uint16_t>(c),
                                               c < offsets.size() ? offsets[c] : 0));
      out.push_back(shares.back().get());
    }
    return out;
  };
  const auto done = [&](size_t, const EventScanner&, bool ran, const std::string& why) -> std::string {
    if (!ran) return why;
    for (const auto& sh : shares) {
      all.throttle.absorb(sh->kernels.throttle);
      all.stall.absorb(sh->kernels.stall);
    }
    shares.clear();
    return {};
  };
  if (!scan_job(paths, so, filter, consumers, done, why_not)) return std::nullopt;
  return all;
}

}  // namespace

std::optional<ScannedDiagnosis> diagnose_scan(const std::vector<std::string>& paths, const DiagnoseScanOptions& options,
                                              std::string* why_not) {
  const auto refuse = [why_not](const std::string& why) -> std::optional<ScannedDiagnosis> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  EventScanOptions so;
  so.load = options.load;
  so.threads = options.threads;
  so.join_nccl = true;
  // The window counts from the job's start, as loaded: with a filter scan_job() puts the clocks
  // together first. Without one, the offsets come from the collectives the scans keep.
  const bool ranks = paths.size() > 1;
  std::optional<DiagnoseWork> work;
  JobStrings strings;
  std::vector<CaptureRecords> kept(paths.size());
  // --kernel for the selections kept (each capture's scanner, whose own pattern they point to, is let go).
  std::unique_ptr<KernelPattern> kernel;
  if (options.filter && !options.filter->kernel_regex.empty()) kernel = std::make_unique<KernelPattern>(options.filter->kernel_regex);
  std::vector<RankCollectiveCall> collectives;  // the job's, capture after capture
  bool shared_kernel = false;
  bool p2p = false;  // a capture's NCCL sends or receives
  size_t kept_samples = 0;
  std::vector<RankClockInput> clocks;
  std::vector<std::unique_ptr<DiagnoseShare>> shares;  // the capture being scanned
  const auto consumers = [&](size_t c, const EventScanner& scanner, const Model& context) {
    // The straggler's collectives, the job's at most kMaxScannedCollectives, split between the shares.
    const size_t budget =
        ranks ? (kMaxScannedCollectives - collectives.size()) / std::max<size_t>(scanner.shares(), 1) + 1 : 0;
    shares.clear();
    std::vector<EventConsumer*> out;
    for (size_t i = 0; i < scanner.shares(); ++i) {
      shares.push_back(std::make_unique<DiagnoseShare>(context, static_cast<uint16_t>(c), strings.offset(), budget));
      out.push_back(shares.back().get());
    }
    return out;
  };
  const auto done = [&](size_t c, const EventScanner& scanner, bool ran, const std::string& why) -> std::string {
    if (!ran) {
      for (const auto& sh : shares)
        if (!sh->needs_load.empty()) return sh->needs_load;
      return why;
    }
    if (std::any_of(shares.begin(), shares.end(), [](const auto& sh) { return sh->memory; })) {
      kept[c].uses = std::any_of(shares.begin(), shares.end(), [](const auto& sh) { return sh->uses; });
      // memory-idle names the call of a last use among the events a load restricted to the
      // filter keeps: the selection is kept for the read of the last uses.
      if (kept[c].uses && scanner.filter()) {
        kept[c].select = scanner.filter()->select;
        kept[c].select->kernel = kernel.get();
      }
      std::string why_memory;
      std::optional<RecordSpool> held = memory_records(paths[c], so.load, kept[c].uses, &why_memory);
      if (!held) return why_memory;
      kept[c].memory = std::move(*held);
    }
    for (const auto& sh : shares) kept[c].last_graph_ns = std::max(kept[c].last_graph_ns, sh->last_graph_ns);
    // The capture's span as a load has it: the memory rules count their times from it. Its end
    // is the last time a load sees (the context's: its header and NVTX ranges; the shares':
    // operations and calls), not the chunk index's, which counts the NVML samples taken after
    // the program's last call (seen beside a second build: 60.087 ms where a load said 59.667).
    SeenTimes seen;
    seen.see_context(scanner);
    for (const auto& sh : shares) seen.absorb(sh->times);
    kept[c].span = {scanner.first_ns(), std::max(seen.last, scanner.first_ns())};
    const gpuhook::CaptureReader* reader = nullptr;
    for (const auto& sh : shares)
      if (!reader) reader = sh->reader();
    if (!strings.end_capture(reader ? reader->strings() : std::vector<std::string>{}))
      return "more names than a job's 32-bit ids hold";
    const size_t first_collective = collectives.size();
    for (auto& sh : shares) {
      kept_samples += sh->samples.size();
      kept[c].samples.insert(kept[c].samples.end(), sh->samples.begin(), sh->samples.end());
      collectives.insert(collectives.end(), sh->collectives.begin(), sh->collectives.end());
      shared_kernel = shared_kernel || sh->shared_kernel;
      p2p = p2p || sh->p2p;
      sh->samples = {};
      sh->collectives = {};
    }
    if (kept_samples > kMaxSamples) return "more GPU counter samples than a scan keeps";
    if (collectives.size() > kMaxScannedCollectives) return "more collectives than a scan keeps for the straggler";
    if (ranks && !options.filter)
      clocks.push_back(clock_input(scanner, collectives.begin() + static_cast<ptrdiff_t>(first_collective), collectives.end()));
    DiagnoseWork& first = shares.front()->work;
    for (size_t i = 1; i < shares.size(); ++i) first.absorb(std::move(shares[i]->work));
    if (!work) work.emplace(std::move(first));
    else work->absorb(std::move(first));
    shares.clear();  // the job keeps what the rules read
    return {};
  };
  std::optional<JobScan> job = scan_job(paths, so, options.filter, consumers, done, why_not);
  if (!job) return std::nullopt;
  ScannedDiagnosis out;
  out.unusable = job->unusable;
  if (!out.unusable.empty()) return out;
  out.warnings = std::move(job->warnings);
  out.corrupt = job->corrupt;
  out.gpu_events = job->gpu_events;
  out.selected_events = job->selected_events;
  const Model& context = job->context;  // the job's captures, as a load of them has them: headers, devices, threads
  work->complete();
  out.late_events = work->late();
  out.busy_exact = work->busy_exact();
  const WorkNames names{[&strings](uint32_t id) { return strings.get(id); },
                        [&strings](uint32_t id) { return demangle(strings.get(id)); }};
  // The ranks on one clock, as a load puts them.
  const std::vector<int64_t> offsets = job_offsets(*job, clocks);
  ScannedBeside beside;
  std::function<void(DiagnoseReport&)> imbalance;
  bool straggler_unknown = false;
  if (ranks) {
    std::string why;
    const std::optional<std::vector<RankBusy>> busy = rank_busy(*work, context, &why);
    if (!busy) return refuse(why);
    imbalance = [&, busy = *busy](DiagnoseReport& r) {
      rule_imbalance("rank", busy_imbalance(busy), [&] {
        if (shared_kernel || !one_call_each(collectives)) {
          straggler_unknown = true;
          return std::string();
        }
        return straggler_line(collectives, offsets);
      }, r);
    };
  }
  rules_on_work(*work, names, out.report, imbalance);
  // The straggler is named only when imbalance fires; when it did and the scan cannot tell it.
  if (straggler_unknown)
    return refuse("collectives a scan cannot match as a load does (a process that ran one on several devices, or a "
                  "group that launched fewer kernels than it had collectives): imbalance names the straggler from them");
  // The model the rules of records read: each capture's allocations (with their ranges and
  // calls) and counter samples, on the job's clock. Without point-to-point calls (those were
  // loaded) the rules find what they find on the captures.
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const CaptureRecords& k : kept) spans.push_back(k.span);
  const auto model_of_records = [&] {
    return records_model(
      paths,
      [&](size_t c, ModelBuilder& builder) {
        kept[c].memory.for_each([&](const v1::Record& m) { builder.add(m); });
        kept[c].last_uses.for_each([&](const v1::Record& m) { builder.add(m); });
        v1::Record r;
        v1::MetricSample* x = r.mutable_metric_sample();
        for (const Sample& s : kept[c].samples) {
          if (s.has_time) x->set_time_ns(s.time_ns);
          else x->clear_time_ns();
          x->set_value(s.value);
          x->set_device(s.device);
          x->set_metric(static_cast<v1::GpuMetric>(s.metric));
          builder.add(r);
        }
      },
      spans, offsets);
  };
  Model records = model_of_records();
  // memory-idle names the call of the last use of an allocation it judges: the operations with
  // those correlation ids and their calls, read once more, and the model made again with them.
  if (std::any_of(kept.begin(), kept.end(), [](const CaptureRecords& k) { return k.uses; })) {
    std::vector<std::unordered_set<uint32_t>> last_uses(paths.size());
    for (const DeviceMemory& d : memory_report(records))
      for (const LiveAllocation& a : d.unused_after_peak)
        if (a.uses != 0 && a.last_use_correlation != 0 && d.capture < last_uses.size())
          last_uses[d.capture].insert(a.last_use_correlation);
    bool read = false;
    for (size_t c = 0; c < paths.size(); ++c)
      if (!last_uses[c].empty()) {
        kept[c].last_uses = launch_records(paths[c], so.load, last_uses[c], kept[c].select ? &*kept[c].select : nullptr);
        read = true;
      }
    if (read) records = model_of_records();
  }
  std::vector<uint64_t> last_graph_ns;
  for (size_t c = 0; c < kept.size(); ++c)
    last_graph_ns.push_back(shifted(kept[c].last_graph_ns, c < offsets.size() ? offsets[c] : 0));
  beside.last_graph_ns = &last_graph_ns;
  std::optional<SampleKernels> kernels;
  if (!SampleKernels(records).empty()) {
    std::string why;
    kernels = scan_sample_kernels(paths, so, options.filter, records, offsets, &why);
    if (!kernels) return refuse(why);
    beside.throttle = &kernels->throttle;
    beside.stall = &kernels->stall;
  }
  // The ranks' sends and receives: their calls and kernels, and the stages' work step by step,
  // from scans of their own (the same captures, read as the job scan read them).
  std::optional<ScannedPipelines> traffic;
  P2pMatch transfers;
  if (p2p) {
    std::string why;
    traffic = scan_pipelines(paths, so, options.filter, "", &why);
    if (!traffic) return refuse(why);
    if (!traffic->comm.job.unusable.empty()) return refuse(traffic->comm.job.unusable);
    if (!traffic->comm.job.empty_window.empty()) return refuse(traffic->comm.job.empty_window);
    transfers = match_p2p(traffic->comm.records);
    beside.pipelines = &traffic->reports;
    beside.p2p = &transfers;
  }
  rule_records(records, out.report, beside);
  say_what_imported_traces_lack(context, out.report);
  return out;
}

}  // namespace gantt::analysis
