// Cross-capture clock alignment (see ranks.h for why collectives are the ruler).
//
// Captures are grouped by boot id (one group = one clock). Group 0 holds capture 0 and is
// the reference. Every other group starts from its REALTIME anchor
// (realtime - monotonic_raw at start, compared with the reference's); when it shares
// enough collectives with groups already placed, its offset becomes the median of
// (consensus end - own end) over those collectives, after dropping outliers (a collective
// the hook saw half-way, a rank that hung). Groups are placed outward from the reference,
// so a host that shares collectives only with another non-reference host is still placed.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "gantt/ranks/ranks.h"
#include "stats_util.h"

namespace gantt {

using ranks_detail::median;
using ranks_detail::percentile;

const char* to_string(RankAlignMethod method) {
  switch (method) {
    case RankAlignMethod::kReference: return "reference clock";
    case RankAlignMethod::kSameBoot: return "same boot as reference (no shift)";
    case RankAlignMethod::kCollectives: return "REALTIME anchor refined by collectives";
    case RankAlignMethod::kRealtimeAnchor: return "REALTIME anchor only";
    case RankAlignMethod::kUnaligned: return "unaligned (no anchor, no shared collectives)";
  }
  return "?";
}

namespace {

struct Key {
  uint64_t comm_id, sequence;
  bool operator<(const Key& o) const { return comm_id != o.comm_id ? comm_id < o.comm_id : sequence < o.sequence; }
};

struct Group {
  std::vector<size_t> members;
  bool has_anchor = false;
  int64_t anchor_ns = 0;           // realtime - monotonic_raw (median over members)
  std::map<Key, double> ends;      // median end per collective over members
  bool placed = false;
  double offset_ns = 0;
  RankAlignMethod method = RankAlignMethod::kUnaligned;
  uint64_t used = 0, outliers = 0;
};

// Robust location of `d`: median, then the median of the values within the outlier band.
double robust_center(std::vector<double> d, const RankAlignOptions& o, uint64_t* kept, uint64_t* dropped) {
  std::vector<double> tmp = d;
  double med = median(tmp);
  std::vector<double> dev;
  dev.reserve(d.size());
  for (double x : d) dev.push_back(std::fabs(x - med));
  double mad = median(dev) * 1.4826;
  double band = std::max(o.outlier_mads * mad, static_cast<double>(o.outlier_floor_ns));
  std::vector<double> in;
  for (double x : d)
    if (std::fabs(x - med) <= band) in.push_back(x);
  *kept = in.size();
  *dropped = d.size() - in.size();
  return median(in);
}

}  // namespace

RankAlignment align_ranks(const std::vector<RankClockInput>& inputs, const RankAlignOptions& options) {
  RankAlignment out;
  out.captures.resize(inputs.size());
  if (inputs.empty()) return out;

  // Groups by boot id; an unknown boot id is never assumed shared.
  std::vector<Group> groups;
  std::unordered_map<std::string, uint32_t> by_boot;
  for (size_t c = 0; c < inputs.size(); ++c) {
    uint32_t g;
    auto it = inputs[c].boot_id.empty() ? by_boot.end() : by_boot.find(inputs[c].boot_id);
    if (it != by_boot.end()) {
      g = it->second;
    } else {
      g = static_cast<uint32_t>(groups.size());
      groups.emplace_back();
      if (!inputs[c].boot_id.empty()) by_boot.emplace(inputs[c].boot_id, g);
    }
    groups[g].members.push_back(c);
    out.captures[c].group = g;
  }

  for (Group& g : groups) {
    std::vector<int64_t> anchors;
    std::map<Key, std::vector<uint64_t>> ends;
    for (size_t c : g.members) {
      const RankClockInput& in = inputs[c];
      if (in.start_realtime_ns != 0 && in.start_monotonic_raw_ns != 0)
        anchors.push_back(static_cast<int64_t>(in.start_realtime_ns - in.start_monotonic_raw_ns));
      for (const CollectiveEnd& e : in.ends)
        if (e.end_ns != 0) ends[{e.comm_id, e.sequence}].push_back(e.end_ns);
    }
    if (!anchors.empty()) {
      g.has_anchor = true;
      // Exact integer median: REALTIME values near 1.8e18 do not fit a double's 53 bits.
      std::sort(anchors.begin(), anchors.end());
      size_t mid = anchors.size() / 2;
      g.anchor_ns = anchors.size() % 2 ? anchors[mid] : anchors[mid - 1] + (anchors[mid] - anchors[mid - 1]) / 2;
    }
    for (auto& [k, v] : ends) g.ends[k] = median(v);
  }

  Group& ref = groups[0];
  ref.placed = true;
  ref.method = RankAlignMethod::kReference;

  // Place groups outward from the reference: a group's offset is the robust center of
  // (consensus end - own end), where the consensus is taken only over groups already placed
  // by collectives. Only those are exact; letting anchor-placed groups vote would let every
  // non-reference host drift together by a common amount the median cannot see.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 1; i < groups.size(); ++i) {
      Group& g = groups[i];
      if (g.placed) continue;
      std::vector<double> d;
      for (const auto& [k, end] : g.ends) {
        std::vector<double> others;
        for (size_t j = 0; j < groups.size(); ++j) {
          if (j == i || !groups[j].placed) continue;
          auto it = groups[j].ends.find(k);
          if (it != groups[j].ends.end()) others.push_back(it->second + groups[j].offset_ns);
        }
        if (!others.empty()) d.push_back(median(others) - end);
      }
      if (d.size() < options.min_shared_collectives) continue;
      uint64_t kept = 0, dropped = 0;
      g.offset_ns = robust_center(d, options, &kept, &dropped);
      g.placed = true;
      g.method = RankAlignMethod::kCollectives;
      g.used = kept;
      g.outliers = dropped;
      progress = true;
    }
  }
  // The rest only have their REALTIME anchors (NTP-grade), or nothing at all.
  for (size_t i = 1; i < groups.size(); ++i) {
    Group& g = groups[i];
    if (g.placed) continue;
    if (g.has_anchor && ref.has_anchor) {
      g.offset_ns = static_cast<double>(g.anchor_ns - ref.anchor_ns);
      g.method = RankAlignMethod::kRealtimeAnchor;
    }
  }

  for (size_t c = 0; c < inputs.size(); ++c) {
    const Group& g = groups[out.captures[c].group];
    CaptureOffset& co = out.captures[c];
    co.offset_ns = static_cast<int64_t>(std::llround(g.offset_ns));
    co.method = g.method;
    if (out.captures[c].group == 0 && c != 0) co.method = RankAlignMethod::kSameBoot;
    co.anchor_offset_ns = (g.has_anchor && ref.has_anchor) ? g.anchor_ns - ref.anchor_ns : 0;
    co.collectives_used = g.used;
    co.outliers = g.outliers;
  }

  // Residuals: spread of each collective's aligned ends over all captures that saw it.
  std::map<Key, std::vector<std::pair<size_t, double>>> aligned;
  std::map<Key, std::vector<uint32_t>> groups_of;
  for (size_t c = 0; c < inputs.size(); ++c)
    for (const CollectiveEnd& e : inputs[c].ends)
      if (e.end_ns != 0) aligned[{e.comm_id, e.sequence}].push_back({c, static_cast<double>(e.end_ns) + static_cast<double>(out.captures[c].offset_ns)});
  std::vector<double> spreads;
  std::vector<std::vector<double>> per_capture(inputs.size());
  for (auto& [k, v] : aligned) {
    std::vector<uint32_t> gs;
    for (auto& [c, t] : v) gs.push_back(out.captures[c].group);
    std::sort(gs.begin(), gs.end());
    if (std::unique(gs.begin(), gs.end()) - gs.begin() < 2) continue;
    ++out.matched_collectives;
    double lo = v[0].second, hi = v[0].second;
    std::vector<double> ts;
    for (auto& [c, t] : v) {
      lo = std::min(lo, t);
      hi = std::max(hi, t);
      ts.push_back(t);
    }
    spreads.push_back(hi - lo);
    double m = median(ts);
    for (auto& [c, t] : v) per_capture[c].push_back(std::fabs(t - m));
  }
  out.residual_median_ns = median(spreads);
  out.residual_p95_ns = percentile(spreads, 95);
  out.residual_max_ns = spreads.empty() ? 0 : *std::max_element(spreads.begin(), spreads.end());
  for (size_t c = 0; c < inputs.size(); ++c) out.captures[c].residual_ns = median(per_capture[c]);
  return out;
}

namespace {
std::string format_ns(double ns) {
  char buf[64];
  double a = std::fabs(ns);
  if (a >= 1e6) snprintf(buf, sizeof buf, "%.3f ms", ns / 1e6);
  else if (a >= 1e3) snprintf(buf, sizeof buf, "%.1f us", ns / 1e3);
  else snprintf(buf, sizeof buf, "%.0f ns", ns);
  return buf;
}
}  // namespace

std::vector<std::string> describe(const RankAlignment& alignment, const std::vector<RankClockInput>& inputs) {
  std::vector<std::string> lines;
  for (size_t c = 0; c < alignment.captures.size(); ++c) {
    const CaptureOffset& co = alignment.captures[c];
    char buf[512];
    std::string host = c < inputs.size() ? inputs[c].host : std::string();
    std::string shift = (co.offset_ns >= 0 ? "+" : "") + format_ns(static_cast<double>(co.offset_ns));
    if (co.method == RankAlignMethod::kCollectives) {
      snprintf(buf, sizeof buf, "capture %zu (host %s): %s, %s (%" PRIu64 " collectives, %" PRIu64
               " outliers; anchor said %s), residual %s",
               c, host.c_str(), shift.c_str(), to_string(co.method), co.collectives_used, co.outliers,
               format_ns(static_cast<double>(co.anchor_offset_ns)).c_str(), format_ns(co.residual_ns).c_str());
    } else {
      snprintf(buf, sizeof buf, "capture %zu (host %s): %s, %s", c, host.c_str(), shift.c_str(), to_string(co.method));
    }
    lines.emplace_back(buf);
  }
  return lines;
}

std::string summarize(const RankAlignment& alignment) {
  uint32_t groups = 0;
  for (const CaptureOffset& co : alignment.captures) groups = std::max(groups, co.group + 1);
  char buf[256];
  // One clock: align_ranks matches no collectives (nothing to fit), so "0 shared collectives"
  // would read as ranks that shared none (two ranks of one host that shared 414 were told so).
  if (groups <= 1) {
    snprintf(buf, sizeof buf,
             "ranks aligned: %zu captures, 1 clock group: collectives not matched (one clock needs no alignment)",
             alignment.captures.size());
    return buf;
  }
  snprintf(buf, sizeof buf, "ranks aligned: %zu captures, %u clock group%s, %" PRIu64
           " shared collectives, residual spread %s median, %s p95",
           alignment.captures.size(), groups, groups == 1 ? "" : "s", alignment.matched_collectives,
           format_ns(alignment.residual_median_ns).c_str(), format_ns(alignment.residual_p95_ns).c_str());
  return buf;
}

}  // namespace gantt
