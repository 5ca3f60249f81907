// The stacks of flame graphs of GPU time: the NVTX range chain of the launching thread,
// outermost first, then the kernel, each with the exec time under it. render/flame_scene.h
// draws them; export's folded format writes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gantt/model/filter.h"
#include "gantt/model/model.h"

namespace gantt::analysis {

// The frame under every stack: none, the rank (capture) that ran it, or its GPU.
enum class StackRoot : uint8_t { kNone, kRank, kDevice };

// Frames joined by '\x1f' (a byte no cleaned frame contains) -> exec ns.
using Stacks = std::map<std::string, uint64_t>;

// The stacks of the selected events (all GPU work when `selection` is null). Frame names are
// cleaned for display: valid UTF-8, no control characters, ';' shown as ':'.
Stacks gpu_stacks(const Model& model, const Selection* selection = nullptr, StackRoot root = StackRoot::kNone);
std::vector<std::string> split_stack(const std::string& stack);

// A stack's frames above its kernel: the NVTX range `range` of `model` and its ancestors,
// outermost first, each cleaned and followed by the separator ("" for kNone). With
// stack_leaf(), what gpu_stacks() keys an event by; the streamed stats use the same two.
std::string range_frames(const Model& model, uint32_t range);
// The kernel's frame (analysis::kernel_key), cleaned.
std::string stack_leaf(std::string_view kernel_key);

}  // namespace gantt::analysis
