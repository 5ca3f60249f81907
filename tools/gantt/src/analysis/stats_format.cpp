// stats output: an aligned text report for a terminal, markdown for CI summaries, JSON with
// stable keys and integer nanoseconds for scripts, CSV of the group rows for spreadsheets.
#include <string>
#include <vector>

#include "gantt/analysis/sketch.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/table.h"
#include "gantt/model/json.h"

namespace gantt::analysis {
namespace {

Table graph_table(const StatsReport& r) {
  Table t;
  t.header = {"graph", "launches", "nodes/launch", "total_span_us", "median_span_us", "busy_us", "busy_%",
              "median_launch_call_us", "total_launch_call_us"};
  t.right = {false, true, true, true, true, true, true, true, true};
  for (const GraphRow& g : r.graphs)
    t.rows.push_back({g.key, std::to_string(g.launches), fixed(g.nodes_per_launch, 1),
                      us(static_cast<int64_t>(g.span.total_ns)), g.span.count ? us(g.span.median_ns) : "-",
                      us(static_cast<int64_t>(g.busy_ns)), g.span.count ? fixed(g.busy_pct, 1) : "-",
                      g.launch_call.count ? us(g.launch_call.median_ns) : "-",
                      g.launch_call.count ? us(static_cast<int64_t>(g.launch_call.total_ns)) : "-"});
  return t;
}

Table group_table(const StatsReport& r) {
  if (r.by == GroupBy::kGraph) return graph_table(r);
  Table t;
  t.header = {to_string(r.by), "count", "total_us", "share_%", "mean_us", "median_us", "p95_us", "min_us", "max_us"};
  t.right = {false, true, true, true, true, true, true, true, true};
  for (const GroupRow& g : r.groups)
    t.rows.push_back({g.key, std::to_string(g.exec.count), us(static_cast<int64_t>(g.exec.total_ns)),
                      fixed(100.0 * g.share, 1), us(g.exec.mean_ns), us(g.exec.median_ns), us(g.exec.p95_ns),
                      us(g.exec.min_ns), us(g.exec.max_ns)});
  return t;
}

Table stage_table(const StatsReport& r) {
  Table t;
  t.header = {"stage", "known", "median_us", "p95_us"};
  t.right = {false, true, true, true};
  for (const StageRow& s : r.stages)
    t.rows.push_back({s.stage, std::to_string(s.known), s.known ? us(s.median_ns) : "-", s.known ? us(s.p95_ns) : "-"});
  return t;
}

Table device_table(const StatsReport& r) {
  Table t;
  t.header = {"device", "span_us", "busy_us", "busy_%", "compute_us", "copy_us", "overlap_%", "idle_us"};
  t.right = {false, true, true, true, true, true, true, true};
  for (const DeviceRow& d : r.devices)
    t.rows.push_back({d.label, us(static_cast<int64_t>(d.span_ns)), us(static_cast<int64_t>(d.busy_ns)),
                      fixed(d.busy_pct, 1), us(static_cast<int64_t>(d.compute_ns)), us(static_cast<int64_t>(d.copy_ns)),
                      d.copy_ns ? fixed(d.overlap_pct, 1) : "-", us(static_cast<int64_t>(d.idle_ns))});
  return t;
}

Table gap_table(const StatsReport& r) {
  Table t;
  t.header = {"device", "gap_us", "at_us", "host was in"};
  t.right = {false, true, true, false};
  for (const DeviceRow& d : r.devices)
    for (const IdleGap& g : d.gaps)
      t.rows.push_back({d.label, us(static_cast<int64_t>(g.end_ns - g.start_ns)),
                        "+" + us(static_cast<int64_t>(g.start_ns - r.first_ns)), g.host});
  return t;
}

Table nccl_table(const StatsReport& r) {
  Table t;
  t.header = {"nccl", "calls", "time_us", "bytes"};
  t.right = {false, true, true, true};
  for (const NcclRow& n : r.nccl)
    t.rows.push_back({n.op, std::to_string(n.calls), us(static_cast<int64_t>(n.time_ns)), bytes_text(n.bytes)});
  return t;
}

size_t shown_groups(const StatsReport& r) { return r.by == GroupBy::kGraph ? r.graphs.size() : r.groups.size(); }

std::string summary_line(const StatsReport& r) {
  return std::to_string(r.events) + " GPU activities, GPU time " + us(static_cast<int64_t>(r.gpu_time_ns)) +
         " us, makespan " + us(static_cast<int64_t>(r.makespan_ns)) + " us";
}

// What the reader must know to trust the numbers: sketched quantiles, unaligned summaries.
std::vector<std::string> notes(const StatsReport& r) {
  std::vector<std::string> n;
  if (r.sketched_groups)
    n.push_back("quantiles: " + std::to_string(r.sketched_groups) + " group(s) or stage(s) with more than " +
                std::to_string(DurationDigest::kExactSamples) + " instances have median and p95 from a sketch, within " +
                fixed(kSketchRelativeError * 100, 0) + "%; the rest are exact");
  if (r.from_unaligned_summaries)
    n.push_back("makespan: merged from summaries of captures never aligned together, over their clocks as recorded");
  return n;
}

std::string json_report(const StatsReport& r) {
  using json::append_string;
  std::string o = "{\n  \"by\": ";
  append_string(o, to_string(r.by));
  o += ",\n  \"events\": " + std::to_string(r.events) + ",\n  \"gpu_time_ns\": " + std::to_string(r.gpu_time_ns) +
       ",\n  \"makespan_ns\": " + std::to_string(r.makespan_ns) + ",\n  \"groups_total\": " + std::to_string(r.groups_total);
  o += std::string(",\n  \"quantiles\": {\"exact\": ") + (r.sketched_groups ? "false" : "true") +
       ", \"sketched_groups\": " + std::to_string(r.sketched_groups) + ", \"relative_error\": ";
  json::append_number(o, kSketchRelativeError, 3);
  o += std::string("}") + (r.from_unaligned_summaries ? ",\n  \"unaligned_summaries\": true" : "");
  if (r.by == GroupBy::kGraph) {
    o += ",\n  \"graphs\": [";
    for (size_t i = 0; i < r.graphs.size(); ++i) {
      const GraphRow& g = r.graphs[i];
      o += i ? ",\n    {" : "\n    {";
      o += "\"key\": ";
      append_string(o, g.key);
      o += ", \"capture\": " + std::to_string(g.capture) + ", \"graph_id\": " + std::to_string(g.graph_id) +
           ", \"launches\": " + std::to_string(g.launches) + ", \"nodes_per_launch\": ";
      json::append_number(o, g.nodes_per_launch, 3);
      o += ", \"nodes_min\": " + std::to_string(g.nodes_min) + ", \"nodes_max\": " + std::to_string(g.nodes_max) +
           ", \"span_total_ns\": " + std::to_string(g.span.total_ns) + ", \"span_median_ns\": ";
      json::append_number(o, g.span.median_ns, 1);
      o += ", \"busy_ns\": " + std::to_string(g.busy_ns) + ", \"busy_pct\": ";
      json::append_number(o, g.busy_pct, 3);
      o += ", \"launch_calls\": " + std::to_string(g.launch_call.count) +
           ", \"launch_call_total_ns\": " + std::to_string(g.launch_call.total_ns) + ", \"launch_call_median_ns\": ";
      json::append_number(o, g.launch_call.median_ns, 1);
      o += "}";
    }
    o += r.graphs.empty() ? "]" : "\n  ]";
  }
  o += ",\n  \"groups\": [";
  for (size_t i = 0; i < r.groups.size(); ++i) {
    const GroupRow& g = r.groups[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"key\": ";
    append_string(o, g.key);
    o += ", \"count\": " + std::to_string(g.exec.count) + ", \"total_ns\": " + std::to_string(g.exec.total_ns) +
         ", \"share\": ";
    json::append_number(o, g.share, 6);
    o += ", \"mean_ns\": ";
    json::append_number(o, g.exec.mean_ns, 1);
    o += ", \"median_ns\": ";
    json::append_number(o, g.exec.median_ns, 1);
    o += ", \"p95_ns\": " + std::to_string(g.exec.p95_ns) + ", \"min_ns\": " + std::to_string(g.exec.min_ns) +
         ", \"max_ns\": " + std::to_string(g.exec.max_ns) + ", \"bytes\": " + std::to_string(g.bytes) + "}";
  }
  o += r.groups.empty() ? "],\n  \"stages\": [" : "\n  ],\n  \"stages\": [";
  for (size_t i = 0; i < r.stages.size(); ++i) {
    const StageRow& s = r.stages[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"stage\": ";
    append_string(o, s.stage);
    o += ", \"known\": " + std::to_string(s.known) + ", \"median_ns\": ";
    json::append_number(o, s.median_ns, 1);
    o += ", \"p95_ns\": " + std::to_string(s.p95_ns) + "}";
  }
  o += "\n  ],\n  \"devices\": [";
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const DeviceRow& d = r.devices[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"device\": ";
    append_string(o, d.label);
    o += ", \"capture\": " + std::to_string(d.capture) + ", \"ordinal\": " + std::to_string(d.device) +
         ", \"span_ns\": " + std::to_string(d.span_ns) + ", \"busy_ns\": " + std::to_string(d.busy_ns) +
         ", \"compute_ns\": " + std::to_string(d.compute_ns) + ", \"copy_ns\": " + std::to_string(d.copy_ns) +
         ", \"overlap_ns\": " + std::to_string(d.overlap_ns) + ", \"idle_ns\": " + std::to_string(d.idle_ns) +
         ", \"busy_pct\": ";
    json::append_number(o, d.busy_pct, 3);
    o += ", \"overlap_pct\": ";
    json::append_number(o, d.overlap_pct, 3);
    o += ", \"gaps\": [";
    for (size_t k = 0; k < d.gaps.size(); ++k) {
      o += k ? ", {" : "{";
      o += "\"start_ns\": " + std::to_string(d.gaps[k].start_ns) + ", \"end_ns\": " + std::to_string(d.gaps[k].end_ns) +
           ", \"host\": ";
      append_string(o, d.gaps[k].host);
      o += "}";
    }
    o += "]}";
  }
  o += r.devices.empty() ? "],\n  \"nccl\": [" : "\n  ],\n  \"nccl\": [";
  for (size_t i = 0; i < r.nccl.size(); ++i) {
    const NcclRow& n = r.nccl[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"op\": ";
    append_string(o, n.op);
    o += ", \"calls\": " + std::to_string(n.calls) + ", \"time_ns\": " + std::to_string(n.time_ns) +
         ", \"bytes\": " + std::to_string(n.bytes) + "}";
  }
  o += r.nccl.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return o;
}

}  // namespace

std::string format_stats(const StatsReport& r, Format f) {
  switch (f) {
    case Format::kJson: return json_report(r);
    case Format::kCsv: return to_csv(group_table(r));
    case Format::kMarkdown: {
      std::string o = "**" + markdown_text(summary_line(r)) + "**\n\n";
      for (const std::string& n : notes(r)) o += "_" + markdown_text(n) + "_\n\n";
      o += to_markdown(group_table(r));
      if (r.by == GroupBy::kGraph && r.graphs.empty()) o += "\n(no CUDA graph launches in the capture)\n";
      if (shown_groups(r) < r.groups_total)
        o += "\n(top " + std::to_string(shown_groups(r)) + " of " + std::to_string(r.groups_total) + " groups)\n";
      o += "\n" + to_markdown(stage_table(r)) + "\n" + to_markdown(device_table(r));
      if (!gap_table(r).rows.empty()) o += "\nLargest idle gaps\n\n" + to_markdown(gap_table(r));
      if (!r.nccl.empty()) o += "\n" + to_markdown(nccl_table(r));
      return o;
    }
    case Format::kText: break;
  }
  std::string o = summary_line(r) + "\n";
  for (const std::string& n : notes(r)) o += n + "\n";
  o += "\n" + to_text(group_table(r));
  if (r.by == GroupBy::kGraph && r.graphs.empty()) o += "(no CUDA graph launches in the capture)\n";
  if (shown_groups(r) < r.groups_total)
    o += "(top " + std::to_string(shown_groups(r)) + " of " + std::to_string(r.groups_total) + " groups)\n";
  o += "\n" + to_text(stage_table(r)) + "\n" + to_text(device_table(r));
  if (!gap_table(r).rows.empty()) o += "\nlargest idle gaps:\n" + to_text(gap_table(r));
  if (!r.nccl.empty()) o += "\n" + to_text(nccl_table(r));
  return o;
}

}  // namespace gantt::analysis
