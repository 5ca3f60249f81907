// The registry of export formats.
#include "gantt/export/export.h"

namespace gantt {

std::vector<const Exporter*> exporters() {
  static const std::vector<std::unique_ptr<Exporter>> all = [] {
    std::vector<std::unique_ptr<Exporter>> v;
    v.push_back(make_csv_exporter());
    v.push_back(make_chrome_exporter());
    v.push_back(make_folded_exporter());
    v.push_back(make_sqlite_exporter());
    v.push_back(make_metrics_csv_exporter());
    return v;
  }();
  std::vector<const Exporter*> out;
  for (const auto& e : all) out.push_back(e.get());
  return out;
}

std::string export_scan_refusal(const Exporter& exporter, size_t captures) {
  if (!exporter.scans()) return "--format " + std::string(exporter.format()) + " needs the whole model";
  if (captures != 1 && !exporter.scans_several()) return "several captures are put on one clock";
  return {};
}

const Exporter* find_exporter(std::string_view format) {
  for (const Exporter* e : exporters())
    if (e->format() == format) return e;
  return nullptr;
}

}  // namespace gantt
