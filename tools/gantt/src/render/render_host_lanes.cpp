// Host thread lanes under the device sections: each thread's CUDA calls (blocking ones
// marked), its NVTX ranges nested by depth, and its NCCL calls.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gantt/render/colors.h"
#include "gantt/render/lod.h"
#include "render_builder.h"

namespace gantt::detail {

void Builder::draw_host_lanes() {
  // Threads with host calls or ranges in the window, in (capture, tid) order.
  const uint64_t w0 = f_.t0, w1 = f_.t1;
  const int cols = f_.columns();
  struct Thread {
    uint32_t row = kNone;  // in m_.threads; a streamed chart may know a thread by its calls only
    const ChartRest::HostCalls* calls = nullptr;
  };
  std::map<std::pair<uint16_t, uint64_t>, Thread> threads;
  // Each thread's calls folded; a streamed chart's model holds only some calls, and its rest
  // the folds made as the capture was read.
  std::vector<ChartRest::HostCalls> folded;
  if (rest_) {
    for (uint64_t tid : rest_->host_threads) threads[{0, tid}];
    for (const auto& [tid, calls] : rest_->host) threads[{0, tid}].calls = &calls;
  } else {
    std::vector<uint8_t> launched(m_.api.size(), 0);
    for (uint32_t e = 0; e < m_.events.size(); ++e)
      if (m_.events.api[e] != kNone) launched[m_.events.api[e]] = 1;
    folded.resize(m_.threads.size());
    for (uint32_t i = 0; i < m_.api.size(); ++i) {
      if (!host_call_in_window(f_, m_.api.start_ns[i], m_.api.end_ns[i])) continue;
      const uint32_t t = m_.api.thread[i];
      ChartRest::HostCalls& calls = folded[t];
      if (calls.other.columns() == 0) calls.other = calls.ticks = Coverage(cols);
      if (fold_host_call(f_, calls, m_.api.start_ns[i], m_.api.end_ns[i], launched[i], is_blocking_call(m_.string(m_.api.name[i]))))
        calls.blocking.push_back(i);
      threads[{m_.threads.capture[t], m_.threads.thread_id[t]}].calls = &calls;
    }
  }
  std::vector<std::vector<uint32_t>> ranges(m_.threads.size());
  size_t range_count = 0;
  for (uint32_t i = 0; i < m_.ranges.size(); ++i)
    if (m_.ranges.depth[i] < 3 &&
        host_call_in_window(f_, m_.ranges.start_ns[i], m_.ranges.end_ns[i] ? m_.ranges.end_ns[i] : w1) &&
        range_count < kMaxRanges) {
      ranges[m_.ranges.thread[i]].push_back(i);
      ++range_count;
    }
  for (uint32_t t = 0; t < m_.threads.size(); ++t) {
    const std::pair<uint16_t, uint64_t> key{m_.threads.capture[t], m_.threads.thread_id[t]};
    if (!ranges[t].empty()) threads[key].row = t;
    else if (auto it = threads.find(key); it != threads.end()) it->second.row = t;
  }
  if (threads.empty()) return;
  s_.text(make_text(12, y_ + 12, "host threads", 12, palette::kText, Anchor::kStart, true));
  y_ += 18;
  size_t bars = 0;
  size_t host_lanes = 0;
  static const std::vector<uint32_t> kNoRanges;
  for (const auto& [key, th] : threads) {
    if (host_lanes++ >= kMaxHostLanes) {
      ++st_.lanes_left_out;
      continue;
    }
    const uint32_t t = th.row;
    const std::vector<uint32_t>& lane_ranges = t == kNone ? kNoRanges : ranges[t];
    int depth = 0;
    for (uint32_t r : lane_ranges) depth = std::max(depth, m_.ranges.depth[r] + 1);
    const float ry = y_, cy = y_ + static_cast<float>(depth) * 10;
    const float h = static_cast<float>(depth) * 10 + 18;
    s_.rect(make_rect(f_.left, y_, f_.right - f_.left, h - 2, palette::kLaneBand));
    std::string label = "tid " + std::to_string(key.second);
    if (t != kNone && m_.threads.name[t]) label += " " + utf8_clean(m_.string(m_.threads.name[t]));
    if (m_.captures.size() > 1) label = "#" + std::to_string(key.first) + " " + label;
    s_.text(make_text(f_.left - 8, cy + 12, fit(label, kLabelWidth - 20), kFontSize, palette::kText, Anchor::kEnd));
    for (uint32_t r : lane_ranges) {
      const float x0 = std::max(f_.left, f_.x(m_.ranges.start_ns[r]));
      const float x1 = std::min(f_.right, m_.ranges.end_ns[r] ? f_.x(m_.ranges.end_ns[r]) : f_.right);
      if (x1 - x0 < 1 && m_.ranges.kind[r] != RangeKind::kMark) continue;
      const float y = ry + static_cast<float>(m_.ranges.depth[r]) * 10;
      // The colour the program gave its range (NVTX event attributes), else the range green.
      const Color fill = range_color(m_.ranges.color[r]);
      Rect rc = make_rect(x0, y, std::max(1.0f, x1 - x0), 9, fill);
      rc.tooltip = ellipsize(m_.range_path_of_range(r), 300) + "\n" + rel_time(m_.ranges.start_ns[r], f_.origin) + " \xE2\x80\xA6 " +
                   rel_time(m_.ranges.end_ns[r], f_.origin);
      if (m_.ranges.category[r]) rc.tooltip += "\ncategory " + std::to_string(m_.ranges.category[r]);
      s_.rect(std::move(rc));
      if (x1 - x0 > 30)
        s_.text(make_text(x0 + 2, y + 8, fit(m_.string(m_.ranges.name[r]), x1 - x0 - 4, 5.2f), 8, text_color_on(fill)));
    }
    // Calls: blocking ones and NCCL as bars, the rest as coverage, launches as ticks.
    Coverage other = th.calls ? th.calls->other : Coverage(cols), ticks = th.calls ? th.calls->ticks : Coverage(cols);
    if (th.calls) {
      for (uint32_t i : th.calls->blocking) {
        if (bars < kMaxHostBars) {
          draw_blocking_call(i, cy);
          ++bars;
        } else {
          add_host_call(f_, other, m_.api.start_ns[i], m_.api.end_ns[i]);
        }
      }
    }
    const int other_levels = other.levels_within(4, static_cast<size_t>(cols / 4));
    for (const auto& r : other.runs(other_levels))
      s_.rect(make_rect(f_.left + static_cast<float>(r.x0), cy + 8, static_cast<float>(r.x1 - r.x0), 6,
                        with_alpha(palette::kApi, level_alpha(r.level, other_levels))));
    for (const auto& r : ticks.runs())
      s_.rect(make_rect(f_.left + static_cast<float>(r.x0), cy, static_cast<float>(r.x1 - r.x0), 6,
                        with_alpha(palette::kLaunchTick, 200)));
    // NCCL calls of this thread.
    for (uint32_t n = 0; n < m_.nccl.size(); ++n) {
      if (t == kNone || m_.nccl.thread[n] != t || !host_call_in_window(f_, m_.nccl.start_ns[n], m_.nccl.end_ns[n]) ||
          bars >= kMaxHostBars)
        continue;
      const float x0 = f_.x(std::max(m_.nccl.start_ns[n], w0));
      const float x1 = f_.x(std::min(m_.nccl.end_ns[n] ? m_.nccl.end_ns[n] : m_.nccl.start_ns[n], w1));
      Rect rc = make_rect(x0, cy + 6, std::max(1.0f, x1 - x0), 10, palette::kNccl);
      rc.tooltip = utf8_clean(m_.string(m_.nccl.name[n])) + " " + format_bytes(m_.nccl.bytes[n]) + " rank " +
                   std::to_string(m_.nccl.rank[n]) + "/" + std::to_string(m_.nccl.nranks[n]);
      s_.rect(std::move(rc));
      ++bars;
    }
    y_ += h;
  }
}

void Builder::draw_blocking_call(uint32_t i, float cy) {
  const auto [x0, x1] = host_call_x(f_, m_.api.start_ns[i], m_.api.end_ns[i]);
  const std::string_view name = m_.string(m_.api.name[i]);
  Rect rc = make_rect(x0, cy + 6, x1 - x0, 10, palette::kBlocking);
  rc.tooltip = utf8_clean(api_display_name(name)) + " " + format_duration(static_cast<int64_t>(m_.api.end_ns[i] - m_.api.start_ns[i])) +
               " (host blocked)\n" + rel_time(m_.api.start_ns[i], f_.origin) + " \xE2\x80\xA6 " + rel_time(m_.api.end_ns[i], f_.origin);
  s_.rect(std::move(rc));
}

}  // namespace gantt::detail
