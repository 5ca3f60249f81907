// Pipeline-parallel bubbles: a communicator whose NCCL sends and receives only join
// neighbouring ranks (r <-> r+1) is taken as a pipeline, each rank a stage. Per stage and
// step, the bubble is the time the stage's GPU did no work of its own while one of its
// point-to-point transfers was in flight: it sat waiting for the previous stage's activations
// or the next stage's gradients. `stats --by pipeline` prints it; `diagnose pipeline-bubble`
// fires on it.
//
// A step is an occurrence of a top-level NVTX range (by default the name that encloses the
// stages' sends and receives most often), on the GPU: from the first start to the last end of
// the work launched inside it. Time between steps is not a bubble.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::analysis {

inline constexpr double kPipelineBubbleShare = 0.25;  // diagnose: of the stages' step time

struct PipelineStage {
  int32_t rank = 0;          // communicator rank: the stage
  uint16_t capture = 0;
  uint32_t device = 0;
  uint64_t steps = 0;
  uint64_t step_ns = 0;      // the steps' GPU spans, summed
  uint64_t busy_ns = 0;      // the stage's own (non-NCCL) GPU work in them
  uint64_t bubble_ns = 0;    // idle while a transfer of the stage was in flight
  uint64_t worst_step_bubble_ns = 0, worst_step_ns = 0;
  double share() const { return step_ns ? static_cast<double>(bubble_ns) / static_cast<double>(step_ns) : 0; }
};

struct PipelineReport {
  uint64_t comm_id = 0;
  int32_t nranks = 0;
  std::string step;                   // the step range's name, "" = the whole capture is one step
  std::vector<PipelineStage> stages;  // by rank; ranks without a capture are left out
  double micro_batches = 0;           // per step: stage 0's sends to stage 1 (forward activations)
  double bubble_share() const;        // all stages' bubble over all stages' step time
  // (p - 1) / (m + p - 1): what a GPipe or 1F1B schedule idles even with no other cost.
  double ideal_share() const;
};

// Pipelines analysed at most: the ones with the most sends and receives (see pipeline.cpp).
inline constexpr size_t kMaxPipelines = 64;
// A communicator of more ranks than this is no pipeline (a hostile file's 2^31 "stages").
inline constexpr int32_t kMaxPipelineStages = 4096;

// step_range: the NVTX range that is one step; "" picks it as the header says. `notes` gets
// what was left out.
std::vector<PipelineReport> pipeline_reports(const Model& model, const std::string& step_range = "",
                                             std::vector<std::string>* notes = nullptr);
// text and md: a table per pipeline between lines of prose; csv: one table of every pipeline's
// stages, a header row alone when there is none; json: the reports.
std::string format_pipeline_stats(const Model& model, const std::vector<PipelineReport>& reports, const std::string& format,
                                  const std::vector<std::string>& notes = {});

}  // namespace gantt::analysis
