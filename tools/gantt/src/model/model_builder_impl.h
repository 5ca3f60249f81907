// The model builder's state, shared by model_builder.cpp (records -> columns, per-capture
// steps) and model_join.cpp (activities joined to API calls, ranges, NCCL calls, host
// functions). Internal to libgantt.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gantt/model/model.h"
#include "gantt/model/model_builder.h"

namespace gantt {

namespace v1 = gpuhook::v1;

namespace builder {


// Columns grow by a quarter, not double: peak memory per event is a benchmark goal, and
// with a dozen columns the slack of doubling would cost more than the columns themselves.
template <class T, class U>
inline void push(std::vector<T>& v, U&& x) {
  if (v.size() == v.capacity()) v.reserve(v.size() + v.size() / 4 + 256);
  v.push_back(static_cast<T>(std::forward<U>(x)));
}

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
  uint32_t color;     // ARGB from the NVTX event attributes, 0 = none
  uint32_t category;
};


}  // namespace builder

// Internal header: the builder's helpers are used unqualified by its two source files.
using builder::kHookExternalKind;
using builder::push;
using builder::RawExternal;
using builder::RawRange;
using builder::known;
using builder::t;

struct ModelBuilder::Impl {
  Model& m;
  std::unordered_map<std::string, uint32_t> string_ids;
  uint16_t cap = 0;
  bool open = false;
  size_t ev0 = 0, api0 = 0, th0 = 0, rg0 = 0, nc0 = 0, ce0 = 0, sw0 = 0, mem0 = 0, mt0 = 0;
  std::vector<uint32_t> memory_correlation;  // per memory row of this capture: its correlation id
  std::vector<uint32_t> local_to_model;  // capture string id -> model string id
  std::unordered_map<uint64_t, uint32_t> thread_rows;
  std::vector<RawRange> raw_ranges;
  std::unordered_map<uint64_t, uint64_t> live_allocations;  // address -> bytes, for frees that omit the size
  // gpuhook_mem_tag() and MemoryUse records, given to the allocation live at their address and
  // time when the capture ends.
  struct RawMark {
    uint64_t address = 0, time_ns = 0;
    uint32_t value = 0;  // a tag's category (local string id), a use's correlation id
    bool use = false;
  };
  std::vector<RawMark> memory_marks;
  uint64_t memory_tags = 0;
  static constexpr uint64_t kMaxMemoryUses = uint64_t{1} << 22;  // 4M uses, 100 MB, per capture
  std::vector<RawExternal> raw_external;
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
    e.for_each_column([](auto& column, auto initial) { push(column, initial); });
    e.kind.back() = kind;
    e.capture.back() = cap;
    e.name.back() = name;
    e.device.back() = device;
    e.stream.back() = stream;
    e.priority.back() = priority;
    e.copy_kind.back() = copy_kind;
    e.bytes.back() = bytes;
    e.queued_ns.back() = queued;
    e.submitted_ns.back() = submitted;
    e.start_ns.back() = start;
    e.end_ns.back() = end;
    e.correlation_id.back() = corr;
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
  void add_api(const gpuhook::ApiFields& a);
  void add_kernel(const gpuhook::KernelFields& k);
  void finish(const gpuhook::Integrity& integrity);
  void align();
  void join();
  void build_ranges();
  void join_nccl(const std::vector<uint32_t>& event_of_api);
  void join_nccl_by_external_id();
  void join_host_functions();
  void apply_memory_marks();
  void sort_metrics();
  void occupancy();
  void demangle_names();
};

}  // namespace gantt
