// Exporters: one small interface, one file per format (export_<format>.cpp). A format is
// added by writing its file and one line in export.cpp's registry.
#pragma once

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/analysis/flame.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"

namespace gantt {

// Captures written as they are scanned (Exporter::write_scanned).
struct ScanExportOptions {
  LoadOptions load;
  unsigned threads = 0;     // 0: every core (analysis::default_scan_threads)
  uint64_t max_output = 0;  // past this many bytes nothing is written (0: no limit)
  // The output's path where it is a file written as is (not stdout, not compressed): made
  // beside it and renamed to it, rather than spooled and copied (export/scan_spool.h).
  std::string output_path;
  // select_events()' filters, applied by the scan (analysis/scan_select.h); null: every event.
  const EventFilter* filter = nullptr;
  // Folded stacks: the frame under every stack (ExportOptions::folded_root).
  analysis::StackRoot folded_root = analysis::StackRoot::kNone;
};
struct ScannedExport {
  bool over = false;    // the output passed max_output: nothing written
  uint64_t bytes = 0;   // written
  uint64_t events = 0;  // GPU operations written
  bool corrupt = false;               // the capture was damaged (exit 2 after the output)
  std::vector<std::string> warnings;  // what load_captures() would print for it
};

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
  // Formats that can write captures as they scan them (analysis/event_scan.h), several on one
  // clock as a load aligns them: memory that does not grow with their events. write_scanned()
  // then returns true, having written the captures to the stream `open_output` gives once the
  // scans have ended (nothing is opened when the output is over the limit), or opens nothing
  // and returns false with *why_not when a capture needs loading (a merged file, host
  // functions, ...). Throws gpuhook::CaptureError as load() does.
  using OpenOutput = std::function<std::ostream&()>;
  virtual bool scans() const { return false; }
  virtual bool write_scanned(const std::vector<std::string>& /*paths*/, const ScanExportOptions& /*options*/,
                             const OpenOutput& /*open_output*/, ScannedExport* /*result*/, std::string* why_not) const {
    if (why_not) *why_not = "this format loads the captures";
    return false;
  }
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
