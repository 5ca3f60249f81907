// gantt-cli diff BASE NEW: the CI gate (see gantt/analysis/diff.h). Exit 0: no regression,
// 1: a regression beyond threshold and noise, 2: bad usage or an unreadable capture.
#include <cstdlib>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include <gantt/analysis/diff.h>
#include <gantt/model.h>

#include "commands.h"

namespace gantt_cli {
namespace {

namespace ga = gantt::analysis;

struct DiffOptions {
  std::string base;
  std::string next;
  std::string threshold = "5%";
  std::string metric = "exec";
  std::string format = "text";
  double alpha = 0.01;
  size_t top = 20;
  bool name_only = false;
};

// "5%" or a fraction "0.05"; false for anything else (a bare "5" is ambiguous).
bool parse_threshold(const std::string& text, double* out) {
  if (text.empty()) return false;
  const bool percent = text.back() == '%';
  const std::string num = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (num.empty() || end != num.c_str() + num.size() || !(v >= 0)) return false;
  *out = percent ? v / 100.0 : v;
  return percent ? v < 1000 : v < 1.0;
}

int run_diff(const DiffOptions& o) {
  static const std::map<std::string, ga::Format> formats = {
      {"text", ga::Format::kText}, {"md", ga::Format::kMarkdown}, {"json", ga::Format::kJson}, {"csv", ga::Format::kCsv}};
  ga::DiffOptions d;
  if (!parse_threshold(o.threshold, &d.noise.threshold)) {
    std::cerr << "gantt-cli: diff: --threshold '" << o.threshold << "' is not a percentage (e.g. 5%) or a fraction (0.05)\n";
    return kExitError;
  }
  try {
    d.metrics = ga::parse_metrics(o.metric);
  } catch (const std::invalid_argument& e) {
    std::cerr << "gantt-cli: diff: --metric: " << e.what() << "\n";
    return kExitError;
  }
  d.noise.alpha = o.alpha;
  d.match_range = !o.name_only;
  // Loading dominates on large captures; the two files load side by side.
  auto base_future = std::async(std::launch::async, [&] { return gantt::load({o.base}); });
  const gantt::Model next = gantt::load({o.next});
  const gantt::Model base = base_future.get();
  bool corrupt = false;
  for (const gantt::Model* m : {&base, &next})
    for (const std::string& line : gantt::integrity_warnings(*m, &corrupt)) std::cerr << "gantt-cli: " << line << "\n";
  for (const gantt::Model* m : {&base, &next}) {
    if (const std::string bad = ga::unusable_capture(*m); !bad.empty()) {
      std::cerr << "gantt-cli: " << bad << "\n";
      return kExitError;
    }
  }
  // A gate that compares half a file would pass or fail for the wrong reason.
  if (corrupt) {
    std::cerr << "gantt-cli: diff: a capture is corrupt; not comparing\n";
    return kExitError;
  }
  const ga::DiffReport r = ga::diff_models(base, next, d);
  std::cout << ga::format_diff(r, formats.at(o.format), o.format == "text" || o.format == "md" ? o.top : 0);
  return r.regressions > 0 ? kExitCheckFailed : kExitOk;
}

}  // namespace

void register_diff(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff",
      "Compare two runs; exit 1 on a regression, 0 otherwise, 2 on error (the CI gate).\n"
      "Kernels are matched by demangled name and NVTX range path. A change is a regression\n"
      "only when its median moved by more than --threshold AND it is beyond the run-to-run\n"
      "noise of the per-instance durations: a one-sided Mann-Whitney U rank test (ties\n"
      "corrected, normal approximation) must reject at --alpha AND a 99% percentile bootstrap\n"
      "interval of the median ratio (1000 resamples, fixed seed: same inputs, same verdict) must\n"
      "exclude 1. Fewer than 3 instances on a side never gate. Makespan gates (--metric\n"
      "makespan) through the durations of the repeated top-level NVTX range; busy % and\n"
      "overlap % are reported only.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli diff before.gpuh after.gpuh\n"
      "  gantt-cli diff base.gpuh new.gpuh --threshold 3% --metric exec,queue --format md >> $GITHUB_STEP_SUMMARY\n");
  cmd->add_option("base", o->base, "the baseline capture")->required();
  cmd->add_option("new", o->next, "the capture to judge")->required();
  cmd->add_option("--threshold", o->threshold, "smallest change that matters: 5% or 0.05")->capture_default_str();
  cmd->add_option("--metric", o->metric, "what gates, comma separated: exec, queue, makespan, all")->capture_default_str();
  cmd->add_option("--alpha", o->alpha, "rank-test significance")->check(CLI::Range(1e-9, 0.5))->capture_default_str();
  cmd->add_option("--top", o->top, "kernel rows shown in text/md (0 = all; json/csv show all)")->capture_default_str();
  cmd->add_flag("--name-only", o->name_only, "match kernels by name alone, ignoring range paths");
  cmd->add_option("--format", o->format, "output format")
      ->check(CLI::IsMember({"text", "md", "json", "csv"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_diff(*o); });
}

}  // namespace gantt_cli
