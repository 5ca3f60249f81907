// gantt-cli export FILE... --format FORMAT -o OUT: the events in other tools' formats.
// Each format is an Exporter in libgantt (export_<format>.cpp); this file only wires options.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gantt/export.h>
#include <gantt/text.h>

#include "commands.h"
#include "filter_flags.h"
#include "load_captures.h"

namespace gantt_cli {

namespace {

struct ExportOptions {
  std::vector<std::string> files;
  LoadFlags load;
  std::string format = "csv";
  std::string output = "-";
  FilterFlags filter;
  std::string root = "none";  // folded: rank | device | none
};

int run_export(const ExportOptions& o) {
  const gantt::Exporter* exporter = gantt::find_exporter(o.format);
  if (!exporter) {
    std::string known;
    for (const auto* e : gantt::exporters()) known += (known.empty() ? "" : ", ") + std::string(e->format());
    std::cerr << "gantt-cli: export: unknown format '" << o.format << "' (known: " << known << ")\n";
    return kExitError;
  }
  if (o.format == "sqlite" && o.output == "-" && isatty(STDOUT_FILENO)) {
    std::cerr << "gantt-cli: export: a SQLite database is binary: pass -o FILE.db (or redirect stdout)\n";
    return kExitError;
  }
  gantt::ExportOptions eo;
  eo.folded_root = o.root == "rank" ? gantt::analysis::StackRoot::kRank
                   : o.root == "device" ? gantt::analysis::StackRoot::kDevice
                                        : gantt::analysis::StackRoot::kNone;
  const gantt::EventFilter f = make_filter(o.filter);
  // JSON and CSV both peaked at 102 bytes a record.
  const LoadedJob job = load_captures(o.files, o.load, {"export loads captures whole", 110});
  const gantt::Model& model = job.model;
  const bool corrupt = job.corrupt;
  gantt::Selection sel;
  try {
    sel = gantt::select_events(model, f);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: export: " << e.what() << "\n";
    return kExitError;
  }
  if (o.output == "-") {
    exporter->write(model, sel, eo, std::cout);
    std::cout.flush();
  } else {
    std::ofstream out(o.output, std::ios::binary | std::ios::trunc);
    if (!out) {
      std::cerr << "gantt-cli: export: cannot write " << o.output << "\n";
      return kExitError;
    }
    exporter->write(model, sel, eo, out);
    out.close();
    if (!out) {
      std::cerr << "gantt-cli: export: writing " << o.output << " failed\n";
      return kExitError;
    }
  }
  return corrupt ? kExitError : kExitOk;
}

}  // namespace

void register_export(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ExportOptions>();
  std::string formats;
  for (const auto* e : gantt::exporters())
    formats += "\n  " + std::string(e->format()) + ": " + std::string(e->description());
  CLI::App* cmd = app.add_subcommand("export", "Write the events in another format:" + formats +
      "\n\nExamples:\n"
      "  gantt-cli export app.gpuh --format chrome -o app.json     # open in ui.perfetto.dev\n"
      "  gantt-cli export app.gpuh --format csv -o events.csv\n"
      "  gantt-cli export app.gpuh --format folded | flamegraph.pl > flame.svg\n"
      "  gantt-cli export app.gpuh --format sqlite -o app.db       # tables in README: kernels, api, nvtx, ...\n"
      "  gantt-cli export rank*.gpuh --format folded --root rank > ranks.folded   # a flame per rank\n"
      "\nFolded stacks weigh each stack by its GPU time in nanoseconds (flamegraph.pl --countname=ns).\n");
  cmd->add_option("files", o->files, "capture files (.gpuh)")->required();
  add_load_flags(*cmd, o->load);
  cmd->add_option("-f,--format", o->format, "output format")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "output file, - for stdout")->capture_default_str();
  add_filter_flags(*cmd, o->filter);
  cmd->add_option("--root", o->root, "folded: the frame under every stack: rank (capture), device, or none")
      ->check(CLI::IsMember({"rank", "device", "none"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_export(*o); });
}

}  // namespace gantt_cli
