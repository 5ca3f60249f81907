#include "gantt/analysis/flame.h"

#include <algorithm>

#include "gantt/analysis/stats.h"
#include "gantt/model/text.h"

namespace gantt::analysis {
namespace {

constexpr char kSep = '\x1f';

std::string clean_frame(std::string_view name) {
  std::string f = printable_utf8(name);
  for (char& c : f)
    if (c == ';') c = ':';
  return f.empty() ? "?" : f;
}

}  // namespace

std::vector<std::string> split_stack(const std::string& stack) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= stack.size()) {
    const size_t next = std::min(stack.find(kSep, pos), stack.size());
    out.push_back(stack.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

std::string range_frames(const Model& m, uint32_t range) {
  std::vector<uint32_t> chain;
  for (uint32_t i = range; i != kNone && chain.size() < 256; i = m.ranges.parent[i]) chain.push_back(i);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) out += clean_frame(m.string(m.ranges.name[*it])) + kSep;
  return out;
}

std::string stack_leaf(std::string_view kernel_key) { return clean_frame(kernel_key); }

Stacks gpu_stacks(const Model& m, const Selection* sel, StackRoot root) {
  Stacks out;
  // "rank 3" (the recorded rank, else the capture's place), "gpu1" ("rank 3 gpu1" with several captures).
  const auto rank_frame = [&](uint16_t c) {
    const auto& h = m.captures[c].header;
    return h.has_rank() ? "rank " + std::to_string(h.rank()) : "capture " + std::to_string(c);
  };
  std::vector<std::string> prefix(m.ranges.size());
  std::vector<uint8_t> done(m.ranges.size(), 0);
  const auto add_event = [&](uint32_t e) {
    if (!is_gpu_work(m, e)) return;
    std::string stack;
    if (root == StackRoot::kRank) {
      stack = rank_frame(m.events.capture[e]) + kSep;
    } else if (root == StackRoot::kDevice) {
      stack = (m.captures.size() > 1 ? rank_frame(m.events.capture[e]) + " " : std::string()) + "gpu" +
              std::to_string(m.events.device[e]) + kSep;
    }
    const uint32_t r = m.events.range[e];
    if (r != kNone) {
      if (!done[r]) {
        prefix[r] = range_frames(m, r);
        done[r] = 1;
      }
      stack += prefix[r];
    }
    stack += stack_leaf(kernel_key(m, e));
    out[stack] += m.events.end_ns[e] - m.events.start_ns[e];
  };
  if (sel) {
    for (uint32_t e : sel->events) add_event(e);
  } else {
    for (uint32_t e = 0; e < m.events.size(); ++e) add_event(e);
  }
  return out;
}

}  // namespace gantt::analysis
