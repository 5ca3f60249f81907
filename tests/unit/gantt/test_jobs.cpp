// The cluster view's pieces: node list grammar, times, AllocTRES, the two input formats, and
// the statistics against values computed by hand on a small schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>

#include "gantt/jobs/jobs.h"
#include "gantt/render/render.h"

namespace gantt::jobs {
namespace {

std::vector<std::string> nodes(std::string_view list) {
  std::vector<std::string> out;
  std::string why;
  EXPECT_TRUE(expand_nodelist(list, &out, &why)) << list << ": " << why;
  return out;
}

std::string nodelist_error(std::string_view list, size_t limit = 100000) {
  std::vector<std::string> out;
  std::string why;
  EXPECT_FALSE(expand_nodelist(list, &out, &why, limit)) << list;
  return why;
}

TEST(JobsNodeList, ExpandsRangesListsAndPadding) {
  EXPECT_EQ(nodes("gpu[01-04,07]"), (std::vector<std::string>{"gpu01", "gpu02", "gpu03", "gpu04", "gpu07"}));
  EXPECT_EQ(nodes("login1"), (std::vector<std::string>{"login1"}));
  EXPECT_EQ(nodes("a[8-10],b1"), (std::vector<std::string>{"a8", "a9", "a10", "b1"}));
  EXPECT_EQ(nodes("n[098-101]"), (std::vector<std::string>{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(nodes("r[1-2]n[1-2]"), (std::vector<std::string>{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(nodes("gpu[3]-ib"), (std::vector<std::string>{"gpu3-ib"}));
  EXPECT_TRUE(nodes("None assigned").empty());
  EXPECT_TRUE(nodes("(null)").empty());
  EXPECT_TRUE(nodes("").empty());
}

TEST(JobsNodeList, RefusesBadGrammarAndRunawayRanges) {
  EXPECT_NE(nodelist_error("gpu[01-04").find("unbalanced"), std::string::npos);
  EXPECT_NE(nodelist_error("gpu01]").find("unbalanced"), std::string::npos);
  EXPECT_NE(nodelist_error("gpu[[1]]").find("nested"), std::string::npos);
  EXPECT_NE(nodelist_error("gpu[4-1]").find("backwards"), std::string::npos);
  EXPECT_NE(nodelist_error("gpu[a-b]").find("not a number"), std::string::npos);
  EXPECT_NE(nodelist_error("gpu[]").find("empty"), std::string::npos);
  EXPECT_NE(nodelist_error("gpu1,,gpu2").find("empty name"), std::string::npos);
  // 10^18 names, or a product of small ranges, must not be allocated.
  EXPECT_NE(nodelist_error("n[0-999999999999999999]").find("more than"), std::string::npos);
  EXPECT_NE(nodelist_error("a[1-1000]b[1-1000]", 1000).find("more than"), std::string::npos);
}

TEST(JobsTimes, ParsesSlurmFormsAndRefusesTheRest) {
  int64_t t = 0;
  ASSERT_TRUE(parse_wall_time("2024-03-01T12:34:56", &t));
  EXPECT_EQ(t, 1709296496);
  EXPECT_EQ(format_wall_time(t), "2024-03-01T12:34:56");
  ASSERT_TRUE(parse_wall_time("2024-03-01 12:34:56", &t));
  EXPECT_EQ(t, 1709296496);
  ASSERT_TRUE(parse_wall_time("2024-03-01T12:34:56Z", &t));
  EXPECT_EQ(t, 1709296496);
  ASSERT_TRUE(parse_wall_time("2024-03-01", &t));
  EXPECT_EQ(t, 1709251200);
  for (const char* unknown : {"Unknown", "None", ""}) {
    ASSERT_TRUE(parse_wall_time(unknown, &t));
    EXPECT_EQ(t, kUnknownTime);
  }
  for (const char* bad : {"2024-13-01T00:00:00", "2024-03-01T25:00:00", "yesterday", "2024-03-01T12", "1709296496",
                          "2024-03-01T12:34:56+01:00", "2024-3-1"})
    EXPECT_FALSE(parse_wall_time(bad, &t)) << bad;
}

TEST(JobsTimes, SpansInSchedulerUnits) {
  int64_t s = 0;
  std::string why;
  const std::pair<const char*, int64_t> good[] = {{"90s", 90},     {"30m", 1800},      {"4h", 14400},  {"2d", 172800},
                                                  {"1.5h", 5400}, {"01:30:00", 5400}, {"2-00:00:00", 172800},
                                                  {"10:00", 600}};
  for (const auto& [text, want] : good) {
    ASSERT_TRUE(parse_span(text, &s, &why)) << text << ": " << why;
    EXPECT_EQ(s, want) << text;
  }
  for (const char* bad : {"30", "4 hours", "-1h", "1:2:3:4", "h", ""}) EXPECT_FALSE(parse_span(bad, &s, &why)) << bad;
  EXPECT_EQ(format_span(7500), "2h 05m");
  EXPECT_EQ(format_span(45 * 60), "45m");
  EXPECT_EQ(format_span(3 * 86400 + 4 * 3600), "3d 04h");
}

TEST(JobsTres, CountsGpus) {
  uint32_t g = 99;
  ASSERT_TRUE(parse_tres_gpus("billing=8,cpu=8,gres/gpu=4,mem=64G,node=1", &g));
  EXPECT_EQ(g, 4u);
  ASSERT_TRUE(parse_tres_gpus("cpu=8,gres/gpu:a100=2,gres/gpu:h100=2", &g));
  EXPECT_EQ(g, 4u);
  ASSERT_TRUE(parse_tres_gpus("gres/gpu:a100=4,gres/gpu=4", &g));  // the typed count is the same GPUs
  EXPECT_EQ(g, 4u);
  ASSERT_TRUE(parse_tres_gpus("cpu=8,mem=1G", &g));
  EXPECT_EQ(g, 0u);
  ASSERT_TRUE(parse_tres_gpus("", &g));
  EXPECT_EQ(g, 0u);
  EXPECT_FALSE(parse_tres_gpus("gres/gpu=four", &g));
  EXPECT_FALSE(parse_tres_gpus("gres/gpu=99999999999", &g));
}

// Two nodes of 4 GPUs, times in hours after 2024-03-01T00:00.
const char kSacct[] =
    "JobID|JobName|User|Partition|Submit|Start|End|State|NodeList|AllocTRES\n"
    "1|a|u1|p1|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T02:00:00|COMPLETED|n1|gres/gpu=4\n"
    "1.batch|batch||||2024-03-01T00:00:00|2024-03-01T02:00:00|COMPLETED|n1|gres/gpu=4\n"
    "2|b|u2|p1|2024-03-01T00:00:00|2024-03-01T02:00:00|2024-03-01T04:00:00|COMPLETED|n[1-2]|gres/gpu=8\n"
    "3|c|u2|p2|2024-03-01T01:00:00|2024-03-01T01:00:00|2024-03-01T01:10:00|FAILED|n2|gres/gpu=2\n"
    "4|d|u1|p2|2024-03-01T03:00:00|Unknown|Unknown|PENDING|None assigned|\n";

JobSet small_set() {
  JobSet set = parse_jobs(kSacct, "t");
  finish_jobs(set);
  return set;
}

TEST(JobsParse, ReadsSacctParsable2) {
  const JobSet set = small_set();
  EXPECT_TRUE(set.problems.empty());
  ASSERT_EQ(set.jobs.size(), 4u);
  EXPECT_EQ(set.steps_skipped, 1u);
  EXPECT_EQ(set.nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(set.gpus_per_node, 4u);  // the most held on one node at once
  EXPECT_EQ(set.jobs[1].nodes, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(set.jobs[1].gpus, 8u);
  EXPECT_FALSE(set.jobs[3].started());
  EXPECT_EQ(set.now_s, 1709251200 + 4 * 3600);
}

TEST(JobsParse, ReadsTheCsvWithQuotedNodeLists) {
  JobSet set = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "7,\"train, v2\",u,p,2024-03-01T00:00:00,2024-03-01T00:10:00,,RUNNING,\"gpu[1-2],gpu9\",16\n",
      "c.csv");
  ASSERT_TRUE(set.problems.empty()) << set.problems.front().what;
  ASSERT_EQ(set.jobs.size(), 1u);
  EXPECT_EQ(set.jobs[0].name, "train, v2");
  EXPECT_EQ(set.nodes, (std::vector<std::string>{"gpu1", "gpu2", "gpu9"}));
  EXPECT_TRUE(set.jobs[0].running());
  EXPECT_EQ(set.jobs[0].gpus, 16u);
}

TEST(JobsParse, BadLinesAreNumberedAndTheRestIsRead) {
  const JobSet set = parse_jobs(
      "JobID|JobName|User|Partition|Submit|Start|End|State|NodeList|AllocTRES\n"
      "1|a|u|p|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|COMPLETED|n1|gres/gpu=1\n"
      "2|a|u|p|yesterday|2024-03-01T00:00:00|2024-03-01T01:00:00|COMPLETED|n1|gres/gpu=1\n"
      "3|a|u|p|2024-03-01T02:00:00|2024-03-01T01:00:00|2024-03-01T03:00:00|COMPLETED|n1|gres/gpu=1\n"
      "4|a|u|p|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|COMPLETED|n[1-|gres/gpu=1\n"
      "5|a|u\n"
      "6|a|u|p|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|COMPLETED|n2|gres/gpu=x\n"
      "7|a|u|p|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T01:00:00|COMPLETED|n2|gres/gpu=2\n",
      "bad.txt");
  ASSERT_EQ(set.jobs.size(), 2u);
  EXPECT_EQ(set.jobs[0].id, "1");
  EXPECT_EQ(set.jobs[1].id, "7");
  ASSERT_EQ(set.problems.size(), 5u);
  const size_t lines[] = {3, 4, 5, 6, 7};
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(set.problems[i].line, lines[i]) << set.problems[i].what;
  EXPECT_NE(set.problems[0].what.find("bad time"), std::string::npos);
  EXPECT_NE(set.problems[1].what.find("before it was submitted"), std::string::npos);
  EXPECT_NE(set.problems[2].what.find("node list"), std::string::npos);
  EXPECT_NE(set.problems[3].what.find("fields"), std::string::npos);
}

TEST(JobsParse, NoHeaderIsOneProblemAndNoJobs) {
  const JobSet set = parse_jobs("1|a|u|p|2024-03-01T00:00:00|||PENDING||\n", "x");
  EXPECT_TRUE(set.jobs.empty());
  ASSERT_EQ(set.problems.size(), 1u);
  EXPECT_NE(set.problems[0].what.find("lacks"), std::string::npos);
  EXPECT_EQ(parse_jobs("", "empty").problems.size(), 1u);
}

TEST(JobsStats, MatchHandComputedValues) {
  const JobSet set = small_set();
  const ClusterStats st = cluster_stats(set, StatsWindow{});
  // Window 00:00-04:00, 2 nodes x 4 GPUs = 32 GPU-h. Used: job 1 4 GPU x 2 h, job 2 8 x 2 h,
  // job 3 2 x 1/6 h.
  EXPECT_DOUBLE_EQ(st.capacity_gpu_hours, 32.0);
  EXPECT_NEAR(st.used_gpu_hours, 8 + 16 + 2.0 / 6, 1e-9);
  EXPECT_NEAR(st.idle_gpu_hours, 32 - 24 - 2.0 / 6, 1e-9);
  EXPECT_EQ(st.started, 3u);
  EXPECT_EQ(st.pending, 1u);
  // Waits: p1 has 0 s (job 1) and 2 h (job 2): nearest-rank p50 0, p90 2 h.
  ASSERT_EQ(st.by_partition.size(), 2u);
  EXPECT_EQ(st.by_partition[0].key, "p1");
  EXPECT_EQ(st.by_partition[0].p50_s, 0);
  EXPECT_EQ(st.by_partition[0].p90_s, 7200);
  EXPECT_EQ(st.by_partition[1].key, "p2");
  EXPECT_EQ(st.by_partition[1].jobs, 1u);
  EXPECT_EQ(st.by_partition[1].waiting, 1u);
  // Job 2 (8 GPUs) waited 00:00-02:00 while at most 4 + (4 - 2) GPUs were free: never enough.
  // Job 4 records no GPUs (pending: AllocTRES is empty), so it counts for nothing.
  EXPECT_DOUBLE_EQ(st.idle_while_waiting_gpu_hours, 0.0);
  // Idle holes per GPU slot (short = under 30 min): n2's slots 0-1 idle 00:00-01:00 and
  // 01:10-02:00 (50 min), slots 2-3 00:00-02:00: no hole is short. All idle time 7.67 GPU-h.
  EXPECT_DOUBLE_EQ(st.fragmentation, 0.0);
  const ClusterStats fine = cluster_stats(set, StatsWindow{kUnknownTime, kUnknownTime, 3600 + 1});
  // Holes under 1 h 1 s: n2 slots 0-1 00:00-01:00 (1 h each) and 01:10-02:00 (50 min each).
  EXPECT_NEAR(fine.fragmentation, (2 * 60.0 + 2 * 50.0) / (2 * 60 + 2 * 50 + 2 * 120), 1e-9);
  // Nodes: n1 busy 4 GPU x 4 h = 16 of 16 GPU-h; n2 4 x 2 h + 2/6 of 16.
  ASSERT_EQ(st.nodes.size(), 2u);
  EXPECT_EQ(st.nodes[0].node, "n1");
  EXPECT_DOUBLE_EQ(st.nodes[0].busy_share(), 1.0);
  EXPECT_NEAR(st.nodes[1].used_gpu_hours, 8 + 2.0 / 6, 1e-9);
  EXPECT_EQ(st.nodes[1].short_jobs, 1u);
}

TEST(JobsStats, MissedChanceWhenAWaitingJobWouldHaveFit) {
  JobSet set = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,a,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T01:00:00,COMPLETED,n1,4\n"
      "2,b,u,p,2024-03-01T00:00:00,2024-03-01T00:30:00,2024-03-01T01:00:00,COMPLETED,n2,2\n",
      "m.csv");
  finish_jobs(set, 4);
  const std::vector<MissedChance> m = missed_chances(set);
  // Job 2 waited 00:00-00:30 for 2 GPUs while n2's 4 sat idle.
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].to_s - m[0].from_s, 1800);
  EXPECT_EQ(m[0].idle_gpus, 4u);
  EXPECT_EQ(m[0].smallest_waiting_gpus, 2u);
  EXPECT_DOUBLE_EQ(cluster_stats(set, StatsWindow{}).idle_while_waiting_gpu_hours, 2.0);
}

TEST(JobsSlots, PackOntoTheLowestFreeGpus) {
  const JobSet set = small_set();
  const std::vector<SlotUse> slots = assign_slots(set);
  // n2: job 3 takes slots 0-1 at 01:00; job 2 takes 4 at 02:00 (job 3 ended at 01:10).
  std::vector<uint32_t> job3, job2_n2;
  for (const SlotUse& s : slots) {
    if (s.job == 2) job3.push_back(s.slot);
    if (s.job == 1 && s.node == 1) job2_n2.push_back(s.slot);
  }
  EXPECT_EQ(job3, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(job2_n2, (std::vector<uint32_t>{0, 1, 2, 3}));
}

TEST(JobsPlacement, FirstFitWithBackfill) {
  const JobSet set = small_set();
  PlacementRequest req;
  std::string why;
  ASSERT_TRUE(parse_placement_request("gpus=4,time=1h", &req, &why)) << why;
  Placement p = place(set, req);
  // At 00:00 n2 is free until job 3 at 01:00: 1 h fits exactly there (backfill before job 2).
  ASSERT_TRUE(p.found);
  EXPECT_EQ(p.start_s, 1709251200);
  EXPECT_EQ(p.nodes, (std::vector<uint32_t>{1}));
  ASSERT_TRUE(parse_placement_request("gpus=8,time=30m", &req, &why));
  p = place(set, req);
  // 8 GPUs: both nodes free only after job 2 ends at 04:00.
  ASSERT_TRUE(p.found);
  EXPECT_EQ(p.start_s, 1709251200 + 4 * 3600);
  EXPECT_EQ(p.nodes.size(), 2u);
  ASSERT_TRUE(parse_placement_request("gpus=9,time=1h", &req, &why));
  EXPECT_FALSE(place(set, req).found);
  for (const char* bad : {"gpus=0,time=1h", "gpus=4", "time=1h", "gpus=4,time=1h,colour=red", "gpus=4,time=0s"})
    EXPECT_FALSE(parse_placement_request(bad, &req, &why)) << bad;
}

TEST(JobsParse, HostileRecordsAreBounded) {
  // A few bytes of node-list grammar name 60,000 nodes; two such lines pass the node limit.
  std::string text = "job,name,user,partition,submit,start,end,state,nodes,gpus\n";
  for (const char* prefix : {"a", "b"})
    text += std::string("1,x,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T01:00:00,COMPLETED,") + prefix +
            "[00000-59999],1\n";
  text += "2,x,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T01:00:00,COMPLETED,n1,5000\n";
  JobSet set = parse_jobs(text, "hostile.csv");
  ASSERT_EQ(set.jobs.size(), 1u);
  EXPECT_EQ(set.nodes.size(), 60000u);
  ASSERT_EQ(set.problems.size(), 2u);
  EXPECT_NE(set.problems[0].what.find("distinct nodes"), std::string::npos);
  EXPECT_NE(set.problems[1].what.find("per node"), std::string::npos);
  finish_jobs(set, 100000);
  EXPECT_EQ(set.gpus_per_node, kMaxGpusPerNode);
}

// The what-if against a brute force over every candidate start, on random schedules: the
// sparse-table lookups must give the same earliest slot.
TEST(JobsPlacement, AgreesWithBruteForce) {
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    std::string text = "job,name,user,partition,submit,start,end,state,nodes,gpus\n";
    const int n_jobs = 5 + static_cast<int>(rng() % 30);
    for (int j = 0; j < n_jobs; ++j) {
      const int start = static_cast<int>(rng() % 48) * 600, len = 600 * (1 + static_cast<int>(rng() % 12));
      const int node = 1 + static_cast<int>(rng() % 3), gpus = 1 + static_cast<int>(rng() % 2);
      text += std::to_string(j) + ",x,u,p," + format_wall_time(1709251200 + start) + "," +
              format_wall_time(1709251200 + start) + "," + format_wall_time(1709251200 + start + len) +
              ",COMPLETED,n" + std::to_string(node) + "," + std::to_string(gpus) + "\n";
    }
    JobSet set = parse_jobs(text, "r.csv");
    ASSERT_TRUE(set.problems.empty());
    finish_jobs(set, 4);
    PlacementRequest req;
    req.gpus = 1 + static_cast<uint32_t>(rng() % (4 * set.nodes.size()));
    req.duration_s = 600 * (1 + static_cast<int64_t>(rng() % 8));
    const Placement p = place(set, req);
    // Brute force: in use on node n over [t, t + d) from every job, at every change point.
    const auto used_max = [&](uint32_t n, int64_t t, int64_t d) {
      int64_t best = 0;
      for (int64_t probe = t; probe < t + d; probe += 60) {
        int64_t in_use = 0;
        for (const Job& j : set.jobs)
          if (j.nodes[0] == n && j.start_s <= probe && probe < j.end_s) in_use += j.gpus;
        best = std::max(best, in_use);
      }
      return best;
    };
    int64_t at = set.jobs.front().submit_s;
    for (const Job& j : set.jobs) at = std::min(at, j.submit_s);
    std::vector<int64_t> candidates = {at};
    for (const Job& j : set.jobs)
      if (j.end_s > at) candidates.push_back(j.end_s);
    std::sort(candidates.begin(), candidates.end());
    int64_t want = kUnknownTime;
    for (int64_t t : candidates) {
      int64_t free = 0;
      // A random schedule may oversubscribe a node: it then has nothing free, not less.
      for (uint32_t n = 0; n < set.nodes.size(); ++n) free += std::max<int64_t>(0, 4 - used_max(n, t, req.duration_s));
      if (free >= req.gpus) {
        want = t;
        break;
      }
    }
    ASSERT_EQ(p.found, want != kUnknownTime) << "round " << round;
    if (p.found) {
      EXPECT_EQ(p.start_s, want) << "round " << round;
    }
  }
}

// Mutated records (bytes flipped, grammar characters and digits inserted, lines cut) through
// every step: each line is a job or a numbered problem, and nothing crashes (ASan build too).
TEST(JobsParse, MutatedRecordsNeverCrash) {
  std::mt19937 rng(11);
  const std::string base = kSacct;
  const char inserts[] = "[]-,|0123456789\n\"Unknown";
  for (int round = 0; round < 1500; ++round) {
    std::string text = base;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0: text[at] = static_cast<char>(rng() % 256); break;
        case 1: text.insert(at, 1, inserts[rng() % (sizeof inserts - 1)]); break;
        case 2: text.erase(at, 1 + rng() % 8); break;
        default: text.insert(at, std::to_string(rng() % 100000)); break;
      }
    }
    JobSet set = parse_jobs(text, "fuzz");
    size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
    ASSERT_LE(set.jobs.size() + set.problems.size(), lines) << text;
    finish_jobs(set);
    const ClusterStats st = cluster_stats(set, StatsWindow{});
    ASSERT_GE(st.capacity_gpu_hours + 1e-9, 0.0);
    PlacementRequest req;
    req.gpus = 1 + static_cast<uint32_t>(rng() % 16);
    req.duration_s = 3600;
    (void)place(set, req);
    ChartOptions co;
    co.per_gpu = round % 2 == 1;
    co.width_px = 600;
    std::ostringstream svg;
    write_svg(jobs_scene(set, co), svg);
    ASSERT_NE(svg.str().find("</svg>"), std::string::npos);
  }
}

TEST(JobsCaptures, MatchByJobIdThenHostAndTime) {
  JobSet set = small_set();
  std::vector<CaptureStamp> c = {{"by-id.gpuh", "elsewhere", "2", kUnknownTime},
                                 {"by-host.gpuh", "n2.cluster.local", "", 1709251200 + 3600 + 60},
                                 {"nowhere.gpuh", "n9", "", 1709251200}};
  EXPECT_EQ(match_captures(set, c), 1u);
  EXPECT_EQ(set.jobs[1].captures, (std::vector<std::string>{"by-id.gpuh"}));
  EXPECT_EQ(set.jobs[2].captures, (std::vector<std::string>{"by-host.gpuh"}));
}

TEST(JobsScene, NamesAreEscapedAndBarsLinkToCaptures) {
  JobSet set = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,<script>&,\"u\"\"<b>\",p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T01:00:00,COMPLETED,n1,1\n",
      "x.csv");
  finish_jobs(set);
  set.jobs[0].captures = {"caps/r0 & r1.gpuh"};
  std::ostringstream svg;
  write_svg(jobs_scene(set, ChartOptions{}), svg);
  const std::string s = svg.str();
  EXPECT_EQ(s.find("<script>"), std::string::npos);
  EXPECT_NE(s.find("&lt;script&gt;&amp;"), std::string::npos);
  EXPECT_NE(s.find("<a href=\"caps/r0 &amp; r1.gpuh\">"), std::string::npos);
}

}  // namespace
}  // namespace gantt::jobs

namespace gantt::jobs {
namespace {

// What a review of hostile and unusual records found, each pinned down.
TEST(JobsHostile, GrammarLimitsDatesSpansAndCrlf) {
  std::vector<std::string> out;
  std::string why;
  // Bracket groups and name length bound the expansion's recursion and bytes.
  std::string groups = "n";
  for (int i = 0; i < 9; ++i) groups += "[0]";
  EXPECT_FALSE(expand_nodelist(groups, &out, &why));
  EXPECT_NE(why.find("bracket groups"), std::string::npos) << why;
  EXPECT_FALSE(expand_nodelist(std::string(300, 'x') + "[0-9]", &out, &why));
  EXPECT_NE(why.find("255 bytes"), std::string::npos) << why;
  // A control character in a bad list never reaches the message (a terminal escape).
  EXPECT_FALSE(expand_nodelist("]\x1b[2J", &out, &why));
  EXPECT_EQ(why.find('\x1b'), std::string::npos);
  // Typed GPU counts cannot add up past the per-count limit (and wrap a 32-bit total).
  std::string tres;
  for (int i = 0; i < 5; ++i) tres += "gres/gpu:a=1000000,";
  uint32_t gpus = 0;
  EXPECT_FALSE(parse_tres_gpus(tres, &gpus));
  // Dates that do not exist are refused, not moved to the next month.
  int64_t t = 0;
  EXPECT_FALSE(parse_wall_time("2024-02-31T00:00:00", &t));
  EXPECT_FALSE(parse_wall_time("2023-02-29", &t));
  EXPECT_TRUE(parse_wall_time("2024-02-29", &t));
  // Slurm's D-HH and D-HH:MM.
  int64_t s = 0;
  ASSERT_TRUE(parse_span("1-12:30", &s, &why)) << why;
  EXPECT_EQ(s, 86400 + 12 * 3600 + 30 * 60);
  ASSERT_TRUE(parse_span("1-12", &s, &why)) << why;
  EXPECT_EQ(s, 86400 + 12 * 3600);
  // CRLF line ends with a quoted last field.
  const JobSet crlf = parse_jobs(
      "\"job\",\"name\",\"user\",\"partition\",\"submit\",\"start\",\"end\",\"state\",\"nodes\",\"gpus\"\r\n"
      "\"1\",\"a\",\"u\",\"p\",\"2024-03-01T00:00:00\",\"2024-03-01T00:00:00\",\"2024-03-01T01:00:00\",\"DONE\",\"n1\",\"2\"\r\n",
      "crlf.csv");
  EXPECT_TRUE(crlf.problems.empty()) << crlf.problems.front().what;
  EXPECT_EQ(crlf.jobs.size(), 1u);
}

TEST(JobsHostile, CapacityFollowsTheSlotSplitAndHugeClustersStayBounded) {
  // 3 GPUs on two nodes split 2 + 1 (the first node takes the remainder): n2 holds 1 + 2.
  JobSet split = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,a,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T01:00:00,DONE,n[1-2],3\n"
      "2,b,u,p,2024-03-01T00:00:00,2024-03-01T00:00:00,2024-03-01T01:00:00,DONE,n[2-3],3\n",
      "split.csv");
  finish_jobs(split);
  EXPECT_EQ(split.gpus_per_node, 3u);
  // 100,000 nodes x 1,024 GPUs: statistics in closed form for idle slots, and node rows
  // instead of 102 M GPU rows.
  JobSet huge = parse_jobs(
      "job,name,user,partition,submit,start,end,state,nodes,gpus\n"
      "1,a,u,p,2024-01-01,2024-01-01,2024-01-02,DONE,n[0-99999],0\n"
      "2,b,u,p,2024-01-01,2024-01-01,2024-01-02,DONE,n0,1024\n",
      "huge.csv");
  finish_jobs(huge);
  ASSERT_EQ(huge.gpus_per_node, 1024u);
  const ClusterStats st = cluster_stats(huge, StatsWindow{});
  EXPECT_NEAR(st.used_gpu_hours, 1024 * 24.0, 1e-6);
  ChartOptions o;
  o.per_gpu = true;
  o.width_px = 800;
  ChartStats cs;
  jobs_scene(huge, o, &cs);
  EXPECT_EQ(cs.rows, 100000u);
  // A what-if pushed a billion days out: the axis keeps about one tick per 110 px.
  Placement far;
  far.found = true;
  far.start_s = 1704067200;
  far.end_s = far.start_s + int64_t{1'000'000'000} * 86400;
  far.nodes = {0};
  far.gpus_on_node = {1};
  ChartOptions fo;
  fo.placement = far;
  const Scene s = jobs_scene(split, fo);
  size_t lines = 0;
  for (const auto& item : s.items) lines += std::holds_alternative<Line>(item) ? 1 : 0;
  EXPECT_LT(lines, 200u);
}

}  // namespace
}  // namespace gantt::jobs
