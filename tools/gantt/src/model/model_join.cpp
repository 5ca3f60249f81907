// Joining a capture's columns: GPU activities to the API calls that launched them (by
// correlation id), ranges nested per thread and domain and attached to launches, NCCL calls
// to their kernels, host functions to their streams and calls.
#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <tuple>
#include <unordered_map>

#include "model_builder_impl.h"
#include "gantt/model/range_lookup.h"

namespace gantt {

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
  auto api_of = [&](uint32_t corr) -> uint32_t {
    if (corr == 0) return kNone;
    if (dense) return corr <= max_corr ? by_corr[corr] : kNone;
    auto it = by_corr_sparse.find(corr);
    return it == by_corr_sparse.end() ? kNone : it->second;
  };
  for (size_t i = ce0; i < m.cuda_events.size(); ++i) m.cuda_events.api[i] = api_of(m.cuda_events.correlation_id[i]);
  for (size_t i = sw0; i < m.stream_waits.size(); ++i) m.stream_waits.api[i] = api_of(m.stream_waits.correlation_id[i]);
  for (size_t i = mem0; i < m.memory.size() && i - mem0 < memory_correlation.size(); ++i)
    m.memory.api[i] = api_of(memory_correlation[i - mem0]);
  memory_correlation.clear();
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
        e.name[i] = intern(unjoined_name(e.kind[i], e.copy_kind[i]));
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
    push(rt.color, r.color);
    push(rt.category, r.category);
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
  const RangeLookup lookup(rt, rg0);
  if (lookup.empty()) return;
  EventTable& e = m.events;
  for (size_t i = ev0; i < e.size(); ++i)
    if (const uint32_t a = e.api[i]; a != kNone) e.range[i] = lookup.at(m.api.thread[a], m.api.start_ns[a]);
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
  // Sorted pairs rather than maps of vectors: a large capture has one external id per NCCL
  // call, and a node and a vector per id made this join most of the streamed stats' serial
  // tail (100,000 all-reduces: about 0.1 s of allocation).
  const auto by_first = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::vector<std::pair<uint32_t, uint32_t>> kernel_of_corr;  // (correlation id, kernel event)
  for (size_t i = ev0; i < e.size(); ++i)
    if (e.kind[i] == EventKind::kKernel && e.correlation_id[i] != 0)
      kernel_of_corr.emplace_back(e.correlation_id[i], static_cast<uint32_t>(i));
  std::stable_sort(kernel_of_corr.begin(), kernel_of_corr.end(), by_first);  // the first kernel of an id
  std::vector<std::pair<uint64_t, uint32_t>> kernels_of;  // (external id, kernel event)
  for (const RawExternal& x : raw_external) {
    auto it = std::lower_bound(kernel_of_corr.begin(), kernel_of_corr.end(), std::make_pair(x.correlation_id, 0u), by_first);
    if (it != kernel_of_corr.end() && it->first == x.correlation_id) kernels_of.emplace_back(x.external_id, it->second);
  }
  // Per id, launch order: CUPTI numbers a process's API calls in order.
  std::sort(kernels_of.begin(), kernels_of.end(), [&](const auto& a, const auto& b) {
    return std::make_pair(a.first, e.correlation_id[a.second]) < std::make_pair(b.first, e.correlation_id[b.second]);
  });
  kernels_of.erase(std::unique(kernels_of.begin(), kernels_of.end()), kernels_of.end());
  std::vector<uint32_t> rows(nc.size() - nc0);
  std::iota(rows.begin(), rows.end(), static_cast<uint32_t>(nc0));
  std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(nc.thread[a], nc.start_ns[a]) < std::tie(nc.thread[b], nc.start_ns[b]);
  });
  std::vector<std::pair<uint64_t, uint32_t>> calls_of;  // (launching id, NCCL row), by id then in order
  std::vector<uint32_t> group;                           // the open group's calls on this thread
  uint32_t thread = kNone;
  for (uint32_t n : rows) {
    if (nc.thread[n] != thread) {
      group.clear();
      thread = nc.thread[n];
    }
    if (nc.op[n] == v1::NCCL_GROUP_END && nc.group_depth[n] == 0) {
      if (nc.external_id[n] != 0) {
        for (uint32_t g : group) calls_of.emplace_back(nc.external_id[n], g);
        calls_of.emplace_back(nc.external_id[n], n);
      }
      group.clear();
    } else if (nc.group_depth[n] > 0) {
      group.push_back(n);
    } else if (nc.external_id[n] != 0) {
      calls_of.emplace_back(nc.external_id[n], n);
    }
  }
  std::stable_sort(calls_of.begin(), calls_of.end(), by_first);
  std::vector<uint32_t> kernels;
  std::vector<bool> taken;
  std::vector<uint64_t> bytes;
  for (auto unit = calls_of.begin(); unit != calls_of.end();) {
    const uint64_t id = unit->first;
    const auto unit_end = std::find_if(unit, calls_of.end(), [id](const auto& c) { return c.first != id; });
    const auto [kfrom, kto] = std::equal_range(kernels_of.begin(), kernels_of.end(), std::make_pair(id, 0u), by_first);
    if (kfrom == kto) {  // no kernel recorded (lost, or none launched): no guess
      unit = unit_end;
      continue;
    }
    kernels.clear();
    for (auto k = kfrom; k != kto; ++k) kernels.push_back(k->second);
    taken.assign(kernels.size(), false);
    bytes.assign(kernels.size(), 0);
    auto family_of = [&](size_t k, const char* family) {
      return family != nullptr && m.strings[e.name[kernels[k]]].find(family) != std::string::npos;
    };
    for (; unit != unit_end; ++unit) {
      const uint32_t n = unit->second;
      const uint8_t op = nc.op[n];
      if (op == v1::NCCL_GROUP_START || op == v1::NCCL_COMM_INIT || op == v1::NCCL_COMM_DESTROY) continue;
      if (op == v1::NCCL_GROUP_END) {
        if (nc.group_depth[n] > 0) continue;  // an inner end launches nothing
        nc.event[n] = kernels.front();  // the first of the kernels it launched
        continue;
      }
      const char* family = kernel_family(op);
      const bool shares = point_to_point(op);
      // One process driving several devices (ncclCommInitAll, nccl-tests -g 2) launches one
      // kernel per device in one group: a call takes a kernel on its own device first. Sharing
      // the first device's SendRecv kernel put rank 1's sends on gpu0 with rank 0's.
      const auto own_device = [&](size_t k) {
        return nc.device[n] < 0 || e.device[kernels[k]] == static_cast<uint32_t>(nc.device[n]);
      };
      size_t pick = kernels.size();
      for (const bool same_device : {true, false}) {
        for (size_t k = 0; k < kernels.size() && pick == kernels.size(); ++k)
          if (family_of(k, family) && (shares || !taken[k]) && (!same_device || own_device(k))) pick = k;
        for (size_t k = 0; k < kernels.size() && pick == kernels.size(); ++k)
          if (!taken[k] && (!same_device || own_device(k))) pick = k;  // a kernel NCCL named otherwise (e.g. a fused Generic one)
      }
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

}  // namespace gantt

namespace gantt {

// gpuhook_mem_tag() tags and MemoryUse records (GPUHOOK_MEM_USE): each goes to the allocation
// of this capture that held its address at its time. One sweep in time order keeps the live
// allocations by start address: an address freed and allocated again (cudaFree then cudaMalloc
// of the same size, a pool's blocks each step) belongs at each mark's time to the allocation
// live then. Looking among all allocations ever made at or below the address instead missed
// every tag of a training loop but its last few steps once the address had been reused more
// often than the look-back. A tag without a time goes to the latest allocation made over its
// address; a use without one is not placed (the loader dropped it).
void ModelBuilder::Impl::apply_memory_marks() {
  if (memory_marks.empty()) return;
  MemoryTable& mt = m.memory;
  std::vector<uint32_t> rows;  // allocations and frees, by time (recorded order at equal times)
  for (size_t i = mem0; i < mt.size(); ++i)
    if ((mt.op[i] == gpuhook::v1::MEMORY_OP_ALLOC && mt.bytes[i] != 0) || mt.op[i] == gpuhook::v1::MEMORY_OP_FREE)
      rows.push_back(static_cast<uint32_t>(i));
  std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return mt.time_ns[a] < mt.time_ns[b]; });
  std::stable_sort(memory_marks.begin(), memory_marks.end(),
                   [](const RawMark& a, const RawMark& b) { return a.time_ns < b.time_ns; });
  std::map<uint64_t, uint32_t> live;    // start address -> allocation row, at the sweep's time
  std::map<uint64_t, uint32_t> latest;  // start address -> the latest allocation made there
  // A program's live allocations do not overlap, so the one starting at or below the address
  // is the only candidate; a hostile file's overlapping ones get a bounded look further down.
  constexpr size_t kLookBack = 64;
  auto holder = [&](const std::map<uint64_t, uint32_t>& at, uint64_t address) {
    uint32_t best = kNone;
    auto it = at.upper_bound(address);
    for (size_t k = 0; k < kLookBack && it != at.begin(); ++k) {
      const uint32_t row = (--it)->second;
      if (address - mt.address[row] < mt.bytes[row] && (best == kNone || mt.time_ns[row] > mt.time_ns[best])) best = row;
    }
    return best;
  };
  size_t next = 0;
  auto replay_until = [&](uint64_t time_ns) {
    for (; next < rows.size() && mt.time_ns[rows[next]] <= time_ns; ++next) {
      const uint32_t row = rows[next];
      if (mt.op[row] == gpuhook::v1::MEMORY_OP_FREE) {
        live.erase(mt.address[row]);
      } else {
        live[mt.address[row]] = row;
        latest[mt.address[row]] = row;
      }
    }
  };
  for (const RawMark& mark : memory_marks) {
    if (mark.time_ns == 0) continue;
    replay_until(mark.time_ns);
    const uint32_t best = holder(live, mark.address);
    if (best == kNone) continue;
    if (!mark.use) {
      mt.category[best] = remap(mark.value);
      continue;
    }
    if (mt.first_use_ns[best] == 0) mt.first_use_ns[best] = mark.time_ns;
    mt.last_use_ns[best] = mark.time_ns;  // marks in time order: the latest so far
    mt.last_use_correlation[best] = mark.value;
    if (mt.uses[best] != UINT32_MAX) ++mt.uses[best];
  }
  replay_until(UINT64_MAX);
  for (const RawMark& mark : memory_marks) {
    if (mark.time_ns != 0) break;  // sorted: the untimed ones come first
    if (mark.use) continue;
    if (const uint32_t best = holder(latest, mark.address); best != kNone) mt.category[best] = remap(mark.value);
  }
}

}  // namespace gantt
