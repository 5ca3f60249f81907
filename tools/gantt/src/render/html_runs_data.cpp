// What several ranks or runs add to the HTML page's data (html_data_writer.h): the collectives
// matched across ranks, and a diff page's differential flame graph stacks.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "gantt/analysis/flame.h"
#include "gantt/ranks/ranks.h"
#include "gantt/render/rank_links.h"
#include "html_data_writer.h"

namespace gantt::html::writer {

// Several ranks: each collective matched across them (collective_links, the same the chart
// links and outlines), its ranks' kernels on the page and the last to arrive. One varint run,
// fields per collective in this order (viewer_ranks.js): first start delta (zigzag, ns from the
// window's start), end - first start, last rank + 1, spread (last - first arrival), how many
// of its kernels are on the page, then per kernel its lane and index, then which of them
// arrived last (its place in that list + 1, 0 = not on the page).
void DataWriter::write_collectives() {
  struct OnPage {
    size_t run;
    int64_t start;  // page time of the first arrival
    const CollectiveLink* link;
    std::vector<uint32_t> events;
  };
  std::vector<std::vector<CollectiveLink>> links(runs_.size());
  std::vector<OnPage> all;
  for (size_t run = 0; run < runs_.size(); ++run) {
    const Model& mm = m(run);
    if (!o_.collective_links || mm.captures.size() < 2) continue;
    links[run] = collective_links(mm);
    for (const CollectiveLink& l : links[run]) {
      OnPage c{run, 0, &l, {}};
      uint64_t first = UINT64_MAX;
      for (uint32_t e : l.events) {
        if (e >= lane_of_[run].size() || lane_of_[run][e] == kNone) continue;
        c.events.push_back(e);
        first = std::min(first, mm.events.start_ns[e]);
      }
      if (c.events.empty()) continue;
      c.start = rel(run, first);
      all.push_back(std::move(c));
    }
  }
  // In page time order: the viewer searches them by start (a diff page has two runs' worth).
  std::stable_sort(all.begin(), all.end(), [](const OnPage& a, const OnPage& b) { return a.start < b.start; });
  std::string packed;
  int64_t prev = 0;
  for (const OnPage& c : all) {
    const CollectiveLink& l = *c.link;
    const uint64_t first = runs_[c.run].t0 + static_cast<uint64_t>(c.start);
    append_varint(packed, zigzag(c.start - prev));
    prev = c.start;
    append_varint(packed, l.end_ns > first ? l.end_ns - first : 0);
    append_varint(packed, static_cast<uint64_t>(std::max(l.last_rank, -1) + 1));
    append_varint(packed, l.spread_ns);
    append_varint(packed, c.events.size());
    size_t last = 0;
    for (size_t k = 0; k < c.events.size(); ++k) {
      append_varint(packed, lane_of_[c.run][c.events[k]]);
      append_varint(packed, index_of_[c.run][c.events[k]]);
      if (c.events[k] == l.last_event) last = k + 1;
    }
    append_varint(packed, last);
  }
  st_.collectives = all.size();
  j_ += ",\"collectives\":{\"n\":" + std::to_string(all.size()) + ",\"packed\":\"" + base64(packed) + "\"}";
}

// A diff page: the differential flame graph's stacks, GPU time of each in both runs (the
// stacks analysis::gpu_stacks makes, as diff -o x.svg draws them): [frames..., base, new].
void DataWriter::write_diff() {
  if (!diff_) return;
  j_ += ",\"diff\":{\"base\":";
  append_script_string(j_, runs_.front().label);
  j_ += ",\"next\":";
  append_script_string(j_, runs_.back().label);
  j_ += ",\"view_ns\":" + std::to_string(diff_->view_ns) + ",\"stacks\":[";
  std::map<std::string, std::pair<uint64_t, uint64_t>> both;
  for (const auto& [stack, ns] : diff_->base) both[stack].first += ns;
  for (const auto& [stack, ns] : diff_->next) both[stack].second += ns;
  bool first = true;
  for (const auto& [stack, ns] : both) {
    j_ += first ? "[" : ",[";
    first = false;
    for (const std::string& frame : analysis::split_stack(stack)) {
      append_script_string(j_, frame);
      j_ += ',';
    }
    j_ += std::to_string(ns.first) + "," + std::to_string(ns.second) + "]";
  }
  j_ += "]}";
}


}  // namespace gantt::html::writer
