// Pipeline bubbles and point-to-point transfers from a scan (job_scan.h scan_pipelines): the
// NCCL calls and their kernels as scan_comm() holds them, then one more scan of the events for
// the work on the stages' devices, step by step (pipeline_work.h).
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "gantt/analysis/job_scan.h"
#include "gantt/model/range_lookup.h"
#include "pipeline_work.h"

namespace gantt::analysis {

namespace {

// A kernel of a pipeline's send or receive, by (correlation id, start) in its capture's own times.
using P2pKernelKey = std::pair<uint32_t, uint64_t>;

// Of one capture, what a share reads: the top-level range of a launch, from the capture's
// context (its NVTX ranges), as ModelBuilder gives each event its range; and the pipelines'
// kernels, with their communicators.
struct CaptureTops {
  CaptureTops(const Model& context, const std::map<P2pKernelKey, std::vector<uint64_t>>* p2p)
      : context(context), lookup(context.ranges, 0), p2p(p2p) {
    for (uint32_t r = 0; r < context.ranges.size(); ++r)
      thread_row.emplace(context.threads.thread_id[context.ranges.thread[r]], context.ranges.thread[r]);
  }
  // The top range of an event's launch, kNone for none.
  uint32_t top(const ScannedEvent& e) const {
    if (!e.launched || lookup.empty()) return kNone;
    const auto it = thread_row.find(e.launch_thread_id);
    if (it == thread_row.end()) return kNone;
    return detail::top_range(context, lookup.at(it->second, e.launch_ns));
  }
  std::string_view name(uint32_t top) const {
    return top == kNone ? std::string_view() : context.string(context.ranges.name[top]);
  }
  const Model& context;
  RangeLookup lookup;
  std::unordered_map<uint64_t, uint32_t> thread_row;  // thread id -> row, threads with ranges
  const std::map<P2pKernelKey, std::vector<uint64_t>>* p2p;  // null: the capture has none
};

class StageShare final : public EventConsumer {
 public:
  StageShare(const std::vector<detail::PipelineCandidate>& pipelines, const std::optional<detail::StepNames>& steps,
             uint16_t capture, const CaptureTops& tops)
      : work(pipelines, steps), capture_(capture), tops_(tops) {}
  bool stopped() const override { return work.windows() > detail::kMaxStepWindows; }
  void event(const ScannedEvent& e, const gpuhook::CaptureReader&) override {
    const std::vector<uint64_t>* comms = &none_;
    bool p2p = false;
    if (tops_.p2p)
      if (const auto it = tops_.p2p->find({e.correlation_id, e.start_ns}); it != tops_.p2p->end()) {
        comms = &it->second;
        p2p = true;
      }
    const bool wanted = detail::stage_work(e.kind, e.start_ns, e.end_ns) && work.wanted(capture_, e.device);
    if (!wanted && !p2p) return;
    const uint32_t top = tops_.top(e);
    const std::string_view name = tops_.name(top);
    if (p2p) p2p_tops.emplace(P2pKernelKey{e.correlation_id, e.start_ns}, std::string(name));
    if (wanted) work.add(capture_, e.device, e.kind, e.start_ns, e.end_ns, top, name, *comms);
  }
  detail::StageWork work;
  std::map<P2pKernelKey, std::string> p2p_tops;  // the pipelines' kernels read: their top ranges' names

 private:
  uint16_t capture_;
  const CaptureTops& tops_;
  const std::vector<uint64_t> none_;
};

}  // namespace

using detail::timed_event;

std::optional<ScannedPipelines> scan_pipelines(const std::vector<std::string>& paths, const EventScanOptions& options,
                                               const EventFilter* filter, const std::string& step_range,
                                               std::string* why_not) {
  // A filter leaves out the kernels a load's restriction drops (their calls kept without them)
  // and the work the stages' scan reads, as restrict_to_filter() leaves them out of a load.
  std::optional<ScannedRecords> comm = scan_comm(paths, options, filter, why_not);
  if (!comm) return std::nullopt;
  ScannedPipelines out{std::move(*comm), {}, {}};
  if (!out.comm.job.unusable.empty() || !out.comm.job.empty_window.empty()) return out;
  const Model& m = out.comm.records;
  const std::vector<detail::PipelineCandidate> pipelines = detail::pipeline_candidates(m, &out.notes);
  // The pipelines' kernels in their captures' own times: the scan reads those.
  std::vector<std::map<P2pKernelKey, std::vector<uint64_t>>> p2p(paths.size());
  const auto key_of = [&](uint32_t e) {
    const uint16_t c = m.events.capture[e];
    const int64_t offset = c < out.comm.offsets.size() ? out.comm.offsets[c] : 0;
    return P2pKernelKey{m.events.correlation_id[e], m.events.start_ns[e] - static_cast<uint64_t>(offset)};
  };
  for (const detail::PipelineCandidate& p : pipelines)
    for (uint32_t i : p.calls)
      if (const uint32_t e = m.nccl.event[i]; timed_event(m, e) && m.events.capture[e] < p2p.size()) {
        std::vector<uint64_t>& comms = p2p[m.events.capture[e]][key_of(e)];
        if (std::find(comms.begin(), comms.end(), p.comm_id) == comms.end()) comms.push_back(p.comm_id);
      }
  // The steps kept: the one asked, else every top-level range (the steps are chosen from the
  // kernels this scan finds).
  std::optional<detail::StepNames> steps;
  if (!step_range.empty()) steps = detail::StepNames{step_range};
  detail::StageWork work(pipelines, steps);
  std::vector<std::map<P2pKernelKey, std::string>> tops_of(paths.size());
  if (!pipelines.empty()) {
    EventScanOptions so = options;
    so.join_nccl = true;  // NCCL's kernels claimed as a load claims them: not a stage's own work
    std::unique_ptr<CaptureTops> tops;
    std::vector<std::unique_ptr<StageShare>> shares;
    const auto consumers = [&](size_t c, const EventScanner& scanner, const Model&) {
      tops = std::make_unique<CaptureTops>(scanner.context(), p2p[c].empty() ? nullptr : &p2p[c]);
      shares.clear();
      std::vector<EventConsumer*> each;
      for (size_t i = 0; i < scanner.shares(); ++i) {
        shares.push_back(std::make_unique<StageShare>(pipelines, steps, static_cast<uint16_t>(c), *tops));
        each.push_back(shares.back().get());
      }
      return each;
    };
    const auto done = [&](size_t c, const EventScanner&, bool ran, const std::string& why) -> std::string {
      const std::string too_many = "more pipeline steps than a scan keeps";
      if (!ran) return std::any_of(shares.begin(), shares.end(), [](const auto& sh) { return sh->stopped(); }) ? too_many : why;
      for (const auto& sh : shares) {
        work.absorb(sh->work);
        tops_of[c].insert(sh->p2p_tops.begin(), sh->p2p_tops.end());
      }
      shares.clear();
      return work.windows() > detail::kMaxStepWindows ? too_many : std::string();
    };
    if (!scan_job(paths, so, filter, consumers, done, why_not, WindowEnd::kSettledAfter)) return std::nullopt;
  }
  out.reports = detail::pipeline_reports(
      m, pipelines, work,
      [&](uint32_t call) {
        const uint32_t e = m.nccl.event[call];
        if (!timed_event(m, e) || m.events.capture[e] >= tops_of.size()) return std::string();
        const auto& tops = tops_of[m.events.capture[e]];
        const auto it = tops.find(key_of(e));
        return it == tops.end() ? std::string() : it->second;
      },
      step_range);
  return out;
}

}  // namespace gantt::analysis
