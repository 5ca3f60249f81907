// CPU cost per decoded PM sample (GPUHOOK_METRICS): the sampler thread's work for one sample of
// one device, against the simulated libcupti with the simulated runtime loaded beside it, as the
// hook runs it. BM_PmDecodeOnly is the hook's own part (CUPTI's doubles into the fixed record);
// BM_PmSampleAll adds CUPTI's per-sample calls (sample info, evaluation) for all ten counters.
// SIMULATOR figures: the real CUPTI's evaluation is NVIDIA's code, not the simulator's.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gpuhook/settings.h>

#include "pm_sampler.h"

namespace {

using gpuhook::hook::CuptiApi;
using gpuhook::hook::GpuMetricsPayload;
using gpuhook::hook::PmDevice;

struct Session {
  CuptiApi api;
  PmDevice device;
  size_t samples = 0;
  bool ok = false;
};

// One device sampled at 100 kHz for 60 ms: a full counter data image (4096 samples) to read.
Session& session() {
  static Session s = [] {
    Session x;
    dlopen(SIM_CUDART, RTLD_NOW | RTLD_GLOBAL);  // the simulated counters read its plan
    std::string why;
    if (!gpuhook::hook::load_cupti(SIM_CUPTI, &x.api, &why)) {
      std::fprintf(stderr, "pm_bench: %s\n", why.c_str());
      return x;
    }
    std::string note;
    const uint32_t all = (1u << gpuhook::settings::kPmMetricCount) - 1;
    const std::string problem = gpuhook::hook::pm_set_up(x.api, all, 100'000, x.device, &note);
    if (!problem.empty()) {
      std::fprintf(stderr, "pm_bench: %s\n", problem.c_str());
      return x;
    }
    timespec pause{0, 110'000'000};  // 60 ms of samples past the simulator's 50 ms decode lag
    nanosleep(&pause, nullptr);
    auto decode = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params);
    decode.pPmSamplingObject = x.device.object;
    decode.pCounterDataImage = x.device.counter_data.data();
    decode.counterDataImageSize = x.device.counter_data.size();
    x.api.cuptiPmSamplingDecodeData(&decode);
    auto info = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
    info.pCounterDataImage = x.device.counter_data.data();
    info.counterDataImageSize = x.device.counter_data.size();
    x.api.cuptiPmSamplingGetCounterDataInfo(&info);
    x.samples = info.numCompletedSamples;
    x.ok = x.samples > 0;
    return x;
  }();
  return s;
}

void BM_PmSampleAll(benchmark::State& state) {
  Session& s = session();
  if (!s.ok) {
    state.SkipWithError("the simulated PM sampling did not start");
    return;
  }
  std::vector<double> values;
  GpuMetricsPayload p;
  uint64_t a = 0, b = 0;
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpuhook::hook::pm_sample(s.api, s.device, i, values, &p, &a, &b));
    if (++i == s.samples) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_PmDecodeOnly(benchmark::State& state) {
  const gpuhook::hook::PmPlan plan = gpuhook::hook::plan_pm_metrics((1u << gpuhook::settings::kPmMetricCount) - 1);
  std::vector<double> values(plan.cupti.size());
  for (size_t i = 0; i < values.size(); ++i) values[i] = 3.25 * static_cast<double>(i);
  GpuMetricsPayload p;
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpuhook::hook::decode_pm_sample(plan, values.data(), values.size(), 0, &p));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(BM_PmDecodeOnly)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK(BM_PmSampleAll)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_MAIN();
