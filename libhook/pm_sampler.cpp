#include "pm_sampler.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "clock.h"
#include "device_info.h"
#include "message_text.h"
#include "recorder.h"
#include "sampler_thread.h"

namespace gpuhook::hook {
namespace {

void say_line(const std::string& text) {
  const std::string line = "gpuhook: " + text + "\n";
  ssize_t ignored = write(2, line.data(), line.size());
  (void)ignored;
}

bool has_pm_entry_points(const CuptiApi& a) {
  bool all = true;
#define GPUHOOK_PM_PRESENT(name, required) all = all && a.name != nullptr;
  GPUHOOK_CUPTI_PM_FUNCTIONS(GPUHOOK_PM_PRESENT)
#undef GPUHOOK_PM_PRESENT
  return all;
}

// CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (cupti_pmsampling.h:171), in words.
std::string restricted_text(const CuptiApi& a, CUptiResult r) {
  return "profiling is restricted to administrators on this machine (" + cupti_result_text(a, r) +
         "; the driver's NVreg_RestrictProfilingToAdminUsers)";
}

}  // namespace

std::string PmSampler::refusal_text(const std::string& why, bool nvml) {
  return "CUPTI PM sampling off: " + why + (nvml ? "; GPU metrics from NVML instead" : "; no PM samples (NVML is off too)");
}

PmSampler* PmSampler::start(const Config& config, const CuptiApi& api, bool nvml, std::string* why) {
  if (config.pm_metrics == 0) return nullptr;
  if (!has_pm_entry_points(api)) {
    *why = refusal_text(shown(api.path) + " has no PM sampling API (cupti_pmsampling.h, CUPTI 12.6 or later)", nvml);
    return nullptr;
  }
  auto* sampler = new PmSampler(config, api, nvml);
  const int err = start_sampler_thread(&PmSampler::thread_main, sampler);
  if (err != 0) {
    *why = refusal_text(std::string("cannot start its thread: ") + std::strerror(err), nvml);
    delete sampler;
    return nullptr;
  }
  return sampler;
}

void* PmSampler::thread_main(void* self) {
  pthread_setname_np(pthread_self(), "gpuhook-pm");
  // Nothing this thread calls (CUPTI, the CUDA device queries) is recorded as the program's.
  ReentryGuard guard;
  auto* s = static_cast<PmSampler*>(self);
  try {
    s->loop();
  } catch (...) {
    // An allocation failure: no PM samples, the program runs on.
  }
  s->finished_.store(true, std::memory_order_release);
  return nullptr;
}

std::string pm_set_up(const CuptiApi& a, uint32_t metrics, uint32_t hz, PmDevice& d, std::string* note) {
  auto text = [&a](CUptiResult r) { return cupti_result_text(a, r); };
  auto chip = GPUHOOK_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = d.ordinal;
  CUptiResult r = a.cuptiDeviceGetChipName(&chip);
  if (r != CUPTI_SUCCESS || chip.pChipName == nullptr) return "cuptiDeviceGetChipName: " + text(r);
  d.chip = chip.pChipName;
  // The availability image lets the host object know chips newer than this CUPTI's table
  // (cupti_profiler_host.h:111); it needs no sampling session on the device (pmsampling.h:306).
  auto avail = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
  avail.deviceIndex = d.ordinal;
  r = a.cuptiPmSamplingGetCounterAvailability(&avail);
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    return restricted_text(a, r);
  if (r != CUPTI_SUCCESS) return "the " + d.chip + " counters cannot be listed (" + text(r) + ")";
  std::vector<uint8_t> availability(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability.data();
  r = a.cuptiPmSamplingGetCounterAvailability(&avail);
  if (r != CUPTI_SUCCESS) return "the " + d.chip + " counters cannot be listed (" + text(r) + ")";

  auto host = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  host.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  host.pChipName = d.chip.c_str();
  host.pCounterAvailabilityImage = availability.data();
  r = a.cuptiProfilerHostInitialize(&host);
  if (r != CUPTI_SUCCESS) return "chip " + d.chip + " is not supported by " + shown(a.path) + " (" + text(r) + ")";
  d.host = host.pHostObject;

  // Metric by metric, so that one a chip lacks (NVLink on a PCIe part) drops only itself.
  PmPlan wanted = plan_pm_metrics(metrics);
  std::vector<bool> usable(wanted.cupti.size(), false);
  for (size_t i = 0; i < wanted.cupti.size(); ++i) {
    const char* name = wanted.cupti[i].c_str();
    auto add = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = d.host;
    add.ppMetricNames = &name;
    add.numMetrics = 1;
    usable[i] = a.cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS;
  }
  std::string dropped;
  d.plan = usable_part(wanted, usable, &dropped);
  if (d.plan.outputs.empty()) return "chip " + d.chip + " has none of the counters asked for (" + dropped + ")";
  if (!dropped.empty()) *note = "CUPTI PM sampling on " + d.chip + " cannot read " + dropped + "; the others are sampled";
  for (const std::string& n : d.plan.cupti) d.names.push_back(n.c_str());

  auto size = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = d.host;
  r = a.cuptiProfilerHostGetConfigImageSize(&size);
  if (r != CUPTI_SUCCESS) return "cuptiProfilerHostGetConfigImageSize: " + text(r);
  std::vector<uint8_t>& config_image = d.config_image;
  config_image.assign(size.configImageSize, 0);
  auto image = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  image.pHostObject = d.host;
  image.configImageSize = config_image.size();
  image.pConfigImage = config_image.data();
  r = a.cuptiProfilerHostGetConfigImage(&image);
  if (r != CUPTI_SUCCESS) return "cuptiProfilerHostGetConfigImage: " + text(r);
  // PM sampling takes single-pass configurations only (cupti_profiler_host.h:392).
  auto passes = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = config_image.size();
  passes.pConfigImage = config_image.data();
  if (a.cuptiProfilerHostGetNumOfPasses(&passes) == CUPTI_SUCCESS && passes.numOfPasses > 1)
    return "the counters asked for need " + std::to_string(passes.numOfPasses) +
           " passes on " + d.chip + " and PM sampling reads one; ask for fewer in GPUHOOK_METRICS";

  auto enable = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
  enable.deviceIndex = d.ordinal;
  r = a.cuptiPmSamplingEnable(&enable);
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    return restricted_text(a, r);
  // One session per device (cupti_pmsampling.h:170): Nsight Compute, or another hooked process
  // on the same GPU, may hold it.
  if (r == CUPTI_ERROR_INVALID_OPERATION)
    return "another PM sampling session holds device " + std::to_string(d.ordinal) + " (" + text(r) + ")";
  if (r != CUPTI_SUCCESS) return "cuptiPmSamplingEnable on device " + std::to_string(d.ordinal) + ": " + text(r);
  d.object = enable.pPmSamplingObject;

  auto set = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_SetConfig_Params);
  set.pPmSamplingObject = d.object;
  set.configSize = config_image.size();
  set.pConfig = config_image.data();
  set.hardwareBufferSize = PmSampler::kHardwareBufferBytes;
  // A fixed-frequency trigger, in ns (cupti_pmsampling.h:80): the SYSCLK one counts cycles of
  // a clock that varies. Turing and GA100 lack it: SetConfig refuses there.
  set.samplingInterval = 1'000'000'000u / std::max<uint32_t>(1, hz);
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  // Oldest kept, so an overflow is reported (decode's `overflow`) rather than silent.
  set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  r = a.cuptiPmSamplingSetConfig(&set);
  if (r != CUPTI_SUCCESS) {
    // Turing and GA100 count SYS clock cycles only (cupti_pmsampling.h:78). The SYS clock runs
    // near 1 GHz (the CUPTI guide's example: 100,000 cycles for 100 us, as pytorch/kineto#1546
    // took it), so the interval in ns is the interval in cycles, roughly.
    set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_SYSCLK_INTERVAL;
    const CUptiResult again = a.cuptiPmSamplingSetConfig(&set);
    if (again != CUPTI_SUCCESS) return "cuptiPmSamplingSetConfig on " + d.chip + ": " + text(r);
    *note = (note->empty() ? "" : *note + "; ") + "CUPTI PM sampling on " + d.chip +
            " counts SYS clock cycles (no time-interval trigger): the sample rate is roughly GPUHOOK_METRICS_HZ";
  }

  auto data = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
  data.pPmSamplingObject = d.object;
  data.pMetricNames = d.names.data();
  data.numMetrics = d.names.size();
  data.maxSamples = PmSampler::kMaxSamples;
  r = a.cuptiPmSamplingGetCounterDataSize(&data);
  if (r != CUPTI_SUCCESS) return "cuptiPmSamplingGetCounterDataSize: " + text(r);
  if (data.counterDataSize == 0 || data.counterDataSize > (256u << 20))
    return "CUPTI asks for a counter data image of " + std::to_string(data.counterDataSize) + " bytes";
  d.counter_data.assign(data.counterDataSize, 0);
  auto init = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
  init.pPmSamplingObject = d.object;
  init.counterDataSize = d.counter_data.size();
  init.pCounterData = d.counter_data.data();
  r = a.cuptiPmSamplingCounterDataImageInitialize(&init);
  if (r != CUPTI_SUCCESS) return "cuptiPmSamplingCounterDataImageInitialize: " + text(r);

  auto go = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Start_Params);
  go.pPmSamplingObject = d.object;
  r = a.cuptiPmSamplingStart(&go);
  if (r != CUPTI_SUCCESS) return "cuptiPmSamplingStart: " + text(r);
  d.started = true;
  return "";
}

bool PmSampler::drain(PmDevice& d) {
  const auto& a = api_;
  std::vector<double> values(d.names.size());
  // Each decode fills the image at most; a full one is read, reset and decoded again. Bounded:
  // a GPU that outruns the decoder loses samples (overflow), never this thread's time.
  for (int round = 0; round < 16; ++round) {
    auto decode = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params);
    decode.pPmSamplingObject = d.object;
    decode.pCounterDataImage = d.counter_data.data();
    decode.counterDataImageSize = d.counter_data.size();
    CUptiResult r = a.cuptiPmSamplingDecodeData(&decode);
    // OUT_OF_MEMORY: the hardware buffer overflowed (cupti_pmsampling.h:282); what it kept
    // is still decoded.
    const bool overflow = decode.overflow != 0 || r == CUPTI_ERROR_OUT_OF_MEMORY;
    if (overflow && !overflow_said_) {
      overflow_said_ = true;
      say_line("CUPTI PM sampling buffer overflowed on device " + std::to_string(d.ordinal) +
               "; samples were lost (a lower GPUHOOK_METRICS_HZ keeps up)");
    }
    if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) {
      say_line("CUPTI PM sampling stopped on device " + std::to_string(d.ordinal) + ": cuptiPmSamplingDecodeData: " +
               text(r));
      return false;
    }
    auto info = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
    info.pCounterDataImage = d.counter_data.data();
    info.counterDataImageSize = d.counter_data.size();
    if (a.cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS) return false;
    const size_t completed = std::min<size_t>(info.numCompletedSamples, kMaxSamples);
    for (size_t i = 0; i < completed; ++i) {
      GpuMetricsPayload payload;
      uint64_t start_ns = 0, end_ns = 0;
      if (!pm_sample(a, d, i, values, &payload, &start_ns, &end_ns)) continue;
      if (!clock_known_) {
        // Once, on the first sample: which clock the samples are on (pm_metrics.h).
        uint64_t cupti_now = 0;
        if (a.cuptiGetTimestamp == nullptr || a.cuptiGetTimestamp(&cupti_now) != CUPTI_SUCCESS) cupti_now = 0;
        const uint64_t now[] = {now_ns(), cupti_now, realtime_ns(), monotonic_raw_ns()};
        size_t chosen = 0;
        // Samples reach this thread within a decode period or two; 10 s allows a stalled machine.
        if (!pick_pm_clock(end_ns, now, 4, 10'000'000'000u, &clock_offset_ns_, &chosen)) {
          say_line("CUPTI PM sample times match no clock this hook knows; PM samples left out");
          return false;
        }
        clock_known_ = true;
      }
      HostRecord* rec = begin_record();
      if (rec == nullptr) continue;  // recording off, or the ring full (counted there)
      rec->kind = HostKind::kGpuMetrics;
      rec->thread_id = this_thread_id();
      const uint64_t middle = start_ns + (end_ns - start_ns) / 2;
      rec->start_ns = middle + static_cast<uint64_t>(clock_offset_ns_);
      rec->end_ns = 0;
      rec->metrics = payload;
      end_record();
      samples_.fetch_add(1, std::memory_order_relaxed);
    }
    // Reset for reuse (cupti_pmsampling.h:367: the same call initialises and resets).
    auto init = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
    init.pPmSamplingObject = d.object;
    init.counterDataSize = d.counter_data.size();
    init.pCounterData = d.counter_data.data();
    if (a.cuptiPmSamplingCounterDataImageInitialize(&init) != CUPTI_SUCCESS) return false;
    if (decode.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL) break;
  }
  return true;
}

bool pm_sample(const CuptiApi& a, PmDevice& d, size_t index, std::vector<double>& values, GpuMetricsPayload* out,
               uint64_t* start_ns, uint64_t* end_ns) {
  auto sample = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
  sample.pPmSamplingObject = d.object;
  sample.pCounterDataImage = d.counter_data.data();
  sample.counterDataImageSize = d.counter_data.size();
  sample.sampleIndex = index;
  if (a.cuptiPmSamplingCounterDataGetSampleInfo(&sample) != CUPTI_SUCCESS) return false;
  if (sample.endTimestamp <= sample.startTimestamp) return false;
  values.assign(d.names.size(), 0);
  auto eval = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  eval.pHostObject = d.host;
  eval.pCounterDataImage = d.counter_data.data();
  eval.counterDataImageSize = d.counter_data.size();
  eval.rangeIndex = index;
  eval.ppMetricNames = d.names.data();
  eval.numMetrics = d.names.size();
  eval.pMetricValues = values.data();
  if (a.cuptiProfilerHostEvaluateToGpuValues(&eval) != CUPTI_SUCCESS) return false;
  *start_ns = sample.startTimestamp;
  *end_ns = sample.endTimestamp;
  return decode_pm_sample(d.plan, values.data(), values.size(), static_cast<uint16_t>(d.ordinal), out) != 0;
}

void pm_tear_down(const CuptiApi& a, PmDevice& d) {
  if (d.started) {
    auto stop = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params);
    stop.pPmSamplingObject = d.object;
    a.cuptiPmSamplingStop(&stop);
    d.started = false;
  }
  if (d.object != nullptr) {
    auto off = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params);
    off.pPmSamplingObject = d.object;
    a.cuptiPmSamplingDisable(&off);
    d.object = nullptr;
  }
  if (d.host != nullptr) {
    auto off = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    off.pHostObject = d.host;
    a.cuptiProfilerHostDeinitialize(&off);
    d.host = nullptr;
  }
}

void PmSampler::loop() {
  // The devices are asked for once CUDA answers (as the NVML sampler: this thread starts inside
  // CUDA's own initialisation). Given up after 10 s with one line.
  const uint64_t give_up_ns = now_ns() + 10'000'000'000u;
  int count = 0;
  while ((count = cuda_device_count()) <= 0) {
    if (stop_requested_.load(std::memory_order_acquire)) return;
    if (now_ns() > give_up_ns) {
      say_line(refusal_text("the CUDA library reports no device", nvml_));
      return;
    }
    sampler_sleep_ns(20'000'000);
  }
  // PM sampling is a profiler target API, not initialised by the activity API (pytorch/kineto#1532).
  // Never deinitialised: the process ends with it, and its deinit is not reference counted
  // (a second one from another client in the process crashes, pytorch/pytorch#188849).
  auto init = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  CUptiResult r = api_.cuptiProfilerInitialize(&init);
  if (r != CUPTI_SUCCESS) {
    say_line(refusal_text(r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                              ? restricted_text(api_, r)
                              : "cuptiProfilerInitialize: " + text(r),
                          nvml_));
    return;
  }
  std::string first_problem;
  // Set up in place, never moved after: CUPTI holds pointers into each device's images.
  devices_.reserve(static_cast<size_t>(std::min(count, 64)));
  for (int i = 0; i < count && i < 64; ++i) {
    PmDevice& d = devices_.emplace_back();
    d.ordinal = static_cast<uint32_t>(i);
    std::string note;
    const std::string problem = pm_set_up(api_, config_.pm_metrics, config_.pm_hz, d, &note);
    if (!note.empty()) say_line(note);
    if (!problem.empty()) {
      pm_tear_down(api_, d);
      devices_.pop_back();
      if (first_problem.empty()) first_problem = problem;
    }
  }
  // One line: every device refused (the usual case: permission), or some did.
  if (devices_.empty()) {
    say_line(refusal_text(first_problem, nvml_));
    return;
  }
  if (!first_problem.empty()) say_line("CUPTI PM sampling on some devices only: " + first_problem);
  while (!stop_requested_.load(std::memory_order_acquire)) {
    sampler_sleep_ns(uint64_t{kDecodeMs} * 1'000'000u);
    for (PmDevice& d : devices_) {
      if (d.object == nullptr || drain(d)) continue;
      pm_tear_down(api_, d);  // leaves d.object null: not drained again
    }
  }
  // The program is ending: the hardware stops, then what it sampled up to then is decoded (the
  // samples stay decodable after cuptiPmSamplingStop, as the CUPTI pm_sampling sample decodes
  // after its stop), then the session ends.
  for (PmDevice& d : devices_) {
    if (!d.started) continue;
    auto stop = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params);
    stop.pPmSamplingObject = d.object;
    api_.cuptiPmSamplingStop(&stop);
    d.started = false;
  }
  for (PmDevice& d : devices_) {
    if (d.object == nullptr) continue;
    drain(d);
    pm_tear_down(api_, d);
  }
}

bool PmSampler::stop(uint32_t timeout_ms) {
  return stop_sampler_thread(stop_requested_, finished_, timeout_ms);
}

}  // namespace gpuhook::hook
