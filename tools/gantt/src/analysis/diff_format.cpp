// diff output: text for a CI log, markdown for a PR comment, JSON for scripts, CSV.
#include <string>

#include "gantt/analysis/diff.h"
#include "gantt/analysis/table.h"
#include "gantt/model/json.h"

namespace gantt::analysis {
namespace {

std::string verdict_of(const KernelDiff& k) {
  if (k.added) return "added";
  if (k.removed) return "removed";
  if (k.regression) return "REGRESSION";
  if (k.improvement) return "improvement";
  return to_string(k.exec.verdict);
}

std::string metrics_text(uint32_t m) {
  std::string s;
  if (m & static_cast<uint32_t>(Metric::kExec)) s += "exec";
  if (m & static_cast<uint32_t>(Metric::kQueue)) s += s.empty() ? "queue" : ",queue";
  if (m & static_cast<uint32_t>(Metric::kMakespan)) s += s.empty() ? "makespan" : ",makespan";
  return s;
}

std::string signed_pct(double change) {
  const std::string v = fixed(100.0 * change, 1);
  return change > 0 && v != "0.0" ? "+" + v : v;
}

Table kernel_table(const DiffReport& r, size_t top) {
  Table t;
  t.header = {"verdict", "kernel", "range", "count", "median_us", "change_%", "p95_us", "total_us", "p_rank"};
  t.right = {false, false, false, true, true, true, true, true, true};
  size_t n = 0;
  for (const KernelDiff& k : r.kernels) {
    if (top && n++ >= top) break;
    const bool both = !k.added && !k.removed;
    const double p = k.exec.rank.valid ? (k.exec.change > 0 ? k.exec.rank.p_greater : k.exec.rank.p_less) : -1;
    t.rows.push_back({verdict_of(k), k.graph_node ? k.name + " [graph node " + std::to_string(k.graph_node) + "]" : k.name,
                      k.range.empty() ? "-" : k.range,
                      std::to_string(k.base.count) + " -> " + std::to_string(k.next.count),
                      us(k.base.median_ns) + " -> " + us(k.next.median_ns), both ? signed_pct(k.exec.change) : "-",
                      us(k.base.p95_ns) + " -> " + us(k.next.p95_ns),
                      us(static_cast<int64_t>(k.base.total_ns)) + " -> " + us(static_cast<int64_t>(k.next.total_ns)),
                      p >= 0 ? fixed(p, 4) : "-"});
  }
  return t;
}

Table summary_table(const DiffReport& r) {
  Table t;
  t.header = {"metric", "base", "new", "change", "verdict"};
  t.right = {false, true, true, true, false};
  for (const ScalarDiff& s : r.summary) {
    if (s.percent_points) {
      t.rows.push_back({s.metric, fixed(s.base, 1), fixed(s.next, 1), (s.change > 0 ? "+" : "") + fixed(s.change, 1) + " pt",
                        s.verdict});
    } else {
      t.rows.push_back({s.metric + " (us)", us(s.base), us(s.next), signed_pct(s.change) + " %",
                        s.regression ? "REGRESSION" : s.verdict});
    }
  }
  return t;
}

std::string headline(const DiffReport& r) {
  return "threshold " + fixed(100.0 * r.threshold, 1) + "%, gated on " + metrics_text(r.metrics) + ": " +
         std::to_string(r.regressions) + " regression(s), " + std::to_string(r.improvements) + " improvement(s), " +
         std::to_string(r.added) + " added, " + std::to_string(r.removed) + " removed";
}

void json_comparison(std::string& o, const Comparison& c) {
  o += "{\"median_base_ns\": ";
  json::append_number(o, c.median_base, 1);
  o += ", \"median_new_ns\": ";
  json::append_number(o, c.median_new, 1);
  o += ", \"change\": ";
  json::append_number(o, c.change, 6);
  o += ", \"verdict\": ";
  json::append_string(o, to_string(c.verdict));
  o += ", \"p_greater\": ";
  json::append_number(o, c.rank.valid ? c.rank.p_greater : 1.0, 6);
  o += ", \"p_less\": ";
  json::append_number(o, c.rank.valid ? c.rank.p_less : 1.0, 6);
  if (c.interval.valid) {
    o += ", \"ratio_ci\": [";
    json::append_number(o, c.interval.lo, 6);
    o += ", ";
    json::append_number(o, c.interval.hi, 6);
    o += "]";
  }
  o += "}";
}

std::string json_report(const DiffReport& r) {
  std::string o = "{\n  \"threshold\": ";
  json::append_number(o, r.threshold, 6);
  o += ",\n  \"metrics\": ";
  json::append_string(o, metrics_text(r.metrics));
  o += ",\n  \"regressions\": " + std::to_string(r.regressions) + ",\n  \"improvements\": " +
       std::to_string(r.improvements) + ",\n  \"added\": " + std::to_string(r.added) + ",\n  \"removed\": " +
       std::to_string(r.removed) + ",\n  \"makespan_note\": ";
  json::append_string(o, r.makespan_note);
  if (!r.samples_note.empty()) {
    o += ",\n  \"samples_note\": ";
    json::append_string(o, r.samples_note);
  }
  o += ",\n  \"summary\": [";
  for (size_t i = 0; i < r.summary.size(); ++i) {
    const ScalarDiff& s = r.summary[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"metric\": ";
    json::append_string(o, s.metric);
    o += ", \"base\": ";
    json::append_number(o, s.base, 3);
    o += ", \"new\": ";
    json::append_number(o, s.next, 3);
    o += ", \"change\": ";
    json::append_number(o, s.change, 6);
    o += std::string(", \"unit\": ") + (s.percent_points ? "\"percent\"" : "\"ns\"") + ", \"verdict\": ";
    json::append_string(o, s.regression ? "regression" : s.verdict);
    o += "}";
  }
  o += "\n  ],\n  \"kernels\": [";
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelDiff& k = r.kernels[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"name\": ";
    json::append_string(o, k.name);
    o += ", \"range\": ";
    json::append_string(o, k.range);
    if (k.graph_node) o += ", \"graph_node\": " + std::to_string(k.graph_node);
    o += ", \"verdict\": ";
    std::string v = verdict_of(k);
    if (v == "REGRESSION") v = "regression";
    json::append_string(o, v);
    o += ", \"count\": [" + std::to_string(k.base.count) + ", " + std::to_string(k.next.count) + "]";
    o += ", \"total_ns\": [" + std::to_string(k.base.total_ns) + ", " + std::to_string(k.next.total_ns) + "]";
    o += ", \"p95_ns\": [" + std::to_string(k.base.p95_ns) + ", " + std::to_string(k.next.p95_ns) + "]";
    o += ", \"exec\": ";
    json_comparison(o, k.exec);
    o += ", \"queue\": ";
    json_comparison(o, k.queue);
    o += "}";
  }
  o += r.kernels.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return o;
}

}  // namespace

std::string format_diff(const DiffReport& r, Format f, size_t top) {
  switch (f) {
    case Format::kJson: return json_report(r);
    case Format::kCsv: return to_csv(kernel_table(r, top));
    case Format::kMarkdown:
      return "**" + markdown_text(headline(r)) + "**\n\n" + to_markdown(summary_table(r)) + "\n" +
             markdown_text(r.makespan_note, true) + "\n\n" +
             (r.samples_note.empty() ? "" : "_" + markdown_text(r.samples_note) + "_\n\n") +
             to_markdown(kernel_table(r, top));
    case Format::kText: break;
  }
  std::string o = headline(r) + "\n\n" + to_text(summary_table(r)) + r.makespan_note + "\n" +
                  (r.samples_note.empty() ? "" : r.samples_note + "\n") + "\n" +
                  to_text(kernel_table(r, top));
  if (top && r.kernels.size() > top)
    o += "(" + std::to_string(r.kernels.size() - top) + " more kernels not shown; --top 0 shows all)\n";
  return o;
}

}  // namespace gantt::analysis
