// From a capture's records to the whatif graph (whatif.h says what the model is).
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include <gpuhook/nccl_types.h>

#include "gantt/analysis/stats.h"
#include "gantt/model/occupancy.h"
#include "whatif_internal.h"

namespace gantt::whatif::detail {

namespace {

// Launch order: a call's ops follow it, at most this many apart.
constexpr uint64_t kOrderStride = uint64_t{1} << 20;
// Durations, gaps and offsets above this (about 12 days) are not a program's: a hostile or
// broken capture's. Clamped, so that no sum of them wraps.
constexpr int64_t kMaxSpanNs = int64_t{1} << 50;

// Calls that wait for the whole device before they do anything (CUDA runtime API reference:
// cudaFree and cudaFreeHost "implicitly synchronize the device"; so does cudaDeviceReset).
bool waits_for_device(const std::string& name) {
  return name == "cudaFree" || name == "cudaFreeHost" || name == "cudaFreeArray" || name == "cudaDeviceReset";
}

bool is_query(const std::string& name) {
  return name.rfind("cudaStreamQuery", 0) == 0 || name.rfind("cudaEventQuery", 0) == 0 ||
         name.rfind("cuStreamQuery", 0) == 0 || name.rfind("cuEventQuery", 0) == 0;
}

int8_t engine_of(v1::CopyKind kind) {
  switch (kind) {
    case v1::COPY_HTOD: case v1::COPY_HTOA: return kEngineHtoD;
    case v1::COPY_DTOH: case v1::COPY_ATOH: return kEngineDtoH;
    case v1::COPY_DTOD: case v1::COPY_PTOP: case v1::COPY_ATOD: case v1::COPY_DTOA: case v1::COPY_ATOA: return kEngineDtoD;
    default: return -1;
  }
}

uint64_t collective_key(uint64_t comm_id, uint64_t sequence) {
  uint64_t h = comm_id * 0x9E3779B97F4A7C15ull ^ (sequence + 0x632BE59BD9B4E019ull);
  h ^= h >> 31;
  return h == 0 ? 1 : h;
}

int64_t dur(uint64_t a, uint64_t b) { return b > a ? std::min<int64_t>(static_cast<int64_t>(std::min<uint64_t>(b - a, kMaxSpanNs)), kMaxSpanNs) : 0; }

class SectionBuilder {
 public:
  SectionBuilder(Built& b, uint16_t capture) : b_(b), g_(b.graph), s_(b.sections[capture]), capture_(capture) {
    b_.places.emplace_back(s_.records.size());
  }

  void run() {
    scan();
    // Room for every call and op the records can make, at once: grown by doubling, the tables
    // of a large capture held up to twice their size, and both copies while they moved.
    g_.calls.reserve(g_.calls.size() + candidates_.size());
    b_.call_wait.reserve(b_.call_wait.size() + candidates_.size());
    b_.call_order.reserve(b_.call_order.size() + candidates_.size());
    g_.ops.reserve(g_.ops.size() + op_records_);
    make_calls();
    make_ops();
    make_order();
    make_waits();
    make_p2p_ends();
  }

 private:
  struct Candidate {
    uint32_t record;
    uint64_t thread_id, start, end;
    bool api;  // else an NCCL call
    uint32_t name_id, correlation_id;
  };

  void scan() {
    v1::Record rec;
    for (uint32_t i = 0; i < s_.records.size(); ++i) {
      s_.records.get(i, &rec);
      const v1::Record& r = rec;
      switch (r.kind_case()) {
        case v1::Record::kDevice: devices_[r.device().ordinal()] = r.device(); break;
        case v1::Record::kStream: stream_info_[r.stream().stream()] = r.stream(); break;
        case v1::Record::kApi:
          if (r.api().start_ns() > 0 && r.api().end_ns() >= r.api().start_ns())
            candidates_.push_back({i, r.api().thread_id(), static_cast<uint64_t>(r.api().start_ns()),
                                   static_cast<uint64_t>(r.api().end_ns()), true, r.api().name_id(),
                                   r.api().correlation_id()});
          break;
        case v1::Record::kNccl:
          if (r.nccl().start_ns() > 0 && r.nccl().end_ns() >= r.nccl().start_ns())
            candidates_.push_back({i, r.nccl().thread_id(), static_cast<uint64_t>(r.nccl().start_ns()),
                                   static_cast<uint64_t>(r.nccl().end_ns()), false, r.nccl().name_id(), 0});
          break;
        case v1::Record::kSync: syncs_[r.sync().correlation_id()] = i; break;
        case v1::Record::kCudaEvent:
          events_by_id_[r.cuda_event().event_id()].push_back(i);
          device_of_context_.emplace(r.cuda_event().context(), r.cuda_event().device());
          break;
        case v1::Record::kKernel: note_op(r.kernel()); break;
        case v1::Record::kMemcpy: note_op(r.memcpy()); break;
        case v1::Record::kMemset: note_op(r.memset()); break;
        case v1::Record::kHostFunction: ++op_records_; break;
        case v1::Record::kExternalCorrelation:
          external_[r.external_correlation().external_id()] = r.external_correlation().correlation_id();
          break;
        default: break;
      }
    }
  }

  // A kernel, copy or memset: an op to make room for, and its context's device.
  template <class Activity>
  void note_op(const Activity& a) {
    ++op_records_;
    device_of_context_.emplace(a.context(), a.device());
  }

  // Host calls per thread; a call inside another of its thread (a driver launch inside
  // ncclAllReduce, a runtime call the program made from a callback) is part of the outer one.
  void make_calls() {
    std::stable_sort(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
      if (a.thread_id != b.thread_id) return a.thread_id < b.thread_id;
      if (a.start != b.start) return a.start < b.start;
      return a.end > b.end;  // the outer first
    });
    uint32_t thread = kNone;
    uint64_t thread_id = 0;
    by_corr_.reserve(candidates_.size());
    for (const Candidate& c : candidates_) {
      if (thread == kNone || c.thread_id != thread_id) {
        thread = static_cast<uint32_t>(g_.threads.size());
        thread_id = c.thread_id;
        Thread t;
        t.capture = capture_;
        t.thread_id = c.thread_id;
        t.first_ns = c.start;
        g_.threads.push_back(t);
      }
      Thread& t = g_.threads[thread];
      if (!t.calls.empty()) {
        const HostCall& outer = g_.calls[t.calls.back()];
        if (c.start >= outer.orig_start_ns && c.end <= outer.orig_end_ns) {
          b_.places[capture_][c.record] = {RecordPlace::Kind::kInnerCall, t.calls.back(), dur(outer.orig_start_ns, c.start)};
          if (c.api) by_corr_.emplace_back(c.correlation_id, t.calls.back());
          continue;
        }
      }
      HostCall call;
      call.thread = thread;
      call.orig_start_ns = c.start;
      call.orig_end_ns = c.end;
      call.gap_ns = t.calls.empty() ? 0 : dur(g_.calls[t.calls.back()].orig_end_ns, c.start);
      call.cost_ns = dur(c.start, c.end);
      call.name = name_of(c.name_id);
      if (c.api) by_corr_.emplace_back(c.correlation_id, static_cast<uint32_t>(g_.calls.size()));
      else nccl_call_[static_cast<uint32_t>(g_.calls.size())] = c.record;
      b_.places[capture_][c.record] = {RecordPlace::Kind::kCall, static_cast<uint32_t>(g_.calls.size()), 0};
      t.calls.push_back(static_cast<uint32_t>(g_.calls.size()));
      g_.calls.push_back(std::move(call));
      b_.call_wait.emplace_back();
      b_.call_order.push_back(0);
      b_.call_is_graph_launch.push_back(false);
    }
    // By correlation id, the last call given each id: a sorted vector, 8 bytes a call where a
    // hash map took about 50.
    std::stable_sort(by_corr_.begin(), by_corr_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t kept = 0;
    for (size_t i = 0; i < by_corr_.size(); ++i) {
      if (kept != 0 && by_corr_[kept - 1].first == by_corr_[i].first) by_corr_[kept - 1] = by_corr_[i];
      else by_corr_[kept++] = by_corr_[i];
    }
    by_corr_.resize(kept);
    by_corr_.shrink_to_fit();
  }

  uint32_t lane(uint32_t device, uint32_t stream) {
    auto [it, added] = lanes_.emplace(std::make_pair(device, stream), static_cast<uint32_t>(g_.lanes.size()));
    if (added) {
      Lane l;
      l.capture = capture_;
      l.device = device;
      l.stream = stream;
      l.legacy = stream == kLegacyStreamId;
      auto info = stream_info_.find(stream);
      if (info != stream_info_.end()) {
        l.blocking = (info->second.flags() & 0xFFFF) != StreamTable::kNonBlocking;
        // CUDA: a lower number is a greater priority. Real priorities are small; clamped
        // before the negation, which overflows for INT32_MIN.
        l.priority = -std::clamp(info->second.priority(), -1024, 1024);
      }
      g_.lanes.push_back(l);
    }
    return it->second;
  }

  double sm_share(const v1::Kernel& k) const {
    auto d = devices_.find(k.device());
    if (d == devices_.end() || d->second.sm_count() == 0) return 0;
    const SmLimits sm = sm_limits(d->second);
    if (!sm_limits_problem(sm).empty()) return 0;
    const uint64_t threads = static_cast<uint64_t>(std::max(k.block_x(), 0)) * std::max(k.block_y(), 0) * std::max(k.block_z(), 0);
    const uint64_t blocks = static_cast<uint64_t>(std::max(k.grid_x(), 0)) * std::max(k.grid_y(), 0) * std::max(k.grid_z(), 0);
    if (threads == 0 || blocks == 0 || threads > UINT32_MAX) return 0;
    LaunchShape shape;
    shape.threads_per_block = static_cast<uint32_t>(threads);
    shape.registers_per_thread = k.registers_per_thread();
    shape.shared_memory_bytes = uint64_t{k.static_shared_memory_bytes()} + k.dynamic_shared_memory_bytes();
    const Occupancy occ = theoretical_occupancy(shape, sm);
    if (occ.active_blocks == 0) return 1;
    return std::min(1.0, static_cast<double>(blocks) / (static_cast<double>(d->second.sm_count()) * occ.active_blocks));
  }

  // The graph's name for a string id of the capture (each looked up once).
  Name name_of(uint32_t id) {
    auto [it, added] = names_.try_emplace(id);
    if (added) it->second = g_.name(s_.string(id));
    return it->second;
  }

  uint32_t call_of(uint32_t correlation_id) const {
    auto it = std::lower_bound(by_corr_.begin(), by_corr_.end(), std::make_pair(correlation_id, uint32_t{0}));
    return it != by_corr_.end() && it->first == correlation_id ? it->second : kNone;
  }

  uint32_t add_op(GpuOp op, uint32_t record) {
    op.capture = capture_;
    op.orig_lane = op.lane;
    if (op.call != kNone) {
      const HostCall& c = g_.calls[op.call];
      if (op.kind != OpKind::kKernel)  // handed over during the call (no queued stamp to say when)
        op.ready_offset_ns = std::min(dur(c.orig_start_ns, op.orig_start_ns), dur(c.orig_start_ns, c.orig_end_ns));
    }
    op.duration_ns = dur(op.orig_start_ns, op.orig_end_ns);
    const uint32_t index = static_cast<uint32_t>(g_.ops.size());
    if (record != kNone) b_.places[capture_][record] = {RecordPlace::Kind::kOp, index, 0};
    g_.ops.push_back(std::move(op));
    return index;
  }

  void make_ops() {
    // A graph launch's nodes run on branch streams the program never sees, in an order only
    // the graph knows: they are kept as one block, each node where it was within it.
    struct Block {
      std::vector<std::pair<uint32_t, uint64_t>> records;  // (record, start)
      uint64_t first = UINT64_MAX, last = 0;
      uint32_t device = 0, stream = 0, correlation_id = 0;
    };
    std::map<std::pair<uint64_t, uint32_t>, Block> blocks;
    auto times = [](const v1::Record& r, uint64_t* start, uint64_t* end) {
      int64_t a = 0, b = 0;
      switch (r.kind_case()) {
        case v1::Record::kKernel: a = r.kernel().start_ns(), b = r.kernel().end_ns(); break;
        case v1::Record::kMemcpy: a = r.memcpy().start_ns(), b = r.memcpy().end_ns(); break;
        case v1::Record::kMemset: a = r.memset().start_ns(), b = r.memset().end_ns(); break;
        case v1::Record::kHostFunction: a = r.host_function().start_ns(), b = r.host_function().end_ns(); break;
        default: return false;
      }
      if (a <= 0 || b < a) return false;
      *start = static_cast<uint64_t>(a), *end = static_cast<uint64_t>(b);
      return true;
    };
    std::unordered_map<uint32_t, uint32_t> device_of_stream;
    v1::Record rec;
    for (uint32_t i = 0; i < s_.records.size(); ++i) {
      s_.records.get(i, &rec);
      const v1::Record& r = rec;
      uint64_t start = 0, end = 0;
      if (!times(r, &start, &end)) continue;
      GpuOp op;
      op.orig_start_ns = start;
      op.orig_end_ns = end;
      uint64_t graph_id = 0;
      uint32_t correlation_id = 0, device = 0, stream = 0;
      switch (r.kind_case()) {
        case v1::Record::kKernel: {
          const v1::Kernel& k = r.kernel();
          graph_id = k.graph_id(), correlation_id = k.correlation_id(), device = k.device(), stream = k.stream();
          op.kind = OpKind::kKernel;
          op.name = name_of(k.name_id());
          op.sm_share = sm_share(k);
          op.call = call_of(k.correlation_id());
          if (op.call != kNone) {
            const uint64_t call_start = g_.calls[op.call].orig_start_ns;
            const int64_t stamp = k.submitted_ns() > 0 ? k.submitted_ns() : k.queued_ns() > 0 ? k.queued_ns() : k.start_ns();
            op.ready_offset_ns = std::min(dur(call_start, static_cast<uint64_t>(std::max<int64_t>(stamp, 0))), dur(call_start, start));
            auto nc = nccl_call_.find(op.call);
            if (nc != nccl_call_.end()) {
              const v1::Record call_record = s_.records[nc->second];
              const v1::NcclCall& n = call_record.nccl();
              op.kind = OpKind::kCollective;
              op.bytes = n.bytes();  // the call's (a group's end: 0)
              op.sm_share = 0;  // NCCL kernels wait for their peers; their SM share is not the limit
              if (gpuhook::nccl_op_is_collective(n.op()) && n.group_depth() == 0 && n.nranks() > 1) {
                op.collective = collective_key(n.comm_id(), n.sequence());
                g_.collective_ranks.emplace_back(op.collective, static_cast<uint32_t>(n.nranks()));
              }
            }
          }
          break;
        }
        case v1::Record::kMemcpy: {
          const v1::Memcpy& m = r.memcpy();
          graph_id = m.graph_id(), correlation_id = m.correlation_id(), device = m.device(), stream = m.stream();
          op.kind = OpKind::kCopy;
          op.name = g_.name("memcpy");
          op.engine = engine_of(m.copy_kind());
          op.bytes = m.bytes();
          op.copy_kind = static_cast<uint8_t>(m.copy_kind());
          op.pageable = m.src_kind() == v1::MEMORY_PAGEABLE || m.dst_kind() == v1::MEMORY_PAGEABLE;
          op.call = call_of(m.correlation_id());
          // The rule stats and diagnose count synchronous copies by (analysis/stats.h).
          const analysis::CopyHostWait wait =
              analysis::copy_host_wait(op.call != kNone && analysis::async_copy_call(g_.calls[op.call].name.str()), m);
          op.host_waits = wait != analysis::CopyHostWait::kNone;
          op.call_waits = wait == analysis::CopyHostWait::kSynchronousCall;
          break;
        }
        case v1::Record::kMemset: {
          const v1::Memset& m = r.memset();
          graph_id = m.graph_id(), correlation_id = m.correlation_id(), device = m.device(), stream = m.stream();
          op.kind = OpKind::kMemset;
          op.name = g_.name("memset");
          op.bytes = m.bytes();
          op.call = call_of(m.correlation_id());
          break;
        }
        case v1::Record::kHostFunction: {
          const v1::HostFunction& h = r.host_function();
          stream = h.stream();
          auto d = device_of_stream.find(stream);
          device = d == device_of_stream.end() ? 0 : d->second;
          op.kind = OpKind::kHostFunc;
          op.name = name_of(h.name_id());
          auto ext = external_.find(h.external_id());
          if (h.external_id() != 0 && ext != external_.end()) op.call = call_of(ext->second);
          break;
        }
        default: break;
      }
      device_of_stream.emplace(stream, device);
      if (graph_id != 0) {
        Block& blk = blocks[{graph_id, correlation_id}];
        blk.records.emplace_back(i, start);
        blk.first = std::min(blk.first, start);
        blk.last = std::max(blk.last, end);
        blk.device = device, blk.stream = stream, blk.correlation_id = correlation_id;
        if (op.kind == OpKind::kKernel) block_share_[{graph_id, correlation_id}] =
            std::max(block_share_[{graph_id, correlation_id}], op.sm_share);
        continue;
      }
      op.lane = lane(device, stream);
      add_op(std::move(op), i);
    }
    for (auto& [key, blk] : blocks) {
      GpuOp op;
      op.kind = OpKind::kOther;
      op.name = g_.name("graph launch");
      op.lane = lane(blk.device, blk.stream);
      op.orig_start_ns = blk.first;
      op.orig_end_ns = blk.last;
      op.sm_share = block_share_[key];
      op.call = call_of(blk.correlation_id);
      if (op.call != kNone)
        op.ready_offset_ns = std::min(dur(g_.calls[op.call].orig_start_ns, blk.first),
                                      dur(g_.calls[op.call].orig_start_ns, g_.calls[op.call].orig_end_ns));
      const uint32_t index = add_op(std::move(op), kNone);
      for (const auto& [rec, start] : blk.records) b_.places[capture_][rec] = {RecordPlace::Kind::kMember, index, dur(blk.first, start)};
    }
  }

  // Launch order: calls by start time, each call's ops right after it, ops without a call
  // where they started.
  void make_order() {
    struct Item {
      uint64_t time;
      bool is_call;
      uint32_t index;
    };
    std::vector<Item> items;
    std::vector<std::vector<uint32_t>> ops_of_call;
    for (uint32_t c = first_call_; c < g_.calls.size(); ++c) items.push_back({g_.calls[c].orig_start_ns, true, c});
    ops_of_call.resize(g_.calls.size());
    for (uint32_t o = first_op_; o < g_.ops.size(); ++o) {
      if (g_.ops[o].call == kNone) items.push_back({g_.ops[o].orig_start_ns, false, o});
      else ops_of_call[g_.ops[o].call].push_back(o);
    }
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.time < b.time; });
    uint64_t seq = 1;
    for (const Item& it : items) {
      const uint64_t order = seq++ * kOrderStride;
      if (!it.is_call) {
        g_.ops[it.index].order = order;
        continue;
      }
      b_.call_order[it.index] = order;
      uint64_t k = 1;
      for (uint32_t o : ops_of_call[it.index]) g_.ops[o].order = order + std::min<uint64_t>(k++, kOrderStride - 1);
    }
  }

  // The latest cudaEventRecord of `event_id` launched before `order`: a binary search in the
  // records of that id, sorted by launch order once.
  std::optional<v1::CudaEvent> event_before(uint32_t event_id, uint64_t order) {
    auto it = events_by_id_.find(event_id);
    if (it == events_by_id_.end()) return std::nullopt;
    auto& sorted = sorted_events_[event_id];
    if (sorted.empty()) {
      v1::Record r;
      for (uint32_t rec : it->second) {
        s_.records.get(rec, &r);
        sorted.emplace_back(order_of_event(r.cuda_event()), rec);
      }
      std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    auto pos = std::lower_bound(sorted.begin(), sorted.end(), order, [](const auto& e, uint64_t v) { return e.first < v; });
    if (pos == sorted.begin()) return std::nullopt;
    return s_.records[(pos - 1)->second].cuda_event();
  }

  uint64_t order_of_event(const v1::CudaEvent& e) { return order_of_corr(e.correlation_id()); }

  // The launch order of the call with this correlation id. The hook's default API set leaves
  // cudaEventRecord and cudaStreamWaitEvent out of the recorded calls, but their records keep
  // the calls' correlation ids, which count up in call order: such a call sits right after
  // the last recorded call before it (and that call's work).
  uint64_t order_of_corr(uint32_t corr) {
    if (const uint32_t c = call_of(corr); c != kNone) return b_.call_order[c];
    auto it = std::lower_bound(by_corr_.begin(), by_corr_.end(), std::make_pair(corr, uint32_t{0}));
    // Between two recorded calls, unrecorded ones keep their own call order too (a record and
    // the wait on it often both fall there).
    const uint64_t half = kOrderStride / 2;
    if (it == by_corr_.begin()) return 1 + std::min<uint64_t>(corr, half - 2);
    return b_.call_order[(it - 1)->second] + half + std::min<uint64_t>(corr - (it - 1)->first, half - 1);
  }

  // A synchronisation's device. CUPTI's synchronisation records name the context, not the
  // device (CUpti_ActivitySynchronization2 has no deviceId), so the capture's device field may
  // be 0 for every device: the device of its context, as the GPU records of that context say.
  uint32_t device_of(const v1::Synchronization& s) const {
    auto it = device_of_context_.find(s.context());
    return it != device_of_context_.end() ? it->second : s.device();
  }

  void make_waits() {
    for (uint32_t c = first_call_; c < g_.calls.size(); ++c) {
      WaitSpec& w = b_.call_wait[c];
      w.before_order = b_.call_order[c];
      const std::string& name = g_.calls[c].name;
      if (waits_for_device(name)) w.kind = WaitSpec::Kind::kCapture;
    }
    for (const auto& [correlation_id, rec] : syncs_) {
      const uint32_t c = call_of(correlation_id);
      const v1::Record sync_record = s_.records[rec];
      const v1::Synchronization& s = sync_record.sync();
      if (c == kNone && s.type() == v1::SYNC_STREAM_WAIT_EVENT) {
        // A cudaStreamWaitEvent the hook recorded no call for: placed by its correlation id.
        const uint64_t at = order_of_corr(correlation_id);
        if (const auto e = event_before(s.event_id(), at)) {
          EventWait ew;
          ew.waiting_lane = lane(device_of(s), s.stream());
          ew.at_order = at;
          ew.source_lane = lane(e->device(), e->stream());
          ew.source_order = order_of_event(*e);
          b_.event_waits.push_back(ew);
        }
        continue;
      }
      if (c == kNone || is_query(g_.calls[c].name)) continue;
      b_.places[capture_][rec] = {RecordPlace::Kind::kCall, c, 0};  // written with its call's times
      WaitSpec& w = b_.call_wait[c];
      switch (s.type()) {
        case v1::SYNC_STREAM_SYNCHRONIZE:
          w.kind = WaitSpec::Kind::kStream;
          w.orig_lane = lane(device_of(s), s.stream());
          break;
        case v1::SYNC_CONTEXT_SYNCHRONIZE:
          w.kind = WaitSpec::Kind::kDevice;
          w.device = device_of(s);
          break;
        case v1::SYNC_EVENT_SYNCHRONIZE:
          if (const auto e = event_before(s.event_id(), b_.call_order[c])) {
            w.kind = WaitSpec::Kind::kEvent;
            w.orig_lane = lane(e->device(), e->stream());
            w.before_order = order_of_event(*e);
          }
          break;
        case v1::SYNC_STREAM_WAIT_EVENT:
          if (const auto e = event_before(s.event_id(), b_.call_order[c])) {
            EventWait ew;
            ew.waiting_lane = lane(device_of(s), s.stream());
            ew.at_order = b_.call_order[c];
            ew.source_lane = lane(e->device(), e->stream());
            ew.source_order = order_of_event(*e);
            b_.event_waits.push_back(ew);
          }
          break;
        default: break;
      }
    }
    for (uint32_t o = first_op_; o < g_.ops.size(); ++o)
      if (g_.ops[o].host_waits && g_.ops[o].call != kNone) b_.call_wait[g_.ops[o].call].ops.push_back(o);
  }

  // The sends and receives each op carries (P2pEnd), matched across captures in build(). NCCL
  // launches a group's kernels inside its outermost ncclGroupEnd, so the sends and receives of a
  // group (group_depth > 0) belong to the op of the GroupEnd that follows them on their thread;
  // an ungrouped one to its own op. One process driving several devices launches one kernel
  // per device in one group: a transfer goes to the op on its own rank's device where there is one.
  void make_p2p_ends() {
    std::unordered_map<uint32_t, std::vector<uint32_t>> ops_of_call;
    for (uint32_t o = first_op_; o < g_.ops.size(); ++o)
      if (g_.ops[o].call != kNone && g_.ops[o].kind == OpKind::kCollective) ops_of_call[g_.ops[o].call].push_back(o);
    if (ops_of_call.empty()) return;
    v1::Record rec;
    std::vector<std::pair<uint32_t, v1::NcclCall>> group;  // (call, record) of the open group
    auto attach = [&](uint32_t launcher, uint32_t call, const v1::NcclCall& n) {
      auto ops = ops_of_call.find(launcher);
      if (ops == ops_of_call.end() || n.root_or_peer() < 0 || n.rank() < 0 || n.root_or_peer() >= n.nranks()) return;
      uint32_t op = ops->second.front();
      for (uint32_t o : ops->second)
        if (n.device() >= 0 && g_.lanes[g_.ops[o].lane].device == static_cast<uint32_t>(n.device())) op = o;
      const bool send = n.op() == v1::NCCL_SEND;
      b_.p2p_ends.push_back({n.comm_id(), send ? n.rank() : n.root_or_peer(), send ? n.root_or_peer() : n.rank(), send,
                             op, g_.calls[call].orig_start_ns, n.bytes()});
    };
    for (size_t t = first_thread_; t < g_.threads.size(); ++t) {
      group.clear();
      for (uint32_t c : g_.threads[t].calls) {
        auto nc = nccl_call_.find(c);
        if (nc == nccl_call_.end()) continue;
        s_.records.get(nc->second, &rec);
        const v1::NcclCall& n = rec.nccl();
        const bool p2p = n.op() == v1::NCCL_SEND || n.op() == v1::NCCL_RECV;
        if (n.group_depth() > 0) {
          if (p2p) group.emplace_back(c, n);
        } else if (n.op() == v1::NCCL_GROUP_END) {
          for (const auto& [member, call] : group) attach(c, member, call);
          group.clear();
        } else if (p2p) {
          attach(c, c, n);
        }
      }
    }
  }

  Built& b_;
  Graph& g_;
  const Section& s_;
  uint16_t capture_;
  uint32_t first_call_ = static_cast<uint32_t>(g_.calls.size());
  size_t first_thread_ = g_.threads.size();
  uint32_t first_op_ = static_cast<uint32_t>(g_.ops.size());
  std::vector<Candidate> candidates_;
  std::unordered_map<uint32_t, Name> names_;
  size_t op_records_ = 0;  // kernels, copies, memsets and host functions: at most one op each
  std::map<uint32_t, v1::DeviceInfo> devices_;
  std::unordered_map<uint32_t, v1::StreamInfo> stream_info_;
  std::unordered_map<uint32_t, uint32_t> syncs_;  // correlation id -> record
  std::unordered_map<uint32_t, std::vector<uint32_t>> events_by_id_;
  std::unordered_map<uint32_t, uint32_t> device_of_context_;  // the first device a context's GPU records name
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint32_t>>> sorted_events_;
  std::unordered_map<uint64_t, uint32_t> external_;
  std::vector<std::pair<uint32_t, uint32_t>> by_corr_;  // (correlation id, its last call), sorted by id
  std::unordered_map<uint32_t, uint32_t> nccl_call_;  // call -> NcclCall record
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> lanes_;
  std::map<std::pair<uint64_t, uint32_t>, double> block_share_;
};

}  // namespace

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void link(Built& b) {
  Graph& g = b.graph;
  // Per (lane, original lane): the ops in launch order.
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint32_t>> lists;
  for (uint32_t o = 0; o < g.ops.size(); ++o) lists[{g.ops[o].lane, g.ops[o].orig_lane}].push_back(o);
  for (auto& [key, ops] : lists)
    std::sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t c) { return g.ops[a].order < g.ops[c].order; });
  auto last_before = [&](const std::vector<uint32_t>& ops, uint64_t order) -> uint32_t {
    auto it = std::lower_bound(ops.begin(), ops.end(), order, [&](uint32_t o, uint64_t v) { return g.ops[o].order < v; });
    return it == ops.begin() ? kNone : *(it - 1);
  };
  auto first_after = [&](const std::vector<uint32_t>& ops, uint64_t order) -> uint32_t {
    auto it = std::upper_bound(ops.begin(), ops.end(), order, [&](uint64_t v, uint32_t o) { return v < g.ops[o].order; });
    return it == ops.end() ? kNone : *it;
  };
  // Per (thread, list): the op its last wait already covered. A thread that waited for an op
  // has seen it end, so a later wait needs only what came after it: without this, every
  // cudaFree of a program with many streams held one wait per stream (calls x lanes).
  using List = const std::vector<uint32_t>*;
  std::map<std::pair<uint32_t, List>, uint32_t> covered;
  std::map<uint32_t, std::vector<List>> lists_of_orig;                // original lane -> its lists
  std::map<std::pair<uint16_t, uint32_t>, std::vector<List>> lists_of_device;
  std::map<uint16_t, std::vector<List>> lists_of_capture;
  std::map<uint16_t, std::vector<std::pair<uint64_t, List>>> by_order;  // every op's list, in launch order
  for (const auto& [key, ops] : lists) {
    const Lane& lane = g.lanes[key.first];
    lists_of_orig[key.second].push_back(&ops);
    lists_of_device[{lane.capture, lane.device}].push_back(&ops);
    lists_of_capture[lane.capture].push_back(&ops);
    for (uint32_t o : ops) by_order[lane.capture].emplace_back(g.ops[o].order, &ops);
  }
  for (auto& [capture, v] : by_order) std::sort(v.begin(), v.end());
  auto add_wait = [&](uint32_t c, List list, uint64_t before) {
    const uint32_t o = last_before(*list, before);
    if (o == kNone) return;
    uint32_t& seen = covered.try_emplace({g.calls[c].thread, list}, kNone).first->second;
    if (seen == o) return;
    seen = o;
    g.calls[c].waits.push_back(o);
  };
  for (const Thread& thread : g.threads) {
    // A device-wide wait after another of the same scope on this thread needs only the lists
    // that launched something in between: the rest were covered by the earlier one.
    std::map<int64_t, uint64_t> last_wide;  // scope (device, or -1 for every device) -> its order
    for (uint32_t c : thread.calls) {
      const WaitSpec& w = b.call_wait[c];
      g.calls[c].waits = w.ops;
      if (w.kind == WaitSpec::Kind::kNone || g.calls[c].removed) continue;  // a removed call waits for nothing
      if (w.kind == WaitSpec::Kind::kStream || w.kind == WaitSpec::Kind::kEvent) {
        for (List list : lists_of_orig[w.orig_lane]) add_wait(c, list, w.before_order);
        continue;
      }
      const bool all = w.kind == WaitSpec::Kind::kCapture;
      const int64_t scope = all ? -1 : static_cast<int64_t>(w.device);
      auto prev = last_wide.find(scope);
      if (prev == last_wide.end()) {
        for (List list : all ? lists_of_capture[thread.capture] : lists_of_device[{thread.capture, w.device}])
          add_wait(c, list, w.before_order);
      } else {
        const auto& v = by_order[thread.capture];
        auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(prev->second, List{nullptr}));
        std::vector<List> touched;
        for (; it != v.end() && it->first < w.before_order; ++it) touched.push_back(it->second);
        // In the lists' own order, as the first wait takes them: the order of a call's waits
        // decides which op the replay takes first, and the lists' addresses would make it
        // differ from one build or allocation pattern to the next.
        const auto key = [&](List l) { return std::make_pair(g.ops[l->front()].lane, g.ops[l->front()].orig_lane); };
        std::sort(touched.begin(), touched.end(), [&](List a, List b) { return key(a) < key(b); });
        touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
        for (List list : touched)
          if (all || g.lanes[g.ops[list->front()].lane].device == w.device) add_wait(c, list, w.before_order);
      }
      last_wide[scope] = w.before_order;
    }
  }
  for (GpuOp& op : g.ops) op.after.clear();
  for (const EventWait& ew : b.event_waits) {
    std::vector<uint32_t> sources = ew.source_ops;
    for (List list : lists_of_orig[ew.source_lane]) {
      const uint32_t o = last_before(*list, ew.source_order);
      if (o != kNone) sources.push_back(o);
    }
    if (sources.empty()) continue;
    if (ew.waiting_op != kNone) {
      for (uint32_t s : sources)
        if (s != ew.waiting_op) g.ops[ew.waiting_op].after.push_back(s);
      continue;
    }
    for (List list : lists_of_orig[ew.waiting_lane]) {
      const uint32_t o = first_after(*list, ew.at_order);
      if (o == kNone) continue;
      for (uint32_t s : sources)
        if (s != o) g.ops[o].after.push_back(s);
    }
  }
  // The legacy default stream: it waits for every blocking stream of its device, and they
  // wait for it (CUDA programming guide, "Default Stream").
  std::map<std::pair<uint16_t, uint32_t>, std::vector<uint32_t>> by_device;
  for (uint32_t o = 0; o < g.ops.size(); ++o) by_device[{g.ops[o].capture, g.lanes[g.ops[o].lane].device}].push_back(o);
  for (auto& [key, ops] : by_device) {
    bool has_legacy = false;
    for (uint32_t o : ops) has_legacy |= g.lanes[g.ops[o].lane].legacy;
    if (!has_legacy) continue;
    std::sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t c) { return g.ops[a].order < g.ops[c].order; });
    std::vector<uint32_t> since_legacy;          // latest op per blocking lane since the last legacy op
    std::map<uint32_t, size_t> since_index;      // lane -> its slot in since_legacy
    uint32_t last_legacy = kNone;
    for (uint32_t o : ops) {
      const Lane& lane = g.lanes[g.ops[o].lane];
      if (lane.legacy) {
        // Only the blocking lanes' ops that came since the previous legacy op: it waited for
        // the earlier ones already (one entry per op, not one per lane per legacy op).
        for (uint32_t prev : since_legacy) g.ops[o].after.push_back(prev);
        since_legacy.clear();
        since_index.clear();
        last_legacy = o;
      } else if (lane.blocking) {
        if (last_legacy != kNone) g.ops[o].after.push_back(last_legacy);
        auto [it, added] = since_index.try_emplace(g.ops[o].lane, since_legacy.size());
        if (added) since_legacy.push_back(o);
        else since_legacy[it->second] = o;  // the lane's latest op stands for its earlier ones
      }
    }
  }
}

void link_p2p(Built& b) {
  Graph& g = b.graph;
  g.p2p.clear();
  // NCCL matches a channel's sends and receives in the order each rank issued them: the k-th
  // send from rank a to rank b with b's k-th receive from a, on one communicator.
  std::vector<P2pEnd>& ends = b.p2p_ends;
  std::stable_sort(ends.begin(), ends.end(), [](const P2pEnd& x, const P2pEnd& y) {
    return std::tie(x.comm_id, x.src, x.dst, x.send, x.call_start_ns) < std::tie(y.comm_id, y.src, y.dst, y.send, y.call_start_ns);
  });
  for (size_t i = 0; i < ends.size();) {
    size_t j = i;
    while (j < ends.size() && ends[j].comm_id == ends[i].comm_id && ends[j].src == ends[i].src && ends[j].dst == ends[i].dst) ++j;
    const size_t sends = static_cast<size_t>(std::find_if(ends.begin() + static_cast<std::ptrdiff_t>(i),
                                                          ends.begin() + static_cast<std::ptrdiff_t>(j),
                                                          [](const P2pEnd& e) { return e.send; }) - ends.begin());
    // Receives sort before sends: [i, sends) receives, [sends, j) sends, each in issue order.
    for (size_t k = 0; i + k < sends && sends + k < j; ++k) {
      const uint32_t send = ends[sends + k].op, recv = ends[i + k].op;
      if (send != recv) g.p2p.emplace_back(send, recv);
    }
    i = j;
  }
  if (!g.p2p.empty() || !ends.empty()) {
    const size_t unmatched = ends.size() - 2 * g.p2p.size();
    g.notes.push_back(std::to_string(g.p2p.size()) + " point-to-point transfer(s) matched across the ranks (ncclSend with " +
                      "ncclRecv): each kernel ends once its peers have started, plus its measured transfer" +
                      (unmatched ? "; " + std::to_string(unmatched) +
                                       " send(s) or receive(s) without their peer in the inputs keep their measured durations"
                                 : std::string()));
  }
  // An op's transfer: from its last peer's arrival (or its own start) to its end.
  std::unordered_map<uint32_t, uint64_t> last_arrival;
  for (const auto& [a, z] : g.p2p) {
    const uint64_t both = std::max(g.ops[a].orig_start_ns, g.ops[z].orig_start_ns);
    for (uint32_t o : {a, z}) last_arrival[o] = std::max(last_arrival[o], both);
  }
  for (const auto& [o, t] : last_arrival) g.ops[o].transfer_ns = dur(t, g.ops[o].orig_end_ns);
}

Built build(std::vector<Section> sections) {
  Built b;
  b.sections = std::move(sections);
  for (uint16_t s = 0; s < b.sections.size(); ++s) SectionBuilder(b, s).run();
  link(b);
  Graph& g = b.graph;
  // What each waiting call cost beyond its wait, from what it waited for in the capture.
  for (HostCall& c : g.calls) {
    uint64_t awaited_end = 0;
    for (uint32_t o : c.waits) awaited_end = std::max(awaited_end, g.ops[o].orig_end_ns);
    if (awaited_end == 0) continue;
    const int64_t d = dur(c.orig_start_ns, c.orig_end_ns);
    c.post_wait_ns = std::min(dur(awaited_end, c.orig_end_ns), d);
    c.cost_ns = awaited_end <= c.orig_start_ns ? d : c.post_wait_ns;
  }
  // An op that started the moment its stream's previous op ended waited for it: its measured
  // start says nothing about how soon after its call it could have started. Such ops get the
  // launch latency of the ops of their kind that did not wait (the median), so that a change
  // which makes the earlier work shorter lets them start earlier.
  {
    std::map<uint32_t, std::vector<uint32_t>> by_lane;
    for (uint32_t o = 0; o < g.ops.size(); ++o) by_lane[g.ops[o].lane].push_back(o);
    std::vector<bool> blocked(g.ops.size(), false);
    std::map<std::pair<uint16_t, int>, std::vector<int64_t>> free_offsets;
    for (auto& [lane, ops] : by_lane) {
      std::stable_sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t c) { return g.ops[a].orig_start_ns < g.ops[c].orig_start_ns; });
      uint64_t prev_end = 0;
      for (uint32_t o : ops) {
        GpuOp& op = g.ops[o];
        if (op.call != kNone) {
          const uint64_t call_start = g.calls[op.call].orig_start_ns;
          blocked[o] = prev_end > call_start && op.orig_start_ns <= prev_end + 1000;
          if (!blocked[o]) free_offsets[{op.capture, static_cast<int>(op.kind)}].push_back(op.ready_offset_ns);
        }
        prev_end = std::max(prev_end, op.orig_end_ns);
      }
    }
    std::map<std::pair<uint16_t, int>, int64_t> typical;
    for (auto& [key, v] : free_offsets) typical[key] = median(v);
    for (uint32_t o = 0; o < g.ops.size(); ++o) {
      if (!blocked[o]) continue;
      auto t = typical.find({g.ops[o].capture, static_cast<int>(g.ops[o].kind)});
      if (t != typical.end()) g.ops[o].ready_offset_ns = std::min(g.ops[o].ready_offset_ns, t->second);
    }
  }
  b.launch_cost_ns.assign(b.sections.size(), 0);
  std::vector<std::vector<int64_t>> launch_costs(b.sections.size());
  std::vector<bool> launches(g.calls.size(), false);
  for (const GpuOp& op : g.ops)
    if (op.call != kNone && (op.kind == OpKind::kKernel || op.kind == OpKind::kMemset || op.kind == OpKind::kCopy)) launches[op.call] = true;
  for (uint32_t c = 0; c < g.calls.size(); ++c) {
    HostCall& call = g.calls[c];
    call.launches_only = launches[c] && call.waits.empty() && b.call_wait[c].kind == WaitSpec::Kind::kNone;
    if (call.launches_only) launch_costs[g.threads[call.thread].capture].push_back(dur(call.orig_start_ns, call.orig_end_ns));
  }
  for (size_t s = 0; s < b.sections.size(); ++s) b.launch_cost_ns[s] = median(launch_costs[s]);
  // A collective's transfer: from its last rank's arrival to each rank's end.
  std::unordered_map<uint64_t, uint64_t> last_arrival;
  for (const GpuOp& op : g.ops)
    if (op.collective) last_arrival[op.collective] = std::max(last_arrival[op.collective], op.orig_start_ns);
  for (GpuOp& op : g.ops)
    if (op.collective) op.transfer_ns = dur(last_arrival[op.collective], op.orig_end_ns);
  std::sort(g.collective_ranks.begin(), g.collective_ranks.end());
  g.collective_ranks.erase(std::unique(g.collective_ranks.begin(), g.collective_ranks.end()), g.collective_ranks.end());
  link_p2p(b);
  return b;
}

}  // namespace gantt::whatif::detail
