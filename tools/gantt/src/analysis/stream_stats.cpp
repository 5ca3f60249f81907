// stats of one capture, streamed (stream_stats.h). The folding below mirrors summarize()
// (summary.cpp) record by record: the same GPU work (stats.cpp is_gpu_work), the same group
// ids and keys, the launch joined by correlation id as ModelBuilder::Impl::join() does.
#include "gantt/analysis/stream_stats.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <sched.h>

#include <google/protobuf/arena.h>
#include <gpuhook/capture.h>
#include <gpuhook/nccl_types.h>

#include "gantt/model/align.h"
#include "gantt/analysis/busy_tracker.h"
#include "gantt/analysis/diff.h"
#include "gantt/analysis/event_scan.h"
#include "gantt/analysis/scan_select.h"
#include "gantt/analysis/clock_scan.h"
#include "gantt/analysis/stream_shares.h"
#include "gantt/model/model_builder.h"
#include "gantt/model/range_lookup.h"
#include "gantt/scan/open.h"

namespace gantt::analysis {
namespace {

namespace v1 = gpuhook::v1;

using builder::kHookExternalKind;
// A recorded time, or 0 when unknown: as the loader reads them.
using builder::known;
using builder::t;

// The NVTX range paths of a capture's launches (Model::range_path: the innermost push/pop
// range on the launching thread at the launch's start, with its ancestors), from a model of
// only its ranges, built as the loader builds them. A path is an id per distinct chain of
// range names; its text is made once per group.
class RangePaths {
 public:
  // Range records a streamed read keeps (a model row each, about 60 bytes).
  static constexpr size_t kMaxRanges = size_t{1} << 21;

  // The capture's ranges (read on their own, every other record stepped over unparsed, the
  // chunks of `shares` side by side); null with *why_not when they are more than a streamed
  // read keeps.
  static std::unique_ptr<const RangePaths> read(const std::string& path, const LoadOptions& load,
                                                const std::vector<ChunkRange>& shares, std::string* why_not);
  RangePaths() = default;
  RangePaths(const RangePaths&) = delete;  // the lookup refers to the model
  RangePaths& operator=(const RangePaths&) = delete;
  bool empty() const { return thread_row_.empty(); }
  // The path of a launch on thread `thread_id` at `when`, kNone outside every range.
  uint32_t at(uint64_t thread_id, uint64_t when) const {
    auto it = thread_row_.find(thread_id);
    if (it == thread_row_.end()) return kNone;
    const uint32_t row = lookup_->at(it->second, when);
    return row == kNone ? kNone : path_of_row_[row];
  }
  std::string text(uint32_t path) const { return model_.range_path_of_range(row_of_path_[path]); }
  // The path's frames in a flame graph's stack (flame.h range_frames).
  std::string frames(uint32_t path) const { return range_frames(model_, row_of_path_[path]); }
  // Durations of the top-level ranges by name, for diff (DiffInput::top_ranges).
  std::map<std::string, std::vector<int64_t>> top_ranges() const { return diff_samples(model_, true).top_ranges; }

 private:
  Model model_;  // context and ranges: no events
  std::optional<RangeLookup> lookup_;
  std::unordered_map<uint64_t, uint32_t> thread_row_;  // thread id -> row, threads with push/pop ranges
  std::vector<uint32_t> path_of_row_;                  // range row -> path (push/pop rows)
  std::vector<uint32_t> row_of_path_;                  // path -> a row with that chain of names
};

std::unique_ptr<const RangePaths> RangePaths::read(const std::string& path, const LoadOptions& load,
                                                   const std::vector<ChunkRange>& shares, std::string* why_not) {
  auto out = std::make_unique<RangePaths>();
  RangePaths& rp = *out;
  if (!read_range_model(path, load, shares, kMaxRanges, &rp.model_)) {
    *why_not = "more NVTX range records than a streamed read keeps";
    return nullptr;
  }
  const RangeTable& rt = rp.model_.ranges;
  rp.path_of_row_.assign(rt.size(), kNone);
  std::unordered_map<uint64_t, uint32_t> interned;  // (parent path, name) -> path
  for (uint32_t r = 0; r < rt.size(); ++r) {
    if (rt.kind[r] != RangeKind::kPushPop) continue;
    // Model::range_path_of_range names at most 256 ranges of a chain: deeper ones are loaded.
    if (rt.depth[r] >= 255) {
      *why_not = "NVTX ranges nested deeper than 255";
      return nullptr;
    }
    const uint32_t parent = rt.parent[r] == kNone ? kNone : rp.path_of_row_[rt.parent[r]];
    auto [it, fresh] = interned.try_emplace((uint64_t{parent} << 32) | rt.name[r], static_cast<uint32_t>(rp.row_of_path_.size()));
    if (fresh) rp.row_of_path_.push_back(r);
    rp.path_of_row_[r] = it->second;
    rp.thread_row_.emplace(rp.model_.threads.thread_id[rt.thread[r]], rt.thread[r]);
  }
  rp.lookup_.emplace(rt, 0);
  return out;
}

struct GroupAcc {
  uint32_t device = 0, stream = 0;
  std::string key;  // kernel groups, once the share is read
  DurationDigest exec;
  DurationDigest queue;  // queued -> start, for diff's matches (kernel groups, when asked)
  uint64_t bytes = 0;
  uint64_t kernels = 0, kernel_ns = 0;  // stream groups (SummaryGroup)
  KernelSpan kernel_span;               // stream groups
};

constexpr size_t kGroupings = 4;  // kernel, stream, device, range (GroupBy's first four)

// One thread's contiguous run of chunks, and what it folded them into.
struct Share {
  uint64_t first_chunk = 0, end_chunk = 0;  // 0,0: the whole file

  std::vector<GroupBy> groupings;
  bool by_range = false;  // groupings holds GroupBy::kRange
  bool matches = false;   // diff's per-kernel samples too (a summary file)
  bool clock_ends = false;  // StreamStatsOptions::clock_ends
  std::array<std::unordered_map<uint64_t, uint32_t>, kGroupings> slot_of;
  std::array<std::vector<std::pair<uint64_t, GroupAcc>>, kGroupings> slots;  // in order of first event
  DurationDigest launch_to_queued, queued_to_start, exec;
  uint64_t events = 0, gpu_time_ns = 0, first_ns = 0, last_ns = 0;
  // StreamStatsOptions::filter: what it keeps; the GPU events read and those it kept.
  const ScanSelector* select = nullptr;
  NameFlags kernel_names, call_names;
  uint64_t gpu_events = 0, selected_events = 0;
  bool selected(EventKind kind, uint32_t device, uint32_t stream, uint32_t name, uint64_t begin, uint64_t end,
                const gpuhook::CaptureReader& reader) {
    ++gpu_events;
    if (select && (!select->on(device, stream) || !select->in_time(begin, end) || !select->named(kernel_names, kind, name, reader)))
      return false;
    ++selected_events;
    return true;
  }
  std::map<uint32_t, BusyTracker> busy;
  // GPU work other than NCCL's kernels, every device together (SummaryCapture::
  // busy_ns_without_nccl). Kernels that may be NCCL's wait in nccl_kernels for the join.
  BusyTracker work_without_nccl{0};
  std::map<uint32_t, BusyTracker> device_work_without_nccl;  // the same by device (DeviceRow's)
  struct Copies {
    uint64_t count = 0, bytes = 0, sync = 0;
  };
  std::map<uint32_t, Copies> copies;  // by device
  // A copy whose call is not read yet: what copy_host_wait() needs of its record.
  struct WaitingCopy {
    uint32_t device;
    uint8_t copy_kind;
    bool async, pageable, graph_node;
    void count(Copies& n, bool async_call) const {
      n.sync += copy_host_wait(async_call, copy_kind, async, pageable, graph_node) != CopyHostWait::kNone;
    }
  };
  std::unordered_multimap<uint32_t, WaitingCopy> copies_waiting;  // by correlation id
  size_t gaps = 0;
  CorrWindows calls;  // launch starts, CorrWindow::kAsyncCallBit set for an asynchronous copy call
  std::unordered_multimap<uint32_t, uint64_t> waiting;  // kernels whose launch is not read yet: corr -> queued
  std::vector<v1::Record> context;
  uint32_t headers = 0;
  // Range paths, when the capture has push/pop ranges and they are wanted (--by range,
  // diff's matches): each launch's path by correlation id, beside its start; work read
  // before its launch waits for it.
  const RangePaths* ranges = nullptr;
  CorrWindows paths;  // path + 1 (kNone + 1: outside every range)
  // One GPU activity as its groups fold it.
  struct Work {
    EventKind kind;
    uint32_t name;
    uint8_t copy_kind;
    uint32_t device, stream;
    int64_t dur;
    uint64_t bytes, queued, start;
  };
  std::unordered_multimap<uint32_t, Work> path_waiting;
  struct MatchAcc {
    DurationDigest exec, queue;
  };
  // diff's matches with range paths: kernel group id -> path -> samples.
  std::unordered_map<uint64_t, std::unordered_map<uint32_t, MatchAcc>> matches_by_path;
  std::unordered_map<uint64_t, std::string> match_names;  // kernel group id -> demangled name
  // The NCCL join (ModelBuilder::Impl::join_nccl_by_external_id): a collective the settler
  // settles as it is read is folded at once into `settled`; what it cannot settle is held for
  // the loader's join at the end: the calls, and the kernels NCCL may have launched (under an
  // external id the share has read, or named nccl*) with their external ids (0: not read yet).
  // Each share keeps these and its context records (header, devices, drops, ...) from its own
  // chunks; merged in share order they are the file's.
  struct NcclKernel {
    uint32_t corr, name, device, stream;
    int64_t start_ns, end_ns;
    uint64_t external;
  };
  std::vector<v1::Record> nccl_calls;
  std::vector<NcclKernel> nccl_kernels;
  NcclKernelFilter nccl;
  NcclSettler settle;
  // What the join's end makes of a settled collective: nccl_rows()'s rows by name, the
  // collectives' ends (rank_clock_inputs()), and the bytes of the kernels they ran by group id
  // (a range path id for GroupBy::kRange; kernel names kept for their keys).
  struct Settled {
    uint64_t calls = 0;
    std::map<std::string, NcclRow> rows;
    std::vector<CollectiveEnd> ends;
    std::array<std::map<uint64_t, uint64_t>, kGroupings> bytes;
  } settled;
  NameFlags async_named;  // async_copy_call()
  gpuhook::Integrity integrity;
  std::string needs_model;
  std::exception_ptr error;

  // The launch's start time, with CorrWindow::kAsyncCallBit set for an asynchronous copy call.
  uint64_t call_of(uint32_t corr) const { return calls.get(corr); }
  uint64_t launch_of(uint32_t corr) const { return call_of(corr) & ~CorrWindow::kAsyncCallBit; }
  // The launch's path + 1, 0 when the launch is not read (yet).
  uint64_t path_of(uint32_t corr) const { return paths.get(corr); }
  bool maybe_lost(uint32_t corr) const { return calls.maybe_lost(corr); }
};

uint64_t group_id(GroupBy by, EventKind kind, uint32_t name, uint8_t copy_kind, uint32_t device, uint32_t stream) {
  switch (by) {
    case GroupBy::kKernel:
      return kind == EventKind::kMemcpy ? (uint64_t{1} << 40) | copy_kind
             : kind == EventKind::kMemset ? (uint64_t{2} << 40)
                                          : name;
    case GroupBy::kStream: return (uint64_t{device & 0xFFFF} << 32) | stream;  // summary.cpp group_id
    case GroupBy::kRange: return kNone;  // without range paths: every event in "(no range)"
    default: return device;
  }
}

// A kernel group's key: copies and memsets by kind, kernels by their demangled name.
std::string kernel_group_key(uint64_t id, std::string name) {
  if (id == (uint64_t{2} << 40)) return "[memset]";
  if (id >= (uint64_t{1} << 40)) return std::string("[memcpy ") + copy_kind_name(static_cast<uint8_t>(id & 0xFF)) + "]";
  return name;
}

size_t slot_index(GroupBy by) { return static_cast<size_t>(by); }

void fold_group(Share& sh, GroupBy g, uint64_t id, const Share::Work& w) {
  const size_t gi = slot_index(g);
  auto [it, fresh] = sh.slot_of[gi].try_emplace(id, static_cast<uint32_t>(sh.slots[gi].size()));
  if (fresh) {
    GroupAcc acc;
    acc.device = w.device;
    acc.stream = w.stream;
    sh.slots[gi].emplace_back(id, std::move(acc));
  }
  GroupAcc& acc = sh.slots[gi][it->second].second;
  acc.exec.add(w.dur);
  acc.bytes += w.bytes;
  if (g == GroupBy::kStream && w.kind == EventKind::kKernel) {
    ++acc.kernels;
    acc.kernel_ns += static_cast<uint64_t>(w.dur);
    acc.kernel_span.add(w.start, w.start + static_cast<uint64_t>(w.dur));
  }
  // diff.cpp collect(): the wait of every event with a queued stamp before its start.
  if (sh.matches && !sh.ranges && g == GroupBy::kKernel && w.queued != 0 && w.start >= w.queued)
    acc.queue.add(static_cast<int64_t>(w.start - w.queued));
}

// What an event's range path groups, once the path is known (kNone: outside every range).
void fold_path(Share& sh, uint32_t path, const Share::Work& w) {
  if (sh.by_range) fold_group(sh, GroupBy::kRange, path, w);
  if (!sh.matches) return;
  Share::MatchAcc& m = sh.matches_by_path[group_id(GroupBy::kKernel, w.kind, w.name, w.copy_kind, 0, 0)][path];
  m.exec.add(w.dur);
  if (w.queued != 0 && w.start >= w.queued) m.queue.add(static_cast<int64_t>(w.start - w.queued));
}

void fold_work(Share& sh, EventKind kind, uint32_t name, uint8_t copy_kind, uint64_t bytes, uint32_t device,
               uint32_t stream, uint64_t start, uint64_t end, uint32_t corr, uint64_t queued = 0, bool maybe_nccl = false) {
  const int64_t dur = static_cast<int64_t>(end - start);
  ++sh.events;
  sh.gpu_time_ns += static_cast<uint64_t>(dur);
  sh.first_ns = sh.first_ns == 0 ? start : std::min(sh.first_ns, start);
  sh.last_ns = std::max(sh.last_ns, end);
  auto tracker = sh.busy.find(device);
  if (tracker == sh.busy.end()) tracker = sh.busy.emplace(device, BusyTracker(sh.gaps)).first;
  tracker->second.add(start, end,
                      kind == EventKind::kKernel  ? BusyTracker::Work::kCompute
                      : kind == EventKind::kMemcpy ? BusyTracker::Work::kCopy
                                                   : BusyTracker::Work::kOther);
  if (!maybe_nccl) {
    sh.work_without_nccl.add(start, end, BusyTracker::Work::kOther);
    sh.device_work_without_nccl.try_emplace(device, 0).first->second.add(start, end, BusyTracker::Work::kOther);
  }
  if (kind == EventKind::kKernel) sh.exec.add(dur);
  const Share::Work w{kind, name, copy_kind, device, stream, dur, bytes, queued, start};
  for (GroupBy g : sh.groupings)
    if (g != GroupBy::kRange || !sh.ranges) fold_group(sh, g, group_id(g, kind, name, copy_kind, device, stream), w);
  if (!sh.ranges) return;
  const uint64_t path = corr != 0 ? sh.path_of(corr) : uint64_t{kNone} + 1;
  if (path != 0) fold_path(sh, static_cast<uint32_t>(path - 1), w);
  else if (sh.path_waiting.size() < kMaxWaiting) sh.path_waiting.emplace(corr, w);
  else sh.needs_model = "too many GPU records read before their launch calls";
}

void fold_kernel(Share& sh, const gpuhook::KernelFields& k, bool maybe_nccl) {
  if (k.name_id == 0) {
    sh.needs_model = "a kernel record without a name (named after its launch call)";
    return;
  }
  const uint64_t q = known(k.queued_ns), s = known(k.start_ns), e = known(k.end_ns);
  if (s == 0 || e <= s) return;
  fold_work(sh, EventKind::kKernel, k.name_id, 0, 0, k.device, k.stream, s, e, k.correlation_id, q, maybe_nccl);
  if (q == 0) return;
  sh.queued_to_start.add(static_cast<int64_t>(s - q));
  if (k.correlation_id == 0) return;
  if (const uint64_t launch = sh.launch_of(k.correlation_id); launch != 0)
    sh.launch_to_queued.add(static_cast<int64_t>(q - launch));
  else if (sh.waiting.size() < kMaxWaiting)
    sh.waiting.emplace(k.correlation_id, q);
}

void fold_copy(Share& sh, const v1::Memcpy& c, uint64_t start, uint64_t end) {
  fold_work(sh, EventKind::kMemcpy, 0, static_cast<uint8_t>(c.copy_kind()), c.bytes(), c.device(), c.stream(), start, end,
            c.correlation_id());
  Share::Copies& n = sh.copies[c.device()];
  ++n.count;
  n.bytes += c.bytes();
  const Share::WaitingCopy copy{c.device(), static_cast<uint8_t>(c.copy_kind()), c.async(),
                                c.src_kind() == v1::MEMORY_PAGEABLE || c.dst_kind() == v1::MEMORY_PAGEABLE,
                                c.graph_id() != 0};
  const uint64_t call = c.correlation_id() == 0 ? 0 : sh.call_of(c.correlation_id());
  if (call != 0)
    copy.count(n, (call & CorrWindow::kAsyncCallBit) != 0);
  else if (c.correlation_id() != 0 && sh.copies_waiting.size() < kMaxWaiting)
    sh.copies_waiting.emplace(c.correlation_id(), copy);
  else
    copy.count(n, false);  // no call: the record's flag decides
}

void fold_api(Share& sh, const gpuhook::CaptureReader& reader, const gpuhook::ApiFields& a) {
  if (a.correlation_id == 0 || a.domain == v1::API_DOMAIN_NCCL) return;
  const uint64_t start = known(a.start_ns);
  if (start == 0) return;
  const bool async_call = sh.async_named.test(reader, a.name_id, async_copy_call);
  sh.calls.set(a.correlation_id, start | (async_call ? CorrWindow::kAsyncCallBit : 0));
  if (sh.ranges) {
    const uint32_t path = sh.ranges->at(a.thread_id, start);
    sh.paths.set(a.correlation_id, uint64_t{path} + 1);
    if (!sh.path_waiting.empty()) {
      const auto [from, to] = sh.path_waiting.equal_range(a.correlation_id);
      for (auto it = from; it != to; ++it) fold_path(sh, path, it->second);
      sh.path_waiting.erase(from, to);
    }
  }
  if (!sh.copies_waiting.empty()) {
    const auto [from, to] = sh.copies_waiting.equal_range(a.correlation_id);
    for (auto it = from; it != to; ++it) it->second.count(sh.copies[it->second.device], async_call);
    sh.copies_waiting.erase(from, to);
  }
  if (sh.waiting.empty()) return;
  const auto [from, to] = sh.waiting.equal_range(a.correlation_id);
  for (auto it = from; it != to; ++it) sh.launch_to_queued.add(static_cast<int64_t>(it->second - start));
  sh.waiting.erase(from, to);
}

void keep_context(Share& sh, const v1::Record& r) {
  switch (r.kind_case()) {
    case v1::Record::kHeader:
      ++sh.headers;  // more than one in the file: a merged file (stream_stats)
      [[fallthrough]];
    case v1::Record::kDevice:
    case v1::Record::kThread:
    case v1::Record::kStringDef:
    case v1::Record::kDrops:
    case v1::Record::kNotice:
    case v1::Record::kFooter:
      sh.context.push_back(r);
      break;
    default: break;
  }
}

// A kernel NCCL may have run: folded as the loader's join and nccl_rows() would see it when
// the settler settles it, else held for the join at the end. With range paths wanted, a
// kernel whose launch's path is not read yet is held too.
void settle_nccl_kernel(Share& sh, const gpuhook::CaptureReader& reader, const gpuhook::KernelFields& k) {
  const uint64_t path = !sh.by_range || !sh.ranges ? uint64_t{kNone} + 1 : k.correlation_id != 0 ? sh.path_of(k.correlation_id) : 0;
  v1::Record call;
  uint64_t external = 0;
  const NcclSettler::Verdict verdict = sh.settle.kernel(k.correlation_id, path != 0, &call, &external);
  if (verdict == NcclSettler::Verdict::kHeld)
    sh.nccl_kernels.push_back({k.correlation_id, k.name_id, k.device, k.stream, k.start_ns, k.end_ns, external});
  if (verdict != NcclSettler::Verdict::kCall) return;
  const v1::NcclCall& c = call.nccl();
  const uint64_t start = known(k.start_ns), end = known(k.end_ns);
  count_nccl_call(sh.settled.rows, reader.string(c.name_id()), static_cast<uint8_t>(c.op()), c.bytes(), start, end,
                  t(c.has_start_ns(), c.start_ns()), t(c.has_end_ns(), c.end_ns()));
  ++sh.settled.calls;
  if (sh.clock_ends && gpuhook::nccl_op_is_collective(c.op()) && end != 0) sh.settled.ends.push_back({c.comm_id(), c.sequence(), end});
  if (c.bytes() == 0 || start == 0 || end <= start) return;
  for (GroupBy g : sh.groupings) {
    const uint64_t id = g == GroupBy::kKernel   ? k.name_id
                        : g == GroupBy::kStream ? (uint64_t{k.device} << 32) | k.stream
                        : g == GroupBy::kRange  ? path - 1
                                                : k.device;
    sh.settled.bytes[slot_index(g)][id] += c.bytes();
  }
}

constexpr const char* kGraphReason = "CUDA graph launches (diff matches a graph's nodes by their place in the launch)";

void read_share(const std::string& path, const StreamStatsOptions& o, Share& sh, std::atomic<bool>& stop) {
  gpuhook::ReaderOptions ro;
  ro.strict = o.load.strict;
  ro.from_ns = o.load.from_ns;
  ro.to_ns = o.load.to_ns;
  ro.first_chunk = sh.first_chunk;
  ro.end_chunk = sh.end_chunk;
  ro.outside_strings_only = true;  // each share keeps its own chunks' context
  const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, ro);
  gpuhook::CaptureReader& reader = *opened_reader;
  const AmplificationGuard guard(reader, o.load);
  // Kernels and API calls come as plain values (CaptureReader::next(RecordView&)); the other
  // kinds are parsed on an arena, dropped in batches: parsing a kind other than the last
  // one's frees and allocates the oneof's message.
  google::protobuf::Arena arena;
  gpuhook::RecordView view;
  view.record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
  for (uint64_t n = 1; reader.next(view); ++n) {
    const v1::Record& r = *view.record;  // kinds other than Kernel and ApiCall
    guard.check(reader);
    switch (view.kind) {
      case v1::Record::kRange: break;  // read before (RangePaths)
      case v1::Record::kKernel: {
        const gpuhook::KernelFields& k = view.kernel;
        if (sh.matches && k.graph_id != 0) sh.needs_model = kGraphReason;
        // The launch is not known here: a kernel without a start or queued stamp, which
        // filter.cpp begins at its launch, is kept (it is folded only with a start).
        if (sh.select && sh.select->kernel && k.name_id == 0)
          sh.needs_model = "--kernel and a kernel record without a name (named after its launch call)";
        const uint64_t begin = known(k.start_ns) ? known(k.start_ns) : known(k.queued_ns);
        if (!sh.selected(EventKind::kKernel, k.device, k.stream, k.name_id, begin, known(k.end_ns), reader)) break;
        const bool nccl = sh.nccl.maybe(reader, k.correlation_id, k.name_id, n);
        fold_kernel(sh, k, nccl);
        if (nccl) settle_nccl_kernel(sh, reader, k);
        break;
      }
      case v1::Record::kApi:
        if (sh.select && sh.select->call_named(sh.call_names, view.api.name_id, reader))
          sh.needs_model = "--kernel matching the name of an API call (copies, memsets and synchronisations are named after theirs)";
        fold_api(sh, reader, view.api);
        break;
      case v1::Record::kMemcpy: {
        const auto& c = r.memcpy();
        if (sh.matches && c.graph_id() != 0) sh.needs_model = kGraphReason;
        const uint64_t s = t(c.has_start_ns(), c.start_ns()), e = t(c.has_end_ns(), c.end_ns());
        if (!sh.selected(EventKind::kMemcpy, c.device(), c.stream(), 0, s, e, reader)) break;
        if (s != 0 && e > s) fold_copy(sh, c, s, e);
        break;
      }
      case v1::Record::kSync:
        if (r.sync().return_value() == 0)  // an event, as ModelBuilder keeps it
          sh.selected(EventKind::kSync, r.sync().device(), r.sync().stream(), 0, t(r.sync().has_start_ns(), r.sync().start_ns()),
                      t(r.sync().has_end_ns(), r.sync().end_ns()), reader);
        break;
      case v1::Record::kMemset: {
        const auto& c = r.memset();
        if (sh.matches && c.graph_id() != 0) sh.needs_model = kGraphReason;
        const uint64_t s = t(c.has_start_ns(), c.start_ns()), e = t(c.has_end_ns(), c.end_ns());
        if (!sh.selected(EventKind::kMemset, c.device(), c.stream(), 0, s, e, reader)) break;
        if (s != 0 && e > s) fold_work(sh, EventKind::kMemset, 0, 0, c.bytes(), c.device(), c.stream(), s, e, c.correlation_id());
        break;
      }
      case v1::Record::kNccl:
        if (!sh.settle.call(r)) sh.nccl_calls.push_back(r);
        break;
      case v1::Record::kExternalCorrelation: {
        const auto& x = r.external_correlation();
        if (x.kind() == kHookExternalKind && x.external_id() != 0 && x.correlation_id() != 0) {
          sh.nccl.under_external(x.correlation_id());
          sh.settle.external(x.correlation_id(), x.external_id());
        }
        break;
      }
      default: keep_context(sh, r); break;
    }
    if (!sh.needs_model.empty()) stop = true;
    if ((n & 4095) == 0) {
      if (stop.load(std::memory_order_relaxed)) break;
      arena.Reset();
      view.record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
    }
  }
  sh.integrity = reader.integrity();
  for (auto& [id, acc] : sh.slots[0])
    if (id < (uint64_t{1} << 40)) acc.key = demangle(reader.string(static_cast<uint32_t>(id)));
  for (const auto& [id, paths] : sh.matches_by_path)
    if (id < (uint64_t{1} << 40)) sh.match_names[id] = demangle(reader.string(static_cast<uint32_t>(id)));
}

std::vector<Share> plan_shares(const std::optional<v1::ChunkIndex>& index, unsigned thread_count) {
  const std::vector<ChunkRange> ranges = plan_chunk_ranges(index, thread_count);
  std::vector<Share> shares(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    shares[i].first_chunk = ranges[i].first_chunk;
    shares[i].end_chunk = ranges[i].end_chunk;
  }
  return shares;
}

SummaryGroup to_group(GroupBy by, uint64_t id, GroupAcc& acc, const RangePaths* ranges) {
  SummaryGroup g;
  switch (by) {
    case GroupBy::kKernel: g.key = kernel_group_key(id, std::move(acc.key)); break;
    case GroupBy::kStream:
      g.device = acc.device;
      g.stream = acc.stream;
      break;
    case GroupBy::kRange:
      g.key = id == kNone || !ranges ? std::string("(no range)") : ranges->text(static_cast<uint32_t>(id));
      break;
    default: g.device = acc.device; break;
  }
  g.exec = std::move(acc.exec);
  g.bytes = acc.bytes;
  g.kernels = acc.kernels;
  g.kernel_ns = acc.kernel_ns;
  g.kernel_span = acc.kernel_span;
  return g;
}

// Per gap, the API call that overlapped it most (first in file order on ties), as
// summary.cpp host_activity() chooses it, from the chunks whose times reach a gap.
void name_host_activity(const std::string& path, const StreamStatsOptions& o, const std::optional<v1::ChunkIndex>& index,
                        std::vector<std::pair<DeviceRow*, Interval>>& gaps) {
  if (gaps.empty()) return;
  struct Best {
    uint64_t overlap = 0, thread = 0;
    std::string call;
  };
  std::vector<Best> best(gaps.size());
  std::vector<std::pair<uint64_t, uint64_t>> runs;  // chunk ranges to read; {0,0}: the whole file
  {
    if (index) {
      for (int i = 0; i < index->chunk_size(); ++i) {
        const auto& c = index->chunk(i);
        const bool reaches = std::any_of(gaps.begin(), gaps.end(), [&](const auto& g) {
          return c.min_ns() < g.second.second && c.max_ns() > g.second.first;
        });
        if (!reaches) continue;
        const uint64_t at = static_cast<uint64_t>(i);
        if (!runs.empty() && runs.back().second == at) runs.back().second = at + 1;
        else runs.emplace_back(at, at + 1);
      }
      if (runs.empty()) runs.emplace_back(0, 0);  // nothing reaches: read it all, as a check
    } else {
      runs.emplace_back(0, 0);
    }
  }
  for (const auto& [first, end] : runs) {
    gpuhook::ReaderOptions ro;
    ro.strict = o.load.strict;
    ro.first_chunk = first;
    ro.end_chunk = end;
    ro.outside_strings_only = true;
    const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, ro);
    gpuhook::CaptureReader& reader = *opened_reader;
    // API calls as plain values (CaptureReader::next(RecordView&)): this read runs after the
    // shares, on one thread, and parsing each call into a message took most of it.
    v1::Record other;
    gpuhook::RecordView view;
    view.record = &other;
    while (reader.next(view)) {
      if (view.kind != v1::Record::kApi) continue;
      const gpuhook::ApiFields& a = view.api;
      const uint64_t s = known(a.start_ns), e = known(a.end_ns);
      if (s == 0) continue;
      for (size_t g = 0; g < gaps.size(); ++g) {
        const uint64_t from = gaps[g].second.first, to = gaps[g].second.second;
        if (s >= to || e <= from) continue;
        const uint64_t over = std::min(to, e) - std::max(from, s);
        if (over > best[g].overlap) best[g] = {over, a.thread_id, std::string(reader.string(a.name_id))};
      }
    }
  }
  for (size_t g = 0; g < gaps.size(); ++g) {
    const auto& [row, gap] = gaps[g];
    row->gaps.push_back({gap.first, gap.second,
                         host_activity_text(best[g].call, best[g].thread, best[g].overlap, gap.first, gap.second)});
  }
}

// The NCCL rows, and the bytes of the kernels NCCL calls ran: the collectives the shares
// settled as they read, and the rest by the loader's own join run on a model of only the
// records the shares held; the kernels that may have been NCCL's and were not join the work
// without NCCL. False (with *why_not) when the join would need the launches of the whole
// capture (calls recorded without the hook's external ids), or an external id a window let go.
bool join_nccl(const std::string& path, std::vector<Share>& shares, const gpuhook::Integrity& integrity,
               const std::vector<GroupBy>& groupings, const std::function<std::string(uint32_t)>& range_text,
               const std::function<std::string(uint32_t)>& path_text, StatsSummary& s, std::vector<CollectiveEnd>& ends,
               BusyTracker& work_without_nccl, std::map<uint32_t, BusyTracker>& device_work_without_nccl,
               std::string* why_not) {
  const auto work = [&](uint32_t device, uint64_t start, uint64_t end) {
    work_without_nccl.add(start, end, BusyTracker::Work::kOther);
    device_work_without_nccl.try_emplace(device, 0).first->second.add(start, end, BusyTracker::Work::kOther);
  };
  size_t calls = 0;
  bool unlinked = std::none_of(shares.begin(), shares.end(), [](const Share& sh) { return sh.settle.any_external(); });
  for (const Share& sh : shares) {
    calls += sh.nccl_calls.size() + sh.settled.calls;
    sh.settle.for_each_call([&calls](const v1::Record&) { ++calls; });
    for (const v1::Record& r : sh.nccl_calls)
      if (r.nccl().has_start_ns() && r.nccl().start_ns() > 0 && r.nccl().external_id() == 0) unlinked = true;
  }
  if (calls == 0) {
    for (const Share& sh : shares)
      for (const Share::NcclKernel& k : sh.nccl_kernels)
        if (k.start_ns > 0 && k.end_ns > k.start_ns)
          work(k.device, static_cast<uint64_t>(k.start_ns), static_cast<uint64_t>(k.end_ns));
    return true;
  }
  if (unlinked) {
    if (why_not) *why_not = "NCCL calls recorded without external ids (joined to their launches on the whole capture)";
    return false;
  }
  // The external ids of kernels held before theirs was read: read later, or in another share.
  const auto settler_of = [](const Share& sh) -> const NcclSettler& { return sh.settle; };
  for (Share& sh : shares)
    for (Share::NcclKernel& k : sh.nccl_kernels)
      if (k.corr != 0 && !held_external(shares, settler_of, k.corr, &k.external)) {
        if (why_not) *why_not = kTooFar;
        return false;
      }
  Model mini;
  {
    ModelBuilder builder(mini);
    builder.begin_capture(path);
    ModelBuilder::Rows rows;
    for (const Share& sh : shares) {
      rows.events += sh.nccl_kernels.size();
      rows.nccl += sh.nccl_calls.size();
      rows.external += sh.nccl_kernels.size();
    }
    builder.reserve(rows);
    for (const Share& sh : shares)
      for (const v1::Record& r : sh.context) builder.add(r);
    for (const Share& sh : shares)
      for (const Share::NcclKernel& k : sh.nccl_kernels) add_held_external(builder, k.corr, k.external);
    for (const Share& sh : shares) {
      for (const v1::Record& r : sh.nccl_calls) builder.add(r);
      sh.settle.for_each_call([&builder](const v1::Record& r) { builder.add(r); });
    }
    gpuhook::RecordView r;
    r.kind = v1::Record::kKernel;
    for (const Share& sh : shares)
      for (const Share::NcclKernel& k : sh.nccl_kernels) {
        r.kernel.correlation_id = k.corr;
        r.kernel.name_id = k.name;
        r.kernel.device = k.device;
        r.kernel.stream = k.stream;
        r.kernel.start_ns = k.start_ns;
        r.kernel.end_ns = k.end_ns;
        builder.add(r);
      }
    builder.end_capture(integrity);
  }
  std::map<std::string, NcclRow> nccl;
  for (NcclRow& row : nccl_rows(mini)) nccl[row.op] = std::move(row);
  if (shares.front().clock_ends) ends = rank_clock_inputs(mini).front().ends;
  for (const Share& sh : shares) {
    for (const auto& [name, settled] : sh.settled.rows) {
      NcclRow& row = nccl[name];
      row.op = name;
      row.calls += settled.calls;
      row.bytes += settled.bytes;
      row.time_ns += settled.time_ns;
    }
    ends.insert(ends.end(), sh.settled.ends.begin(), sh.settled.ends.end());
  }
  s.nccl.clear();
  for (auto& [name, row] : nccl) s.nccl.push_back(std::move(row));
  for (uint32_t e = 0; e < mini.events.size(); ++e)
    if (mini.events.kind[e] != EventKind::kNccl && is_gpu_work(mini, e))
      work(mini.events.device[e], mini.events.start_ns[e], mini.events.end_ns[e]);
  // The bytes NCCL's kernels moved, added to their groups as rows of no instances: one row
  // per name or place, summed here as merge_groups() would sum a row per kernel.
  std::array<std::vector<SummaryGroup>, kGroupings> bytes;
  std::array<std::unordered_map<uint64_t, size_t>, kGroupings> row_of;
  std::unordered_map<std::string, size_t> range_row;
  // Kernel rows by name id (an NCCL kernel's kernel_key() is its demangled name), stream rows
  // by (device, stream), device rows by device, range rows by path text.
  const auto add_bytes = [&](GroupBy g, uint64_t id, const std::string& range, uint64_t n) {
    const size_t gi = slot_index(g);
    const size_t next = bytes[gi].size();
    const size_t at = g == GroupBy::kRange ? range_row.try_emplace(range, next).first->second
                                           : row_of[gi].try_emplace(id, next).first->second;
    if (at == next) {
      SummaryGroup row;
      if (g == GroupBy::kKernel) row.key = demangle(std::string(mini.string(static_cast<uint32_t>(id))));
      else if (g == GroupBy::kRange) row.key = range;
      else row.device = g == GroupBy::kStream ? static_cast<uint32_t>(id >> 32) : static_cast<uint32_t>(id);
      if (g == GroupBy::kStream) row.stream = static_cast<uint32_t>(id);
      bytes[gi].push_back(std::move(row));
    }
    bytes[gi][at].bytes += n;
  };
  for (uint32_t e = 0; e < mini.events.size(); ++e) {
    if (mini.events.kind[e] != EventKind::kNccl || mini.events.bytes[e] == 0 || !is_gpu_work(mini, e)) continue;
    const uint32_t device = mini.events.device[e], stream = mini.events.stream[e];
    for (GroupBy g : groupings) {
      const uint64_t id = g == GroupBy::kKernel   ? mini.events.name[e]
                          : g == GroupBy::kStream ? (uint64_t{device} << 32) | stream
                                                  : device;
      add_bytes(g, id, g == GroupBy::kRange ? range_text(mini.events.correlation_id[e]) : std::string(), mini.events.bytes[e]);
    }
  }
  for (const Share& sh : shares)
    for (GroupBy g : groupings)
      for (const auto& [id, n] : sh.settled.bytes[slot_index(g)])
        add_bytes(g, id, g == GroupBy::kRange ? path_text(static_cast<uint32_t>(id)) : std::string(), n);
  for (GroupBy g : groupings) merge_groups(s.groups[static_cast<size_t>(g)], bytes[slot_index(g)], 0, false);
  return true;
}

}  // namespace

unsigned default_scan_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int affinity = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  const unsigned cpus = affinity > 0 ? static_cast<unsigned>(affinity) : std::thread::hardware_concurrency();
  return std::clamp(cpus, 1u, 16u);
}

std::string stream_refusal(const std::vector<GroupBy>& by) {
  for (GroupBy g : by)
    if (g == GroupBy::kGraph) return "--by graph needs the graph launches' timelines";
  return {};
}

std::optional<StreamedStats> stream_stats(const std::string& path, const StreamStatsOptions& o, std::string* why_not) {
  if (const std::string no = stream_refusal(o.by); !no.empty()) {
    if (why_not) *why_not = no;
    return std::nullopt;
  }
  std::vector<GroupBy> groupings;
  for (GroupBy g : o.by)
    if (std::find(groupings.begin(), groupings.end(), g) == groupings.end()) groupings.push_back(g);

  const unsigned thread_count = o.threads != 0 ? o.threads : default_scan_threads();
  std::optional<v1::ChunkIndex> index;  // read once: the shares' plan and the gaps' second read
  {
    const std::unique_ptr<gpuhook::CaptureReader> opened_probe = gantt::scan::open_capture(path, gpuhook::ReaderOptions{o.load.strict, 0, 0});
    gpuhook::CaptureReader& probe = *opened_probe;
    if (!index_within_guard(probe, o.load)) {
      if (why_not) *why_not = kOverGuard;
      return std::nullopt;
    }
    index = probe.index();
  }
  std::vector<Share> shares = plan_shares(index, thread_count);
  if (o.matches && std::find(groupings.begin(), groupings.end(), GroupBy::kKernel) == groupings.end())
    groupings.push_back(GroupBy::kKernel);  // the matches are the kernel groups' samples
  // The filter, resolved once as every scan resolves it (scan_select.h): its --range is found
  // in the scanner's context pass.
  std::unique_ptr<EventScanner> selecting;
  if (o.filter) {
    EventScanOptions so;
    so.load = o.load;
    so.threads = o.threads;
    selecting = std::make_unique<EventScanner>(path, so);
    const bool selected =
        o.job_span ? selecting->select(*o.filter, o.job_span->first, o.job_span->second, why_not, o.job_range)
                   : selecting->select(*o.filter, why_not);
    if (!selected) return std::nullopt;
  }
  // A launch's range path needs every range of its thread: those are read first, on their own.
  std::unique_ptr<const RangePaths> ranges;
  const bool by_range = std::find(groupings.begin(), groupings.end(), GroupBy::kRange) != groupings.end();
  if (o.matches || by_range) {
    std::string why;
    ranges = RangePaths::read(path, o.load, plan_chunk_ranges(index, thread_count), &why);
    if (!ranges) {
      if (why_not) *why_not = why;
      return std::nullopt;
    }
  }
  // The launches' paths, when the capture has push/pop ranges.
  const RangePaths* paths = ranges && !ranges->empty() ? ranges.get() : nullptr;
  for (Share& sh : shares) {
    sh.groupings = groupings;
    sh.by_range = by_range;
    sh.matches = o.matches;
    sh.clock_ends = o.clock_ends;
    sh.gaps = o.gaps;
    sh.ranges = paths;
    if (selecting) sh.select = &selecting->filter()->select;
  }
  std::atomic<bool> stop{false};
  run_shares(shares, stop, [&](Share& sh) { read_share(path, o, sh, stop); });

  // In file order: an error ends the capture where it stood, as load() reads it.
  size_t used = shares.size();
  uint32_t headers = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    if ((headers += shares[i].headers) > 1 && shares[i].needs_model.empty())
      shares[i].needs_model = "a merged file (several ranks, put on one clock when loaded)";
    if (shares[i].error) std::rethrow_exception(shares[i].error);
    if (!shares[i].needs_model.empty()) {
      if (why_not) *why_not = shares[i].needs_model;
      return std::nullopt;
    }
    if (shares[i].integrity.error) {
      used = i + 1;
      break;
    }
  }
  shares.resize(used);
  // The launches' paths: the work read before its launch call, and NCCL's kernels (their bytes
  // join their groups), found in the share that read the call. Nothing when a call may have
  // been let go from a window.
  const auto path_anywhere = [&shares](uint32_t corr, uint32_t* path) {
    uint64_t p = 0;
    const bool told = value_across(shares, SIZE_MAX, corr, [corr](const Share& sh) { return sh.path_of(corr); }, &p);
    *path = p != 0 ? static_cast<uint32_t>(p - 1) : kNone;
    return told;
  };
  std::unordered_map<uint32_t, uint32_t> nccl_paths;  // NCCL kernel's correlation id -> path
  if (paths) {
    for (Share& sh : shares) {
      for (const auto& [corr, w] : sh.path_waiting) {
        uint32_t p = kNone;
        if (!path_anywhere(corr, &p)) {
          if (why_not) *why_not = kTooFar;
          return std::nullopt;
        }
        fold_path(sh, p, w);
      }
      sh.path_waiting.clear();
      for (const Share::NcclKernel& k : sh.nccl_kernels)
        if (k.corr != 0 && !path_anywhere(k.corr, &nccl_paths[k.corr])) {
          if (why_not) *why_not = kTooFar;
          return std::nullopt;
        }
    }
  }

  StreamedStats out;
  out.threads = static_cast<unsigned>(shares.size());
  const gpuhook::Integrity integrity = file_integrity(shares);
  out.context = context_model(path, shares, integrity);
  const CaptureInfo& capture = out.context.captures.front();

  StatsSummary& s = out.summary;
  s.gaps_kept = o.gaps;
  s.captures.push_back({path, capture.header.host_name(), capture.header.pid(),
                        capture.header.has_rank() ? static_cast<int32_t>(capture.header.rank()) : -1});
  std::map<std::string, DurationDigest> queue_of;  // kernel key -> queued->start, for the matches
  std::map<uint32_t, BusyTracker> busy;
  BusyTracker work_without_nccl(0);
  std::map<uint32_t, BusyTracker> device_work_without_nccl;
  std::map<uint32_t, Share::Copies> copies;
  for (size_t i = 0; i < shares.size(); ++i) {
    Share& sh = shares[i];
    out.gpu_events += sh.gpu_events;
    out.selected_events += sh.selected_events;
    s.events += sh.events;
    s.gpu_time_ns += sh.gpu_time_ns;
    if (sh.first_ns != 0) s.first_ns = s.first_ns == 0 ? sh.first_ns : std::min(s.first_ns, sh.first_ns);
    s.last_ns = std::max(s.last_ns, sh.last_ns);
    s.exec.merge(sh.exec);
    s.queued_to_start.merge(sh.queued_to_start);
    s.launch_to_queued.merge(sh.launch_to_queued);
    for (GroupBy g : groupings) {
      const size_t gi = slot_index(g);
      std::vector<SummaryGroup> rows;
      rows.reserve(sh.slots[gi].size());
      for (auto& [id, acc] : sh.slots[gi]) {
        rows.push_back(to_group(g, id, acc, ranges.get()));
        if (o.matches && g == GroupBy::kKernel) queue_of[rows.back().key].merge(acc.queue);
      }
      merge_groups(s.groups[static_cast<size_t>(g)], rows, 0, false);
    }
    for (auto& [device, tracker] : sh.busy) {
      auto [it, fresh] = busy.try_emplace(device, BusyTracker(o.gaps));
      it->second.absorb(std::move(tracker));
    }
    work_without_nccl.absorb(std::move(sh.work_without_nccl));
    for (auto& [device, tracker] : sh.device_work_without_nccl)
      device_work_without_nccl.try_emplace(device, 0).first->second.absorb(std::move(tracker));
    for (const auto& [device, n] : sh.copies) {
      Share::Copies& all = copies[device];
      all.count += n.count;
      all.bytes += n.bytes;
      all.sync += n.sync;
    }
    // Kernels and copies read before their launch: the launch may be in another share.
    const auto call_elsewhere = [&shares, i](uint32_t corr) {
      uint64_t call = 0;  // one a window let go: no launch->queued stage, a copy not counted synchronous
      value_across(shares, i, corr, [corr](const Share& sh) { return sh.call_of(corr); }, &call);
      return call;
    };
    for (const auto& [corr, queued] : sh.waiting)
      if (const uint64_t launch = call_elsewhere(corr) & ~CorrWindow::kAsyncCallBit; launch != 0)
        s.launch_to_queued.add(static_cast<int64_t>(queued - launch));
    for (const auto& [corr, copy] : sh.copies_waiting) {
      copy.count(copies[copy.device], (call_elsewhere(corr) & CorrWindow::kAsyncCallBit) != 0);
    }
    sh.waiting.clear();
    sh.copies_waiting.clear();
  }
  for (GroupBy g : groupings) s.grouped[static_cast<size_t>(g)] = true;
  out.clock = rank_clock_inputs(out.context).front();
  const auto nccl_range_key = [&](uint32_t corr) {
    auto it = nccl_paths.find(corr);
    return it == nccl_paths.end() || it->second == kNone ? std::string("(no range)") : ranges->text(it->second);
  };
  const auto path_text = [&](uint32_t p) { return p == kNone || !paths ? std::string("(no range)") : ranges->text(p); };
  if (!join_nccl(path, shares, integrity, groupings, nccl_range_key, path_text, s, out.clock.ends, work_without_nccl,
                 device_work_without_nccl, why_not))
    return std::nullopt;
  s.captures.front().busy_ns_without_nccl = work_without_nccl.finish().busy_ns;
  out.late_activities += work_without_nccl.late();
  out.busy_exact = out.busy_exact && work_without_nccl.exact();
  if (o.matches && paths) {
    // add_diff_samples() without graphs: one match per range path and kernel key.
    for (Share& sh : shares)
      for (auto& [id, paths] : sh.matches_by_path) {
        const std::string name = kernel_group_key(id, sh.match_names[id]);
        for (auto& [p, acc] : paths) {
          const std::string range = p == kNone ? std::string() : ranges->text(p);
          SummaryMatch& m = s.matches[match_key(range, name, 0)];
          m.name = name;
          m.range = range;
          m.exec.merge(acc.exec);
          m.queue.merge(acc.queue);
          out.stacks[(p == kNone ? std::string() : ranges->frames(p)) + stack_leaf(name)] += acc.exec.total_ns();
        }
      }
  } else if (o.matches) {
    // add_diff_samples() without ranges or graphs: one match per kernel key.
    for (const SummaryGroup& row : s.groups[static_cast<size_t>(GroupBy::kKernel)]) {
      SummaryMatch& m = s.matches[match_key("", row.key, 0)];
      m.name = row.key;
      m.exec = row.exec;
      m.queue = queue_of[row.key];
      if (row.exec.total_ns() != 0) out.stacks[stack_leaf(row.key)] += row.exec.total_ns();
    }
  }
  if (o.matches) {
    for (const auto& [name, durations] : ranges->top_ranges())
      for (int64_t v : durations) s.top_ranges[name].add(v);
    s.has_matches = true;
    if (std::find(o.by.begin(), o.by.end(), GroupBy::kKernel) == o.by.end()) {
      s.groups[static_cast<size_t>(GroupBy::kKernel)].clear();
      s.grouped[static_cast<size_t>(GroupBy::kKernel)] = false;
    }
  }

  std::vector<std::pair<DeviceRow*, Interval>> gaps;
  s.devices.reserve(busy.size());
  for (auto& [device, tracker] : busy) {
    const BusyTracker::Totals t = tracker.finish();
    out.late_activities += tracker.late();
    out.busy_exact = out.busy_exact && tracker.exact();
    DeviceRow d;
    d.capture = 0;
    d.device = device;
    d.span_ns = t.last_ns - t.first_ns;
    d.busy_ns = t.busy_ns;
    d.compute_ns = t.compute_ns;
    d.copy_ns = t.copy_ns;
    d.overlap_ns = t.overlap_ns;
    d.idle_ns = d.span_ns - std::min(d.span_ns, d.busy_ns);
    const Share::Copies& n = copies[device];
    d.copies = n.count;
    d.copy_bytes = n.bytes;
    d.sync_copies = n.sync;
    if (auto w = device_work_without_nccl.find(device); w != device_work_without_nccl.end())
      d.busy_ns_without_nccl = w->second.finish().busy_ns;
    s.devices.push_back(std::move(d));
    for (const Interval& gap : t.gaps) gaps.emplace_back(nullptr, gap);
    for (size_t k = gaps.size() - t.gaps.size(); k < gaps.size(); ++k) gaps[k].first = &s.devices.back();
  }
  name_host_activity(path, o, index, gaps);

  out.warnings = integrity_warnings(out.context, &out.corrupt);
  if (s.events != 0 && capture.alignment.method == AlignMethod::kNone)
    out.warnings.push_back(capture.path + ": " + describe(capture.alignment));
  return out;
}

namespace {

// A capture's summary moved onto the job's clock, as apply_rank_alignment() moves a loaded
// capture's events (0 stays unknown).
void shift_times(StatsSummary& s, int64_t offset_ns) {
  const auto shift = [offset_ns](uint64_t& t) {
    if (t != 0) t = static_cast<uint64_t>(static_cast<int64_t>(t) + offset_ns);
  };
  shift(s.first_ns);
  shift(s.last_ns);
  for (DeviceRow& d : s.devices)
    for (IdleGap& g : d.gaps) {
      shift(g.start_ns);
      shift(g.end_ns);
    }
}

}  // namespace

std::optional<StreamedJob> stream_job_stats(const std::vector<std::string>& paths, const StreamStatsOptions& o,
                                            std::string* why_not) {
  if (paths.empty()) return std::nullopt;
  // A filter on several captures counts its window from the job's start, as loaded: the
  // captures' clocks are aligned first (a scan of their collectives where their boots differ),
  // then each selects by the job's first and last times as its own clock reads them.
  std::optional<JobClock> clock;
  if (o.filter && paths.size() > 1) {
    EventScanOptions so;
    so.load = o.load;
    so.threads = o.threads;
    const std::optional<std::vector<std::unique_ptr<EventScanner>>> scanners = open_scanners(paths, so, why_not);
    if (!scanners) return std::nullopt;
    std::vector<const EventScanner*> contexts;
    for (const auto& scanner : *scanners) contexts.push_back(scanner.get());
    clock = job_clock(paths, contexts, so, why_not, o.filter);  // --range: the N-th among all of theirs
    if (!clock) return std::nullopt;
  }
  const unsigned thread_count = o.threads != 0 ? o.threads : default_scan_threads();
  // Many captures: one thread each, as many at a time as there are threads (no share plans,
  // no second readers). Fewer: one after another, each on every thread.
  const bool by_capture = paths.size() >= thread_count && thread_count > 1;
  StreamStatsOptions each = o;
  each.threads = by_capture ? 1 : thread_count;
  each.clock_ends = paths.size() > 1 && !clock;  // one capture is on its own clock; a JobClock knows them
  std::vector<std::optional<StreamedStats>> parts(paths.size());
  std::vector<std::string> refusals(paths.size());
  std::vector<std::exception_ptr> errors(paths.size());
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  const auto work = [&] {
    for (;;) {
      const size_t i = next++;
      if (i >= paths.size() || stop) return;
      try {
        StreamStatsOptions mine = each;
        if (clock) {
          mine.job_span = clock->local_span(i);
          mine.job_range = clock->local_range(i);
        }
        parts[i] = stream_stats(paths[i], mine, &refusals[i]);
        if (!parts[i]) stop = true;
      } catch (...) {
        errors[i] = std::current_exception();
        stop = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; by_capture && t < thread_count; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  // In input order, as load() meets them: the first failure is the one reported.
  for (size_t i = 0; i < paths.size(); ++i) {
    if (errors[i]) std::rethrow_exception(errors[i]);
    if (!parts[i]) {
      if (why_not) *why_not = refusals[i].empty() ? std::string() : paths[i] + ": " + refusals[i];
      return std::nullopt;
    }
  }

  StreamedJob out;
  std::vector<RankClockInput> clocks;
  for (auto& part : parts) clocks.push_back(part->clock);
  if (clock) {
    out.alignment.captures.resize(paths.size());
    for (size_t i = 0; i < paths.size(); ++i) out.alignment.captures[i].offset_ns = clock->offsets[i];
  } else if (paths.size() > 1) {
    out.alignment = align_ranks(clocks);
  } else {
    out.alignment.captures.resize(1);
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    StatsSummary& s = parts[i]->summary;
    shift_times(s, out.alignment.captures[i].offset_ns);
    if (i == 0) out.summary = std::move(s);
    else merge(out.summary, s);
    s = StatsSummary{};
    out.ranks.push_back(std::move(*parts[i]));
  }
  out.summary.merged = false;  // aligned together, as loaded
  return out;
}

}  // namespace gantt::analysis
