// gantt-cli jobs FILE: the cluster view from the scheduler's records (gantt/jobs/jobs.h): a chart
// of nodes x time, the queue's statistics, the captures of each job, a what-if slot.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gpuhook/capture.h>
#include <gantt/jobs/jobs.h>
#include <gantt/jobs/jobs_metrics.h>
#include <gantt/model/json.h>
#include <gantt/render/render.h>
#include <gantt/model/text.h>

#include "chart_output.h"
#include "commands.h"
#include "load_captures.h"

namespace gantt_cli {

namespace {

namespace jobs = gantt::jobs;

struct JobsCliOptions {
  std::string file;
  std::string output;
  std::string format;  // svg, png, pdf
  bool stats = false;
  std::string stats_format = "text";
  bool per_gpu = false;
  std::string color_by = "user";
  std::string wait_threshold = "30m";
  std::string short_span = "30m";
  std::string from, to, now;
  uint32_t gpus_per_node = 0;
  std::vector<std::string> captures;
  std::string submit;
  std::string metrics;  // --metrics: DCGM samples as a Prometheus CSV
  bool skip_bad = false;
  int width_px = 1920;
};

// The most of one input a record of a cluster's jobs may be: 50,000 jobs are ~10 MB.
constexpr uintmax_t kMaxInputBytes = uintmax_t{1} << 30;

bool read_input(const std::string& path, std::string* text) {
  std::istream* in = &std::cin;
  std::ifstream file;
  if (path != "-") {
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxInputBytes) {
      std::cerr << "gantt-cli: jobs: " << path << ": " << size << " bytes, more than the " << kMaxInputBytes
                << " a record of jobs may be\n";
      return false;
    }
    file.open(path, std::ios::binary);
    if (!file) {
      std::cerr << "gantt-cli: jobs: cannot open " << path << "\n";
      return false;
    }
    in = &file;
  }
  char buf[1 << 16];
  while (in->read(buf, sizeof buf) || in->gcount() > 0) {
    text->append(buf, static_cast<size_t>(in->gcount()));
    if (text->size() > kMaxInputBytes) {
      std::cerr << "gantt-cli: jobs: " << path << ": more than " << kMaxInputBytes << " bytes\n";
      return false;
    }
  }
  return true;
}

bool time_arg(const char* flag, const std::string& text, int64_t* out) {
  if (text.empty()) return true;
  if (!jobs::parse_wall_time(text, out) || *out == jobs::kUnknownTime) {
    std::cerr << "gantt-cli: jobs: " << flag << " '" << gantt::printable_utf8(text.substr(0, 40))
              << "' is not a time like 2024-03-01T09:00:00\n";
    return false;
  }
  return true;
}

bool span_arg(const char* flag, const std::string& text, int64_t* out) {
  std::string why;
  if (jobs::parse_span(text, out, &why)) return true;
  std::cerr << "gantt-cli: jobs: " << flag << ": " << why << "\n";
  return false;
}

void print_stats_text(const jobs::JobSet& set, const jobs::ClusterStats& st, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof line, "%zu jobs (%zu started, %zu running, %zu pending) on %zu nodes x %u GPUs, %s to %s\n",
                st.jobs, st.started, st.running, st.pending, set.nodes.size(), set.gpus_per_node,
                jobs::format_wall_time(st.from_s).c_str(), jobs::format_wall_time(st.to_s).c_str());
  out << line;
  std::snprintf(line, sizeof line,
                "GPU-hours: %.1f used, %.1f idle of %.1f (%.1f%% busy); idle while a job that fit waited: %.1f; "
                "fragmentation %.1f%%\n",
                st.used_gpu_hours, st.idle_gpu_hours, st.capacity_gpu_hours,
                st.capacity_gpu_hours > 0 ? 100.0 * st.used_gpu_hours / st.capacity_gpu_hours : 0.0,
                st.idle_while_waiting_gpu_hours, 100.0 * st.fragmentation);
  out << line;
  const auto table = [&](const char* what, const std::vector<jobs::WaitStats>& rows) {
    std::snprintf(line, sizeof line, "\nwait (submit->start) by %-9s %8s %8s %10s %10s %10s\n", what, "started", "waiting",
                  "p50", "p90", "max");
    out << line;
    for (const jobs::WaitStats& w : rows) {
      std::snprintf(line, sizeof line, "  %-30s %8zu %8zu %10s %10s %10s\n",
                    gantt::printable_utf8(gantt::ellipsize(w.key, 30)).c_str(), w.jobs, w.waiting,
                    jobs::format_span(w.p50_s).c_str(), jobs::format_span(w.p90_s).c_str(),
                    jobs::format_span(w.max_s).c_str());
      out << line;
    }
  };
  table("partition", st.by_partition);
  table("user", st.by_user);
  const auto nodes = [&](const char* title, bool busiest) {
    out << "\n" << title << "\n";
    const size_t n = std::min<size_t>(5, st.nodes.size());
    for (size_t i = 0; i < n; ++i) {
      const jobs::NodeUse& u = busiest ? st.nodes[i] : st.nodes[st.nodes.size() - 1 - i];
      std::snprintf(line, sizeof line, "  %-30s %5.1f%% busy  %8.1f GPU-h  %6zu jobs  %6zu short\n",
                    gantt::printable_utf8(gantt::ellipsize(u.node, 30)).c_str(), 100.0 * u.busy_share(),
                    u.used_gpu_hours, u.jobs, u.short_jobs);
      out << line;
    }
  };
  nodes("busiest nodes:", true);
  nodes("idlest nodes:", false);
}

void print_metrics_text(const jobs::MetricsStats& st, std::ostream& out) {
  char line[512];
  out << "\nGPU utilisation while jobs ran (" << st.metric << ", mean of the node's GPUs; drops per "
      << jobs::format_span(st.bucket_s) << " bucket):\n";
  for (const jobs::MetricsStats::Node& n : st.nodes) {
    if (n.samples_while_jobs)
      std::snprintf(line, sizeof line, "  %-30s %5.1f%%  %8zu samples  %3zu drops\n",
                    gantt::printable_utf8(gantt::ellipsize(n.node, 30)).c_str(), 100.0 * n.mean_while_jobs,
                    n.samples_while_jobs, n.drops);
    else
      std::snprintf(line, sizeof line, "  %-30s     -   no sample while a job ran\n",
                    gantt::printable_utf8(gantt::ellipsize(n.node, 30)).c_str());
    out << line;
  }
  out << "drops (under half the median of the " << gantt::analysis::kDropWindow
      << " buckets before, while a job ran): " << st.drops.size() << "\n";
  for (const jobs::MetricsStats::DropAt& d : st.drops) {
    std::snprintf(line, sizeof line, "  %-30s %s for %s: %.0f%% (was %.0f%%)\n",
                  gantt::printable_utf8(gantt::ellipsize(d.node, 30)).c_str(), jobs::format_wall_time(d.from_s).c_str(),
                  jobs::format_span(d.to_s - d.from_s).c_str(), 100.0 * d.lowest, 100.0 * d.median);
    out << line;
  }
}

std::string metrics_json(const jobs::MetricsStats& st) {
  using gantt::json::append_number;
  using gantt::json::append_string;
  std::string o = ",\"metrics\":{\"series\":";
  append_string(o, st.metric);
  o += ",\"bucket_s\":" + std::to_string(st.bucket_s) + ",\"nodes\":[";
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    o += i ? ",{\"node\":" : "{\"node\":";
    append_string(o, st.nodes[i].node);
    o += ",\"mean_while_jobs\":";
    append_number(o, st.nodes[i].mean_while_jobs, 4);
    o += ",\"samples_while_jobs\":" + std::to_string(st.nodes[i].samples_while_jobs) +
         ",\"drops\":" + std::to_string(st.nodes[i].drops) + "}";
  }
  o += "],\"drops\":[";
  for (size_t i = 0; i < st.drops.size(); ++i) {
    const jobs::MetricsStats::DropAt& d = st.drops[i];
    o += i ? ",{\"node\":" : "{\"node\":";
    append_string(o, d.node);
    o += ",\"from\":";
    append_string(o, jobs::format_wall_time(d.from_s));
    o += ",\"to\":";
    append_string(o, jobs::format_wall_time(d.to_s));
    o += ",\"lowest\":";
    append_number(o, d.lowest, 4);
    o += ",\"median\":";
    append_number(o, d.median, 4);
    o += "}";
  }
  return o + "]}";
}

// Reads --metrics after the jobs (hosts are matched to the record's nodes): every problem
// named with its line like the jobs' own, the hosts not in the record said once.
bool read_metrics(const std::string& path, const jobs::JobSet& set, jobs::NodeMetrics* m, bool* bad) {
  std::string text;
  if (!read_input(path, &text)) return false;
  *m = jobs::parse_dcgm_metrics(text, path == "-" ? "stdin" : path, set);
  for (size_t i = 0; i < m->problems.size() && i < 20; ++i) {
    std::cerr << "gantt-cli: jobs: " << m->source;
    if (m->problems[i].line) std::cerr << ":" << m->problems[i].line;
    std::cerr << ": " << m->problems[i].what << "\n";
  }
  if (m->problems.size() > 20) std::cerr << "gantt-cli: jobs: ... and " << m->problems.size() - 20 << " more bad lines\n";
  *bad = *bad || !m->problems.empty();
  // A refused header (dcgmi dmon output, no known columns) or no line read: nothing to draw.
  if (!m->problems.empty() && m->samples_read == 0 && m->other_series_ignored == 0) return false;
  if (m->unknown_node_samples) {
    std::cerr << "gantt-cli: jobs: " << m->source << ": " << m->unknown_node_samples << " samples from "
              << m->unknown_node_count << " hosts not in the job record left out (";
    for (size_t i = 0; i < m->unknown_nodes.size(); ++i) std::cerr << (i ? ", " : "") << m->unknown_nodes[i];
    std::cerr << (m->unknown_node_count > m->unknown_nodes.size() ? ", ...)\n" : ")\n");
  }
  if (m->other_series_ignored)
    std::cerr << "gantt-cli: jobs: " << m->source << ": " << m->other_series_ignored
              << " samples of other series than utilisation left aside\n";
  if (!m->has_kind) {
    std::cerr << "gantt-cli: jobs: " << m->source << ": no utilisation sample of a node in the job record\n";
    return false;
  }
  return true;
}

void print_stats_json(const jobs::JobSet& set, const jobs::ClusterStats& st, const jobs::MetricsStats* metrics,
                      std::ostream& os) {
  using gantt::json::append_number;
  using gantt::json::append_string;
  std::string o = "{\"from\":";
  append_string(o, jobs::format_wall_time(st.from_s));
  o += ",\"to\":";
  append_string(o, jobs::format_wall_time(st.to_s));
  o += ",\"nodes\":" + std::to_string(set.nodes.size()) + ",\"gpus_per_node\":" + std::to_string(set.gpus_per_node);
  o += ",\"jobs\":" + std::to_string(st.jobs) + ",\"started\":" + std::to_string(st.started) +
       ",\"running\":" + std::to_string(st.running) + ",\"pending\":" + std::to_string(st.pending);
  const std::pair<const char*, double> figures[] = {{"used_gpu_hours", st.used_gpu_hours},
                                                    {"idle_gpu_hours", st.idle_gpu_hours},
                                                    {"capacity_gpu_hours", st.capacity_gpu_hours},
                                                    {"idle_while_waiting_gpu_hours", st.idle_while_waiting_gpu_hours},
                                                    {"fragmentation", st.fragmentation}};
  for (const auto& [k, v] : figures) {
    o += std::string(",\"") + k + "\":";
    append_number(o, v, 4);
  }
  const auto waits = [&](const char* key, const std::vector<jobs::WaitStats>& rows) {
    o += std::string(",\"") + key + "\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const jobs::WaitStats& w = rows[i];
      o += i ? ",{\"key\":" : "{\"key\":";
      append_string(o, w.key);
      o += ",\"started\":" + std::to_string(w.jobs) + ",\"waiting\":" + std::to_string(w.waiting) +
           ",\"wait_p50_s\":" + std::to_string(w.p50_s) + ",\"wait_p90_s\":" + std::to_string(w.p90_s) +
           ",\"wait_max_s\":" + std::to_string(w.max_s) + "}";
    }
    o += "]";
  };
  waits("by_partition", st.by_partition);
  waits("by_user", st.by_user);
  o += ",\"nodes_by_busy\":[";
  for (size_t i = 0; i < st.nodes.size(); ++i) {
    const jobs::NodeUse& u = st.nodes[i];
    o += i ? ",{\"node\":" : "{\"node\":";
    append_string(o, u.node);
    o += ",\"busy_share\":";
    append_number(o, u.busy_share(), 4);
    o += ",\"used_gpu_hours\":";
    append_number(o, u.used_gpu_hours, 3);
    o += ",\"jobs\":" + std::to_string(u.jobs) + ",\"short_jobs\":" + std::to_string(u.short_jobs) + "}";
  }
  o += "]";
  if (metrics) o += metrics_json(*metrics);
  o += "}\n";
  os << o;
}

int run_jobs(const JobsCliOptions& o) {
  ChartTarget target{"jobs", o.output, o.format};
  if (!o.output.empty() && !resolve_chart_format(target)) return kExitError;
  jobs::ChartOptions co;
  co.width_px = o.width_px;
  co.per_gpu = o.per_gpu;
  co.color_by = o.color_by == "partition" ? jobs::ColorBy::kPartition : jobs::ColorBy::kUser;
  int64_t now = jobs::kUnknownTime;
  if (!span_arg("--wait-threshold", o.wait_threshold, &co.wait_threshold_s) ||
      !span_arg("--short", o.short_span, &co.short_s) || !time_arg("--from", o.from, &co.from_s) ||
      !time_arg("--to", o.to, &co.to_s) || !time_arg("--now", o.now, &now))
    return kExitError;
  if (co.from_s != jobs::kUnknownTime && co.to_s != jobs::kUnknownTime && co.to_s <= co.from_s) {
    std::cerr << "gantt-cli: jobs: --to must be after --from\n";
    return kExitError;
  }
  jobs::PlacementRequest request;
  if (!o.submit.empty()) {
    std::string why;
    if (!jobs::parse_placement_request(o.submit, &request, &why)) {
      std::cerr << "gantt-cli: jobs: --submit: " << why << "\n";
      return kExitError;
    }
  }

  std::string text;
  if (!read_input(o.file, &text)) return kExitError;
  jobs::JobSet set = jobs::parse_jobs(text, o.file == "-" ? "stdin" : o.file);
  text.clear();
  text.shrink_to_fit();
  bool bad = !set.problems.empty();
  bool fatal = bad && set.jobs.empty();
  for (size_t i = 0; i < set.problems.size(); ++i) {
    const jobs::ParseProblem& p = set.problems[i];
    fatal = fatal || p.line == 0;
    if (i >= 20) continue;
    std::cerr << "gantt-cli: jobs: " << set.source;
    if (p.line) std::cerr << ":" << p.line;
    std::cerr << ": " << p.what << "\n";
  }
  if (set.problems.size() > 20) std::cerr << "gantt-cli: jobs: ... and " << set.problems.size() - 20 << " more bad lines\n";
  if (fatal) {
    if (set.jobs.empty() && !set.problems.empty() && set.problems.front().line != 0)
      std::cerr << "gantt-cli: jobs: " << set.source << ": no line could be read\n";
    return kExitError;
  }
  if (set.jobs.empty()) {
    std::cerr << "gantt-cli: jobs: " << set.source << ": no jobs in the record\n";
    return kExitError;
  }
  if (set.steps_skipped)
    std::cerr << "gantt-cli: jobs: " << set.steps_skipped
              << " job steps left out (sacct --allocations lists only the allocations)\n";
  jobs::finish_jobs(set, o.gpus_per_node, now);
  if (set.gpus_per_node == 0)
    std::cerr << "gantt-cli: jobs: no job holds a GPU (no gres/gpu in AllocTRES): utilisation is in nodes; "
                 "pass --gpus-per-node to count GPUs\n";

  if (!o.captures.empty()) {
    const std::vector<jobs::CaptureStamp> stamps = read_capture_stamps(o.captures);
    const size_t unmatched = jobs::match_captures(set, stamps);
    std::cerr << "gantt-cli: jobs: " << stamps.size() - unmatched << " of " << stamps.size()
              << " captures matched to a job (by recorded job id, else host and time)\n";
  }
  jobs::NodeMetrics metrics;
  if (!o.metrics.empty()) {
    if (!read_metrics(o.metrics, set, &metrics, &bad)) return kExitError;
    co.metrics = &metrics;
  }
  if (!o.submit.empty()) {
    co.placement = jobs::place(set, request);
    if (co.placement->found) {
      std::cout << "what-if: " << request.gpus << " GPUs for " << jobs::format_span(request.duration_s)
                << " could start " << jobs::format_wall_time(co.placement->start_s) << " on";
      for (size_t i = 0; i < co.placement->nodes.size(); ++i)
        std::cout << " " << set.nodes[co.placement->nodes[i]] << "(" << co.placement->gpus_on_node[i] << ")";
      std::cout << "\n";
    } else {
      std::cout << "what-if: " << co.placement->why_not << "\n";
    }
  }

  if (o.stats || o.output.empty()) {
    const jobs::ClusterStats st = jobs::cluster_stats(set, jobs::StatsWindow{co.from_s, co.to_s, co.short_s});
    std::optional<jobs::MetricsStats> ms;
    if (co.metrics) {
      // The same window as the statistics above: the record's, unless --from/--to.
      const int64_t from = co.from_s != jobs::kUnknownTime ? co.from_s : st.from_s;
      const int64_t to = co.to_s != jobs::kUnknownTime ? co.to_s : st.to_s;
      ms = jobs::metrics_stats(set, metrics, jobs::node_utilisation(set, metrics, from, to));
    }
    if (o.stats_format == "json") print_stats_json(set, st, ms ? &*ms : nullptr, std::cout);
    else {
      print_stats_text(set, st, std::cout);
      if (ms) print_metrics_text(*ms, std::cout);
    }
  }
  if (!o.output.empty()) {
    jobs::ChartStats cs;
    const gantt::Scene scene = jobs::jobs_scene(set, co, &cs);
    if (!write_chart(scene, target)) return kExitError;
    std::cerr << "gantt-cli: jobs: " << o.output << ": " << set.jobs.size() << " jobs, " << cs.rows << " rows, "
              << cs.bars << " bars (" << cs.bars_individual << " drawn, " << cs.bars_aggregated << " as coverage), "
              << cs.long_waits << " long waits";
    if (co.metrics) std::cerr << ", " << cs.utilisation_strips << " utilisation strips, " << cs.utilisation_drops << " drops";
    std::cerr << "\n";
  }
  return bad && !o.skip_bad ? kExitError : kExitOk;
}

}  // namespace

void register_jobs(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<JobsCliOptions>();
  CLI::App* cmd = app.add_subcommand("jobs",
      "The cluster view: a Gantt chart of the scheduler's jobs on nodes (or GPUs) x time, and the\n"
      "queue's statistics. Reads Slurm accounting as\n"
      "  sacct --parsable2 --allocations --format \\\n"
      "        JobID,JobName,User,Partition,Submit,Start,End,State,NodeList,AllocTRES\n"
      "prints it (node lists like gpu[01-04,07] expanded, GPUs from gres/gpu=N, running jobs with\n"
      "End=Unknown), or a CSV with the header job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "(times 2024-03-01T09:00:00, nodes a Slurm node list, quoted when it has commas).\n"
      "Times are read and printed as the record writes them (sacct: the cluster's local time).\n"
      "\n"
      "The chart draws a bar per job coloured by user or partition, red dashed waits from submit to\n"
      "start (--wait-threshold), in orange the GPUs that sat idle while a job that would have fit\n"
      "waited (the scheduler's missed chances, by GPU count), the nodes most cut up by short jobs,\n"
      "and the cluster's GPU utilisation on top. --stats prints wait percentiles per partition and\n"
      "user, GPU-hours used and idle, the fragmentation index (the share of idle GPU time in holes\n"
      "shorter than --short) and the busiest and idlest nodes.\n"
      "\n"
      "--metrics FILE reads the GPUs' utilisation as DCGM sampled it, a Prometheus range query of the\n"
      "DCGM_FI_* series saved as CSV (timestamp,Hostname,gpu,metric,value, or a column per series;\n"
      "Unix seconds, UTC: read sacct with TZ=UTC), and draws a strip under each node with its drops\n"
      "while a job ran; --stats adds each node's mean while jobs ran and the drops. dcgmi dmon output\n"
      "has no timestamps nor host names and is refused.\n"
      "\n"
      "A bad line is reported with its number and the rest is still read; the exit code is then 2\n"
      "unless --skip-bad.\n"
      "\n"
      "Examples:\n"
      "  sacct -a -S 2024-03-01 --parsable2 --allocations --format JobID,JobName,User,Partition,\\\n"
      "        Submit,Start,End,State,NodeList,AllocTRES > jobs.txt\n"
      "  gantt-cli jobs jobs.txt -o cluster.svg\n"
      "  gantt-cli jobs jobs.txt --stats --stats-format json\n"
      "  gantt-cli jobs jobs.txt -o gpus.png --per-gpu --color-by partition --wait-threshold 1h\n"
      "  gantt-cli jobs jobs.txt -o cluster.svg --captures /shared/captures   # bars link to captures\n"
      "  gantt-cli jobs jobs.txt --metrics dcgm.csv -o cluster.svg          # utilisation under the nodes\n"
      "  gantt-cli jobs jobs.txt --submit 'gpus=16,time=4h' -o whatif.svg    # earliest slot\n"
      "  gantt-cli render --job 4242 /shared/captures -o job4242.svg         # a job's own chart\n");
  cmd->add_option("file", o->file, "sacct --parsable2 output or the jobs CSV (- = stdin)")->required();
  cmd->add_option("-o,--output", o->output, "chart: .svg, .png or .pdf (- = SVG on stdout); without it, --stats");
  cmd->add_option("--format", o->format, "chart format: svg, png or pdf (default: from the output name)")
      ->check(CLI::IsMember({"svg", "png", "pdf"}));
  cmd->add_flag("--stats", o->stats, "print the queue statistics (the default without -o)");
  cmd->add_option("--stats-format", o->stats_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_flag("--per-gpu", o->per_gpu, "a row per GPU instead of per node");
  cmd->add_option("--color-by", o->color_by, "colour bars by user or partition")
      ->check(CLI::IsMember({"user", "partition"}))
      ->capture_default_str();
  cmd->add_option("--wait-threshold", o->wait_threshold, "mark waits at least this long (30m, 2h, 1d, 01:30:00)")
      ->capture_default_str();
  cmd->add_option("--short", o->short_span, "a job or an idle hole shorter than this is short (fragmentation)")
      ->capture_default_str();
  cmd->add_option("--from", o->from, "chart and statistics window start (default: the first submit)");
  cmd->add_option("--to", o->to, "window end (default: the end of the record)");
  cmd->add_option("--now", o->now, "when the record was taken: running jobs run up to it (default: its latest time)");
  cmd->add_option("--gpus-per-node", o->gpus_per_node, "GPUs in a node (default: the most seen allocated on one)")
      ->check(CLI::Range(1u, 65536u));
  cmd->add_option("--captures", o->captures, "directories or .gpuh files: link each job's bar to its captures");
  cmd->add_option("--submit", o->submit, "what-if: 'gpus=N,time=SPAN[,at=TIME]', the earliest slot (first fit, backfill)");
  cmd->add_option("--metrics", o->metrics,
                  "DCGM samples as a Prometheus CSV (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_PROF_SM_ACTIVE or _GR_ENGINE_ACTIVE): "
                  "a utilisation strip under each node, its drops while a job ran, and their statistics");
  cmd->add_flag("--skip-bad", o->skip_bad, "exit 0 even when some lines could not be read");
  cmd->add_option("--width", o->width_px, "chart width in pixels")->capture_default_str()->check(CLI::Range(600, 16000));
  cmd->callback([o, &exit_code] { exit_code = run_jobs(*o); });
}

}  // namespace gantt_cli
