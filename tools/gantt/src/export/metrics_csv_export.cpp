// metrics-csv: the GPU's own counters (MetricSample records, NVML) as one row per sample, for
// a spreadsheet or pandas beside the events' CSV. The counter's key carries the unit of the
// value written ("power_w", "sm_clock_mhz"); the reason mask stays the NVML bit mask.
#include <string>

#include "gantt/analysis/metrics.h"
#include "gantt/export/export.h"
#include "gantt/model/json.h"

namespace gantt {
namespace {

class MetricsCsvExporter final : public Exporter {
 public:
  std::string_view format() const override { return "metrics-csv"; }
  std::string_view description() const override {
    return "one row per GPU counter sample (NVML: utilisation, clocks, power, ...)";
  }

  void write(const Model& m, const Selection& sel, const ExportOptions&, std::ostream& os) const override {
    std::string out = "capture,device,counter,time_ns,time_rel_ns,value\n";
    const uint64_t t0 = m.first_ns();
    const uint64_t w0 = sel.window_start_ns, w1 = sel.window_end_ns;
    for (const analysis::MetricSeries& s : analysis::metric_series(m)) {
      const analysis::MetricInfo* info = analysis::metric_info(s.metric);
      if (info == nullptr) continue;
      const bool mask = s.metric == gpuhook::v1::GPU_METRIC_CLOCKS_EVENT_REASONS;
      for (size_t i = s.begin; i < s.end; ++i) {
        const uint64_t t = m.metrics.time_ns[i];
        if (sel.window_asked && (t < w0 || t > w1)) continue;
        out += std::to_string(s.capture) + "," + std::to_string(s.device) + "," + info->key + "," + std::to_string(t) +
               "," + std::to_string(static_cast<int64_t>(t - t0)) + ",";
        if (mask) out += std::to_string(m.metrics.value[i]);
        else json::append_number(out, static_cast<double>(m.metrics.value[i]) * info->scale, 3);
        out += "\n";
      }
      if (out.size() > (1u << 20)) {
        os << out;
        out.clear();
      }
    }
    os << out;
  }
};

}  // namespace

std::unique_ptr<Exporter> make_metrics_csv_exporter() { return std::make_unique<MetricsCsvExporter>(); }

}  // namespace gantt
