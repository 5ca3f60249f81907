#include "pm_metrics.h"

#include <cmath>

#include <gpuhook/settings.h>
#include <gpuhook/v1/capture.pb.h>  // the GpuMetric numbers only: header-only, nothing linked

namespace gpuhook::hook {
namespace v1 = gpuhook::v1;

namespace {

// The CUPTI metric names are those of the CUPTI User Guide's PM sampling metrics table
// ("PM Sampling" > "Metrics Table", CUDA 12.6+): all `pct_of_peak_sustained_elapsed`, so every
// value is a percentage of the sample window. cupti_profiler_host.h:189 (GetBaseMetrics) lists
// what a chip has; a name a chip lacks fails cuptiProfilerHostConfigAddMetrics with
// CUPTI_ERROR_INVALID_METRIC_NAME (cupti_profiler_host.h:398) and is dropped with one line.
const PmMetricDef kTable[] = {
    {"gr_active", v1::GPU_METRIC_GR_ACTIVE_CENTIPCT, {"gr__cycles_active.sum.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    {"sm_active", v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, {"sm__cycles_active.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    // The table has no "warps active" metric but both kinds of unused warp slot, on active and
    // on idle SMs, as percentages of all slots: what is left is in use.
    {"sm_occupancy",
     v1::GPU_METRIC_SM_OCCUPANCY_CENTIPCT,
     {"tpc__warps_inactive_sm_active_realtime.avg.pct_of_peak_sustained_elapsed",
      "tpc__warps_inactive_sm_idle_realtime.avg.pct_of_peak_sustained_elapsed"},
     PmCombine::kHundredMinusSum},
    {"tensor_active",
     v1::GPU_METRIC_TENSOR_ACTIVE_CENTIPCT,
     {"sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    {"dram_read", v1::GPU_METRIC_DRAM_READ_CENTIPCT, {"dramc__read_throughput.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    {"dram_write",
     v1::GPU_METRIC_DRAM_WRITE_CENTIPCT,
     {"dramc__write_throughput.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    // pcie__read_bytes: "bytes received on the PCIe interface"; write_bytes: "transmitted".
    {"pcie_rx", v1::GPU_METRIC_PCIE_RX_CENTIPCT, {"pcie__read_bytes.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    {"pcie_tx", v1::GPU_METRIC_PCIE_TX_CENTIPCT, {"pcie__write_bytes.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    {"nvlink_rx", v1::GPU_METRIC_NVLINK_RX_CENTIPCT, {"nvlrx__bytes.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
    {"nvlink_tx", v1::GPU_METRIC_NVLINK_TX_CENTIPCT, {"nvltx__bytes.avg.pct_of_peak_sustained_elapsed", nullptr},
     PmCombine::kValue},
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == settings::kPmMetricCount, "one row per short name");

uint32_t index_of(std::vector<std::string>& names, const char* name) {
  for (uint32_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return i;
  names.emplace_back(name);
  return static_cast<uint32_t>(names.size() - 1);
}

}  // namespace

const PmMetricDef* pm_metric_table() { return kTable; }

PmPlan plan_pm_metrics(uint32_t mask) {
  PmPlan plan;
  for (uint32_t i = 0; i < settings::kPmMetricCount; ++i) {
    if ((mask & (1u << i)) == 0) continue;
    const PmMetricDef& d = kTable[i];
    PmPlan::Output o;
    o.slot = d.metric - kPmMetricOffset;
    o.first = index_of(plan.cupti, d.cupti[0]);
    o.second = d.cupti[1] != nullptr ? index_of(plan.cupti, d.cupti[1]) : PmPlan::kNone;
    o.combine = d.combine;
    o.short_name = d.short_name;
    plan.outputs.push_back(o);
  }
  return plan;
}

PmPlan usable_part(const PmPlan& plan, const std::vector<bool>& usable, std::string* dropped) {
  PmPlan out;
  for (const PmPlan::Output& o : plan.outputs) {
    const bool ok = o.first < usable.size() && usable[o.first] &&
                    (o.second == PmPlan::kNone || (o.second < usable.size() && usable[o.second]));
    if (!ok) {
      *dropped += (dropped->empty() ? "" : ",") + std::string(o.short_name);
      continue;
    }
    PmPlan::Output n = o;
    n.first = index_of(out.cupti, plan.cupti[o.first].c_str());
    if (o.second != PmPlan::kNone) n.second = index_of(out.cupti, plan.cupti[o.second].c_str());
    out.outputs.push_back(n);
  }
  return out;
}

uint32_t decode_pm_sample(const PmPlan& plan, const double* values, size_t count, uint16_t device,
                          GpuMetricsPayload* out) {
  *out = GpuMetricsPayload{};
  out->device = device;
  out->metric_offset = kPmMetricOffset;
  uint32_t set = 0;
  for (const PmPlan::Output& o : plan.outputs) {
    if (o.first >= count || (o.second != PmPlan::kNone && o.second >= count)) continue;
    if (o.slot == 0 || o.slot > kGpuMetricSlots) continue;
    double pct = values[o.first];
    if (o.combine == PmCombine::kHundredMinusSum) pct = 100.0 - values[o.first] - values[o.second];
    if (!std::isfinite(pct)) continue;
    // Counters read a little past 100 % at window edges (the window and the counters' own
    // clock do not line up exactly); clamped, as a share cannot pass the whole.
    pct = std::fmin(100.0, std::fmax(0.0, pct));
    out->value[o.slot - 1] = static_cast<uint64_t>(std::llround(pct * 100.0));
    out->present |= 1u << o.slot;
    ++set;
  }
  return set;
}

bool pick_pm_clock(uint64_t sample_end, const uint64_t* now, size_t candidates, uint64_t horizon_ns,
                   int64_t* offset_ns, size_t* chosen) {
  for (size_t i = 0; i < candidates; ++i) {
    if (now[i] < sample_end || now[i] - sample_end >= horizon_ns) continue;
    *offset_ns = static_cast<int64_t>(now[0] - now[i]);
    *chosen = i;
    return true;
  }
  return false;
}

}  // namespace gpuhook::hook
