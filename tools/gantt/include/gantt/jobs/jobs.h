// The cluster view: jobs from the scheduler's accounting records on nodes (or GPUs) x time.
// One level up from kernels, the same questions: who waited how long in the queue, which
// nodes sat idle while jobs waited, where short jobs fragment the machines.
//
//   JobSet set = parse_jobs(text, "sacct.txt");          // sacct --parsable2 or the CSV below
//   ClusterStats st = cluster_stats(set, StatsWindow{});  // `gantt-cli jobs --stats`
//   Scene s = jobs_scene(set, ChartOptions{});            // the chart, every back end of render.h
//
// Times are wall-clock seconds as the file writes them (sacct prints the cluster's local
// time, without a zone): read with timegm, printed back the same way, never shifted.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gantt/render/scene.h"

namespace gantt::jobs {

inline constexpr int64_t kUnknownTime = INT64_MIN;

// What one record may hold (the input is untrusted: a few bytes of node-list grammar name a
// hundred thousand nodes). The largest clusters have tens of thousands of nodes; a month of a
// busy one is a few hundred thousand jobs.
inline constexpr size_t kMaxJobs = 2'000'000;
inline constexpr size_t kMaxNodes = 100'000;
inline constexpr size_t kMaxMemberships = 4'000'000;  // job-node pairs
inline constexpr uint32_t kMaxGpusPerNode = 1024;

struct Job {
  std::string id, name, user, partition, state;
  int64_t submit_s = kUnknownTime;
  int64_t start_s = kUnknownTime;  // unknown: still pending (or never started)
  int64_t end_s = kUnknownTime;    // unknown: still running (drawn up to JobSet::now_s)
  std::vector<uint32_t> nodes;     // indices into JobSet::nodes, ascending
  uint32_t gpus = 0;               // in all, over its nodes
  size_t line = 0;                 // 1-based line of the input it came from
  std::vector<std::string> captures;  // capture files matched to it (match_captures)

  bool started() const { return start_s != kUnknownTime; }
  // GPUs it holds on its i-th node: an even split, the first nodes taking the remainder.
  uint32_t gpus_on(size_t i) const {
    if (nodes.empty()) return 0;
    const auto n = static_cast<uint32_t>(nodes.size());
    return gpus / n + (i < gpus % n ? 1 : 0);
  }
  bool running() const { return started() && end_s == kUnknownTime; }
};

struct ParseProblem {
  size_t line = 0;  // 1-based; 0 = the file as a whole
  std::string what;
};

struct JobSet {
  std::string source;              // the file name, for messages
  std::vector<std::string> nodes;  // node names in natural order (gpu2 before gpu10)
  std::vector<Job> jobs;           // in input order
  std::vector<ParseProblem> problems;
  size_t steps_skipped = 0;        // sacct job steps ("123.batch"): --allocations leaves them out
  int64_t now_s = kUnknownTime;    // the end of the record: running jobs run up to it
  uint32_t gpus_per_node = 0;      // capacity of a node; from --gpus-per-node or the most seen on one

  int64_t end_of(const Job& j) const { return j.end_s != kUnknownTime ? j.end_s : now_s; }
};

// --- Parsing (jobs_parse.cpp) ---

// "gpu[01-04,07],login1" -> gpu01 gpu02 gpu03 gpu04 gpu07 login1. Brackets may repeat in one
// name (r[1-2]n[1-2]); zero padding follows the range's first number. "None assigned" and
// "(null)" are no nodes. false and *why on bad grammar or more than `limit` names.
bool expand_nodelist(std::string_view list, std::vector<std::string>* out, std::string* why,
                     size_t limit = 100000);

// "2024-03-01T12:00:00" (also with a space, a trailing Z, or a date alone) -> seconds;
// "Unknown", "None" and "" -> kUnknownTime. false on anything else.
bool parse_wall_time(std::string_view text, int64_t* seconds);
// The inverse, "2024-03-01T12:00:00".
std::string format_wall_time(int64_t seconds);

// A span as schedulers write them: "90s", "30m", "4h", "2d", or Slurm's "[D-]HH:MM:SS" /
// "MM:SS". false and *why on anything else (a bare number has no unit and is refused).
bool parse_span(std::string_view text, int64_t* seconds, std::string* why);
// "2h 05m", "45m", "30s", "3d 04h".
std::string format_span(int64_t seconds);

// GPUs in an AllocTRES value: "billing=8,cpu=8,gres/gpu=4,mem=64G,node=1" -> 4. A typed
// count alone ("gres/gpu:a100=4") counts; beside the untyped total it is the same GPUs.
// false when a gres/gpu count is not a number.
bool parse_tres_gpus(std::string_view tres, uint32_t* gpus);

// The fields of one RFC 4180 CSV line, each trimmed; false and *why on a quote left open or
// text after a closing quote. Shared by the jobs CSV and the DCGM metrics CSV.
bool split_csv(std::string_view line, std::vector<std::string>* out, std::string* why);

// Reads `sacct --parsable2 --allocations --format
// JobID,JobName,User,Partition,Submit,Start,End,State,NodeList,AllocTRES` output (columns in
// any order, found by the header line; '|' separated) or the documented CSV (header
// job,name,user,partition,submit,start,end,state,nodes,gpus; RFC 4180 quoting). Which one is
// told by the header line. A bad line becomes a ParseProblem and the rest is still read;
// a missing header is one problem at line 0 and no jobs.
JobSet parse_jobs(std::string_view text, std::string source);

// After parsing or merging: node capacity (the most GPUs seen allocated on one node at once
// when `gpus_per_node` is 0) and `now_s` (the latest time in the record when not given).
void finish_jobs(JobSet& set, uint32_t gpus_per_node = 0, int64_t now_s = kUnknownTime);

// --- Analysis (jobs_stats.cpp) ---

struct WaitStats {
  std::string key;  // partition or user
  size_t jobs = 0, waiting = 0;  // started jobs; jobs still pending at now_s
  int64_t p50_s = 0, p90_s = 0, max_s = 0;  // of the started jobs' submit->start
};

struct NodeUse {
  std::string node;
  double used_gpu_hours = 0, capacity_gpu_hours = 0;
  size_t jobs = 0, short_jobs = 0;
  double busy_share() const { return capacity_gpu_hours > 0 ? used_gpu_hours / capacity_gpu_hours : 0; }
};

struct ClusterStats {
  int64_t from_s = 0, to_s = 0;
  size_t jobs = 0, started = 0, running = 0, pending = 0;
  std::vector<WaitStats> by_partition, by_user;  // sorted by key
  double used_gpu_hours = 0, capacity_gpu_hours = 0, idle_gpu_hours = 0;
  // Idle GPU time lying in holes shorter than `short_s` (GPU slot by slot), over all idle
  // time: the share of idle capacity cut too fine for a typical job. 0 when nothing idles.
  double fragmentation = 0;
  double idle_while_waiting_gpu_hours = 0;  // idle GPUs while a waiting job would have fit
  std::vector<NodeUse> nodes;  // sorted by busy share, busiest first
};

struct StatsWindow {
  int64_t from_s = kUnknownTime, to_s = kUnknownTime;  // default: the whole record
  int64_t short_s = 30 * 60;  // a hole or a job shorter than this is "short"
};

ClusterStats cluster_stats(const JobSet& set, const StatsWindow& window);

// One allocation of a job on one GPU slot (node, slot < gpus_per_node): jobs packed onto the
// lowest free slots of each node at their start, as a GPU-level chart draws them. Jobs with
// no GPUs hold no slot.
struct SlotUse {
  uint32_t job = 0, node = 0, slot = 0;
  int64_t from_s = 0, to_s = 0;
};
std::vector<SlotUse> assign_slots(const JobSet& set);

// Intervals where at least one job was waiting and enough GPUs sat idle for it: the
// scheduler's missed chances. With the idle GPU count at each.
struct MissedChance {
  int64_t from_s = 0, to_s = 0;
  uint32_t idle_gpus = 0, smallest_waiting_gpus = 0;
};
std::vector<MissedChance> missed_chances(const JobSet& set);

// The what-if job of --submit "gpus=16,time=4h[,at=TIME]": the earliest start at or after
// `at_s` where `gpus` GPUs stay free for `duration_s` on the recorded schedule (first fit,
// holes before later jobs allowed: backfill), with the nodes it would use.
struct Placement {
  bool found = false;
  int64_t start_s = 0, end_s = 0;
  std::vector<uint32_t> nodes;  // with the GPUs taken on each
  std::vector<uint32_t> gpus_on_node;
  std::string why_not;  // when not found
};
struct PlacementRequest {
  uint32_t gpus = 0;
  int64_t duration_s = 0;
  int64_t at_s = kUnknownTime;  // default: the start of the record
};
// "gpus=16,time=4h,at=2024-03-01T09:00:00": false and *why on bad text.
bool parse_placement_request(std::string_view text, PlacementRequest* out, std::string* why);
Placement place(const JobSet& set, const PlacementRequest& request);

// --- Captures (jobs_stats.cpp) ---

struct CaptureStamp {
  std::string path, host, job_id;
  int64_t start_s = kUnknownTime;  // the capture's wall-clock start, in the record's time frame
};
// Fills Job::captures: by the recorded job id, else by host among the job's nodes and a
// start inside the job's run. Returns how many captures matched no job.
size_t match_captures(JobSet& set, const std::vector<CaptureStamp>& captures);

// --- The chart (jobs_scene.cpp) ---

enum class ColorBy : uint8_t { kUser, kPartition };

struct NodeMetrics;  // gantt/jobs/jobs_metrics.h

struct ChartOptions {
  int width_px = 1920;
  bool per_gpu = false;  // one row per GPU slot instead of per node
  ColorBy color_by = ColorBy::kUser;
  int64_t wait_threshold_s = 30 * 60;  // mark waits at least this long
  int64_t from_s = kUnknownTime, to_s = kUnknownTime;
  int64_t short_s = 30 * 60;
  size_t max_individual_bars = 20000;  // beyond this, narrow bars are drawn as coverage
  std::optional<Placement> placement;  // --submit, drawn dashed
  const NodeMetrics* metrics = nullptr;  // --metrics: a utilisation strip under each node row
  std::string title;
};

struct ChartStats {
  size_t rows = 0, bars = 0, bars_individual = 0, bars_aggregated = 0;
  size_t long_waits = 0, missed_chances = 0;
  size_t utilisation_strips = 0, utilisation_drops = 0;  // --metrics
};

Scene jobs_scene(const JobSet& set, const ChartOptions& options, ChartStats* stats = nullptr);

}  // namespace gantt::jobs
