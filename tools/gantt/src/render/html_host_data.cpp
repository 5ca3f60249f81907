// The host thread lanes of the HTML page's data (html_data_writer.h): each thread's NVTX
// ranges, and its host calls that launched no event on the page.
#include <algorithm>
#include <map>
#include <string>

#include "gantt/render/annotate.h"
#include "gantt/render/colors.h"
#include "gantt/model/text.h"
#include "html_data_writer.h"

namespace gantt::html::writer {

void DataWriter::pick_ranges() {
  range_index_.resize(runs_.size());
  for (size_t run = 0; run < runs_.size(); ++run) {
    const Model& mm = m(run);
    range_index_[run].assign(mm.ranges.size(), kNone);
    if (!o_.host_lanes) continue;
    const uint64_t t0 = runs_[run].t0, t1 = t0 + span_;
    for (uint32_t r = 0; r < mm.ranges.size(); ++r) {
      const uint64_t b = mm.ranges.start_ns[r], e = mm.ranges.end_ns[r] ? mm.ranges.end_ns[r] : t1;
      if (b && b <= t1 && e >= t0 && mm.ranges.thread[r] < mm.threads.size()) page_ranges_.emplace_back(run, r);
    }
  }
  const auto key = [&](const std::pair<size_t, uint32_t>& x) {
    return std::make_pair(rel(x.first, m(x.first).ranges.start_ns[x.second]), m(x.first).ranges.depth[x.second]);
  };
  std::stable_sort(page_ranges_.begin(), page_ranges_.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  if (page_ranges_.size() > kMaxPageRanges) {
    st_.ranges_left_out = page_ranges_.size() - kMaxPageRanges;
    page_ranges_.resize(kMaxPageRanges);
  }
  for (size_t i = 0; i < page_ranges_.size(); ++i) range_index_[page_ranges_[i].first][page_ranges_[i].second] = static_cast<uint32_t>(i);
  st_.ranges = page_ranges_.size();
}

// Host thread lanes, as build_scene's: every thread with NVTX ranges or host calls in the
// window, in (run, capture, tid) order. Runs after write_lanes, which interns the calls that
// launched the page's events; the others are interned here, so write_strings has them all.
void DataWriter::pick_host_lanes() {
  if (!o_.host_lanes) return;
  std::map<std::tuple<size_t, uint16_t, uint64_t>, uint32_t> threads;
  const auto add_thread = [&](size_t run, uint32_t t) {
    const Model& mm = m(run);
    if (t < mm.threads.size()) threads.emplace(std::make_tuple(run, mm.threads.capture[t], mm.threads.thread_id[t]), t);
  };
  for (const auto& [run, r] : page_ranges_) add_thread(run, m(run).ranges.thread[r]);
  for (size_t i = 1; i < call_api_.size(); ++i) add_thread(call_api_[i].first, m(call_api_[i].first).api.thread[call_api_[i].second]);
  for (size_t run = 0; run < runs_.size(); ++run) {
    const Model& mm = m(run);
    std::vector<uint8_t> launched(mm.api.size(), 0);
    for (const PageLane* l : lanes_)
      if (l->run == run)
        for (uint32_t e : l->events)
          if (mm.events.api[e] < launched.size()) launched[mm.events.api[e]] = 1;
    const uint64_t t0 = runs_[run].t0, t1 = t0 + span_;
    for (uint32_t a = 0; a < mm.api.size(); ++a) {
      const uint64_t b = mm.api.start_ns[a], e = mm.api.end_ns[a] ? mm.api.end_ns[a] : b;
      if (launched[a] || !b || b > t1 || e < t0 || mm.api.thread[a] >= mm.threads.size()) continue;
      other_calls_.emplace_back(run, a);
    }
  }
  const auto key = [&](const std::pair<size_t, uint32_t>& c) { return rel(c.first, m(c.first).api.start_ns[c.second]); };
  std::stable_sort(other_calls_.begin(), other_calls_.end(), [&](const auto& a, const auto& b) { return key(a) < key(b); });
  if (other_calls_.size() > kMaxPageCalls) {
    st_.calls_left_out = other_calls_.size() - kMaxPageCalls;
    other_calls_.resize(kMaxPageCalls);
  }
  for (const auto& [run, a] : other_calls_) {
    add_thread(run, m(run).api.thread[a]);
    auto [it, added] = call_ids_.emplace(std::make_tuple(run, m(run).api.name[a], m(run).api.thread[a]),
                                         static_cast<uint32_t>(call_api_.size()));
    if (added) call_api_.emplace_back(run, a);
  }
  // NCCL calls, as the PNG's host lanes draw them: the host's arrival at each collective.
  for (size_t run = 0; run < runs_.size(); ++run) {
    const Model& mm = m(run);
    const uint64_t t0 = runs_[run].t0, t1 = t0 + span_;
    for (uint32_t n = 0; n < mm.nccl.size() && nccl_calls_.size() < kMaxPageCalls; ++n) {
      const uint64_t b = mm.nccl.start_ns[n], e = mm.nccl.end_ns[n] ? mm.nccl.end_ns[n] : b;
      if (!b || b > t1 || e < t0 || mm.nccl.thread[n] >= mm.threads.size()) continue;
      nccl_calls_.emplace_back(run, n);
      add_thread(run, mm.nccl.thread[n]);
    }
  }
  for (const auto& [k, t] : threads) {
    host_lane_[{std::get<0>(k), t}] = static_cast<uint32_t>(host_threads_.size());
    host_threads_.emplace_back(std::get<0>(k), std::get<1>(k), std::get<2>(k), t);
  }
  // Lane, then start order: each lane's calls one sorted run for the viewer.
  std::stable_sort(other_calls_.begin(), other_calls_.end(), [&](const auto& a, const auto& b) {
    return host_lane_[{a.first, m(a.first).api.thread[a.second]}] < host_lane_[{b.first, m(b.first).api.thread[b.second]}];
  });
  const auto nccl_key = [&](const std::pair<size_t, uint32_t>& c) {
    return std::make_pair(host_lane_[{c.first, m(c.first).nccl.thread[c.second]}], rel(c.first, m(c.first).nccl.start_ns[c.second]));
  };
  std::stable_sort(nccl_calls_.begin(), nccl_calls_.end(), [&](const auto& a, const auto& b) { return nccl_key(a) < nccl_key(b); });
  st_.host_calls = other_calls_.size();
  st_.nccl_calls = nccl_calls_.size();
}

void DataWriter::write_ranges() {
  j_ += ",\"host_lanes\":[";
  for (size_t lane = 0; lane < host_threads_.size(); ++lane) {
    const auto& [run, capture, tid, t] = host_threads_[lane];
    const Model& mm = m(run);
    if (lane) j_ += ',';
    std::string label = "tid " + std::to_string(tid);
    if (mm.threads.name[t]) label += " " + utf8_clean(mm.string(mm.threads.name[t]));
    if (mm.captures.size() > 1) label = "#" + std::to_string(capture) + " " + label;
    append_script_string(j_, in_run(run, label, " "));
  }
  // The ranges: one varint run, fields per range in this order (viewer_host.js decodeRanges):
  // host lane, start delta (zigzag), end as end - start + 1 (0 = never closed), depth, parent
  // as page index + 1 (0 = none), name, colour.
  std::map<std::pair<size_t, uint32_t>, uint32_t> name_ids;
  std::map<uint32_t, uint32_t> colour_ids;
  std::string names = "[", colours = "[", packed;
  int64_t prev = 0;
  for (const auto& [run, r] : page_ranges_) {
    const Model& mm = m(run);
    const RangeTable& R = mm.ranges;
    append_varint(packed, host_lane_[{run, R.thread[r]}]);
    const int64_t start = rel(run, R.start_ns[r]);
    append_varint(packed, zigzag(start - prev));
    prev = start;
    append_varint(packed, R.end_ns[r] >= R.start_ns[r] ? R.end_ns[r] - R.start_ns[r] + 1 : 0);
    append_varint(packed, R.depth[r]);
    const uint32_t parent = R.parent[r] < range_index_[run].size() ? range_index_[run][R.parent[r]] : kNone;
    append_varint(packed, parent == kNone ? 0 : uint64_t{parent} + 1);
    auto [n, new_name] = name_ids.emplace(std::make_pair(run, R.name[r]), static_cast<uint32_t>(name_ids.size()));
    if (new_name) {
      if (n->second) names += ',';
      append_script_string(names, utf8_clean(mm.string(R.name[r])));
    }
    append_varint(packed, n->second);
    auto [c, new_colour] = colour_ids.emplace(R.color[r], static_cast<uint32_t>(colour_ids.size()));
    if (new_colour) colours += std::string(c->second ? "," : "") + "\"" + hex(range_color(R.color[r])) + "\"";
    append_varint(packed, c->second);
  }
  j_ += "],\"ranges\":{\"n\":" + std::to_string(page_ranges_.size()) + ",\"packed\":\"" + base64(packed) +
        "\",\"names\":" + names + "],\"colours\":" + colours + "],\"left_out\":" + std::to_string(st_.ranges_left_out) + "}";
  // The host calls that launched nothing on the page: one varint run, fields per call in this
  // order (viewer_host.js): host lane, start delta (zigzag), duration + 1 (0 = it never
  // returned in the capture), call (an index into "calls").
  std::string calls;
  prev = 0;
  for (const auto& [run, a] : other_calls_) {
    const ApiTable& api = m(run).api;
    append_varint(calls, host_lane_[{run, api.thread[a]}]);
    const int64_t start = rel(run, api.start_ns[a]);
    append_varint(calls, zigzag(start - prev));
    prev = start;
    append_varint(calls, api.end_ns[a] >= api.start_ns[a] ? api.end_ns[a] - api.start_ns[a] + 1 : 0);
    append_varint(calls, call_ids_.at(std::make_tuple(run, api.name[a], api.thread[a])));
  }
  j_ += ",\"host_calls\":{\"n\":" + std::to_string(other_calls_.size()) + ",\"packed\":\"" + base64(calls) +
        "\",\"left_out\":" + std::to_string(st_.calls_left_out) + "}";
  // The NCCL calls: one varint run, fields per call in this order (viewer_calls.js): host lane,
  // start delta (zigzag), duration + 1 (0 = never returned), name (an index into "names"),
  // bytes, communicator rank + 1, ranks in it.
  std::string nccl, nccl_names = "[";
  std::map<std::pair<size_t, uint32_t>, uint32_t> nccl_name_ids;
  prev = 0;
  for (const auto& [run, n] : nccl_calls_) {
    const NcclTable& N = m(run).nccl;
    append_varint(nccl, host_lane_[{run, N.thread[n]}]);
    const int64_t start = rel(run, N.start_ns[n]);
    append_varint(nccl, zigzag(start - prev));
    prev = start;
    append_varint(nccl, N.end_ns[n] >= N.start_ns[n] ? N.end_ns[n] - N.start_ns[n] + 1 : 0);
    auto [id, added] = nccl_name_ids.emplace(std::make_pair(run, N.name[n]), static_cast<uint32_t>(nccl_name_ids.size()));
    if (added) {
      if (id->second) nccl_names += ',';
      append_script_string(nccl_names, utf8_clean(m(run).string(N.name[n])));
    }
    append_varint(nccl, id->second);
    append_varint(nccl, N.bytes[n]);
    append_varint(nccl, static_cast<uint64_t>(std::max(N.rank[n], -1) + 1));
    append_varint(nccl, static_cast<uint64_t>(std::max(N.nranks[n], 0)));
  }
  j_ += ",\"host_nccl\":{\"n\":" + std::to_string(nccl_calls_.size()) + ",\"packed\":\"" + base64(nccl) +
        "\",\"names\":" + nccl_names + "]}";
}


}  // namespace gantt::html::writer
