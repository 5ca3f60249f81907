// Which fields of a record are times: the format's one list of them. The writer and the reader
// delta-code them in this order; analysis code that moves a capture in time (merging ranks)
// or reports its span goes through the same list, so a new kind with times needs no change
// there. Part of the installed format API.
#pragma once

#include <cstdint>

#include <gpuhook/v1/capture.pb.h>

namespace gpuhook {

// Calls f(has, value) for every time field of `r`, in declaration order; f may change both.
// This order is part of the format: each known time is coded as the difference from the
// previous known time in the chunk (see proto/README.md).
// R: v1::Record or wire::Record (the hook's, without libprotobuf).
template <class R, class F>
void visit_times(R& r, F&& f) {
#define GPUHOOK_T(msg, field)                        \
  do {                                               \
    bool has = msg->has_##field();                   \
    int64_t v = has ? msg->field() : 0;              \
    f(has, v);                                       \
    if (has) msg->set_##field(v); else msg->clear_##field(); \
  } while (0)
  switch (r.kind_case()) {
    case R::kClockSync: {
      auto* m = r.mutable_clock_sync();
      GPUHOOK_T(m, host_ns);
      GPUHOOK_T(m, gpu_ns);
      GPUHOOK_T(m, realtime_ns);
      break;
    }
    case R::kApi: {
      auto* m = r.mutable_api();
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kKernel: {
      auto* m = r.mutable_kernel();
      GPUHOOK_T(m, queued_ns);
      GPUHOOK_T(m, submitted_ns);
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kMemcpy: {
      auto* m = r.mutable_memcpy();
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kMemset: {
      auto* m = r.mutable_memset();
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kSync: {
      auto* m = r.mutable_sync();
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kNccl: {
      auto* m = r.mutable_nccl();
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kRange: {
      auto* m = r.mutable_range();
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kMemory: {
      auto* m = r.mutable_memory();
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kOverhead: {
      auto* m = r.mutable_overhead();
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    case R::kDrops: {
      auto* m = r.mutable_drops();
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kNotice: {
      auto* m = r.mutable_notice();
      GPUHOOK_T(m, time_ns);
      break;
    }
    case R::kHostFunction: {
      auto* m = r.mutable_host_function();
      GPUHOOK_T(m, start_ns);
      GPUHOOK_T(m, end_ns);
      break;
    }
    default:
      break;
  }
#undef GPUHOOK_T
}

}  // namespace gpuhook
