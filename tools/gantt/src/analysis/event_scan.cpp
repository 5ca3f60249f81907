// One capture scanned event by event, each GPU operation joined to its launch (event_scan.h).
// The join is ModelBuilder::Impl::join()'s, inside CorrWindows: the last call with the id,
// NCCL's own calls left out; copies, memsets and synchronisations take the call's name.
#include "gantt/analysis/event_scan.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <unordered_map>

#include <google/protobuf/arena.h>
#include <gpuhook/nccl_types.h>

#include "gantt/analysis/stream_shares.h"
#include "gantt/analysis/stream_stats.h"
#include "gantt/model/model_builder.h"
#include "gantt/scan/open.h"

namespace gantt::analysis {

namespace v1 = gpuhook::v1;
using builder::known;
using builder::t;

namespace {
// Kernels one share holds for the NCCL join (a few per collective), beside the GPU records
// read before their calls (kMaxWaiting). Past either, the capture is loaded.
constexpr size_t kMaxHeld = size_t{1} << 20;
// NVTX ranges the context pass keeps (a model row each, about 60 bytes).
constexpr size_t kMaxRanges = size_t{1} << 21;
constexpr const char* kHostFunctions = "host functions on streams (their devices and calls are joined on the whole capture)";
constexpr const char* kUnlinkedNccl = "NCCL calls recorded without external ids (joined to their launches on the whole capture)";
}  // namespace

struct EventScanner::Share {
  ChunkRange range;
  EventConsumer* consumer = nullptr;
  // The launch calls read, by correlation id: start, thread, and name id + 1 (0: not read);
  // their ends with EventScanOptions::launch_ends.
  CorrWindows starts, threads, names, ends;
  std::unordered_multimap<uint32_t, ScannedEvent> waiting;  // read before their calls
  // Kernels the NCCL join holds for the end, with their external ids (0: not read yet).
  std::vector<ScannedEvent> held;
  std::vector<uint64_t> held_external;
  NcclSettler settle;
  std::vector<v1::Record> nccl_calls;  // calls the settler left to the final join
  NcclKernelFilter nccl;
  NameFlags kernel_names, call_names;  // EventScanOptions::select: the names --kernel matches
  uint64_t events = 0, selected = 0;   // GPU events read, and handed on
  std::string needs_model;
  std::exception_ptr error;
  gpuhook::Integrity integrity;
  // Kept after the share's read: it has read every string of the file, for the events handed
  // on after all shares (their name ids are this reader's).
  std::unique_ptr<gpuhook::CaptureReader> reader;

  bool maybe_lost(uint32_t corr) const { return starts.maybe_lost(corr); }
  bool launch(uint32_t corr, ScannedEvent* e) const {
    const uint64_t name = names.get(corr);
    if (name == 0) return false;
    e->launched = true;
    e->launch_ns = starts.get(corr);
    e->launch_thread_id = threads.get(corr);
    e->launch_end_ns = ends.get(corr);
    e->launch_name_id = static_cast<uint32_t>(name - 1);
    return true;
  }
};

namespace {

// A GPU operation as ModelBuilder::Impl::add() reads it; false for records that are not one.
bool event_of(const gpuhook::RecordView& v, ScannedEvent* e) {
  *e = ScannedEvent{};
  if (v.kind == v1::Record::kKernel) {
    const gpuhook::KernelFields& k = v.kernel;
    e->kind = EventKind::kKernel;
    e->device = k.device;
    e->stream = k.stream;
    e->correlation_id = k.correlation_id;
    e->name_id = k.name_id;
    e->priority = k.stream_priority;
    e->queued_ns = known(k.queued_ns);
    e->submitted_ns = known(k.submitted_ns);
    e->start_ns = known(k.start_ns);
    e->end_ns = known(k.end_ns);
    e->grid = {k.grid_x, k.grid_y, k.grid_z};
    e->block = {k.block_x, k.block_y, k.block_z};
    e->registers_per_thread = std::min<uint32_t>(k.registers_per_thread, UINT16_MAX);  // as the model keeps it
    e->shared_memory_bytes = uint64_t{k.static_shared_memory_bytes} + k.dynamic_shared_memory_bytes;
    e->graph_id = k.graph_id;
    return true;
  }
  if (v.kind == v1::Record::kApi) return false;
  const v1::Record& r = *v.record;
  switch (r.kind_case()) {
    case v1::Record::kMemcpy: {
      const auto& k = r.memcpy();
      e->kind = EventKind::kMemcpy;
      e->device = k.device();
      e->stream = k.stream();
      e->correlation_id = k.correlation_id();
      e->copy_kind = static_cast<uint8_t>(k.copy_kind());
      e->copy_flags = static_cast<uint8_t>((k.async() ? kCopyAsync : 0) |
                                           (k.src_kind() == v1::MEMORY_PAGEABLE || k.dst_kind() == v1::MEMORY_PAGEABLE ? kCopyPageable : 0));
      e->graph_id = k.graph_id();
      e->bytes = k.bytes();
      e->start_ns = t(k.has_start_ns(), k.start_ns());
      e->end_ns = t(k.has_end_ns(), k.end_ns());
      return true;
    }
    case v1::Record::kMemset: {
      const auto& k = r.memset();
      e->kind = EventKind::kMemset;
      e->graph_id = k.graph_id();
      e->device = k.device();
      e->stream = k.stream();
      e->correlation_id = k.correlation_id();
      e->bytes = k.bytes();
      e->start_ns = t(k.has_start_ns(), k.start_ns());
      e->end_ns = t(k.has_end_ns(), k.end_ns());
      return true;
    }
    case v1::Record::kSync: {
      const auto& k = r.sync();
      if (k.return_value() != 0) return false;  // a query that returned at once (ModelBuilder)
      e->kind = EventKind::kSync;
      e->device = k.device();
      e->stream = k.stream();
      e->correlation_id = k.correlation_id();
      e->copy_kind = static_cast<uint8_t>(k.type());
      e->start_ns = t(k.has_start_ns(), k.start_ns());
      e->end_ns = t(k.has_end_ns(), k.end_ns());
      return true;
    }
    default: return false;
  }
}

}  // namespace

EventScanner::EventScanner(std::string path, EventScanOptions options) : path_(std::move(path)), options_(options) {
  const unsigned thread_count = options_.threads != 0 ? options_.threads : default_scan_threads();
  std::optional<v1::ChunkIndex> index;
  {
    const std::unique_ptr<gpuhook::CaptureReader> opened_probe = gantt::scan::open_capture(path_, gpuhook::ReaderOptions{options_.load.strict, 0, 0});
    gpuhook::CaptureReader& probe = *opened_probe;
    if (!index_within_guard(probe, options_.load)) {
      refused_ = kOverGuard;
      return;
    }
    index = probe.index();
  }
  if (index)
    for (const auto& c : index->chunk())
      if (c.min_ns() > 0 && (index_first_ns_ == 0 || c.min_ns() < index_first_ns_)) index_first_ns_ = c.min_ns();
  if (index)
    for (const auto& c : index->chunk()) index_last_ns_ = std::max<uint64_t>(index_last_ns_, c.max_ns());
  std::vector<ChunkRange> ranges = plan_chunk_ranges(index, thread_count);
  size_t headers = 0;
  if (!read_range_model(path_, options_.load, ranges, kMaxRanges, &context_, &headers)) {
    refused_ = "more NVTX range records than a scan keeps";
    return;
  }
  if (headers > 1) {
    refused_ = "a merged file (several ranks, put on one clock when loaded)";
    return;
  }
  const CaptureInfo& capture = context_.captures.front();
  // A damaged file is read as one share, as the loader reads it: it stops at the damage.
  if (capture.integrity.error) ranges = {ChunkRange{}};
  warnings_ = integrity_warnings(context_, &corrupt_);
  for (size_t i = 0; i < context_.streams.size(); ++i) {
    const auto at = std::lower_bound(stream_priority_.begin(), stream_priority_.end(),
                                     std::make_pair(context_.streams.stream[i], INT32_MIN));
    if (at != stream_priority_.end() && at->first == context_.streams.stream[i]) at->second = context_.streams.priority[i];
    else stream_priority_.insert(at, {context_.streams.stream[i], context_.streams.priority[i]});
  }
  for (const ChunkRange& r : ranges) {
    shares_.push_back(std::make_unique<Share>());
    shares_.back()->range = r;
  }
}

EventScanner::~EventScanner() = default;

uint64_t EventScanner::first_ns() const {
  // The context's own first time: its header's start and its NVTX ranges, seen as the loader sees them.
  uint64_t t = context_.first_ns();
  if (index_first_ns_ != 0 && (t == 0 || index_first_ns_ < t)) t = index_first_ns_;
  return t;
}

bool EventScanner::select(const EventFilter& filter, std::string* why_not) {
  return select(filter, first_ns(), std::max(index_last_ns_, first_ns()), why_not);
}

bool EventScanner::select(const EventFilter& filter, uint64_t first_ns, uint64_t last_ns, std::string* why_not,
                          const std::optional<std::pair<uint64_t, uint64_t>>& range) {
  if (!refused_.empty()) {
    if (why_not) *why_not = refused_;
    return false;
  }
  if (index_last_ns_ == 0) {
    if (why_not) *why_not = "a filter on a capture without a chunk index (its end is known only when it is read)";
    return false;
  }
  std::optional<ScanFilter> f = resolve_scan_filter(path_, options_.load, options_.threads, context_, first_ns,
                                                    std::max(last_ns, first_ns), filter, why_not, range);
  if (!f) return false;
  filter_ = std::make_unique<ScanFilter>(std::move(*f));
  options_.select = &filter_->select;
  return true;
}

uint64_t EventScanner::events_read() const {
  uint64_t n = 0;
  for (const auto& sh : shares_) n += sh->events;
  return n;
}

uint64_t EventScanner::events_selected() const {
  uint64_t n = 0;
  for (const auto& sh : shares_) n += sh->selected;
  return n;
}

int32_t EventScanner::stream_priority(uint32_t stream) const {
  const auto at = std::lower_bound(stream_priority_.begin(), stream_priority_.end(), std::make_pair(stream, INT32_MIN));
  return at != stream_priority_.end() && at->first == stream ? at->second : 0;
}

namespace {

// An event to its share's consumer, if the selection keeps it.
void hand_on(EventScanner::Share& sh, const ScannedEvent& e, const gpuhook::CaptureReader& reader, const ScanSelector* select) {
  ++sh.events;
  if (select) {
    const uint64_t begin = e.start_ns ? e.start_ns : e.queued_ns ? e.queued_ns : e.launch_ns;
    const EventKind kind = e.kind == EventKind::kNccl ? EventKind::kKernel : e.kind;
    if (!select->on(e.device, e.stream) || !select->in_time(begin, e.end_ns) ||
        !select->named(sh.kernel_names, kind, e.name_id, reader)) {
      sh.consumer->unselected(e);
      return;
    }
  }
  ++sh.selected;
  sh.consumer->event(e, reader);
}

// A kernel the NCCL join settles now (NcclSettler) is handed on; another is held for the end.
void deliver(EventScanner::Share& sh, ScannedEvent& e, const gpuhook::CaptureReader& reader, const EventScanOptions& o) {
  if (!o.join_nccl || !e.maybe_nccl) {
    hand_on(sh, e, reader, o.select);
    return;
  }
  v1::Record call;
  uint64_t external = 0;
  switch (sh.settle.kernel(e.correlation_id, true, &call, &external)) {
    case NcclSettler::Verdict::kCall: {
      const auto& n = call.nccl();
      const ScannedNccl info{static_cast<uint8_t>(n.op()), n.comm_id(), n.sequence(), n.bytes(), n.root_or_peer(),
                             n.rank(), n.nranks(), n.datatype(), n.count()};
      e.kind = EventKind::kNccl;
      e.bytes = info.bytes;
      e.nccl = &info;
      hand_on(sh, e, reader, o.select);
      e.nccl = nullptr;
      return;
    }
    case NcclSettler::Verdict::kNccl:
      e.kind = EventKind::kNccl;
      hand_on(sh, e, reader, o.select);
      return;
    case NcclSettler::Verdict::kHeld:
      if (sh.held.size() >= kMaxHeld) {
        sh.needs_model = "more kernels NCCL may have run than a scan holds";
        return;
      }
      sh.held.push_back(e);
      sh.held_external.push_back(external);
      return;
  }
}

void read_share(const std::string& path, const EventScanOptions& o, const EventScanner& scanner, EventScanner::Share& sh,
                std::atomic<bool>& stop) {
  gpuhook::ReaderOptions ro;
  ro.strict = o.load.strict;
  ro.first_chunk = sh.range.first_chunk;
  ro.end_chunk = sh.range.end_chunk;
  ro.outside_strings_only = true;
  sh.reader = gantt::scan::open_capture(path, ro);
  gpuhook::CaptureReader& reader = *sh.reader;
  const AmplificationGuard guard(reader, o.load);
  // Kernels and API calls as plain values, other records on an arena dropped in batches
  // (stream_stats.cpp read_share says why).
  google::protobuf::Arena arena;
  gpuhook::RecordView view;
  view.record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
  ScannedEvent e;
  for (uint64_t n = 1; reader.next(view); ++n) {
    guard.check(reader);
    if (event_of(view, &e)) {
      if (o.select && o.select->kernel && e.kind == EventKind::kKernel && e.name_id == 0)
        sh.needs_model = "--kernel and a kernel record without a name (named after its launch call)";
      if (e.priority == 0) e.priority = scanner.stream_priority(e.stream);
      if (e.kind == EventKind::kKernel) e.maybe_nccl = sh.nccl.maybe(reader, e.correlation_id, e.name_id, n);
      if (e.correlation_id == 0 || sh.launch(e.correlation_id, &e) || (!o.join_launches && e.name_id != 0)) {
        deliver(sh, e, reader, o);
      } else if (sh.waiting.size() < kMaxWaiting) {
        sh.waiting.emplace(e.correlation_id, e);
      } else {
        sh.needs_model = kTooFar;
      }
    } else if (view.kind == v1::Record::kApi) {
      const gpuhook::ApiFields& a = view.api;
      if (o.select && o.select->call_named(sh.call_names, a.name_id, reader))
        sh.needs_model = "--kernel matching the name of an API call (copies, memsets and synchronisations are named after theirs)";
      if (a.correlation_id != 0 && a.domain != v1::API_DOMAIN_NCCL) {
        sh.starts.set(a.correlation_id, known(a.start_ns));
        sh.threads.set(a.correlation_id, a.thread_id);
        sh.names.set(a.correlation_id, uint64_t{a.name_id} + 1);
        if (o.launch_ends) sh.ends.set(a.correlation_id, known(a.end_ns));
        if (!sh.waiting.empty()) {
          const auto [from, to] = sh.waiting.equal_range(a.correlation_id);
          for (auto it = from; it != to; ++it) {
            sh.launch(a.correlation_id, &it->second);
            deliver(sh, it->second, reader, o);
          }
          sh.waiting.erase(from, to);
        }
      }
      sh.consumer->api(a, reader);
    } else {
      const v1::Record& r = *view.record;
      switch (r.kind_case()) {
        case v1::Record::kRange:  // the context pass read them
        case v1::Record::kHeader:
        case v1::Record::kDevice:
        case v1::Record::kThread:
        case v1::Record::kStringDef:
        case v1::Record::kDrops:
        case v1::Record::kNotice:
        case v1::Record::kFooter:
        case v1::Record::kStream:
        case v1::Record::kCudaEvent:
          break;
        case v1::Record::kHostFunction: sh.needs_model = kHostFunctions; break;
        case v1::Record::kExternalCorrelation: {
          const auto& x = r.external_correlation();
          if (o.join_nccl && x.kind() == builder::kHookExternalKind && x.external_id() != 0 && x.correlation_id() != 0) {
            sh.nccl.under_external(x.correlation_id());
            sh.settle.external(x.correlation_id(), x.external_id());
          }
          break;
        }
        case v1::Record::kNccl:
          if (o.join_nccl) {
            const auto& n = r.nccl();
            if (n.has_start_ns() && n.start_ns() > 0 && n.external_id() == 0) sh.needs_model = kUnlinkedNccl;
            if (!sh.settle.call(r)) sh.nccl_calls.push_back(r);
            if (sh.settle.held() + sh.nccl_calls.size() > kMaxHeld) sh.needs_model = "more NCCL calls without their kernels than a scan holds";
          }
          sh.consumer->record(r, reader);
          break;
        default: sh.consumer->record(r, reader); break;
      }
    }
    if (!sh.needs_model.empty() || sh.consumer->stopped()) stop = true;
    if ((n & 4095) == 0) {
      if (stop.load(std::memory_order_relaxed)) break;
      arena.Reset();
      view.record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
    }
  }
  sh.integrity = reader.integrity();
}

// The loader's NCCL join (ModelBuilder::Impl::join_nccl_by_external_id) on a model of only the
// calls, the external ids and the held kernels; each kernel it claims gets its call.
std::vector<ScannedNccl> join_held(const std::string& path, std::vector<std::unique_ptr<EventScanner::Share>>& shares) {
  Model mini;
  ModelBuilder builder(mini);
  builder.begin_capture(path);
  for (const auto& sh : shares)
    for (size_t i = 0; i < sh->held.size(); ++i) add_held_external(builder, sh->held[i].correlation_id, sh->held_external[i]);
  for (const auto& sh : shares) {
    for (const v1::Record& r : sh->nccl_calls) builder.add(r);
    sh->settle.for_each_call([&](const v1::Record& r) { builder.add(r); });
  }
  // The kernels' names: the join picks a grouped call's kernel by its name's family first.
  for (const auto& sh : shares)
    for (const ScannedEvent& e : sh->held)
      if (e.name_id != 0 && sh->reader) builder.define_string(e.name_id, sh->reader->string(e.name_id));
  gpuhook::RecordView r;
  r.kind = v1::Record::kKernel;
  for (const auto& sh : shares)
    for (const ScannedEvent& e : sh->held) {
      r.kernel = gpuhook::KernelFields{};
      r.kernel.correlation_id = e.correlation_id;
      r.kernel.name_id = e.name_id;
      r.kernel.device = e.device;
      r.kernel.stream = e.stream;
      r.kernel.start_ns = static_cast<int64_t>(e.start_ns);
      r.kernel.end_ns = static_cast<int64_t>(e.end_ns);
      builder.add(r);
    }
  builder.end_capture({});
  std::vector<ScannedNccl> calls(mini.events.size());
  const std::vector<uint32_t> call_of = mini.nccl_call_of_events();
  for (uint32_t ev = 0; ev < calls.size(); ++ev) {
    const uint32_t n = call_of[ev];
    if (n == kNone) continue;
    calls[ev] = {static_cast<uint8_t>(mini.nccl.op[n]), mini.nccl.comm_id[n], mini.nccl.sequence[n], mini.nccl.bytes[n],
                 mini.nccl.root_or_peer[n], mini.nccl.rank[n], mini.nccl.nranks[n], mini.nccl.datatype[n],
                 mini.nccl.count[n]};
  }
  for (uint32_t n = 0; n < mini.nccl.size(); ++n)
    if (const uint32_t ev = mini.nccl.event[n]; ev < calls.size() && gpuhook::nccl_op_is_collective(mini.nccl.op[n]))
      ++calls[ev].collective_calls;
  size_t i = 0;
  for (auto& sh : shares)
    for (ScannedEvent& e : sh->held) {
      if (i < mini.events.size() && mini.events.kind[i] == EventKind::kNccl) {
        e.kind = EventKind::kNccl;
        e.bytes = mini.events.bytes[i];
      }
      ++i;
    }
  return calls;
}

}  // namespace

bool EventScanner::run(const std::vector<EventConsumer*>& consumers, std::string* why_not) {
  const auto refuse = [why_not](const std::string& why) {
    if (why_not) *why_not = why;
    return false;
  };
  if (!refused_.empty()) return refuse(refused_);
  if (consumers.size() != shares_.size()) return refuse("one consumer per share");
  for (size_t i = 0; i < shares_.size(); ++i) shares_[i]->consumer = consumers[i];
  std::atomic<bool> stop{false};
  std::vector<Share*> order;
  for (auto& sh : shares_) order.push_back(sh.get());
  struct Run {
    Share* share;
    std::exception_ptr error;
  };
  std::vector<Run> runs;
  for (Share* sh : order) runs.push_back({sh, nullptr});
  run_shares(runs, stop, [&](Run& run) { read_share(path_, options_, *this, *run.share, stop); });
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].error) std::rethrow_exception(runs[i].error);
    if (!shares_[i]->needs_model.empty()) return refuse(shares_[i]->needs_model);
    if (shares_[i]->consumer->stopped()) return refuse("stopped");
  }
  // Shares read side by side each stop where the file does only when it is whole; damage
  // found now (the context pass saw none) is read by the loader.
  if (shares_.size() > 1)
    for (const auto& sh : shares_)
      if (sh->integrity.error) return refuse("a damaged chunk");
  // The records read before their calls: the call may be in another share, the last that
  // has it (it read furthest). One a window let go cannot be told.
  for (size_t i = 0; i < shares_.size(); ++i) {
    Share& sh = *shares_[i];
    for (auto& [corr, e] : sh.waiting) {
      bool found = false;
      for (size_t j = shares_.size(); j-- > 0 && !found;)
        if (j != i) found = shares_[j]->launch(corr, &e);
      if (!found && std::any_of(shares_.begin(), shares_.end(), [corr = corr](const auto& s) { return s->maybe_lost(corr); }))
        return refuse(kTooFar);
      deliver(sh, e, *sh.reader, options_);
      if (!sh.needs_model.empty()) return refuse(sh.needs_model);
    }
    sh.waiting.clear();
  }
  if (options_.join_nccl) {
    // The external ids of kernels held before theirs was read: read later, or in another share.
    const auto settler_of = [](const std::unique_ptr<Share>& s) -> const NcclSettler& { return s->settle; };
    for (auto& sh : shares_)
      for (size_t i = 0; i < sh->held.size(); ++i)
        if (!held_external(shares_, settler_of, sh->held[i].correlation_id, &sh->held_external[i])) return refuse(kTooFar);
    const std::vector<ScannedNccl> calls = join_held(path_, shares_);
    size_t k = 0;
    for (auto& sh : shares_) {
      for (ScannedEvent& e : sh->held) {
        if (e.kind == EventKind::kNccl && k < calls.size()) e.nccl = &calls[k];
        hand_on(*sh, e, *sh->reader, options_.select);
        ++k;
      }
      sh->held.clear();
      sh->held_external.clear();
    }
  }
  return true;
}

}  // namespace gantt::analysis
