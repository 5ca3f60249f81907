// What pipeline_reports() reads, from a load of the captures (pipeline.cpp) or from a scan of
// them (pipeline_scan.cpp): the pipelines among the NCCL calls, and the work of each stage's
// device by the top-level NVTX range it was launched in. Internal to libgantt.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gantt/analysis/intervals.h"
#include "gantt/analysis/pipeline.h"

namespace gantt::analysis::detail {

// Whether event `e` of `m` has a start and ends after it.
bool timed_event(const Model& m, uint32_t e);

// The outermost range enclosing range row `range` of `m` (kNone stays kNone). Bounded: a hostile
// file's parent links cannot loop it forever.
uint32_t top_range(const Model& m, uint32_t range);

// Names of top-level ranges, looked up by view.
using StepNames = std::set<std::string, std::less<>>;

// A communicator whose sends and receives only join neighbouring ranks, with a direction.
struct PipelineCandidate {
  uint64_t comm_id = 0;
  int32_t nranks = 0;
  std::map<int32_t, std::pair<uint16_t, uint32_t>> stage;  // rank -> (capture, device)
  std::vector<uint32_t> calls;                              // its sends and receives: rows of Model::nccl
};

// The pipelines among `calls`' NCCL calls, by communicator, at most kMaxPipelines (those with
// the most sends and receives); `notes` gets what was left out.
std::vector<PipelineCandidate> pipeline_candidates(const Model& calls, std::vector<std::string>* notes);

// A stage's work in one step, or in the whole capture.
struct StepWork {
  uint64_t lo = UINT64_MAX, hi = 0;               // the first start and the last end of any of it
  IntervalUnion busy;                              // its own work: not NCCL's
  std::map<uint64_t, std::vector<Interval>> p2p;  // by communicator: the kernels of its sends and receives
  void absorb(const StepWork& other);
};

// The work on the devices of the pipelines' stages (not a sync, not a host function, timed),
// by the top-level push/pop range on the launching thread at the launch, and all of it.
// Memory grows with the ranges and the idle gaps between work, not with the work.
class StageWork {
 public:
  struct Device {
    StepWork whole;
    std::map<uint32_t, std::pair<std::string, StepWork>> by_top;  // top range (a row of its capture) -> its name, its work
  };
  // `steps`: the names of the top ranges kept step by step (nullopt: every name; the whole
  // capture is kept either way).
  explicit StageWork(const std::vector<PipelineCandidate>& pipelines, std::optional<StepNames> steps = std::nullopt);
  bool wanted(uint16_t capture, uint32_t device) const { return devices_.count({capture, device}) != 0; }
  // One operation on a wanted device: `top` its top range's row (kNone: none), `top_name` that
  // range's name; `comms` the communicators whose sends or receives it ran (its kernel's calls).
  void add(uint16_t capture, uint32_t device, EventKind kind, uint64_t start, uint64_t end, uint32_t top,
           std::string_view top_name, const std::vector<uint64_t>& comms);
  void absorb(const StageWork& other);
  const Device* at(uint16_t capture, uint32_t device) const;
  size_t windows() const { return windows_; }  // steps kept, on all devices

 private:
  std::map<std::pair<uint16_t, uint32_t>, Device> devices_;
  std::optional<StepNames> steps_;
  size_t windows_ = 0;
};

// Step windows a scan keeps (each a busy union, some 100 bytes and its idle gaps); past them the
// captures are loaded, whose reports keep only the steps they read.
inline constexpr size_t kMaxStepWindows = size_t{1} << 20;

// The step of pipeline `c`: `step_range`, else the top-level range name that encloses the most
// of its calls' kernels (`top_name` of a call; a tie to the name first in byte order). An
// unnamed range (a push whose message the hook could not read) is no step: reported as "" it
// read as "the whole capture" while the steps were its occurrences. "": the whole capture.
std::string pipeline_step(const Model& calls, const PipelineCandidate& c,
                          const std::function<std::string(uint32_t call)>& top_name, const std::string& step_range);

// Whether an operation is work a stage's step counts (pipeline.h): timed, neither a sync nor a
// host function.
bool stage_work(EventKind kind, uint64_t start, uint64_t end);

// The reports: `pipelines` from `calls`, the stages' work, and the name of the top-level range
// the kernel of each call (a row of calls.nccl) was launched in ("" for none or an unnamed one).
std::vector<PipelineReport> pipeline_reports(const Model& calls, const std::vector<PipelineCandidate>& pipelines,
                                             const StageWork& work, const std::function<std::string(uint32_t call)>& top_name,
                                             const std::string& step_range);

}  // namespace gantt::analysis::detail
