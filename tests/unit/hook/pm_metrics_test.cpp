// GPUHOOK_METRICS: the short names and their grammar (settings.h, shared with gantt-cli record),
// the mapping to CUPTI metrics, one sample's decoding, the choice of clock for PM sample times,
// and the simulated libcupti's PM sampling contract driven the way the sampler drives it.
#include "pm_metrics.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <time.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <gpuhook/settings.h>
#include <gpuhook/v1/capture.pb.h>

#include "config.h"
#include "cupti_api.h"

namespace gpuhook::hook {
namespace {
namespace v1 = gpuhook::v1;

uint32_t bit(const char* name) {
  for (uint32_t i = 0; i < settings::kPmMetricCount; ++i)
    if (std::string(settings::kPmMetricNames[i]) == name) return 1u << i;
  return 0;
}

TEST(PmMetricNames, ParseListsAllAndRepeats) {
  std::string unknown;
  auto m = settings::parse_metrics("sm_active,dram_read,sm_active", &unknown);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, bit("sm_active") | bit("dram_read"));
  m = settings::parse_metrics("all", &unknown);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, (1u << settings::kPmMetricCount) - 1);
}

TEST(PmMetricNames, UnknownEmptyAndCaseAreRefusedNamingTheItem) {
  std::string unknown;
  EXPECT_FALSE(settings::parse_metrics("sm_active,bogus", &unknown));
  EXPECT_EQ(unknown, "bogus");
  EXPECT_FALSE(settings::parse_metrics("SM_ACTIVE", &unknown));
  EXPECT_EQ(unknown, "SM_ACTIVE");
  EXPECT_FALSE(settings::parse_metrics("sm_active,", &unknown));
  EXPECT_EQ(unknown, "");
  EXPECT_FALSE(settings::parse_metrics(std::string(5000, 'x'), &unknown));
  EXPECT_EQ(unknown.size(), 64u);  // cut: it goes into a one-line message
}

TEST(PmMetricNames, ConfigTakesThemAndSaysOneLineWithTheValidNames) {
  std::vector<std::string> problems;
  auto env = [](const char* n) -> const char* {
    if (std::string(n) == env::kMetrics) return "sm_active,nope";
    if (std::string(n) == env::kMetricsHz) return "0";
    return nullptr;
  };
  const Config c = parse_config(env, &problems);
  EXPECT_EQ(c.pm_metrics, 0u);
  EXPECT_EQ(c.pm_hz, settings::kDefaultMetricsHz);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("unknown metric \"nope\""), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find(settings::pm_metric_names_text()), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("GPUHOOK_METRICS_HZ"), std::string::npos) << problems[1];
  auto good = [](const char* n) -> const char* {
    if (std::string(n) == env::kMetrics) return "gr_active,nvlink_tx";
    if (std::string(n) == env::kMetricsHz) return "2000";
    return nullptr;
  };
  problems.clear();
  const Config g = parse_config(good, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(g.pm_metrics, bit("gr_active") | bit("nvlink_tx"));
  EXPECT_EQ(g.pm_hz, 2000u);
}

TEST(PmMetricTable, EveryShortNameHasItsGpuMetricAndCuptiNames) {
  const PmMetricDef* t = pm_metric_table();
  for (uint32_t i = 0; i < settings::kPmMetricCount; ++i) {
    EXPECT_STREQ(t[i].short_name, settings::kPmMetricNames[i]);
    EXPECT_GE(t[i].metric, kPmMetricOffset + 1u);
    EXPECT_LE(t[i].metric, kPmMetricOffset + kGpuMetricSlots);
    ASSERT_NE(t[i].cupti[0], nullptr);
    EXPECT_NE(std::string(t[i].cupti[0]).find("pct_of_peak_sustained_elapsed"), std::string::npos);
    EXPECT_EQ(t[i].cupti[1] != nullptr, t[i].combine == PmCombine::kHundredMinusSum);
  }
  EXPECT_EQ(t[1].metric, static_cast<uint32_t>(v1::GPU_METRIC_SM_ACTIVE_CENTIPCT));
  EXPECT_STREQ(t[1].cupti[0], "sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
}

TEST(PmPlan, SharesCuptiMetricsAndDropsWhatTheChipLacks) {
  const PmPlan all = plan_pm_metrics((1u << settings::kPmMetricCount) - 1);
  EXPECT_EQ(all.outputs.size(), settings::kPmMetricCount);
  EXPECT_EQ(all.cupti.size(), settings::kPmMetricCount + 1);  // occupancy reads two
  std::vector<bool> usable(all.cupti.size(), true);
  for (size_t i = 0; i < all.cupti.size(); ++i)
    if (all.cupti[i].find("nvl") == 0 || all.cupti[i].find("warps_inactive_sm_idle") != std::string::npos) usable[i] = false;
  std::string dropped;
  const PmPlan part = usable_part(all, usable, &dropped);
  EXPECT_EQ(dropped, "sm_occupancy,nvlink_rx,nvlink_tx");
  EXPECT_EQ(part.outputs.size(), settings::kPmMetricCount - 3);
  for (const PmPlan::Output& o : part.outputs) {
    ASSERT_LT(o.first, part.cupti.size());
    EXPECT_EQ(part.cupti[o.first], pm_metric_table()[o.slot + kPmMetricOffset - v1::GPU_METRIC_GR_ACTIVE_CENTIPCT].cupti[0]);
  }
}

TEST(PmDecode, HundredthsClampedCombinedAndNanLeftOut) {
  const PmPlan plan = plan_pm_metrics(bit("sm_active") | bit("sm_occupancy") | bit("dram_read") | bit("pcie_tx"));
  ASSERT_EQ(plan.cupti.size(), 5u);
  std::vector<double> v(plan.cupti.size());
  auto at = [&](const char* name) -> double& {
    for (size_t i = 0; i < plan.cupti.size(); ++i)
      if (plan.cupti[i] == name) return v[i];
    static double none;
    ADD_FAILURE() << name;
    return none;
  };
  at("sm__cycles_active.avg.pct_of_peak_sustained_elapsed") = 12.345;
  at("tpc__warps_inactive_sm_active_realtime.avg.pct_of_peak_sustained_elapsed") = 30;
  at("tpc__warps_inactive_sm_idle_realtime.avg.pct_of_peak_sustained_elapsed") = 25;
  at("dramc__read_throughput.avg.pct_of_peak_sustained_elapsed") = 100.7;  // a window edge
  at("pcie__write_bytes.avg.pct_of_peak_sustained_elapsed") = std::numeric_limits<double>::quiet_NaN();
  GpuMetricsPayload p;
  EXPECT_EQ(decode_pm_sample(plan, v.data(), v.size(), 3, &p), 3u);
  EXPECT_EQ(p.device, 3);
  EXPECT_EQ(p.metric_offset, kPmMetricOffset);
  auto slot = [](v1::GpuMetric m) { return static_cast<uint32_t>(m) - kPmMetricOffset; };
  EXPECT_EQ(p.value[slot(v1::GPU_METRIC_SM_ACTIVE_CENTIPCT) - 1], 1235u);
  EXPECT_EQ(p.value[slot(v1::GPU_METRIC_SM_OCCUPANCY_CENTIPCT) - 1], 4500u);
  EXPECT_EQ(p.value[slot(v1::GPU_METRIC_DRAM_READ_CENTIPCT) - 1], 10000u);
  EXPECT_EQ(p.present & (1u << slot(v1::GPU_METRIC_PCIE_TX_CENTIPCT)), 0u);
  // Negative and infinite values: clamped to 0, left out.
  at("sm__cycles_active.avg.pct_of_peak_sustained_elapsed") = -4;
  at("dramc__read_throughput.avg.pct_of_peak_sustained_elapsed") = std::numeric_limits<double>::infinity();
  EXPECT_EQ(decode_pm_sample(plan, v.data(), v.size(), 0, &p), 2u);
  EXPECT_EQ(p.value[slot(v1::GPU_METRIC_SM_ACTIVE_CENTIPCT) - 1], 0u);
  // Fewer values than the plan needs: nothing read past them.
  EXPECT_EQ(decode_pm_sample(plan, v.data(), 1, 0, &p), 1u);
}

TEST(PmClock, PicksTheFirstClockTheSampleFitsAndItsOffset) {
  int64_t offset = 0;
  size_t chosen = 9;
  // The capture's clock (1000 s) fits: offset 0.
  const uint64_t same[] = {1000'000'000'000, 2000'000'000'000};
  EXPECT_TRUE(pick_pm_clock(999'990'000'000, same, 2, 10'000'000'000, &offset, &chosen));
  EXPECT_EQ(chosen, 0u);
  EXPECT_EQ(offset, 0);
  // Samples on the second clock (realtime-like): moved by the difference.
  EXPECT_TRUE(pick_pm_clock(1999'999'000'000, same, 2, 10'000'000'000, &offset, &chosen));
  EXPECT_EQ(chosen, 1u);
  EXPECT_EQ(offset, -1000'000'000'000);
  // In the future of every clock, or too far in the past: none.
  EXPECT_FALSE(pick_pm_clock(3000'000'000'000, same, 2, 10'000'000'000, &offset, &chosen));
  EXPECT_FALSE(pick_pm_clock(1, same, 2, 10'000'000'000, &offset, &chosen));
}

#ifdef SIM_CUPTI
// The simulated libcupti's PM sampling, in the order pm_sampler.cpp calls it, with no runtime
// loaded: the device idles, so every counter reads 0, and samples come at the interval.
class SimPm : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUHOOK_SIM_PROFILING");
    unsetenv("GPUHOOK_SIM_PM_MISSING");
    std::string why;
    ASSERT_TRUE(load_cupti(SIM_CUPTI, &api, &why)) << why;
  }
  CuptiApi api;
};

TEST_F(SimPm, IdleDeviceSamplesAtTheIntervalWithZeroCounters) {
  auto chip = GPUHOOK_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  ASSERT_EQ(api.cuptiDeviceGetChipName(&chip), CUPTI_SUCCESS);
  auto host = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  host.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  host.pChipName = chip.pChipName;
  ASSERT_EQ(api.cuptiProfilerHostInitialize(&host), CUPTI_SUCCESS);
  const PmPlan plan = plan_pm_metrics(bit("sm_active") | bit("dram_write"));
  std::vector<const char*> names;
  for (const auto& n : plan.cupti) names.push_back(n.c_str());
  const char* bogus = "sm__bogus.sum";
  auto add = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = host.pHostObject;
  add.ppMetricNames = &bogus;
  add.numMetrics = 1;
  EXPECT_EQ(api.cuptiProfilerHostConfigAddMetrics(&add), CUPTI_ERROR_INVALID_METRIC_NAME);
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  ASSERT_EQ(api.cuptiProfilerHostConfigAddMetrics(&add), CUPTI_SUCCESS);
  auto size = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = host.pHostObject;
  ASSERT_EQ(api.cuptiProfilerHostGetConfigImageSize(&size), CUPTI_SUCCESS);
  std::vector<uint8_t> config(size.configImageSize);
  auto image = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  image.pHostObject = host.pHostObject;
  image.configImageSize = config.size();
  image.pConfigImage = config.data();
  ASSERT_EQ(api.cuptiProfilerHostGetConfigImage(&image), CUPTI_SUCCESS);
  auto enable = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
  ASSERT_EQ(api.cuptiPmSamplingEnable(&enable), CUPTI_SUCCESS);
  auto again = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
  EXPECT_EQ(api.cuptiPmSamplingEnable(&again), CUPTI_ERROR_INVALID_OPERATION);  // one per device
  auto set = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_SetConfig_Params);
  set.pPmSamplingObject = enable.pPmSamplingObject;
  set.configSize = config.size();
  set.pConfig = config.data();
  set.hardwareBufferSize = 1 << 20;
  set.samplingInterval = 100'000;  // 10 kHz
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  ASSERT_EQ(api.cuptiPmSamplingSetConfig(&set), CUPTI_SUCCESS);
  auto data = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
  data.pPmSamplingObject = enable.pPmSamplingObject;
  data.pMetricNames = names.data();
  data.numMetrics = names.size();
  data.maxSamples = 50;  // less than the 10 ms the decode below finds (60 ms, less the 50 ms lag): the image fills
  ASSERT_EQ(api.cuptiPmSamplingGetCounterDataSize(&data), CUPTI_SUCCESS);
  std::vector<uint8_t> counters(data.counterDataSize);
  auto init = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
  init.pPmSamplingObject = enable.pPmSamplingObject;
  init.counterDataSize = counters.size();
  init.pCounterData = counters.data();
  ASSERT_EQ(api.cuptiPmSamplingCounterDataImageInitialize(&init), CUPTI_SUCCESS);
  auto start = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Start_Params);
  start.pPmSamplingObject = enable.pPmSamplingObject;
  ASSERT_EQ(api.cuptiPmSamplingStart(&start), CUPTI_SUCCESS);
  timespec pause{0, 60'000'000};
  nanosleep(&pause, nullptr);
  auto decode = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params);
  decode.pPmSamplingObject = enable.pPmSamplingObject;
  decode.pCounterDataImage = counters.data();
  decode.counterDataImageSize = counters.size();
  ASSERT_EQ(api.cuptiPmSamplingDecodeData(&decode), CUPTI_SUCCESS);
  EXPECT_EQ(decode.decodeStopReason, CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL);
  auto info = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
  info.pCounterDataImage = counters.data();
  info.counterDataImageSize = counters.size();
  ASSERT_EQ(api.cuptiPmSamplingGetCounterDataInfo(&info), CUPTI_SUCCESS);
  ASSERT_EQ(info.numCompletedSamples, 50u);
  uint64_t previous_end = 0;
  for (size_t i = 0; i < info.numCompletedSamples; ++i) {
    auto s = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
    s.pPmSamplingObject = enable.pPmSamplingObject;
    s.pCounterDataImage = counters.data();
    s.counterDataImageSize = counters.size();
    s.sampleIndex = i;
    ASSERT_EQ(api.cuptiPmSamplingCounterDataGetSampleInfo(&s), CUPTI_SUCCESS);
    EXPECT_EQ(s.endTimestamp - s.startTimestamp, 100'000u);
    if (i != 0) {
      EXPECT_EQ(s.startTimestamp, previous_end);
    }
    previous_end = s.endTimestamp;
    std::vector<double> values(names.size(), -1);
    auto eval = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    eval.pHostObject = host.pHostObject;
    eval.pCounterDataImage = counters.data();
    eval.counterDataImageSize = counters.size();
    eval.rangeIndex = i;
    eval.ppMetricNames = names.data();
    eval.numMetrics = names.size();
    eval.pMetricValues = values.data();
    ASSERT_EQ(api.cuptiProfilerHostEvaluateToGpuValues(&eval), CUPTI_SUCCESS);
    for (double v : values) EXPECT_EQ(v, 0.0);
  }
  // A sample index past the image, a foreign image: refused, nothing read.
  auto past = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_CounterData_GetSampleInfo_Params);
  past.pCounterDataImage = counters.data();
  past.counterDataImageSize = counters.size();
  past.sampleIndex = 50;
  EXPECT_EQ(api.cuptiPmSamplingCounterDataGetSampleInfo(&past), CUPTI_ERROR_INVALID_PARAMETER);
  std::vector<uint8_t> junk(64, 0xab);
  info.pCounterDataImage = junk.data();
  info.counterDataImageSize = junk.size();
  EXPECT_EQ(api.cuptiPmSamplingGetCounterDataInfo(&info), CUPTI_ERROR_INVALID_PARAMETER);
  auto stop = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params);
  stop.pPmSamplingObject = enable.pPmSamplingObject;
  EXPECT_EQ(api.cuptiPmSamplingStop(&stop), CUPTI_SUCCESS);
  auto off = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params);
  off.pPmSamplingObject = enable.pPmSamplingObject;
  EXPECT_EQ(api.cuptiPmSamplingDisable(&off), CUPTI_SUCCESS);
  auto done = GPUHOOK_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  done.pHostObject = host.pHostObject;
  EXPECT_EQ(api.cuptiProfilerHostDeinitialize(&done), CUPTI_SUCCESS);
}

TEST_F(SimPm, RestrictedProfilingRefusesWithInsufficientPrivileges) {
  setenv("GPUHOOK_SIM_PROFILING", "restricted", 1);
  auto avail = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
  EXPECT_EQ(api.cuptiPmSamplingGetCounterAvailability(&avail), CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  auto enable = GPUHOOK_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
  EXPECT_EQ(api.cuptiPmSamplingEnable(&enable), CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  unsetenv("GPUHOOK_SIM_PROFILING");
}
#endif

}  // namespace
}  // namespace gpuhook::hook
