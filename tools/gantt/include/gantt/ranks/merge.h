// Jobs: many captures, one timeline. Loading several captures (or one merged file) as one
// model, aligning them, and merging them into one capture.
// API stability: fields and functions are only ever added, never changed or removed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gantt/ranks/alignment.h"

namespace gantt {

class Model;
struct LoadOptions;

// The same as gantt::load(), which now reads merged files too; kept for callers of 0.1.
[[deprecated("use gantt::load")]] Model load_job(const std::vector<std::string>& paths, const LoadOptions& options);

// Aligns the captures of a loaded model onto capture 0's clock (align_ranks over
// rank_clock_inputs, then apply_rank_alignment) and returns what was applied, for `info`
// and the chart footer. A model with one capture is left as it is.
RankAlignment align_model_ranks(Model& model, const RankAlignOptions& options = {});

struct MergeResult {
  RankAlignment alignment;
  std::vector<RankClockInput> inputs;  // without the collective ends (for describe())
  uint64_t records_written = 0;
  uint64_t records_lost = 0;           // the output could not take them
  std::vector<std::string> warnings;   // damaged inputs: "<path>: byte N: what", merged up to there
};

// One input's clock-alignment inputs, a RankClockInput per section (a merged file has several).
using ClockInputsOf = std::function<std::vector<RankClockInput>(const std::string& path)>;

// Writes one capture holding every input, each as its own section (its Header first, its
// times shifted onto capture 0's clock, its strings re-interned). Two passes: the first
// aligns, on `clock_inputs_of` each input in turn; the second streams record by record
// (memory: one chunk per reader plus the writer's chunk).
// Throws gpuhook::CaptureError for an unreadable input, std::runtime_error when the output
// cannot be created (it never overwrites a file).
MergeResult merge_captures(const std::vector<std::string>& inputs, const std::string& output,
                           const ClockInputsOf& clock_inputs_of);
// The first pass loads each capture whole, one at a time (memory of the largest one).
MergeResult merge_captures(const std::vector<std::string>& inputs, const std::string& output,
                           const LoadOptions& options);
MergeResult merge_captures(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace gantt
