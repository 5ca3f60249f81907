// Which fields of a record are times: the format's one list of them. The writer and the reader
// delta-code them in this order; analysis code that moves a capture in time (merging ranks)
// or reports its span goes through the same list, so a new kind with times needs no change
// there. Part of the installed format API.
#pragma once

#include <cstdint>
#include <type_traits>

#include <gpuhook/v1/capture.pb.h>

namespace gpuhook {

namespace detail {
// r's sub-message: mutable when r is, const when it is not.
template <class R, class Mutable, class Const>
auto message(R& r, Mutable mut, Const get) {
  if constexpr (std::is_const_v<R>) return &(r.*get)();
  else return (r.*mut)();
}
}  // namespace detail

// Calls f(has, value) for every time field of `r`, in declaration order; f may change both.
// This order is part of the format: each known time is coded as the difference from the
// previous known time in the chunk (see proto/README.md).
// R: v1::Record or wire::Record (the hook's, without libprotobuf), const or not.

// Positions in visit_times' order, for code that treats one field of a kind specially (the
// delta coder bases a kernel's queued stamp on its launch and its start on the stream's last
// end; a merge shifts only a clock pair's host time). CaptureFormat tests pin them.
inline constexpr int kKernelQueuedTime = 0, kKernelSubmittedTime = 1, kKernelStartTime = 2, kKernelEndTime = 3;
inline constexpr int kApiStartTime = 0, kApiEndTime = 1;
inline constexpr int kClockSyncHostTime = 0;

template <class R, class F>
void visit_times(R& r, F&& f) {
  using detail::message;
  // A const record is read (f's changes are not kept); a mutable one is written back.
  constexpr bool kReadOnly = std::is_const_v<R>;
#define GPUHOOK_T(msg, field)                                  \
  do {                                                         \
    bool has = msg->has_##field();                             \
    int64_t v = has ? msg->field() : 0;                        \
    f(has, v);                                                 \
    if constexpr (!kReadOnly) {                                \
      if (has) msg->set_##field(v); else msg->clear_##field(); \
    }                                                          \
  } while (0)
  switch (r.kind_case()) {
    case R::kClockSync: {
      auto* m = message(r, &R::mutable_clock_sync, &R::clock_sync);
      GPUHOOK_T(m, host_ns);
      GPUHOOK_T(m, gpu_ns);
      GPUHOOK_T(m, realtime_ns);
      break;
    }
    case R::kApi: {
      auto* m = message(r, &R::mutable_api, &R::api);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kKernel: {
      auto* m = message(r, &R::mutable_kernel, &R::kernel);
      GPUHOOK_T(m, queued_ns);
      GPUHOOK_T(m, submitted_ns);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kMemcpy: {
      auto* m = message(r, &R::mutable_memcpy, &R::memcpy);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kMemset: {
      auto* m = message(r, &R::mutable_memset, &R::memset);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kSync: {
      auto* m = message(r, &R::mutable_sync, &R::sync);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kNccl: {
      auto* m = message(r, &R::mutable_nccl, &R::nccl);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kRange: {
      auto* m = message(r, &R::mutable_range, &R::range);
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kMemory: {
      auto* m = message(r, &R::mutable_memory, &R::memory);
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kOverhead: {
      auto* m = message(r, &R::mutable_overhead, &R::overhead);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kDrops: {
      auto* m = message(r, &R::mutable_drops, &R::drops);
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kNotice: {
      auto* m = message(r, &R::mutable_notice, &R::notice);
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kHostFunction: {
      auto* m = message(r, &R::mutable_host_function, &R::host_function);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kMemoryTag: {
      auto* m = message(r, &R::mutable_memory_tag, &R::memory_tag);
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kMemoryUse: {
      auto* m = message(r, &R::mutable_memory_use, &R::memory_use);
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kMetricSample: {
      auto* m = message(r, &R::mutable_metric_sample, &R::metric_sample);
      GPUHOOK_T(m, time_ns);
      break;
    }
    default:
      break;
  }
#undef GPUHOOK_T
}

// The time that places a record inside or outside a time window (the hook's --range, the
// reader's windowed reads): the start of what the record describes. A kernel's is start_ns,
// not its first time field: its queued and submitted stamps may be unknown (graph nodes,
// devices without latency timestamps). 0 for records that belong to the whole capture rather
// than to a moment of it (clock pairs, drop counts, notices) and for kinds with no time.
template <class R>
uint64_t placing_time_ns(const R& r) {
  switch (r.kind_case()) {
    case R::kKernel: return r.kernel().start_ns() > 0 ? static_cast<uint64_t>(r.kernel().start_ns()) : 0;
    case R::kClockSync:
    case R::kDrops:
    case R::kNotice: return 0;
    default: break;
  }
  uint64_t first = 0;
  visit_times(r, [&first](bool& has, int64_t& v) {
    if (first == 0 && has && v > 0) first = static_cast<uint64_t>(v);
  });
  return first;
}

}  // namespace gpuhook
