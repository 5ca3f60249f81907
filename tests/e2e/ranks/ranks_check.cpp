// Checks a multi-rank job end to end: loads the captures (or a merged file), aligns them,
// matches the collectives and names the straggler, then compares with what the test expects.
//   ranks_check [--expect-straggler R|none] [--expect-offset CAPTURE:NS]... [--tolerance-ns N]
//               [--min-collectives N] [--expect-instances N] FILE...
// --expect-instances N: exactly N collectives (communicator + sequence) across the job, each
// with every rank of its communicator: a numbering that differs between ranks splits one
// collective into several incomplete ones.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::string expect_straggler;
  std::vector<std::pair<size_t, int64_t>> expect_offsets;
  int64_t tolerance_ns = 20'000;
  uint64_t min_collectives = 1;
  int64_t expect_instances = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--expect-straggler" && i + 1 < argc) {
      expect_straggler = argv[++i];
    } else if (a == "--expect-offset" && i + 1 < argc) {
      std::string v = argv[++i];
      size_t colon = v.find(':');
      if (colon == std::string::npos) return 2;
      expect_offsets.push_back({std::stoul(v.substr(0, colon)), std::stoll(v.substr(colon + 1))});
    } else if (a == "--tolerance-ns" && i + 1 < argc) {
      tolerance_ns = std::stoll(argv[++i]);
    } else if (a == "--expect-instances" && i + 1 < argc) {
      expect_instances = std::stoll(argv[++i]);
    } else if (a == "--min-collectives" && i + 1 < argc) {
      min_collectives = std::stoull(argv[++i]);
    } else {
      files.push_back(a);
    }
  }
  gantt::Model model = gantt::load(files, gantt::LoadOptions{});
  std::vector<gantt::RankClockInput> inputs = gantt::rank_clock_inputs(model);
  gantt::RankAlignment al = gantt::align_model_ranks(model);
  for (const std::string& line : gantt::describe(al, inputs)) printf("%s\n", line.c_str());
  printf("%s\n", gantt::summarize(al).c_str());
  auto collectives = gantt::match_collectives(gantt::collective_calls(model));
  gantt::StragglerReport sr = gantt::find_straggler(collectives);
  printf("straggler: %s\n", sr.reason.c_str());
  for (const gantt::RankStraggling& r : sr.ranks)
    printf("rank %d: last at %" PRIu64 " of %" PRIu64 ", median lateness %" PRId64 " ns, jitter %" PRId64 " ns\n",
           r.global_rank, r.times_last, r.collectives, r.lateness_median_ns, r.lateness_jitter_ns);
  printf("%s", gantt::format_collective_stats(gantt::collective_stats(collectives)).c_str());
  gantt::ImbalanceReport ib = gantt::busy_imbalance(gantt::rank_busy_intervals(model));
  printf("busy imbalance: %.1f%% (busiest rank %d)\n", ib.imbalance * 100, ib.busiest_rank);

  int failures = 0;
  if (sr.collectives < min_collectives) {
    fprintf(stderr, "FAIL: %" PRIu64 " complete collectives, expected at least %" PRIu64 "\n", sr.collectives, min_collectives);
    ++failures;
  }
  if (!expect_straggler.empty()) {
    int want = expect_straggler == "none" ? -1 : atoi(expect_straggler.c_str());
    if (sr.straggler != want) {
      fprintf(stderr, "FAIL: straggler %d, expected %s\n", sr.straggler, expect_straggler.c_str());
      ++failures;
    }
  }
  if (expect_instances >= 0) {
    uint64_t incomplete = 0;
    for (const gantt::CollectiveInstance& c : collectives) {
      if (c.complete) continue;
      ++incomplete;
      fprintf(stderr, "FAIL: %s on communicator %016" PRIx64 " sequence %" PRIu64 ": %zu of %d ranks\n",
              gantt::nccl_op_name(c.op), c.comm_id, c.sequence, c.arrivals.size(), c.nranks);
    }
    printf("collective instances: %zu, incomplete %" PRIu64 "\n", collectives.size(), incomplete);
    if (incomplete > 0 || collectives.size() != static_cast<size_t>(expect_instances)) {
      fprintf(stderr, "FAIL: %zu collectives (%" PRIu64 " incomplete), expected %" PRId64 " complete ones\n",
              collectives.size(), incomplete, expect_instances);
      ++failures;
    }
  }
  for (auto [capture, want] : expect_offsets) {
    if (capture >= al.captures.size()) {
      fprintf(stderr, "FAIL: no capture %zu\n", capture);
      ++failures;
      continue;
    }
    int64_t got = al.captures[capture].offset_ns;
    int64_t err = got - want;
    printf("capture %zu: offset %" PRId64 " ns, expected %" PRId64 " ns, error %" PRId64 " ns\n", capture, got, want, err);
    if (err > tolerance_ns || err < -tolerance_ns) {
      fprintf(stderr, "FAIL: capture %zu offset off by %" PRId64 " ns (tolerance %" PRId64 ")\n", capture, err, tolerance_ns);
      ++failures;
    }
  }
  return failures ? 1 : 0;
}
