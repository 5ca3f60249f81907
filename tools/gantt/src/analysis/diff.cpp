#include "gantt/analysis/diff.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <future>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "gantt/analysis/table.h"
#include "gantt/model/graphs.h"

namespace gantt::analysis {
namespace {

// Per-instance samples by match key. Names and range paths are resolved once per distinct
// (name id, range row), not once per event: a million launches have a few dozen of those.
// A graph node is matched by its place in the launch as well as its name: a graph replays
// the same sequence, and a change to one node (a slower third kernel of eight) must show as
// that node, not be averaged into every launch of the same kernel elsewhere in the graph.
std::map<std::string, MatchSamples> collect(const Model& m, bool match_range) {
  std::unordered_map<uint64_t, MatchSamples*> slot;
  std::map<std::tuple<uint64_t, uint32_t>, MatchSamples*> graph_slot;
  std::unordered_map<uint32_t, uint32_t> node_order;  // graph node event -> 1-based order in its launch
  for (const GraphLaunch& g : graph_launches(m))
    for (size_t k = 0; k < g.nodes.size(); ++k) node_order.emplace(g.nodes[k], static_cast<uint32_t>(k + 1));
  std::map<std::string, MatchSamples> out;
  for (uint32_t e = 0; e < m.events.size(); ++e) {
    if (!is_gpu_work(m, e)) continue;
    const EventKind kind = m.events.kind[e];
    const uint64_t name_part = kind == EventKind::kMemcpy ? (uint64_t{1} << 31) | m.events.copy_kind[e]
                               : kind == EventKind::kMemset ? (uint64_t{1} << 31) | 0xFFFF
                                                            : m.events.name[e];
    const uint64_t range_part = match_range ? m.events.range[e] : kNone;
    const uint64_t id = (range_part << 32) ^ name_part;
    uint32_t node = 0;
    if (!node_order.empty())
      if (auto n = node_order.find(e); n != node_order.end()) node = n->second;
    MatchSamples** found = nullptr;
    if (node != 0) {
      found = &graph_slot[{id, node}];
    } else {
      auto it = slot.find(id);
      found = it == slot.end() ? &slot.emplace(id, nullptr).first->second : &it->second;
    }
    if (*found == nullptr) {
      const std::string name = kernel_key(m, e);
      const std::string range = match_range ? m.range_path(e) : std::string();
      MatchSamples& s = out[match_key(range, name, node)];
      s.name = name;
      s.range = range;
      s.graph_node = node;
      *found = &s;
    }
    MatchSamples* const it_s = *found;
    it_s->exec.push_back(static_cast<int64_t>(m.events.end_ns[e] - m.events.start_ns[e]));
    const uint64_t q = m.events.queued_ns[e];
    if (q != 0 && m.events.start_ns[e] >= q) it_s->queue.push_back(static_cast<int64_t>(m.events.start_ns[e] - q));
  }
  return out;
}

// Durations of the top-level ranges (not marks), by name.
std::map<std::string, std::vector<int64_t>> top_level_ranges(const Model& m) {
  std::map<std::string, std::vector<int64_t>> out;
  for (size_t r = 0; r < m.ranges.size(); ++r)
    if (m.ranges.depth[r] == 0 && m.ranges.kind[r] != RangeKind::kMark && m.ranges.end_ns[r] > m.ranges.start_ns[r])
      out[std::string(m.string(m.ranges.name[r]))].push_back(static_cast<int64_t>(m.ranges.end_ns[r] - m.ranges.start_ns[r]));
  return out;
}

std::string pct_metric(const char* what, const std::string& label) { return std::string(what) + " " + label; }

}  // namespace

uint32_t parse_metrics(const std::string& list) {
  uint32_t mask = 0;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    if (item == "exec") mask |= static_cast<uint32_t>(Metric::kExec);
    else if (item == "queue") mask |= static_cast<uint32_t>(Metric::kQueue);
    else if (item == "makespan") mask |= static_cast<uint32_t>(Metric::kMakespan);
    else if (item == "all") mask |= 7;
    else throw std::invalid_argument("unknown metric '" + item + "' (known: exec, queue, makespan, all)");
    pos = comma + 1;
  }
  return mask;
}

std::string match_key(const std::string& range, const std::string& name, uint32_t graph_node) {
  // Zero-padded so a kernel's nodes sort in launch order.
  char node_key[16] = "";
  if (graph_node != 0) std::snprintf(node_key, sizeof node_key, "\x1f%010u", graph_node);
  return range + '\x1f' + name + node_key;
}

DiffInput diff_samples(const Model& m, bool match_range) {
  DiffInput in;
  in.matches = collect(m, match_range);
  in.top_ranges = top_level_ranges(m);
  return in;
}

DiffInput diff_input(const Model& m, bool match_range) {
  DiffInput in = diff_samples(m, match_range);
  in.stats = compute_stats(m);
  return in;
}

std::vector<int64_t> iteration_samples(const DiffInput& in, std::string* name) {
  if (name->empty()) {
    size_t best = 0;
    for (const auto& [n, d] : in.top_ranges)
      if (d.size() > best) {  // ties: the first name in sorted order, for determinism
        best = d.size();
        *name = n;
      }
    if (best < kMinSamples) {
      name->clear();
      return {};
    }
  }
  const auto it = in.top_ranges.find(*name);
  return it == in.top_ranges.end() ? std::vector<int64_t>{} : it->second;
}

std::vector<int64_t> iteration_samples(const Model& m, std::string* name) {
  DiffInput in;
  in.top_ranges = top_level_ranges(m);
  return iteration_samples(in, name);
}

DiffReport diff_models(const Model& base, const Model& next, const DiffOptions& o) {
  // The two runs are independent until they are compared: summarise them side by side.
  auto a = std::async(std::launch::async, [&] { return diff_input(base, o.match_range); });
  const DiffInput b = diff_input(next, o.match_range);
  return diff_inputs(a.get(), b, o);
}

DiffReport diff_inputs(const DiffInput& in_a, const DiffInput& in_b, const DiffOptions& o) {
  DiffReport r;
  r.threshold = o.noise.threshold;
  r.metrics = o.metrics;
  const auto& a = in_a.matches;
  const auto& b = in_b.matches;
  const StatsReport& sa = in_a.stats;
  const StatsReport& sb = in_b.stats;
  const bool gate_exec = o.metrics & static_cast<uint32_t>(Metric::kExec);
  const bool gate_queue = o.metrics & static_cast<uint32_t>(Metric::kQueue);

  auto ia = a.begin();
  auto ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    KernelDiff k;
    const bool take_a = ib == b.end() || (ia != a.end() && ia->first <= ib->first);
    const bool take_b = ia == a.end() || (ib != b.end() && ib->first <= ia->first);
    std::vector<int64_t> ea, eb, qa, qb;
    if (take_a) {
      k.name = ia->second.name;
      k.range = ia->second.range;
      k.graph_node = ia->second.graph_node;
      ea = ia->second.exec;
      qa = ia->second.queue;
    }
    if (take_b) {
      k.name = ib->second.name;
      k.range = ib->second.range;
      k.graph_node = ib->second.graph_node;
      eb = ib->second.exec;
      qb = ib->second.queue;
    }
    k.removed = !take_b;
    k.added = !take_a;
    if (take_a && take_b) {
      k.exec = compare_samples(ea, eb, o.noise);
      if (!qa.empty() && !qb.empty()) k.queue = compare_samples(qa, qb, o.noise);
      k.regression = (gate_exec && k.exec.verdict == Verdict::kRegression) ||
                     (gate_queue && k.queue.verdict == Verdict::kRegression);
      k.improvement = !k.regression && ((gate_exec && k.exec.verdict == Verdict::kImprovement) ||
                                        (gate_queue && k.queue.verdict == Verdict::kImprovement));
    }
    k.base = summarize(ea);
    k.next = summarize(eb);
    // Stand-in samples (a summary's sketch): the exact count, total and extremes are known.
    const auto exact = [&r](Distribution& d, const MatchSamples& m) {
      if (!m.exec_exact) return;
      const double median = d.median_ns;
      const int64_t p95 = d.p95_ns;
      d = *m.exec_exact;
      d.median_ns = median;
      d.p95_ns = p95;
      ++r.sketched_matches;
    };
    if (take_a) exact(k.base, ia->second);
    if (take_b) exact(k.next, ib->second);
    r.regressions += k.regression;
    r.improvements += k.improvement;
    r.added += k.added;
    r.removed += k.removed;
    r.kernels.push_back(std::move(k));
    if (take_a) ++ia;
    if (take_b) ++ib;
  }
  std::stable_sort(r.kernels.begin(), r.kernels.end(), [](const KernelDiff& x, const KernelDiff& y) {
    if (x.regression != y.regression) return x.regression;
    const auto delta = [](const KernelDiff& k) {  // unsigned: totals from a hostile file may be anything
      return k.next.total_ns > k.base.total_ns ? k.next.total_ns - k.base.total_ns : k.base.total_ns - k.next.total_ns;
    };
    return delta(x) > delta(y);
  });

  if (r.sketched_matches)
    r.samples_note = std::to_string(r.sketched_matches) +
                     " side(s) of kernels with more than 10000 instances compared through their summary's sketch: "
                     "medians within 1%, counts and totals exact";
  // Whole-run figures.
  {
    ScalarDiff s;
    s.metric = "makespan";
    s.base = static_cast<double>(sa.makespan_ns);
    s.next = static_cast<double>(sb.makespan_ns);
    s.change = s.base > 0 ? s.next / s.base - 1 : 0;
    std::string iter;
    const std::vector<int64_t> ia_s = iteration_samples(in_a, &iter);
    const std::vector<int64_t> ib_s = iter.empty() ? std::vector<int64_t>{} : iteration_samples(in_b, &iter);
    if (ia_s.size() >= kMinSamples && ib_s.size() >= kMinSamples) {
      const Comparison c = compare_samples(ia_s, ib_s, o.noise);
      const bool gated = o.metrics & static_cast<uint32_t>(Metric::kMakespan);
      s.verdict = to_string(c.verdict);
      if (!gated && (c.verdict == Verdict::kRegression || c.verdict == Verdict::kImprovement)) s.verdict += " (not gated)";
      s.regression = gated && c.verdict == Verdict::kRegression;
      r.makespan_note = "makespan noise from " + std::to_string(ia_s.size()) + " vs " + std::to_string(ib_s.size()) +
                        " occurrences of range '" + iter + "' (median " + us(c.median_base) + " -> " +
                        us(c.median_new) + " us)";
    } else {
      s.verdict = "reported";
      r.makespan_note = "makespan: no top-level range repeats in both runs, so it has no noise estimate and does not gate";
    }
    r.regressions += s.regression;
    r.summary.push_back(s);
  }
  for (size_t i = 0; i < sa.stages.size() && i < sb.stages.size(); ++i) {
    ScalarDiff s;
    s.metric = "median " + sa.stages[i].stage;
    s.base = sa.stages[i].median_ns;
    s.next = sb.stages[i].median_ns;
    s.change = s.base > 0 ? s.next / s.base - 1 : 0;
    s.verdict = "reported";
    r.summary.push_back(s);
  }
  // Devices are matched by label (gpu0 with gpu0).
  for (const DeviceRow& da : sa.devices) {
    for (const DeviceRow& db : sb.devices) {
      if (da.label != db.label) continue;
      ScalarDiff busy;
      busy.metric = pct_metric("busy %", da.label);
      busy.base = da.busy_pct;
      busy.next = db.busy_pct;
      busy.change = db.busy_pct - da.busy_pct;
      busy.percent_points = true;
      busy.verdict = "reported";
      r.summary.push_back(busy);
      if (da.copy_ns || db.copy_ns) {
        ScalarDiff ov = busy;
        ov.metric = pct_metric("overlap %", da.label);
        ov.base = da.overlap_pct;
        ov.next = db.overlap_pct;
        ov.change = db.overlap_pct - da.overlap_pct;
        r.summary.push_back(ov);
      }
    }
  }
  return r;
}

}  // namespace gantt::analysis
