// A tiny CUPTI client (not the hook), loaded the way the driver loads a profiler: through
// CUDA_INJECTION64_PATH and InitializeInjection(). It enables kernel and runtime-API records
// with latency timestamps, collects them while an example runs, and at exit checks that there
// is one kernel record per launch, each with queued <= submitted <= start < end, joined to
// its launch call by correlation id. It prints "cupti-probe: PASS" or what was wrong.
#include <cupti.h>
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <mutex>
#include <vector>

// The layout a CUPTI 13 client compiles against (CUDA 13's cupti_activity.h).
static_assert(sizeof(CUpti_ActivityKernel10) == 216);
static_assert(offsetof(CUpti_ActivityKernel10, queued) == 120);
static_assert(offsetof(CUpti_ActivityKernel10, submitted) == 128);

namespace {

struct Kernel {
  std::string name;
  uint32_t correlation;
  uint64_t queued, submitted, start, end;
};
struct Api {
  uint32_t cbid;
  uint64_t start, end;
};

std::mutex g_mu;
std::vector<Kernel> g_kernels;
std::map<uint32_t, Api> g_apis;  // by correlation id
size_t g_misaligned = 0;

uint64_t CUPTIAPI monotonic_raw_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void CUPTIAPI on_request(uint8_t** buffer, size_t* size, size_t* max_records) {
  constexpr size_t kBytes = 1 << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBytes));
  *size = *buffer == nullptr ? 0 : kBytes;
  *max_records = 0;
}

void CUPTIAPI on_complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::lock_guard<std::mutex> lock(g_mu);
  CUpti_Activity* rec = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (reinterpret_cast<uintptr_t>(rec) % 8 != 0) ++g_misaligned;
    if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      g_kernels.push_back({k->name != nullptr ? k->name : "", k->correlationId, k->queued,
                           k->submitted, k->start, k->end});
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
      g_apis[a->correlationId] = {a->cbid, a->start, a->end};
    }
  }
  std::free(buffer);
}

bool is_launch(uint32_t cbid) {
  return cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000 ||
         cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
}

void report() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mu);
  size_t launches = 0;
  for (const auto& [id, api] : g_apis) launches += is_launch(api.cbid) ? 1 : 0;
  size_t good = 0;
  for (const auto& k : g_kernels) {
    auto api = g_apis.find(k.correlation);
    const bool joined = api != g_apis.end() && is_launch(api->second.cbid);
    // submitted is a CPU stamp and start a GPU one on the CPU clock: submitted may pass start
    // by a little (the simulator models 250 ns), which is no disorder.
    const bool ordered = k.queued != 0 && k.queued <= k.submitted && k.queued <= k.start &&
                         k.submitted <= k.start + 1000 && k.start < k.end;
    if (joined && ordered && api->second.start <= k.queued) ++good;
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  // The GPU timeline's length, first kernel start to last kernel end (simulated time), less
  // the kernels whose names contain GPUHOOK_PROBE_SPAN_SKIP (the simulated NCCL's kernels end
  // when every rank has really arrived: real time, not the model's).
  // And the longest queued -> start wait of the kernels named by GPUHOOK_PROBE_WATCH.
  const char* watch = std::getenv("GPUHOOK_PROBE_WATCH");
  const char* skip = std::getenv("GPUHOOK_PROBE_SPAN_SKIP");
  uint64_t first = UINT64_MAX, last = 0, watch_wait = 0;
  for (const auto& k : g_kernels) {
    if (skip != nullptr && *skip != '\0' && k.name.find(skip) != std::string::npos) continue;
    first = std::min(first, k.start);
    last = std::max(last, k.end);
    if (watch != nullptr && k.name.find(watch) != std::string::npos && k.start > k.queued) {
      watch_wait = std::max(watch_wait, k.start - k.queued);
    }
  }
  std::printf("cupti-probe: kernels=%zu launches=%zu complete=%zu misaligned=%zu dropped=%zu "
              "span_ns=%llu watch_max_wait_ns=%llu\n",
              g_kernels.size(), launches, good, g_misaligned, dropped,
              static_cast<unsigned long long>(last > first ? last - first : 0),
              static_cast<unsigned long long>(watch_wait));
  const char* expect = std::getenv("GPUHOOK_PROBE_EXPECT_KERNELS");
  const size_t want = expect != nullptr ? std::strtoull(expect, nullptr, 10) : g_kernels.size();
  const bool pass = g_kernels.size() == want && launches == want && good == want && want > 0 &&
                    g_misaligned == 0 && dropped == 0;
  std::printf("cupti-probe: %s\n", pass ? "PASS" : "FAIL");
  std::fflush(stdout);
}

bool check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "cupti-probe: %s failed: %s\n", what, text != nullptr ? text : "?");
  return false;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  // The order a CUPTI client must follow: clock, latency timestamps, buffers, kinds.
  bool ok = check(cuptiActivityRegisterTimestampCallback(monotonic_raw_ns), "RegisterTimestampCallback");
  ok = ok && check(cuptiActivityEnableLatencyTimestamps(1), "EnableLatencyTimestamps");
  ok = ok && check(cuptiActivityRegisterCallbacks(on_request, on_complete), "RegisterCallbacks");
  ok = ok && check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "Enable kernels");
  ok = ok && check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "Enable runtime API");
  if (ok) std::atexit(report);
  return 1;
}
