// Lane grouping: which lane an event sits in and what the lane is called.
#include <algorithm>
#include <cstdio>

#include "gantt/ranks/ranks.h"
#include "gantt/render/rank_links.h"
#include "gantt/render/render.h"
#include "gantt/model/text.h"

namespace gantt {

bool parse_lane_mode(std::string_view text, LaneMode* mode) {
  if (text == "stream") *mode = LaneMode::kStream;
  else if (text == "device") *mode = LaneMode::kDevice;
  else if (text == "thread") *mode = LaneMode::kThread;
  // "capture": the same lanes, said for captures that are not ranks (a run and its whatif
  // prediction stacked in one chart).
  else if (text == "rank" || text == "capture") *mode = LaneMode::kRank;
  else return false;
  return true;
}

LaneKey lane_key(const Model& m, uint32_t e, LaneMode mode) {
  LaneKey k;
  k.capture = m.events.capture[e];
  switch (mode) {
    case LaneMode::kStream:
      k.device = m.events.device[e];
      k.group = m.events.stream[e];
      break;
    case LaneMode::kDevice:
      k.device = m.events.device[e];
      break;
    case LaneMode::kThread: {
      k.device = kNone;
      const uint32_t a = m.events.api[e];
      k.group = a == kNone ? -1 : static_cast<int64_t>(m.api.thread[a]);
      break;
    }
    case LaneMode::kRank:  // one lane per capture: a rank of a multi-rank job
      k.device = kNone;
      break;
  }
  return k;
}

namespace {
std::string device_label(const Model& m, uint16_t capture, uint32_t device) {
  std::string s = "GPU" + std::to_string(device);
  if (m.captures.size() > 1) s = "#" + std::to_string(capture) + " " + s;
  if (const auto* d = m.captures[capture].device(device)) {
    std::string name = d->name();
    if (name.starts_with("NVIDIA ")) name = name.substr(7);
    s += " " + name;
  }
  return s;
}
}  // namespace

std::string lane_label(const Model& m, const LaneKey& k, LaneMode mode, int32_t prio) {
  switch (mode) {
    case LaneMode::kStream: {
      // CUPTI gives device-wide records (cudaDeviceSynchronize) no stream: all ones.
      if (k.group == UINT32_MAX) return "no stream (device-wide)";
      std::string s = "stream " + std::to_string(k.group);
      if (prio != 0) s += " (prio " + std::to_string(prio) + ")";
      return s;
    }
    case LaneMode::kDevice:
      return device_label(m, k.capture, k.device);
    case LaneMode::kThread: {
      if (k.group < 0) return "launcher unknown";
      const auto row = static_cast<uint32_t>(k.group);
      std::string s = "launched by tid " + std::to_string(m.threads.thread_id[row]);
      if (m.threads.name[row]) s += " (" + utf8_clean(m.string(m.threads.name[row])) + ")";
      return s;
    }
    case LaneMode::kRank:
      return utf8_clean(rank_lane_label(m, k.capture));
  }
  return "";
}

std::vector<int> overlap_rows(const Model& m, const std::vector<uint32_t>& events, int max_rows) {
  std::vector<int> row(events.size(), 0);
  std::vector<uint64_t> row_end;
  for (size_t i = 0; i < events.size(); ++i) {
    const uint32_t e = events[i];
    if (m.events.kind[e] == EventKind::kSync) continue;
    size_t r = 0;
    while (r < row_end.size() && m.events.start_ns[e] < row_end[r]) ++r;
    if (r >= static_cast<size_t>(max_rows)) {
      r = static_cast<size_t>(max_rows) - 1;  // past the cap the last row stacks, as one lane did before
    } else if (r == row_end.size()) {
      row_end.push_back(0);
    }
    row_end[r] = std::max(row_end[r], m.events.end_ns[e]);
    row[i] = static_cast<int>(r);
  }
  return row;
}

std::string device_section_label(const Model& m, uint16_t capture, uint32_t device) {
  std::string s = device_label(m, capture, device);
  if (const auto* d = m.captures[capture].device(device))
    s += " (sm_" + std::to_string(d->cc_major()) + std::to_string(d->cc_minor()) + ", " + std::to_string(d->sm_count()) + " SMs)";
  return s;
}

}  // namespace gantt
