// gantt-cli stats FILE...: numbers on a capture (see gantt/analysis/stats.h).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <gantt/analysis/stats.h>
#include <gantt/model.h>
#include <gantt/ranks.h>

#include "commands.h"
#include "load_captures.h"

namespace gantt_cli {
namespace {

namespace ga = gantt::analysis;

struct StatsOptions {
  std::vector<std::string> files;
  LoadFlags load;
  std::string by = "kernel";
  size_t top = 0;
  size_t gaps = 3;
  std::string format = "text";
};

int run_stats(const StatsOptions& o) {
  LoadedJob job = load_captures(o.files, o.load);
  gantt::Model& model = job.model;
  const bool corrupt = job.corrupt;
  if (!reportable(model)) return kExitError;

  if (o.by == "collective") {
    // One row per (op, size class, ranks) over the collectives matched across captures.
    const auto rows = gantt::collective_stats(gantt::match_collectives(gantt::collective_calls(model)));
    if (rows.empty()) std::cout << "no NCCL collectives with kernels in the capture(s)\n";
    else std::cout << gantt::format_collective_stats(rows);
    return corrupt ? kExitError : kExitOk;
  }
  ga::StatsOptions so;
  so.by = o.by == "stream" ? ga::GroupBy::kStream
          : o.by == "device" ? ga::GroupBy::kDevice
          : o.by == "range"  ? ga::GroupBy::kRange
          : o.by == "graph"  ? ga::GroupBy::kGraph
                             : ga::GroupBy::kKernel;
  so.top = o.top;
  so.gaps = o.gaps;
  std::cout << ga::format_stats(ga::compute_stats(model, so), report_format(o.format));
  // A damaged capture still gets its numbers, but the exit code says they are partial.
  return corrupt ? kExitError : kExitOk;
}

}  // namespace

void register_stats(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StatsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "stats",
      "Numbers on a capture: per kernel (or stream, device, range path, collective) count and\n"
      "total/mean/median/p95 exec time with its share of GPU time; with --by graph, per CUDA\n"
      "graph its launches, nodes per launch, total and median launch span (first node start to\n"
      "last node end), GPU busy time inside the launches and the host time of the\n"
      "cudaGraphLaunch calls (the launch overhead); the launch stages\n"
      "(launch->queued, queued->start, exec); per device busy %, copy/compute overlap % and the\n"
      "largest idle gaps with the host API call the host sat in; NCCL calls, time and bytes.\n"
      "Times are in microseconds (text, md, csv) or integer nanoseconds (json).\n"
      "\n"
      "Examples:\n"
      "  gantt-cli stats app.gpuh --top 10\n"
      "  gantt-cli stats app.gpuh --by range --format json > stats.json\n"
      "  gantt-cli stats app.gpuh --by graph\n"
      "  gantt-cli stats rank0.gpuh rank1.gpuh --by collective\n");
  cmd->add_option("files", o->files, "capture files (.gpuh); several = ranks of one job")->required();
  add_load_flags(*cmd, o->load);
  cmd->add_option("--by", o->by, "group by (graph: one row per CUDA graph)")
      ->check(CLI::IsMember({"kernel", "stream", "device", "range", "graph", "collective"}))
      ->capture_default_str();
  cmd->add_option("--top", o->top, "only the N groups with the most GPU time, or graphs with the most launch span (0 = all)")->capture_default_str();
  cmd->add_option("--gaps", o->gaps, "idle gaps listed per device")->capture_default_str();
  cmd->add_option("--format", o->format, "output format")
      ->check(CLI::IsMember({"text", "md", "json", "csv"}))
      ->capture_default_str();
  cmd->callback([o, &exit_code] { exit_code = run_stats(*o); });
}

}  // namespace gantt_cli
