// gantt-cli diagnose FILE...: the classic scheduling mistakes (gantt/analysis/diagnose.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gantt/analysis/diagnose.h>
#include <gantt/model.h>
#include <gantt/ranks.h>

#include "commands.h"
#include "filter_flags.h"
#include "load_captures.h"

namespace gantt_cli {
namespace {

namespace ga = gantt::analysis;

struct DiagnoseOptions {
  std::vector<std::string> files;
  LoadFlags load;
  std::string fail_on = "never";
  std::string format = "text";
  FilterFlags filter;
};

int run_diagnose(const DiagnoseOptions& o) {
  LoadedJob job = load_captures(o.files, o.load);
  gantt::Model& model = job.model;
  const bool corrupt = job.corrupt;
  if (!reportable(model) || !restrict_to_filter(model, o.filter, "diagnose")) return kExitError;
  const ga::DiagnoseReport r = ga::diagnose(model);
  std::cout << ga::format_diagnose(r, report_format(o.format));
  if (corrupt) return kExitError;
  const int bar = o.fail_on == "warning" ? 1 : o.fail_on == "error" ? 2 : 3;
  for (const ga::Finding& f : r.findings)
    if (static_cast<int>(f.severity) >= bar) return kExitCheckFailed;
  return kExitOk;
}

}  // namespace

void register_diagnose(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DiagnoseOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose",
      "Point out the classic scheduling mistakes, each with its condition (thresholds and the\n"
      "numbers that crossed them), the evidence and the fix. Rules: stream-serialisation,\n"
      "copy-overlap, launch-bound, imbalance (devices or ranks), low-occupancy, sync-stall,\n"
      "fragmentation, priority-inversion (short kernels queued behind another stream's long\n"
      "ones at no higher priority: the fix is a stream priority), memory-peak (allocations of one\n"
      "NVTX range, freed later, holding most of a device's memory peak: recompute or free them earlier),\n"
      "memory-idle (allocations held at the peak that no call used after it; needs GPUHOOK_MEM_USE=1),\n"
      "pipeline-bubble, slow-link, throttled (NVML: clocks lowered for power or heat while kernels\n"
      "ran), stalled (CUPTI PM sampling: kernels running while SM active stayed low; record with\n"
      "GPUHOOK_METRICS=sm_active,dram_read,dram_write).\n"
      "launch-bound does not count kernels that run as CUDA graph nodes, and\n"
      "names a graph as the fix when a stream repeats one kernel sequence. Exit 1 when\n"
      "--fail-on is given and a finding is that severe or worse.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli diagnose app.gpuh\n"
      "  gantt-cli diagnose rank0.gpuh rank1.gpuh --fail-on warning --format md\n"
      "  gantt-cli diagnose app.gpuh --range train_step@10   # one iteration, past the warm-up\n");
  cmd->add_option("files", o->files, "capture files (.gpuh); several = ranks of one job")->required();
  add_load_flags(*cmd, o->load);
  add_filter_flags(*cmd, o->filter);
  cmd->add_option("--fail-on", o->fail_on, "exit 1 on a finding of this severity or worse")
      ->check(CLI::IsMember({"never", "warning", "error"}))
      ->capture_default_str();
  cmd->add_option("--format", o->format, "output format")
      ->check(CLI::IsMember({"text", "md", "json"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_diagnose(*o); });
}

}  // namespace gantt_cli
