// GPUHOOK_METRICS: CUPTI PM sampling (cupti_pmsampling.h) of the counters the short names map to
// (pm_metrics.h), on a thread of the hook's own. The GPU fills a hardware buffer every
// 1/GPUHOOK_METRICS_HZ; the thread decodes it every kDecodeMs into a counter data image, evaluates
// each sample (cupti_profiler_host.h) and writes one fixed-size record per sample and device into
// its ring, on the capture's clock. The writer drains it like any other ring (drops counted).
//
// PM sampling needs profiling permission (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES otherwise,
// cupti_pmsampling.h:171) and a chip CUPTI knows: when either fails it is one `gpuhook:` line and
// no PM samples; the NVML sampler, which needs neither, runs on beside it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "config.h"
#include "cupti_api.h"
#include "pm_metrics.h"

namespace gpuhook::hook {

struct PmDevice {
  uint32_t ordinal = 0;
  std::string chip;
  CUpti_PmSampling_Object* object = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  PmPlan plan;
  std::vector<const char*> names;    // plan.cupti as C strings, for CUPTI
  // The config image: CUPTI keeps the pointer it was given in cuptiPmSamplingSetConfig and reads
  // it later (freed early it hangs or crashes, pytorch/kineto#1532), so it lives with the device.
  std::vector<uint8_t> config_image;
  std::vector<uint8_t> counter_data;  // the counter data image: bounded, kMaxSamples samples
  bool started = false;
};

// Sets up and starts sampling `metrics` (GPUHOOK_METRICS mask) at `hz` on d.ordinal: "" when
// it runs, else why not. *note: a line to say (counters the chip lacks), else left empty.
std::string pm_set_up(const CuptiApi& api, uint32_t metrics, uint32_t hz, PmDevice& d, std::string* note);
// Sample `index` of d's decoded counter data: its window (CUPTI's clock) and its payload.
// false when CUPTI refuses it or no counter in it is usable.
bool pm_sample(const CuptiApi& api, PmDevice& d, size_t index, std::vector<double>& values, GpuMetricsPayload* out,
               uint64_t* start_ns, uint64_t* end_ns);
// Stops sampling on d and frees CUPTI's objects; safe on a half set-up device.
void pm_tear_down(const CuptiApi& api, PmDevice& d);

class PmSampler {
 public:
  static constexpr uint32_t kDecodeMs = 20;
  // Samples one counter data image holds: 4096 at 10 kHz is 400 ms, far more than a decode
  // period; a fuller image is decoded again at once (COUNTER_DATA_FULL).
  static constexpr uint32_t kMaxSamples = 4096;
  // The GPU-side buffer of raw samples (device memory, cupti_pmsampling.h:117).
  static constexpr size_t kHardwareBufferBytes = 64u << 20;

  // nullptr and *why when PM sampling is not asked for (why empty) or this CUPTI lacks it.
  // `nvml` says whether NVML samples on beside it, for the text of the lines said later.
  static PmSampler* start(const Config& config, const CuptiApi& api, bool nvml, std::string* why);
  // Asks the thread to decode what is left, stop sampling and end; waits up to timeout_ms.
  // Async-signal-safe like NvmlSampler::stop.
  bool stop(uint32_t timeout_ms);
  uint64_t samples() const { return samples_.load(std::memory_order_relaxed); }

  // The line said when PM sampling cannot run, "why" being the CUPTI reason: the fallback.
  static std::string refusal_text(const std::string& why, bool nvml);

 private:
  PmSampler(const Config& config, const CuptiApi& api, bool nvml) : config_(config), api_(api), nvml_(nvml) {}
  static void* thread_main(void* self);
  void loop();
  // Decodes and writes what the device's hardware buffer holds; false when CUPTI failed.
  bool drain(PmDevice& d);
  std::string text(CUptiResult r) const { return cupti_result_text(api_, r); }

  const Config& config_;
  CuptiApi api_;
  bool nvml_;
  std::vector<PmDevice> devices_;
  bool clock_known_ = false;
  int64_t clock_offset_ns_ = 0;
  bool overflow_said_ = false;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> finished_{false};
  std::atomic<uint64_t> samples_{0};
};

}  // namespace gpuhook::hook
