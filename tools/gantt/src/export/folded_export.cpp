// Folded stacks ("range;range;kernel weight_ns"), the input of flamegraph.pl, speedscope and
// inferno. One line per distinct stack, sorted, weights in nanoseconds of GPU exec time.
// The stack is the NVTX range chain of the launching thread, outermost first, then the
// kernel (copies and memsets as "[memcpy HtoD]", "[memset]").
#include <memory>
#include <optional>
#include <string>

#include "gantt/analysis/flame.h"
#include "gantt/analysis/stream_stats.h"
#include "gantt/export/export.h"

namespace gantt {
namespace {

// Frames are cleaned by gpu_stacks (no ';', no controls, valid UTF-8) and joined by a
// separator byte that becomes ';' here.
std::string folded_lines(const analysis::Stacks& stacks, const std::string& root) {
  std::string out;
  for (const auto& [stack, w] : stacks) {
    std::string line = root + stack;
    for (char& c : line)
      if (c == '\x1f') c = ';';
    out += line + " " + std::to_string(w) + "\n";
  }
  return out;
}

class FoldedExporter : public Exporter {
 public:
  std::string_view format() const override { return "folded"; }
  std::string_view description() const override {
    return "folded stacks 'range;range;kernel weight_ns' for flamegraph.pl and speedscope";
  }
  void write(const Model& m, const Selection& sel, const ExportOptions& options, std::ostream& os) const override {
    os << folded_lines(analysis::gpu_stacks(m, &sel, options.folded_root), "");
  }
  // The stacks are what the scanned stats keep for diff's flame graph (StreamedStats::stacks):
  // memory grows with the stacks, not the events. Several captures are scanned one after
  // another and their stacks added up: a weight is a duration, the same on any clock; a filter
  // on several selects on the job's clock, its window from the job's start (stream_job_stats).
  // Loaded instead: a root per GPU (each event's device beside its stack, which they do not
  // keep), and a merged capture among several (its sections' places in the job).
  bool scans() const override { return true; }
  bool write_scanned(const std::vector<std::string>& paths, const ScanExportOptions& o, const OpenOutput& open_output,
                     ScannedExport* result, std::string* why_not) const override {
    if (o.folded_root == analysis::StackRoot::kDevice) {
      if (why_not) *why_not = "--root device (a stack per GPU)";
      return false;
    }
    analysis::StreamStatsOptions so;
    so.by = {analysis::GroupBy::kKernel};
    so.matches = true;  // the stacks come with diff's matches
    so.load = o.load;
    so.threads = o.threads;
    so.filter = o.filter;
    analysis::Stacks stacks;
    const auto add = [&](size_t c, const analysis::StreamedStats& stats) {
      if (paths.size() > 1 && stats.context.captures.size() != 1) {
        if (why_not) *why_not = "a merged capture among several (its sections' places in the job)";
        return false;
      }
      // gpu_stacks()' rank frame: the recorded rank, else the capture's place in the job.
      std::string root;
      if (o.folded_root == analysis::StackRoot::kRank) {
        const auto& h = stats.context.captures.front().header;
        root = (h.has_rank() ? "rank " + std::to_string(h.rank()) : "capture " + std::to_string(c)) + "\x1f";
      }
      for (const auto& [stack, w] : stats.stacks) stacks[root + stack] += w;
      result->warnings.insert(result->warnings.end(), stats.warnings.begin(), stats.warnings.end());
      result->corrupt = result->corrupt || stats.corrupt;
      result->events += o.filter ? stats.selected_events : stats.summary.events;
      return true;
    };
    if (paths.size() > 1 && o.filter) {
      const std::optional<analysis::StreamedJob> job = analysis::stream_job_stats(paths, so, why_not);
      if (!job) return false;
      for (size_t c = 0; c < job->ranks.size(); ++c)
        if (!add(c, job->ranks[c])) return false;
    } else {
      for (size_t c = 0; c < paths.size(); ++c) {
        const std::optional<analysis::StreamedStats> stats = analysis::stream_stats(paths[c], so, why_not);
        if (!stats || !add(c, *stats)) return false;
      }
    }
    const std::string text = folded_lines(stacks, "");
    if (o.max_output != 0 && text.size() > o.max_output) {
      result->over = true;
      return true;
    }
    open_output() << text;
    result->bytes = text.size();
    return true;
  }
};

}  // namespace

std::unique_ptr<Exporter> make_folded_exporter() { return std::make_unique<FoldedExporter>(); }

}  // namespace gantt
