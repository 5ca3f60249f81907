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

const Exporter* find_exporter(std::string_view format) {
  for (const Exporter* e : exporters())
    if (e->format() == format) return e;
  return nullptr;
}

}  // namespace gantt
