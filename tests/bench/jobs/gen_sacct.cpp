// A seeded synthetic cluster record for the jobs benchmark: NODES nodes of 8 GPUs, JOBS jobs
// arriving at ~90% load, run by a FIFO scheduler that backfills single-node jobs, written as
// `sacct --parsable2 --allocations` prints it (running jobs with End=Unknown, pending ones
// with Start=Unknown). Fabricated data: nothing here comes from a real cluster.
//   jobs_gen_sacct NODES JOBS SEED > jobs.txt
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "gantt/jobs/jobs.h"

namespace {

constexpr int kGpusPerNode = 8;
constexpr int64_t kEpoch = 1709251200;  // 2024-03-01T00:00:00

struct Job {
  int64_t submit = 0, start = -1, end = -1, run = 0;
  int gpus = 0;
  int user = 0, partition = 0;
  std::vector<int> nodes;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: jobs_gen_sacct NODES JOBS SEED\n");
    return 2;
  }
  const int nodes = std::atoi(argv[1]);
  const int count = std::atoi(argv[2]);
  std::mt19937_64 rng(std::strtoull(argv[3], nullptr, 10));
  const int sizes[] = {1, 2, 4, 8, 16, 32, 64};
  std::discrete_distribution<int> size_of({30, 15, 15, 25, 8, 5, 2});
  std::lognormal_distribution<double> run_of(std::log(3600.0), 1.1);
  std::uniform_int_distribution<int> user_of(0, 39), partition_of(0, 3);
  // Mean job ~7.4 GPUs x ~1.8 h (13.5 GPU-h): arrivals for ~98% of the cluster's GPUs, so queues form.
  const double per_hour = 0.98 * nodes * kGpusPerNode / 13.5;
  std::exponential_distribution<double> gap(per_hour / 3600.0);

  std::vector<Job> jobs(static_cast<size_t>(count));
  double t = 0;
  for (Job& j : jobs) {
    t += gap(rng);
    j.submit = kEpoch + static_cast<int64_t>(t);
    j.gpus = std::min(sizes[size_of(rng)], nodes * kGpusPerNode);
    j.run = std::clamp<int64_t>(static_cast<int64_t>(run_of(rng)), 60, 3 * 86400);
    j.user = user_of(rng);
    j.partition = j.gpus > 8 ? 0 : partition_of(rng);
  }
  const int64_t now = jobs.empty() ? kEpoch : jobs.back().submit + 1;

  std::vector<int> free(static_cast<size_t>(nodes), kGpusPerNode);
  using Done = std::pair<int64_t, size_t>;  // end, job
  std::priority_queue<Done, std::vector<Done>, std::greater<>> running;
  std::deque<size_t> queue;
  size_t next = 0;
  const auto try_start = [&](size_t ji, int64_t at) {
    Job& j = jobs[ji];
    if (j.gpus <= kGpusPerNode) {
      int best = -1;  // best fit: the fullest node that still holds it
      for (int n = 0; n < nodes; ++n)
        if (free[static_cast<size_t>(n)] >= j.gpus && (best < 0 || free[static_cast<size_t>(n)] < free[static_cast<size_t>(best)])) best = n;
      if (best < 0) return false;
      j.nodes = {best};
    } else {
      const int need = j.gpus / kGpusPerNode;
      j.nodes.clear();
      for (int n = 0; n < nodes && static_cast<int>(j.nodes.size()) < need; ++n)
        if (free[static_cast<size_t>(n)] == kGpusPerNode) j.nodes.push_back(n);
      if (static_cast<int>(j.nodes.size()) < need) return false;
    }
    const int per = std::min(j.gpus, kGpusPerNode);
    for (int n : j.nodes) free[static_cast<size_t>(n)] -= per;
    j.start = at;
    j.end = at + j.run;
    running.push({j.end, ji});
    return true;
  };
  while (next < jobs.size() || !running.empty()) {
    const int64_t arrive = next < jobs.size() ? jobs[next].submit : INT64_MAX;
    const int64_t finish = running.empty() ? INT64_MAX : running.top().first;
    const int64_t at = std::min(arrive, finish);
    if (at >= now) break;
    while (!running.empty() && running.top().first == at) {
      const Job& j = jobs[running.top().second];
      for (int n : j.nodes) free[static_cast<size_t>(n)] += std::min(j.gpus, kGpusPerNode);
      running.pop();
    }
    while (next < jobs.size() && jobs[next].submit == at) queue.push_back(next++);
    // FIFO; behind a blocked head, single-node jobs backfill (a look at the first 64).
    bool head_blocked = false;
    size_t looked = 0;
    for (auto it = queue.begin(); it != queue.end() && looked < 64; ++looked) {
      if (head_blocked && jobs[*it].gpus > kGpusPerNode) {
        ++it;
        continue;
      }
      if (try_start(*it, at)) {
        it = queue.erase(it);
      } else {
        head_blocked = true;
        ++it;
      }
    }
  }

  const char* partitions[] = {"gpu", "gpu-short", "debug", "interactive"};
  std::printf("JobID|JobName|User|Partition|Submit|Start|End|State|NodeList|AllocTRES\n");
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    const bool started = j.start >= 0 && j.start < now;
    const bool done = started && j.end <= now;
    std::string list = "None assigned";
    if (started) {
      char name[16];
      if (j.nodes.size() == 1) {
        std::snprintf(name, sizeof name, "gpu%03d", j.nodes[0] + 1);
        list = name;
      } else {
        list = "gpu[";
        for (size_t k = 0; k < j.nodes.size(); ++k) {
          std::snprintf(name, sizeof name, "%s%03d", k ? "," : "", j.nodes[k] + 1);
          list += name;
        }
        list += "]";
      }
    }
    std::printf("%zu|job_%zu|user%02d|%s|%s|%s|%s|%s|%s|", 100000 + i, i, j.user, partitions[j.partition],
                gantt::jobs::format_wall_time(j.submit).c_str(), started ? gantt::jobs::format_wall_time(j.start).c_str() : "Unknown",
                done ? gantt::jobs::format_wall_time(j.end).c_str() : "Unknown", done ? "COMPLETED" : started ? "RUNNING" : "PENDING",
                list.c_str());
    if (started)
      std::printf("billing=%d,cpu=%d,gres/gpu=%d,mem=%dG,node=%zu", j.gpus * 8, j.gpus * 8, j.gpus, j.gpus * 64,
                  j.nodes.size());
    std::printf("\n");
  }
  return 0;
}
