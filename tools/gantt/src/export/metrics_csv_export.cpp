// metrics-csv: the GPU's own counters (MetricSample records, NVML) as one row per sample, for
// a spreadsheet or pandas beside the events' CSV. The counter's key carries the unit of the
// value written ("power_w", "sm_clock_mhz"); the reason mask stays the NVML bit mask.
#include <sstream>
#include <stdexcept>
#include <string>

#include "gantt/analysis/job_scan.h"
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

  // The samples of the captures from a scan (analysis::scan_samples): no event is held, and the
  // rows are the loaded capture's (the job's clock, the load's first time, the window asked).
  bool scans() const override { return true; }
  bool write_scanned(const std::vector<std::string>& paths, const ScanExportOptions& options, const OpenOutput& open_output,
                     ScannedExport* result, std::string* why_not) const override {
    analysis::EventScanOptions so;
    so.load = options.load;
    so.threads = options.threads;
    std::optional<analysis::ScannedRecords> scanned = analysis::scan_samples(paths, so, options.filter, why_not);
    if (!scanned) return false;
    if (!scanned->job.unusable.empty()) {  // the loader says what it says of such a capture
      if (why_not) *why_not = scanned->job.unusable;
      return false;
    }
    result->warnings = scanned->job.warnings;  // said before the window's error too, as a load says them
    result->corrupt = scanned->job.corrupt;
    if (!scanned->job.empty_window.empty()) throw std::invalid_argument(scanned->job.empty_window);
    std::ostringstream rows;
    write(scanned->records, scanned->chart_window(), {}, rows);
    const std::string text = rows.str();
    result->bytes = text.size();
    if (options.max_output != 0 && text.size() > options.max_output) {
      result->over = true;
      return true;
    }
    open_output() << text;
    return true;
  }
};

}  // namespace

std::unique_ptr<Exporter> make_metrics_csv_exporter() { return std::make_unique<MetricsCsvExporter>(); }

}  // namespace gantt
