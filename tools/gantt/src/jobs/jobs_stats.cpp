// What the scheduler's record says: waits per partition and user, GPU-hours used and idle,
// fragmentation, the idle capacity while jobs waited, where a what-if job would have fit, and
// which captures belong to which job.
#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "gantt/jobs/jobs.h"

namespace gantt::jobs {
namespace {

int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1) { return std::max<int64_t>(0, std::min(a1, b1) - std::max(a0, b0)); }

int64_t percentile(std::vector<int64_t>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank: the smallest value with at least q of the values at or below it.
  size_t rank = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

std::vector<WaitStats> wait_table(const JobSet& set, bool by_partition, int64_t from, int64_t to) {
  std::map<std::string, std::vector<int64_t>> waits;
  std::map<std::string, size_t> waiting;
  for (const Job& j : set.jobs) {
    const std::string& key = by_partition ? j.partition : j.user;
    if (j.started()) {
      if (j.start_s >= from && j.start_s <= to) waits[key].push_back(j.start_s - j.submit_s);
    } else if (j.submit_s <= to) {
      ++waiting[key];
      waits[key];
    }
  }
  std::vector<WaitStats> out;
  for (auto& [key, v] : waits) {
    WaitStats w;
    w.key = key.empty() ? "(none)" : key;
    w.jobs = v.size();
    w.waiting = waiting[key];
    w.p50_s = percentile(v, 0.5);
    w.p90_s = percentile(v, 0.9);
    w.max_s = v.empty() ? 0 : v.back();
    out.push_back(std::move(w));
  }
  return out;
}

// One node's GPUs in use over time: change points (time, in use from then on) and a sparse
// table over the counts, so that the most in use over any window is two lookups.
struct NodeSteps {
  std::vector<int64_t> times;
  std::vector<std::vector<int64_t>> max;  // max[k][i]: the most in use over steps [i, i + 2^k)

  void build(std::vector<std::pair<int64_t, int64_t>>& deltas) {
    std::sort(deltas.begin(), deltas.end());
    int64_t cur = 0;
    std::vector<int64_t> level;
    for (size_t i = 0; i < deltas.size(); ++i) {
      cur += deltas[i].second;
      if (i + 1 < deltas.size() && deltas[i + 1].first == deltas[i].first) continue;
      times.push_back(deltas[i].first);
      level.push_back(cur);
    }
    max.push_back(std::move(level));
    for (size_t k = 1; (size_t{1} << k) <= times.size(); ++k) {
      const std::vector<int64_t>& prev = max[k - 1];
      std::vector<int64_t> next(times.size() - (size_t{1} << k) + 1);
      for (size_t i = 0; i < next.size(); ++i) next[i] = std::max(prev[i], prev[i + (size_t{1} << (k - 1))]);
      max.push_back(std::move(next));
    }
  }
  // The most GPUs in use during [from, to).
  int64_t max_used(int64_t from, int64_t to) const {
    // Steps in force during the window: the last at or before `from`, through the last before `to`.
    size_t lo = static_cast<size_t>(std::upper_bound(times.begin(), times.end(), from) - times.begin());
    const size_t hi = static_cast<size_t>(std::lower_bound(times.begin(), times.end(), to) - times.begin());
    if (lo > 0) --lo;
    if (hi <= lo) return lo < times.size() && times[lo] <= from ? max[0][lo] : 0;
    const size_t n = hi - lo;
    size_t k = 0;
    while ((size_t{2} << k) <= n) ++k;
    int64_t best = std::max(max[k][lo], max[k][hi - (size_t{1} << k)]);
    if (times[lo] > from) best = std::max<int64_t>(best, 0);  // before the first step: nothing in use
    return best;
  }
};

std::vector<NodeSteps> node_steps(const JobSet& set) {
  std::vector<std::vector<std::pair<int64_t, int64_t>>> deltas(set.nodes.size());
  for (const Job& j : set.jobs) {
    if (!j.started()) continue;
    const int64_t end = std::max(j.start_s, set.end_of(j));
    for (size_t i = 0; i < j.nodes.size(); ++i) {
      const uint32_t g = j.gpus_on(i);
      if (g == 0 || end == j.start_s) continue;
      deltas[j.nodes[i]].emplace_back(j.start_s, g);
      deltas[j.nodes[i]].emplace_back(end, -static_cast<int64_t>(g));
    }
  }
  std::vector<NodeSteps> steps(set.nodes.size());
  for (size_t n = 0; n < deltas.size(); ++n) steps[n].build(deltas[n]);
  return steps;
}

}  // namespace

bool parse_span(std::string_view text, int64_t* seconds, std::string* why) {
  const std::string shown(text.substr(0, 40));
  if (text.empty()) return *why = "empty span", false;
  if (text.find(':') != std::string_view::npos || text.find('-') != std::string_view::npos) {
    // Slurm's time formats: MM:SS, HH:MM:SS, and after a day count D-HH, D-HH:MM, D-HH:MM:SS.
    int64_t days = 0;
    const bool has_days = text.find('-') != std::string_view::npos;
    if (has_days) {
      const size_t dash = text.find('-');
      const auto [p, ec] = std::from_chars(text.data(), text.data() + dash, days);
      if (dash == 0 || ec != std::errc() || p != text.data() + dash || days < 0 || days > 100000)
        return *why = "'" + shown + "': bad day count", false;
      text.remove_prefix(dash + 1);
    }
    std::vector<int64_t> parts;
    while (true) {
      const size_t colon = text.find(':');
      const std::string_view part = text.substr(0, colon);
      int64_t v = 0;
      const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
      if (part.empty() || ec != std::errc() || p != part.data() + part.size() || v < 0 || v > 1000000)
        return *why = "'" + shown + "' is not [D-]HH:MM:SS", false;
      parts.push_back(v);
      if (colon == std::string_view::npos) break;
      text.remove_prefix(colon + 1);
    }
    if (parts.size() > 3 || (!has_days && parts.size() < 2)) return *why = "'" + shown + "' is not [D-]HH:MM:SS", false;
    int64_t s = 0;
    for (int64_t p : parts) s = s * 60 + p;
    if (has_days) s *= parts.size() == 1 ? 3600 : parts.size() == 2 ? 60 : 1;  // D-HH, D-HH:MM
    *seconds = days * 86400 + s;
    return true;
  }
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p == text.data() || !(v >= 0) || v > 1e9)
    return *why = "'" + shown + "' is not a span (e.g. 90s, 30m, 4h, 2d, 01:30:00)", false;
  const std::string_view unit(p, static_cast<size_t>(text.data() + text.size() - p));
  const double scale = unit == "s" ? 1 : unit == "m" || unit == "min" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : 0;
  if (scale == 0)
    return *why = "'" + shown + "' needs a unit: s, m, h or d (e.g. 30m)", false;
  *seconds = static_cast<int64_t>(v * scale + 0.5);
  return true;
}

std::string format_span(int64_t s) {
  char buf[48];
  if (s < 0) s = 0;
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm", static_cast<long long>(s / 60));
  else if (s < 86400) std::snprintf(buf, sizeof buf, "%lldh %02lldm", static_cast<long long>(s / 3600), static_cast<long long>(s % 3600 / 60));
  else std::snprintf(buf, sizeof buf, "%lldd %02lldh", static_cast<long long>(s / 86400), static_cast<long long>(s % 86400 / 3600));
  return buf;
}

std::vector<SlotUse> assign_slots(const JobSet& set) {
  struct Piece {
    int64_t from, to;
    uint32_t job, gpus;
  };
  std::vector<std::vector<Piece>> per_node(set.nodes.size());
  for (uint32_t ji = 0; ji < set.jobs.size(); ++ji) {
    const Job& j = set.jobs[ji];
    if (!j.started()) continue;
    const int64_t end = std::max(j.start_s, set.end_of(j));
    for (size_t i = 0; i < j.nodes.size(); ++i)
      if (const uint32_t g = j.gpus_on(i)) per_node[j.nodes[i]].push_back({j.start_s, end, ji, g});
  }
  std::vector<SlotUse> out;
  std::vector<int64_t> free_at;
  for (uint32_t n = 0; n < per_node.size(); ++n) {
    auto& pieces = per_node[n];
    std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) {
      return a.from != b.from ? a.from < b.from : a.job < b.job;
    });
    free_at.assign(set.gpus_per_node, INT64_MIN);
    for (const Piece& p : pieces) {
      uint32_t left = p.gpus;
      for (uint32_t s = 0; s < free_at.size() && left > 0; ++s)
        if (free_at[s] <= p.from) {
          free_at[s] = p.to;
          out.push_back({p.job, n, s, p.from, p.to});
          --left;
        }
      // More than the node holds (a --gpus-per-node below what was recorded): extra slots.
      while (left > 0 && free_at.size() < kMaxGpusPerNode) {
        free_at.push_back(p.to);
        out.push_back({p.job, n, static_cast<uint32_t>(free_at.size() - 1), p.from, p.to});
        --left;
      }
    }
  }
  return out;
}

std::vector<MissedChance> missed_chances(const JobSet& set) {
  // Change points: GPUs in use, and the multiset of the waiting jobs' GPU counts.
  struct Change {
    int64_t t;
    int64_t used_delta;
    int64_t wait_gpus;  // > 0 enters, < 0 leaves the waiting set; 0 none
  };
  std::vector<Change> changes;
  for (const Job& j : set.jobs) {
    if (j.started() && j.gpus > 0) {
      const int64_t end = std::max(j.start_s, set.end_of(j));
      changes.push_back({j.start_s, j.gpus, 0});
      changes.push_back({end, -static_cast<int64_t>(j.gpus), 0});
    }
    // A pending job's AllocTRES is empty: how many GPUs it waits for is not in the record.
    if (j.gpus == 0) continue;
    const int64_t until = j.started() ? j.start_s : set.now_s;
    if (until > j.submit_s) {
      changes.push_back({j.submit_s, 0, j.gpus});
      changes.push_back({until, 0, -static_cast<int64_t>(j.gpus)});
    }
  }
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.t < b.t; });
  const int64_t capacity = static_cast<int64_t>(set.nodes.size()) * set.gpus_per_node;
  std::vector<MissedChance> out;
  std::multiset<int64_t> waiting;
  int64_t used = 0;
  for (size_t i = 0; i < changes.size();) {
    const int64_t t = changes[i].t;
    for (; i < changes.size() && changes[i].t == t; ++i) {
      used += changes[i].used_delta;
      if (changes[i].wait_gpus > 0) waiting.insert(changes[i].wait_gpus);
      else if (changes[i].wait_gpus < 0) waiting.erase(waiting.find(-changes[i].wait_gpus));
    }
    if (i == changes.size() || waiting.empty()) continue;
    const int64_t idle = capacity - used, smallest = *waiting.begin();
    if (idle < smallest) continue;
    const int64_t next = changes[i].t;
    if (!out.empty() && out.back().to_s == t && out.back().idle_gpus == idle && out.back().smallest_waiting_gpus == smallest) {
      out.back().to_s = next;
    } else {
      out.push_back({t, next, static_cast<uint32_t>(idle), static_cast<uint32_t>(smallest)});
    }
  }
  return out;
}

ClusterStats cluster_stats(const JobSet& set, const StatsWindow& window) {
  ClusterStats st;
  int64_t first = set.now_s;
  for (const Job& j : set.jobs) first = std::min(first, j.submit_s);
  st.from_s = window.from_s != kUnknownTime ? window.from_s : first;
  st.to_s = window.to_s != kUnknownTime ? window.to_s : set.now_s;
  if (st.to_s < st.from_s) st.to_s = st.from_s;
  const double span_h = static_cast<double>(st.to_s - st.from_s) / 3600.0;
  st.jobs = set.jobs.size();
  for (const Job& j : set.jobs) {
    st.started += j.started() ? 1 : 0;
    st.running += j.running() ? 1 : 0;
    st.pending += j.started() ? 0 : 1;
  }
  st.by_partition = wait_table(set, true, st.from_s, st.to_s);
  st.by_user = wait_table(set, false, st.from_s, st.to_s);

  st.nodes.resize(set.nodes.size());
  for (size_t n = 0; n < set.nodes.size(); ++n) {
    st.nodes[n].node = set.nodes[n];
    st.nodes[n].capacity_gpu_hours = set.gpus_per_node * span_h;
  }
  for (const Job& j : set.jobs) {
    if (!j.started()) continue;
    const int64_t end = std::max(j.start_s, set.end_of(j));
    const int64_t in = overlap(j.start_s, end, st.from_s, st.to_s);
    if (in == 0 && !(j.start_s >= st.from_s && j.start_s < st.to_s)) continue;
    st.used_gpu_hours += j.gpus * static_cast<double>(in) / 3600.0;
    for (size_t i = 0; i < j.nodes.size(); ++i) {
      NodeUse& u = st.nodes[j.nodes[i]];
      u.used_gpu_hours += j.gpus_on(i) * static_cast<double>(in) / 3600.0;
      ++u.jobs;
      if (!j.running() && end - j.start_s < window.short_s) ++u.short_jobs;
    }
  }
  st.capacity_gpu_hours = static_cast<double>(set.nodes.size()) * set.gpus_per_node * span_h;
  st.idle_gpu_hours = std::max(0.0, st.capacity_gpu_hours - st.used_gpu_hours);

  // Fragmentation: the idle holes of each GPU slot inside the window. Only the slots that held
  // a job keep intervals; every other slot is one hole the length of the window.
  std::unordered_map<size_t, std::vector<std::pair<int64_t, int64_t>>> busy;
  for (const SlotUse& s : assign_slots(set))
    if (s.slot < set.gpus_per_node) busy[size_t{s.node} * set.gpus_per_node + s.slot].emplace_back(s.from_s, s.to_s);
  double idle_short = 0, idle_all = 0;
  {
    const double untouched = static_cast<double>(set.nodes.size()) * set.gpus_per_node - static_cast<double>(busy.size());
    const double window_s = static_cast<double>(st.to_s - st.from_s);
    idle_all += untouched * window_s;
    if (st.to_s - st.from_s < window.short_s) idle_short += untouched * window_s;
  }
  for (auto& [k, iv] : busy) {
    std::sort(iv.begin(), iv.end());
    int64_t at = st.from_s;
    const auto hole = [&](int64_t a, int64_t b) {
      if (b <= a) return;
      idle_all += static_cast<double>(b - a);
      if (b - a < window.short_s) idle_short += static_cast<double>(b - a);
    };
    for (const auto& [a, b] : iv) {
      if (b <= st.from_s || a >= st.to_s) continue;
      hole(at, std::min(a, st.to_s));
      at = std::max(at, b);
    }
    hole(at, st.to_s);
  }
  st.fragmentation = idle_all > 0 ? idle_short / idle_all : 0;
  for (const MissedChance& m : missed_chances(set))
    st.idle_while_waiting_gpu_hours += m.idle_gpus * static_cast<double>(overlap(m.from_s, m.to_s, st.from_s, st.to_s)) / 3600.0;
  std::stable_sort(st.nodes.begin(), st.nodes.end(), [](const NodeUse& a, const NodeUse& b) {
    return a.busy_share() > b.busy_share();
  });
  return st;
}

bool parse_placement_request(std::string_view text, PlacementRequest* out, std::string* why) {
  *out = PlacementRequest{};
  bool has_gpus = false, has_time = false;
  size_t from = 0;
  while (from <= text.size()) {
    const size_t comma = std::min(text.find(',', from), text.size());
    const std::string_view item = text.substr(from, comma - from);
    from = comma + 1;
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq), value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (key == "gpus") {
      uint32_t g = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), g);
      if (ec != std::errc() || p != value.data() + value.size() || g == 0 || g > 1'000'000)
        return *why = "gpus= needs a positive count", false;
      out->gpus = g;
      has_gpus = true;
    } else if (key == "time") {
      if (!parse_span(value, &out->duration_s, why)) return *why = "time=: " + *why, false;
      if (out->duration_s <= 0) return *why = "time= must be longer than 0", false;
      has_time = true;
    } else if (key == "at") {
      if (!parse_wall_time(value, &out->at_s) || out->at_s == kUnknownTime)
        return *why = "at= needs a time like 2024-03-01T09:00:00", false;
    } else {
      return *why = "unknown key '" + std::string(key.substr(0, 40)) + "' (keys: gpus, time, at)", false;
    }
    if (comma == text.size()) break;
  }
  if (!has_gpus || !has_time) return *why = "needs gpus= and time=, e.g. gpus=16,time=4h", false;
  return true;
}

Placement place(const JobSet& set, const PlacementRequest& req) {
  Placement p;
  const uint64_t capacity = uint64_t{set.nodes.size()} * set.gpus_per_node;
  if (req.gpus > capacity) {
    p.why_not = "the cluster in the record has " + std::to_string(capacity) + " GPUs (" +
                std::to_string(set.nodes.size()) + " nodes x " + std::to_string(set.gpus_per_node) + ")";
    return p;
  }
  int64_t at = req.at_s;
  if (at == kUnknownTime) {
    at = set.now_s;
    for (const Job& j : set.jobs) at = std::min(at, j.submit_s);
  }
  // Candidates: the request time and every end after it, when GPUs come free.
  std::vector<int64_t> candidates{at};
  for (const Job& j : set.jobs)
    if (j.started() && set.end_of(j) > at) candidates.push_back(set.end_of(j));
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  const auto steps = node_steps(set);
  std::vector<std::pair<int64_t, uint32_t>> free;  // (free GPUs, node)
  for (int64_t t : candidates) {
    free.clear();
    uint64_t total = 0;
    for (uint32_t n = 0; n < steps.size(); ++n) {
      const int64_t f = static_cast<int64_t>(set.gpus_per_node) - steps[n].max_used(t, t + req.duration_s);
      if (f > 0) free.emplace_back(f, n), total += static_cast<uint64_t>(f);
    }
    if (total < req.gpus) continue;
    // The fewest nodes: the emptiest first, ties by node order.
    std::sort(free.begin(), free.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    uint32_t left = req.gpus;
    for (const auto& [f, n] : free) {
      const uint32_t take = std::min<uint32_t>(left, static_cast<uint32_t>(f));
      p.nodes.push_back(n);
      p.gpus_on_node.push_back(take);
      left -= take;
      if (left == 0) break;
    }
    p.found = true;
    p.start_s = t;
    p.end_s = t + req.duration_s;
    return p;
  }
  p.why_not = "no slot of " + std::to_string(req.gpus) + " GPUs for " + format_span(req.duration_s) + " after " +
              format_wall_time(at);
  return p;
}

size_t match_captures(JobSet& set, const std::vector<CaptureStamp>& captures) {
  std::unordered_map<std::string, size_t> by_id;
  for (size_t i = 0; i < set.jobs.size(); ++i) by_id.emplace(set.jobs[i].id, i);
  std::unordered_map<std::string, uint32_t> node_of;
  for (uint32_t n = 0; n < set.nodes.size(); ++n) node_of.emplace(set.nodes[n], n);
  size_t unmatched = 0;
  for (const CaptureStamp& c : captures) {
    if (!c.job_id.empty()) {
      if (auto it = by_id.find(c.job_id); it != by_id.end()) {
        set.jobs[it->second].captures.push_back(c.path);
        continue;
      }
    }
    // By place and time: the host (short name too: gpu01.cluster -> gpu01) among the job's nodes.
    auto node = node_of.find(c.host);
    if (node == node_of.end()) node = node_of.find(c.host.substr(0, c.host.find('.')));
    bool found = false;
    if (node != node_of.end() && c.start_s != kUnknownTime) {
      for (Job& j : set.jobs) {
        if (!j.started() || c.start_s < j.start_s || c.start_s > set.end_of(j)) continue;
        if (!std::binary_search(j.nodes.begin(), j.nodes.end(), node->second)) continue;
        j.captures.push_back(c.path);
        found = true;
        break;
      }
    }
    unmatched += found ? 0 : 1;
  }
  return unmatched;
}

}  // namespace gantt::jobs
