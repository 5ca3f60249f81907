// `gantt-cli diff BASE NEW`: the CI gate. Kernels are matched across the two runs by
// demangled name and NVTX range path (the nodes of CUDA graph launches by name and their
// order within the launch, so one changed node is reported as that node); per match, count,
// total, median and p95 change; the
// same for makespan, busy %, overlap % and the stage medians.
//
// A change is a regression only when it is over the threshold *and* beyond the run-to-run
// noise seen in the per-instance samples (noise.h: Mann-Whitney U rank test and a seeded
// bootstrap interval of the median ratio, both required). Scalars with no per-instance
// samples (busy %, overlap %) are reported but never gate. Makespan gates through the
// durations of the repeated top-level NVTX range (the iteration) when both runs have one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gantt/noise/noise.h"
#include "gantt/analysis/stats.h"
#include "gantt/model/model.h"

namespace gantt::analysis {

enum class Metric : uint8_t { kExec = 1, kQueue = 2, kMakespan = 4 };
// "exec,queue" -> mask; throws std::invalid_argument on an unknown name.
uint32_t parse_metrics(const std::string& list);

struct DiffOptions {
  NoiseOptions noise;              // noise.threshold is the CI threshold
  uint32_t metrics = static_cast<uint32_t>(Metric::kExec);
  bool match_range = true;         // match by name and range path (false: name only)
};

struct KernelDiff {
  std::string name;   // kernel_key(): demangled name, "[memcpy HtoD]", ...
  std::string range;  // range path, "" when none
  uint32_t graph_node = 0;  // 1-based order of the node within its graph launch; 0 = not a graph node
  bool added = false;    // only in NEW
  bool removed = false;  // only in BASE
  Distribution base;
  Distribution next;
  Comparison exec;     // per-instance exec time
  Comparison queue;    // per-instance queued->start (when latency timestamps exist)
  bool regression = false;   // in a gated metric
  bool improvement = false;
};

struct ScalarDiff {
  std::string metric;  // "makespan", "busy % gpu0", "median queued->start", ...
  double base = 0;
  double next = 0;
  double change = 0;   // next/base - 1, or the difference in points for percentages
  bool percent_points = false;
  std::string verdict; // to_string(Verdict), or "reported" for scalars that never gate
  bool regression = false;
};

struct DiffReport {
  double threshold = 0.05;
  uint32_t metrics = 0;
  std::vector<KernelDiff> kernels;  // regressions first, then by |total change|, then name
  std::vector<ScalarDiff> summary;
  std::string makespan_note;        // how makespan noise was (or was not) estimated
  std::string samples_note;         // "" when every sample is an instance (see MatchSamples)
  uint64_t sketched_matches = 0;
  uint64_t regressions = 0;
  uint64_t improvements = 0;
  uint64_t added = 0;
  uint64_t removed = 0;
};

// What diff compares of one run, whether it comes from a capture (diff_input below) or from a
// stats summary (summary.h): per-instance samples by match key, the durations of each
// top-level range name, and the run's stats.
struct MatchSamples {
  std::string name;
  std::string range;
  uint32_t graph_node = 0;
  std::vector<int64_t> exec;
  std::vector<int64_t> queue;
  // Set when `exec` stands for the instances (from a summary's sketch): their exact count,
  // total, min and max, which the report shows instead of the stand-ins'.
  std::optional<Distribution> exec_exact;
};
struct DiffInput {
  std::map<std::string, MatchSamples> matches;               // by match key (range, name, node)
  std::map<std::string, std::vector<int64_t>> top_ranges;    // top-level range name -> durations
  StatsReport stats;
};
DiffInput diff_input(const Model& model, bool match_range);
// The same without `stats` (which summaries compute their own way).
DiffInput diff_samples(const Model& model, bool match_range);
// The match key of a kernel: range path, name and (for graph nodes) the node's order.
std::string match_key(const std::string& range, const std::string& name, uint32_t graph_node);

DiffReport diff_inputs(const DiffInput& base, const DiffInput& next, const DiffOptions& options = {});
DiffReport diff_models(const Model& base, const Model& next, const DiffOptions& options = {});
std::string format_diff(const DiffReport& report, Format format, size_t top = 0);

// Durations of the occurrences of the most frequent top-level range name (the iteration),
// or empty when no top-level name repeats at least kMinSamples times. `name` gets the name.
std::vector<int64_t> iteration_samples(const Model& model, std::string* name);
std::vector<int64_t> iteration_samples(const DiffInput& input, std::string* name);

}  // namespace gantt::analysis
