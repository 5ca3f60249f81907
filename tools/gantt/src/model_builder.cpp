// Loading: records -> columns, then per capture: strings remapped, GPU clocks aligned,
// activities joined to API calls by correlation id, ranges nested and attached, NCCL calls
// joined to their kernels, occupancy computed, kernel names demangled.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>

#include "gantt/model.h"

namespace gantt {

namespace v1 = gpuhook::v1;

namespace {

// Columns grow by a quarter, not double: peak memory per event is a benchmark goal, and
// with a dozen columns the slack of doubling would cost more than the columns themselves.
template <class T, class U>
void push(std::vector<T>& v, U&& x) {
  if (v.size() == v.capacity()) v.reserve(v.size() + v.size() / 4 + 256);
  v.push_back(static_cast<T>(std::forward<U>(x)));
}

uint64_t t(bool has, int64_t v) { return has && v > 0 ? static_cast<uint64_t>(v) : 0; }

// CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2 (cupti_activity.h): the kind the hook pushes its
// NCCL ids under; ids of other kinds belong to other tools (kineto uses CUSTOM0/1).
constexpr uint32_t kHookExternalKind = 5;

struct RawExternal {
  uint64_t external_id;
  uint32_t correlation_id;
};

struct RawRange {
  v1::RangeType type;
  uint32_t domain;
  uint32_t name;
  uint32_t thread;
  uint64_t time_ns;
  uint64_t range_id;
};

}  // namespace

struct ModelBuilder::Impl {
  Model& m;
  std::unordered_map<std::string, uint32_t> string_ids;
  uint16_t cap = 0;
  bool open = false;
  size_t ev0 = 0, api0 = 0, th0 = 0, rg0 = 0, nc0 = 0;
  std::vector<uint32_t> local_to_model;  // capture string id -> model string id
  std::unordered_map<uint64_t, uint32_t> thread_rows;
  std::vector<RawRange> raw_ranges;
  std::vector<RawExternal> raw_external;
  std::vector<ClockPair> pairs;
  // CUPTI stream id -> the priority it was created with (StreamInfo records, which may come
  // after the stream's kernels: CUDA 13 hands buffers back out of order).
  std::unordered_map<uint32_t, int32_t> stream_priority;
  // Host function events and the external id of the call that queued them: the id's
  // EXTERNAL_CORRELATION record gives that call's correlation id (join_host_functions).
  std::vector<std::pair<uint32_t, uint64_t>> host_func_external;

  explicit Impl(Model& model) : m(model) {
    for (uint32_t i = 0; i < m.strings.size(); ++i) string_ids.emplace(m.strings[i], i);
  }

  uint32_t intern(std::string_view s) {
    auto it = string_ids.find(std::string(s));
    if (it != string_ids.end()) return it->second;
    const uint32_t id = static_cast<uint32_t>(m.strings.size());
    m.strings.emplace_back(s);
    string_ids.emplace(m.strings.back(), id);
    return id;
  }

  uint32_t thread_row(uint64_t tid) {
    auto [it, inserted] = thread_rows.emplace(tid, static_cast<uint32_t>(m.threads.size()));
    if (inserted) {
      push(m.threads.capture, cap);
      push(m.threads.thread_id, tid);
      push(m.threads.name, 0u);
    }
    return it->second;
  }

  void see(uint64_t ns) {
    if (ns == 0) return;
    CaptureInfo& c = m.captures[cap];
    if (c.first_ns == 0 || ns < c.first_ns) c.first_ns = ns;
    c.last_ns = std::max(c.last_ns, ns);
  }

  void push_event(EventKind kind, uint32_t name, uint32_t device, uint32_t stream, int32_t priority, uint8_t copy_kind,
                  uint64_t bytes, uint64_t queued, uint64_t submitted, uint64_t start, uint64_t end, uint32_t corr) {
    EventTable& e = m.events;
    push(e.kind, kind);
    push(e.capture, cap);
    push(e.name, name);
    push(e.device, device);
    push(e.stream, stream);
    push(e.priority, priority);
    push(e.copy_kind, copy_kind);
    push(e.bytes, bytes);
    push(e.queued_ns, queued);
    push(e.submitted_ns, submitted);
    push(e.start_ns, start);
    push(e.end_ns, end);
    push(e.correlation_id, corr);
    push(e.api, kNone);
    push(e.range, kNone);
    push(e.grid, std::array<int32_t, 3>{});
    push(e.block, std::array<int32_t, 3>{});
    push(e.registers_per_thread, 0u);
    push(e.static_smem_bytes, 0u);
    push(e.dynamic_smem_bytes, 0u);
    push(e.occupancy, std::numeric_limits<float>::quiet_NaN());
    push(e.occupancy_limit, OccupancyLimit::kUnknown);
    push(e.graph_id, uint64_t{0});
    push(e.graph_node_id, uint64_t{0});
    push(e.src_device, kNone);
    push(e.dst_device, kNone);
  }

  uint32_t remap(uint32_t local) {
    if (local == 0) return 0;
    if (local < local_to_model.size() && local_to_model[local] != kNone) return local_to_model[local];
    // A reference without a StringDef (lost chunk): shown as such, never guessed.
    const uint32_t id = intern("<string " + std::to_string(local) + " missing>");
    if (local < (1u << 24)) {
      if (local >= local_to_model.size()) local_to_model.resize(local + 1, kNone);
      local_to_model[local] = id;
    }
    return id;
  }

  void add(const v1::Record& r);
  void finish(const gpuhook::Integrity& integrity);
  void align();
  void join();
  void build_ranges();
  void join_nccl(const std::vector<uint32_t>& event_of_api);
  void join_nccl_by_external_id();
  void join_host_functions();
  void occupancy();
  void demangle_names();
};

void ModelBuilder::Impl::add(const v1::Record& r) {
  CaptureInfo& c = m.captures[cap];
  switch (r.kind_case()) {
    case v1::Record::kHeader:
      c.header = r.header();
      see(r.header().start_monotonic_raw_ns());
      break;
    case v1::Record::kDevice:
      if (c.devices.size() < 4096) c.devices.push_back(r.device());
      break;
    case v1::Record::kStringDef: {
      const uint32_t local = r.string_def().id();
      // Ids are dense from the writer; a huge id from a corrupt file is not allocated for.
      if (local == 0 || local >= (1u << 24)) break;
      if (local >= local_to_model.size()) local_to_model.resize(local + 1, kNone);
      local_to_model[local] = intern(r.string_def().value());
      break;
    }
    case v1::Record::kClockSync: {
      const auto& s = r.clock_sync();
      if (s.has_host_ns() && s.has_gpu_ns())
        pairs.push_back({s.device(), t(true, s.host_ns()), t(true, s.gpu_ns())});
      break;
    }
    case v1::Record::kApi: {
      const auto& a = r.api();
      ApiTable& api = m.api;
      const uint64_t s = t(a.has_start_ns(), a.start_ns()), e = t(a.has_end_ns(), a.end_ns());
      push(api.capture, cap);
      push(api.domain, static_cast<uint8_t>(a.domain()));
      push(api.cbid, static_cast<uint16_t>(std::min<uint32_t>(a.cbid(), UINT16_MAX)));
      push(api.thread, thread_row(a.thread_id()));
      push(api.name, a.name_id());
      push(api.start_ns, s);
      push(api.end_ns, e);
      push(api.correlation_id, a.correlation_id());
      push(api.return_value, a.return_value());
      see(s);
      see(e);
      break;
    }
    case v1::Record::kKernel: {
      const auto& k = r.kernel();
      const uint64_t q = t(k.has_queued_ns(), k.queued_ns()), sb = t(k.has_submitted_ns(), k.submitted_ns()),
                     s = t(k.has_start_ns(), k.start_ns()), e = t(k.has_end_ns(), k.end_ns());
      push_event(EventKind::kKernel, k.name_id(), k.device(), k.stream(), k.stream_priority(), 0, 0, q, sb, s, e,
                 k.correlation_id());
      EventTable& ev = m.events;
      ev.grid.back() = {k.grid_x(), k.grid_y(), k.grid_z()};
      ev.block.back() = {k.block_x(), k.block_y(), k.block_z()};
      ev.registers_per_thread.back() = static_cast<uint16_t>(std::min<uint32_t>(k.registers_per_thread(), UINT16_MAX));
      ev.static_smem_bytes.back() = k.static_shared_memory_bytes();
      ev.dynamic_smem_bytes.back() = k.dynamic_shared_memory_bytes();
      ev.graph_id.back() = k.graph_id();
      ev.graph_node_id.back() = k.graph_node_id();
      break;
    }
    case v1::Record::kMemcpy: {
      const auto& k = r.memcpy();
      push_event(EventKind::kMemcpy, 0, k.device(), k.stream(), 0, static_cast<uint8_t>(k.copy_kind()), k.bytes(), 0, 0,
                 t(k.has_start_ns(), k.start_ns()), t(k.has_end_ns(), k.end_ns()), k.correlation_id());
      m.events.graph_id.back() = k.graph_id();
      m.events.graph_node_id.back() = k.graph_node_id();
      if (k.copy_kind() == v1::COPY_PTOP) {
        m.events.src_device.back() = k.src_device();
        m.events.dst_device.back() = k.dst_device();
      }
      break;
    }
    case v1::Record::kMemset: {
      const auto& k = r.memset();
      push_event(EventKind::kMemset, 0, k.device(), k.stream(), 0, 0, k.bytes(), 0, 0, t(k.has_start_ns(), k.start_ns()),
                 t(k.has_end_ns(), k.end_ns()), k.correlation_id());
      m.events.graph_id.back() = k.graph_id();
      m.events.graph_node_id.back() = k.graph_node_id();
      break;
    }
    case v1::Record::kSync: {
      const auto& k = r.sync();
      // A query that found work pending (CUDA_ERROR_NOT_READY) returned at once: no wait to draw
      // or to blame (CUDA 13 writes SYNCHRONIZATION records for queries, with their returnValue).
      if (k.return_value() != 0) break;
      push_event(EventKind::kSync, 0, k.device(), k.stream(), 0, static_cast<uint8_t>(k.type()), 0, 0, 0,
                 t(k.has_start_ns(), k.start_ns()), t(k.has_end_ns(), k.end_ns()), k.correlation_id());
      break;
    }
    case v1::Record::kNccl: {
      const auto& n = r.nccl();
      NcclTable& nc = m.nccl;
      const uint64_t s = t(n.has_start_ns(), n.start_ns()), e = t(n.has_end_ns(), n.end_ns());
      push(nc.capture, cap);
      push(nc.op, static_cast<uint8_t>(n.op()));
      push(nc.name, n.name_id());
      push(nc.thread, thread_row(n.thread_id()));
      push(nc.count, n.count());
      push(nc.datatype, n.datatype());
      push(nc.bytes, n.bytes());
      push(nc.reduce_op, n.reduce_op());
      push(nc.root_or_peer, n.root_or_peer());
      push(nc.comm_id, n.comm_id());
      push(nc.rank, n.rank());
      push(nc.nranks, n.nranks());
      push(nc.sequence, n.sequence());
      push(nc.device, n.device());
      push(nc.cuda_stream_id, n.cuda_stream_id());
      push(nc.start_ns, s);
      push(nc.end_ns, e);
      push(nc.return_value, n.return_value());
      push(nc.event, kNone);
      push(nc.external_id, n.external_id());
      push(nc.group_depth, n.group_depth());
      see(s);
      see(e);
      break;
    }
    case v1::Record::kHostFunction: {
      const auto& h = r.host_function();
      const uint64_t s = t(h.has_start_ns(), h.start_ns()), e = t(h.has_end_ns(), h.end_ns());
      // The device is the stream's (join_host_functions); host times need no GPU clock mapping.
      push_event(EventKind::kHostFunc, h.name_id(), 0, h.stream(), 0, 0, 0, 0, 0, s, e, 0);
      if (h.external_id() != 0)
        push(host_func_external, std::make_pair(static_cast<uint32_t>(m.events.size() - 1), h.external_id()));
      see(s);
      see(e);
      break;
    }
    case v1::Record::kRange: {
      const auto& g = r.range();
      const uint64_t ts = t(g.has_time_ns(), g.time_ns());
      push(raw_ranges, RawRange{g.type(), g.domain_id(), g.name_id(), thread_row(g.thread_id()), ts, g.range_id()});
      see(ts);
      break;
    }
    case v1::Record::kNotice:
      if (c.notices.size() < 16) c.notices.push_back(r.notice().text().substr(0, 512));
      break;
    case v1::Record::kStream:
      if (stream_priority.size() < (1u << 20)) stream_priority[r.stream().stream()] = r.stream().priority();
      break;
    case v1::Record::kExternalCorrelation: {
      const auto& x = r.external_correlation();
      if (x.kind() == kHookExternalKind && x.external_id() != 0 && x.correlation_id() != 0)
        push(raw_external, RawExternal{x.external_id(), x.correlation_id()});
      break;
    }
    case v1::Record::kThread: {
      const uint32_t row = thread_row(r.thread().thread_id());
      m.threads.name[row] = r.thread().name_id();
      break;
    }
    case v1::Record::kDrops: {
      const uint32_t src = static_cast<uint32_t>(r.drops().source());
      c.dropped_by_source[src < 8 ? src : 0] += r.drops().count();
      break;
    }
    case v1::Record::kFooter:
      c.footer = r.footer();
      break;
    default:
      break;  // memory, overhead, chunk starts: not part of the chart
  }
}

void ModelBuilder::Impl::align() {
  CaptureInfo& c = m.captures[cap];
  const bool shared = (c.header.features() & v1::FEATURE_HOST_CLOCK_CALLBACK) != 0;
  c.alignment = fit_clocks(shared, pairs);
  EventTable& e = m.events;
  for (size_t i = ev0; i < e.size(); ++i) {
    if (c.alignment.method == AlignMethod::kFit && e.kind[i] != EventKind::kHostFunc) {
      const uint32_t d = e.device[i];
      e.queued_ns[i] = c.alignment.to_host(d, e.queued_ns[i]);
      e.submitted_ns[i] = c.alignment.to_host(d, e.submitted_ns[i]);
      e.start_ns[i] = c.alignment.to_host(d, e.start_ns[i]);
      e.end_ns[i] = c.alignment.to_host(d, e.end_ns[i]);
    }
    see(e.queued_ns[i]);
    see(e.start_ns[i]);
    see(e.end_ns[i]);
  }
}

void ModelBuilder::Impl::join() {
  ApiTable& api = m.api;
  EventTable& e = m.events;
  uint32_t max_corr = 0;
  for (size_t i = api0; i < api.size(); ++i) max_corr = std::max(max_corr, api.correlation_id[i]);
  // Correlation ids count up from 1 per process: a dense index costs 4 bytes per id. A
  // hostile file with huge ids falls back to a hash map.
  const bool dense = max_corr <= 4 * (api.size() - api0) + (1u << 20);
  std::vector<uint32_t> by_corr;
  std::unordered_map<uint32_t, uint32_t> by_corr_sparse;
  if (dense) by_corr.assign(size_t{max_corr} + 1, kNone);
  for (size_t i = api0; i < api.size(); ++i) {
    const uint32_t corr = api.correlation_id[i];
    if (corr == 0 || api.domain[i] == v1::API_DOMAIN_NCCL) continue;
    if (dense) by_corr[corr] = static_cast<uint32_t>(i);
    else by_corr_sparse[corr] = static_cast<uint32_t>(i);
  }
  CaptureInfo& c = m.captures[cap];
  std::vector<uint32_t> event_of_api(api.size() - api0, kNone);
  for (size_t i = ev0; i < e.size(); ++i) {
    const uint32_t corr = e.correlation_id[i];
    uint32_t a = kNone;
    if (corr != 0) {
      if (dense) a = corr <= max_corr ? by_corr[corr] : kNone;
      else if (auto it = by_corr_sparse.find(corr); it != by_corr_sparse.end()) a = it->second;
    }
    e.api[i] = a;
    if (a == kNone) {
      ++c.unmatched_activities;
    } else if (event_of_api[a - api0] == kNone) {
      event_of_api[a - api0] = static_cast<uint32_t>(i);
    }
    if (e.name[i] == 0) {
      // Copies, memsets and syncs are named after the call that issued them.
      if (a != kNone && api.name[a] != 0) {
        e.name[i] = api.name[a];
      } else {
        std::string n = to_string(e.kind[i]);
        if (e.kind[i] == EventKind::kMemcpy) n = std::string("memcpy ") + copy_kind_name(e.copy_kind[i]);
        e.name[i] = intern(n);
      }
    }
  }
  build_ranges();
  join_nccl(event_of_api);
}

void ModelBuilder::Impl::build_ranges() {
  RangeTable& rt = m.ranges;
  CaptureInfo& c = m.captures[cap];
  // Each thread's records arrive in its own order; a stable sort by (thread, time) keeps a
  // push and a pop with equal times in recorded order.
  std::stable_sort(raw_ranges.begin(), raw_ranges.end(), [](const RawRange& a, const RawRange& b) {
    return std::tie(a.thread, a.time_ns) < std::tie(b.thread, b.time_ns);
  });
  auto add_range = [&](RangeKind kind, const RawRange& r, uint32_t parent, uint16_t depth) {
    push(rt.capture, cap);
    push(rt.kind, kind);
    push(rt.thread, r.thread);
    push(rt.name, remap(r.name));
    push(rt.domain, remap(r.domain));
    push(rt.start_ns, r.time_ns);
    push(rt.end_ns, kind == RangeKind::kMark ? r.time_ns : 0);
    push(rt.parent, parent);
    push(rt.depth, depth);
    return static_cast<uint32_t>(rt.size() - 1);
  };
  // NVTX keeps one push/pop stack per thread per domain (nvToolsExt.h: "Nesting is maintained
  // per thread per domain"): a pop in one domain never ends another domain's range. The hook
  // records the global domain's calls, core or with the null handle, as domain 0.
  std::map<uint32_t, std::vector<uint32_t>> stacks;  // the current thread's, by domain
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> open_start;  // (domain, range_id) -> row
  uint32_t cur_thread = kNone;
  for (const RawRange& r : raw_ranges) {
    if (r.thread != cur_thread) {
      stacks.clear();
      cur_thread = r.thread;
    }
    std::vector<uint32_t>& stack = stacks[r.domain];
    switch (r.type) {
      case v1::RANGE_PUSH: {
        if (stack.size() >= 1000) break;  // a runaway push loop does not make a deep chain
        const uint32_t row = add_range(RangeKind::kPushPop, r, stack.empty() ? kNone : stack.back(),
                                       static_cast<uint16_t>(stack.size()));
        stack.push_back(row);
        break;
      }
      case v1::RANGE_POP:
        if (stack.empty()) {
          ++c.unbalanced_range_pops;
        } else {
          rt.end_ns[stack.back()] = r.time_ns;
          stack.pop_back();
        }
        break;
      case v1::RANGE_START:
        open_start[{r.domain, r.range_id}] = add_range(RangeKind::kStartEnd, r, kNone, 0);
        break;
      case v1::RANGE_END: {
        auto it = open_start.find({r.domain, r.range_id});
        if (it != open_start.end()) {
          rt.end_ns[it->second] = r.time_ns;
          open_start.erase(it);
        }
        break;
      }
      case v1::RANGE_MARK:
        add_range(RangeKind::kMark, r, kNone, 0);
        break;
      default:
        break;
    }
  }
  raw_ranges.clear();
  raw_ranges.shrink_to_fit();

  // Attach: the innermost push/pop range on the launching thread containing the launch.
  // Push/pop ranges nest, so the latest-started range before t, or one of its ancestors,
  // is the innermost one containing t.
  std::unordered_map<uint32_t, std::vector<uint32_t>> by_thread;  // push/pop rows by start
  for (size_t i = rg0; i < rt.size(); ++i)
    if (rt.kind[i] == RangeKind::kPushPop) by_thread[rt.thread[i]].push_back(static_cast<uint32_t>(i));
  if (by_thread.empty()) return;
  for (auto& [th, rows] : by_thread)
    std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return rt.start_ns[a] < rt.start_ns[b]; });
  EventTable& e = m.events;
  for (size_t i = ev0; i < e.size(); ++i) {
    const uint32_t a = e.api[i];
    if (a == kNone) continue;
    auto it = by_thread.find(m.api.thread[a]);
    if (it == by_thread.end()) continue;
    const uint64_t when = m.api.start_ns[a];
    const auto& rows = it->second;
    auto up = std::upper_bound(rows.begin(), rows.end(), when,
                               [&](uint64_t v, uint32_t row) { return v < rt.start_ns[row]; });
    if (up == rows.begin()) continue;
    uint32_t r = *(up - 1);
    while (r != kNone && rt.end_ns[r] != 0 && rt.end_ns[r] < when) r = rt.parent[r];
    e.range[i] = r;
  }
}

namespace {

// The kernel family an NCCL call runs in (mangled names start _Z<len>ncclDevKernel_<family>).
// All-to-all, gather, scatter and send/recv run as point-to-point work: SendRecv.
const char* kernel_family(uint8_t op) {
  switch (op) {
    case v1::NCCL_ALL_REDUCE: return "ncclDevKernel_AllReduce";
    case v1::NCCL_BROADCAST: return "ncclDevKernel_Broadcast";
    case v1::NCCL_REDUCE: return "ncclDevKernel_Reduce_";
    case v1::NCCL_ALL_GATHER: return "ncclDevKernel_AllGather";
    case v1::NCCL_REDUCE_SCATTER: return "ncclDevKernel_ReduceScatter";
    case v1::NCCL_SEND: case v1::NCCL_RECV: case v1::NCCL_ALL_TO_ALL: case v1::NCCL_GATHER: case v1::NCCL_SCATTER:
      return "ncclDevKernel_SendRecv";
    default: return nullptr;
  }
}

bool point_to_point(uint8_t op) { return op == v1::NCCL_SEND || op == v1::NCCL_RECV; }

}  // namespace

// The hook pushes an id of its own as CUPTI external correlation id around each NCCL call;
// CUPTI writes (id, correlation id) for every CUDA call inside, the kernel launch among them.
// So: NCCL call -> id -> correlation ids -> kernels. Grouped calls launch nothing themselves:
// NCCL launches a group's kernels inside the outermost ncclGroupEnd (the record with
// group_depth 0), so the calls of a group (group_depth > 0) take the kernels of the GroupEnd
// that follows them on their thread (the hook's own thread ids, on both records). Within a
// group, a call takes a kernel of its family (AllReduce, SendRecv, ...): a collective one of
// its own, in call order; point-to-point calls share their SendRecv kernel.
void ModelBuilder::Impl::join_nccl_by_external_id() {
  NcclTable& nc = m.nccl;
  EventTable& e = m.events;
  if (raw_external.empty()) return;
  std::unordered_map<uint32_t, uint32_t> kernel_of_corr;
  for (size_t i = ev0; i < e.size(); ++i)
    if (e.kind[i] == EventKind::kKernel && e.correlation_id[i] != 0)
      kernel_of_corr.emplace(e.correlation_id[i], static_cast<uint32_t>(i));
  std::unordered_map<uint64_t, std::vector<uint32_t>> kernels_of;  // external id -> kernel events
  for (const RawExternal& x : raw_external) {
    auto it = kernel_of_corr.find(x.correlation_id);
    if (it != kernel_of_corr.end()) kernels_of[x.external_id].push_back(it->second);
  }
  std::vector<uint32_t> rows(nc.size() - nc0);
  std::iota(rows.begin(), rows.end(), static_cast<uint32_t>(nc0));
  std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(nc.thread[a], nc.start_ns[a]) < std::tie(nc.thread[b], nc.start_ns[b]);
  });
  std::map<uint64_t, std::vector<uint32_t>> calls_of;  // launching id -> NCCL rows; ordered for determinism
  std::vector<uint32_t> group;                          // the open group's calls on this thread
  uint32_t thread = kNone;
  for (uint32_t n : rows) {
    if (nc.thread[n] != thread) {
      group.clear();
      thread = nc.thread[n];
    }
    if (nc.op[n] == v1::NCCL_GROUP_END && nc.group_depth[n] == 0) {
      if (nc.external_id[n] != 0) {
        std::vector<uint32_t>& unit = calls_of[nc.external_id[n]];
        unit.insert(unit.end(), group.begin(), group.end());
        unit.push_back(n);
      }
      group.clear();
    } else if (nc.group_depth[n] > 0) {
      group.push_back(n);
    } else if (nc.external_id[n] != 0) {
      calls_of[nc.external_id[n]].push_back(n);
    }
  }
  for (auto& [id, calls] : calls_of) {
    auto kit = kernels_of.find(id);
    if (kit == kernels_of.end()) continue;  // no kernel recorded (lost, or none launched): no guess
    std::vector<uint32_t>& kernels = kit->second;
    // Launch order: CUPTI numbers a process's API calls in order.
    std::sort(kernels.begin(), kernels.end(),
              [&](uint32_t a, uint32_t b) { return e.correlation_id[a] < e.correlation_id[b]; });
    kernels.erase(std::unique(kernels.begin(), kernels.end()), kernels.end());
    std::vector<bool> taken(kernels.size(), false);
    std::vector<uint64_t> bytes(kernels.size(), 0);
    auto family_of = [&](size_t k, const char* family) {
      return family != nullptr && m.strings[e.name[kernels[k]]].find(family) != std::string::npos;
    };
    for (uint32_t n : calls) {
      const uint8_t op = nc.op[n];
      if (op == v1::NCCL_GROUP_START || op == v1::NCCL_COMM_INIT || op == v1::NCCL_COMM_DESTROY) continue;
      if (op == v1::NCCL_GROUP_END) {
        if (nc.group_depth[n] > 0) continue;  // an inner end launches nothing
        nc.event[n] = kernels.front();  // the first of the kernels it launched
        continue;
      }
      const char* family = kernel_family(op);
      const bool shares = point_to_point(op);
      size_t pick = kernels.size();
      for (size_t k = 0; k < kernels.size() && pick == kernels.size(); ++k)
        if (family_of(k, family) && (shares || !taken[k])) pick = k;
      for (size_t k = 0; k < kernels.size() && pick == kernels.size(); ++k)
        if (!taken[k]) pick = k;  // a kernel NCCL named otherwise (e.g. a fused Generic one)
      if (pick == kernels.size()) pick = 0;
      taken[pick] = true;
      bytes[pick] += nc.bytes[n];
      nc.event[n] = kernels[pick];
    }
    for (size_t k = 0; k < kernels.size(); ++k) {
      e.kind[kernels[k]] = EventKind::kNccl;
      if (taken[k]) e.bytes[kernels[k]] = bytes[k];
    }
  }
}

void ModelBuilder::Impl::join_nccl(const std::vector<uint32_t>& event_of_api) {
  NcclTable& nc = m.nccl;
  ApiTable& api = m.api;
  if (nc.size() == nc0) {
    raw_external.clear();
    return;
  }
  // A capture whose CUPTI wrote no external correlation records (the kind refused) falls back
  // for every call.
  const bool have_external = !raw_external.empty();
  join_nccl_by_external_id();
  raw_external.clear();
  raw_external.shrink_to_fit();
  // Captures from before external ids: the kernel is the first launch on the same thread
  // inside the call. That needs CUPTI's thread id to be the hook's (gettid); by default
  // CUPTI reports pthread_self() instead, and grouped calls launch nothing themselves.
  std::vector<uint32_t> launches;  // api rows that launched a kernel, by (thread, start)
  for (size_t i = api0; i < api.size(); ++i) {
    const uint32_t ev = event_of_api[i - api0];
    if (ev != kNone && m.events.kind[ev] == EventKind::kKernel) launches.push_back(static_cast<uint32_t>(i));
  }
  std::sort(launches.begin(), launches.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(api.thread[a], api.start_ns[a], a) < std::tie(api.thread[b], api.start_ns[b], b);
  });
  for (size_t n = nc0; n < nc.size(); ++n) {
    if (nc.start_ns[n] == 0 || (have_external && nc.external_id[n] != 0)) continue;
    const uint32_t th = nc.thread[n];
    auto it = std::lower_bound(launches.begin(), launches.end(), std::make_pair(th, nc.start_ns[n]),
                               [&](uint32_t row, const std::pair<uint32_t, uint64_t>& key) {
                                 return std::tie(api.thread[row], api.start_ns[row]) < std::tie(key.first, key.second);
                               });
    for (; it != launches.end() && api.thread[*it] == th; ++it) {
      if (nc.end_ns[n] != 0 && api.start_ns[*it] > nc.end_ns[n]) break;
      const uint32_t ev = event_of_api[*it - api0];
      if (m.events.kind[ev] != EventKind::kKernel) continue;  // already claimed by another call
      m.events.kind[ev] = EventKind::kNccl;
      m.events.bytes[ev] = nc.bytes[n];
      nc.event[n] = ev;
      break;
    }
  }
}

void ModelBuilder::Impl::occupancy() {
  CaptureInfo& c = m.captures[cap];
  EventTable& e = m.events;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t>, Occupancy> memo;
  std::map<uint32_t, SmLimits> limits;
  for (const auto& d : c.devices) {
    const SmLimits sm = sm_limits(d);
    const std::string problem = sm_limits_problem(sm);
    if (problem.empty()) {
      limits[d.ordinal()] = sm;
    } else if (c.device_problems.size() < 16) {
      c.device_problems.push_back("device " + std::to_string(d.ordinal()) + ": " + problem);
    }
  }
  if (limits.empty()) return;
  for (size_t i = ev0; i < e.size(); ++i) {
    if (e.kind[i] != EventKind::kKernel && e.kind[i] != EventKind::kNccl) continue;
    auto lim = limits.find(e.device[i]);
    if (lim == limits.end()) continue;
    const uint64_t threads64 = dim3_count(e.block[i]);
    if (threads64 == 0 || threads64 > UINT32_MAX) continue;
    LaunchShape shape{static_cast<uint32_t>(threads64), e.registers_per_thread[i],
                      uint64_t{e.static_smem_bytes[i]} + e.dynamic_smem_bytes[i]};
    auto key = std::make_tuple(e.device[i], shape.threads_per_block, shape.registers_per_thread, shape.shared_memory_bytes);
    auto it = memo.find(key);
    if (it == memo.end()) it = memo.emplace(key, theoretical_occupancy(shape, lim->second)).first;
    if (it->second.limit == OccupancyLimit::kUnknown) continue;
    e.occupancy[i] = static_cast<float>(it->second.fraction);
    e.occupancy_limit[i] = it->second.limit;
  }
}

// A host function draws on the lane of the stream it ran in, on that stream's device (the
// hook knows the stream's CUPTI id, not its device), and joins the cudaLaunchHostFunc or
// cudaStreamAddCallback call that queued it through the external id the hook pushed around it.
void ModelBuilder::Impl::join_host_functions() {
  EventTable& e = m.events;
  std::unordered_map<uint32_t, uint32_t> device_of_stream;
  bool any = false;
  for (size_t i = ev0; i < e.size(); ++i) {
    if (e.kind[i] == EventKind::kHostFunc) any = true;
    else if (e.stream[i] != 0) device_of_stream.emplace(e.stream[i], e.device[i]);
  }
  if (!any) return;
  for (size_t i = ev0; i < e.size(); ++i) {
    if (e.kind[i] != EventKind::kHostFunc) continue;
    if (auto it = device_of_stream.find(e.stream[i]); it != device_of_stream.end()) e.device[i] = it->second;
  }
  if (host_func_external.empty()) return;
  std::unordered_map<uint64_t, uint32_t> corr_of;  // external id -> the first call made under it
  for (const RawExternal& x : raw_external) corr_of.emplace(x.external_id, x.correlation_id);
  for (const auto& [row, external_id] : host_func_external)
    if (auto it = corr_of.find(external_id); it != corr_of.end()) e.correlation_id[row] = it->second;
  host_func_external.clear();
}

void ModelBuilder::Impl::demangle_names() {
  EventTable& e = m.events;
  std::vector<uint32_t> ids;
  for (size_t i = ev0; i < e.size(); ++i)
    if (e.kind[i] == EventKind::kKernel || e.kind[i] == EventKind::kNccl || e.kind[i] == EventKind::kHostFunc)
      ids.push_back(e.name[i]);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (uint32_t id : ids) {
    if (id < m.demangled.size() && m.demangled[id] != kNone) continue;
    const std::string d = demangle(m.strings[id]);
    const uint32_t did = d == m.strings[id] ? kNone : intern(d);
    if (m.demangled.size() <= id) m.demangled.resize(id + 1, kNone);
    m.demangled[id] = did;
  }
}

void ModelBuilder::Impl::finish(const gpuhook::Integrity& integrity) {
  CaptureInfo& c = m.captures[cap];
  c.integrity = integrity;
  // Strings first: every later step works on model ids.
  for (size_t i = ev0; i < m.events.size(); ++i) m.events.name[i] = remap(m.events.name[i]);
  for (size_t i = api0; i < m.api.size(); ++i) m.api.name[i] = remap(m.api.name[i]);
  for (size_t i = th0; i < m.threads.size(); ++i) m.threads.name[i] = remap(m.threads.name[i]);
  for (size_t i = nc0; i < m.nccl.size(); ++i) m.nccl.name[i] = remap(m.nccl.name[i]);
  if (!stream_priority.empty()) {
    for (size_t i = ev0; i < m.events.size(); ++i) {
      auto it = stream_priority.find(m.events.stream[i]);
      if (it != stream_priority.end() && m.events.priority[i] == 0) m.events.priority[i] = it->second;
    }
    stream_priority.clear();
  }
  align();
  join_host_functions();
  join();
  occupancy();
  demangle_names();
  local_to_model.clear();
  raw_external.clear();
  host_func_external.clear();
  thread_rows.clear();
  pairs.clear();
  open = false;
}

ModelBuilder::ModelBuilder(Model& model) : impl_(new Impl(model)) {}
ModelBuilder::~ModelBuilder() { delete impl_; }

uint16_t ModelBuilder::begin_capture(const std::string& path) {
  Impl& b = *impl_;
  if (b.open) end_capture({});
  if (b.m.captures.size() >= UINT16_MAX) throw std::runtime_error("too many captures");
  b.m.captures.emplace_back();
  b.m.captures.back().path = path;
  b.cap = static_cast<uint16_t>(b.m.captures.size() - 1);
  b.ev0 = b.m.events.size();
  b.api0 = b.m.api.size();
  b.th0 = b.m.threads.size();
  b.rg0 = b.m.ranges.size();
  b.nc0 = b.m.nccl.size();
  b.open = true;
  return b.cap;
}

void ModelBuilder::define_string(uint32_t local, std::string_view value) {
  v1::Record r;
  r.mutable_string_def()->set_id(local);
  r.mutable_string_def()->set_value(std::string(value));
  impl_->add(r);
}

void ModelBuilder::add(const v1::Record& record) {
  if (!impl_->open) begin_capture("");
  impl_->add(record);
}

void ModelBuilder::reserve_hint(uint64_t records) {
  // The index is untrusted: a hint past what any real capture holds is ignored, and a
  // reservation the system refuses only means growing as usual.
  if (records == 0 || records > (1ull << 28)) return;
  Model& m = impl_->m;
  const size_t n = static_cast<size_t>(records);
  try {
    auto more = [n](auto& v) { v.reserve(v.size() + n); };
    EventTable& e = m.events;
    more(e.kind); more(e.capture); more(e.name); more(e.device); more(e.stream); more(e.priority);
    more(e.copy_kind); more(e.bytes); more(e.queued_ns); more(e.submitted_ns); more(e.start_ns); more(e.end_ns);
    more(e.correlation_id); more(e.api); more(e.range); more(e.grid); more(e.block); more(e.registers_per_thread);
    more(e.static_smem_bytes); more(e.dynamic_smem_bytes); more(e.occupancy); more(e.occupancy_limit);
    more(e.graph_id); more(e.graph_node_id); more(e.src_device); more(e.dst_device);
    ApiTable& a = m.api;
    more(a.capture); more(a.domain); more(a.cbid); more(a.thread); more(a.name); more(a.start_ns); more(a.end_ns);
    more(a.correlation_id); more(a.return_value);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
}

void ModelBuilder::end_capture(const gpuhook::Integrity& integrity) {
  if (impl_->open) impl_->finish(integrity);
}

}  // namespace gantt
