// Exporters: one small interface, one file per format (export_<format>.cpp). A format is
// added by writing its file and one line in export.cpp's registry.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/analysis/flame.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"

namespace gantt {

// What a format may be asked besides the selection.
struct ExportOptions {
  // Folded stacks: the frame under every stack (one flame per rank or per GPU, or none).
  analysis::StackRoot folded_root = analysis::StackRoot::kNone;
};

class Exporter {
 public:
  virtual ~Exporter() = default;
  virtual std::string_view format() const = 0;       // "csv"
  virtual std::string_view description() const = 0;  // one line for --help
  // Writes the selected events (and whatever context the format needs from the model).
  // Deterministic: same model and selection, same bytes.
  virtual void write(const Model& model, const Selection& selection, const ExportOptions& options,
                     std::ostream& out) const = 0;
};

// nullptr when unknown.
const Exporter* find_exporter(std::string_view format);
std::vector<const Exporter*> exporters();

// Factories, one per format file.
std::unique_ptr<Exporter> make_csv_exporter();
std::unique_ptr<Exporter> make_chrome_exporter();  // export/chrome_export.cpp
std::unique_ptr<Exporter> make_folded_exporter();  // export/folded_export.cpp
std::unique_ptr<Exporter> make_sqlite_exporter();  // export/sqlite_export.cpp
std::unique_ptr<Exporter> make_metrics_csv_exporter();  // export/metrics_csv_export.cpp

}  // namespace gantt
