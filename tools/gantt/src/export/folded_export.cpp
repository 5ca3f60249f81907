// Folded stacks ("range;range;kernel weight_ns"), the input of flamegraph.pl, speedscope and
// inferno. One line per distinct stack, sorted, weights in nanoseconds of GPU exec time.
// The stack is the NVTX range chain of the launching thread, outermost first, then the
// kernel (copies and memsets as "[memcpy HtoD]", "[memset]").
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "gantt/analysis/event_scan.h"
#include "gantt/analysis/flame.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/stream_stats.h"
#include "gantt/export/export.h"
#include "gantt/model/text.h"
#include "scan_job.h"

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

// gpu_stacks()' frame under each stack with StackRoot::kDevice: "gpu1", "rank 3 gpu1" among
// several captures (the recorded rank, else the capture's place).
std::string device_frame(const Model& context, size_t capture, size_t captures, uint32_t device) {
  std::string frame;
  if (captures > 1) {
    const auto& h = context.captures.front().header;
    frame = (h.has_rank() ? "rank " + std::to_string(h.rank()) : "capture " + std::to_string(capture)) + " ";
  }
  return frame + "gpu" + std::to_string(device) + "\x1f";
}

// One share of a scanned capture, for stacks rooted at their GPUs: each GPU operation's exec
// time by (device, its launch's innermost NVTX range, its kernel key), as gpu_stacks() adds
// it up on a loaded model (analysis::is_gpu_work: a start, and an end after it).
class DeviceStackShare final : public analysis::EventConsumer {
 public:
  explicit DeviceStackShare(const exporting::LaunchRanges& ranges) : ranges_(ranges) {}

  void event(const analysis::ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
    if (e.kind == EventKind::kSync || e.kind == EventKind::kHostFunc || e.start_ns == 0 || e.end_ns <= e.start_ns) return;
    ++events;
    weights[{e.device, ranges_.of(e), leaf(e, reader)}] += e.end_ns - e.start_ns;
  }

  // (device, range row, leaf frame) -> ns.
  std::map<std::tuple<uint32_t, uint32_t, std::string>, uint64_t> weights;
  uint64_t events = 0;

 private:
  // analysis::kernel_key() as a frame: copies and memsets by kind, the rest by the name the
  // loaded model shows (a kernel's demangled name; its launch call's without one).
  std::string leaf(const analysis::ScannedEvent& e, const gpuhook::CaptureReader& reader) {
    if (e.kind == EventKind::kMemcpy) return analysis::stack_leaf(std::string("[memcpy ") + copy_kind_name(e.copy_kind) + "]");
    if (e.kind == EventKind::kMemset) return analysis::stack_leaf("[memset]");
    const uint32_t id = e.name_id != 0 ? e.name_id : e.launch_name_id;
    if (id == 0) return analysis::stack_leaf(unjoined_name(e.kind, e.copy_kind));
    auto [it, fresh] = names_.try_emplace(id);
    if (fresh) it->second = analysis::stack_leaf(demangle(reader.string(id)));
    return it->second;
  }
  const exporting::LaunchRanges& ranges_;
  std::unordered_map<uint32_t, std::string> names_;
};

// The stacks rooted at their GPUs of captures scanned on one clock (the filter selected on the
// job's), capture after capture: memory grows with devices, ranges and names, not events.
bool device_stacks(const std::vector<std::string>& paths, const ScanExportOptions& o, analysis::Stacks* stacks,
                   ScannedExport* result, std::string* why_not) {
  analysis::EventScanOptions so;
  so.load = o.load;
  so.threads = o.threads;
  so.join_nccl = true;  // an NCCL kernel is named as the loaded join names it
  std::optional<exporting::ScanJob> job = exporting::open_scan_job(paths, so, o.filter, why_not);
  if (!job) return false;
  for (size_t c = 0; c < job->scanners.size(); ++c) {
    analysis::EventScanner& scanner = *job->scanners[c];
    const Model& context = scanner.context();
    const exporting::LaunchRanges ranges(context);
    std::vector<std::unique_ptr<DeviceStackShare>> shares;
    std::vector<analysis::EventConsumer*> consumers;
    for (size_t i = 0; i < scanner.shares(); ++i) {
      shares.push_back(std::make_unique<DeviceStackShare>(ranges));
      consumers.push_back(shares.back().get());
    }
    std::string why;
    if (!scanner.run(consumers, &why)) {
      if (why_not) *why_not = exporting::about_capture(paths, c, why);
      return false;
    }
    std::unordered_map<uint32_t, std::string> frames;  // range row -> its chain's frames
    for (const auto& sh : shares) {
      result->events += sh->events;
      for (const auto& [key, ns] : sh->weights) {
        const auto& [device, range, leaf] = key;
        std::string stack = device_frame(context, c, paths.size(), device);
        if (range != kNone) {
          auto [it, fresh] = frames.try_emplace(range);
          if (fresh) it->second = analysis::range_frames(context, range);
          stack += it->second;
        }
        (*stacks)[stack + leaf] += ns;
      }
    }
    result->corrupt = result->corrupt || scanner.corrupt();
    result->warnings.insert(result->warnings.end(), scanner.warnings().begin(), scanner.warnings().end());
    job->scanners[c].reset();
  }
  return true;
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
  // A root per GPU needs each event's device beside its stack, which they do not keep: those
  // stacks are added up from an event scan instead (device_stacks). Loaded instead: a merged
  // capture among several (its sections' places in the job).
  bool scans() const override { return true; }
  bool write_scanned(const std::vector<std::string>& paths, const ScanExportOptions& o, const OpenOutput& open_output,
                     ScannedExport* result, std::string* why_not) const override {
    if (o.folded_root == analysis::StackRoot::kDevice) {
      analysis::Stacks stacks;
      if (!device_stacks(paths, o, &stacks, result, why_not)) return false;
      return write_stacks(stacks, o, open_output, result);
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
    return write_stacks(stacks, o, open_output, result);
  }

 private:
  static bool write_stacks(const analysis::Stacks& stacks, const ScanExportOptions& o, const OpenOutput& open_output,
                           ScannedExport* result) {
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
