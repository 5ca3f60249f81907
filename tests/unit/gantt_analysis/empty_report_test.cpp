// `stats --format json|csv` with nothing to report: the machine formats stay machine-readable
// (an empty table: CSV's header row alone; JSON with an empty array and the keys a full
// answer has), never an English sentence a script then fails to parse.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixture.h"
#include "gantt/analysis/comm.h"
#include "gantt/analysis/memory.h"
#include "gantt/analysis/metrics.h"
#include "gantt/analysis/pipeline.h"
#include "gantt/analysis/waits.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

namespace {

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// One line, no sentence: the header row (its first cell names a column).
void expect_header_only(const std::string& csv, const std::string& first_column) {
  EXPECT_EQ(lines(csv), 1u) << csv;
  EXPECT_EQ(csv.rfind(first_column + ",", 0), 0u) << csv;
}

}  // namespace

TEST(EmptyReport, CollectiveCsvIsTheHeaderAndJsonAnEmptyArray) {
  expect_header_only(ga::format_collective_stats({}, "csv"), "collective");
  EXPECT_EQ(ga::format_collective_stats({}, "json"), "{\"collectives\":[]}\n");
  EXPECT_NE(ga::format_collective_stats({}, "text").find("no NCCL collectives"), std::string::npos);
}

TEST(EmptyReport, CollectiveJsonHasTheSameKeysWhenFull) {
  gantt::CollectiveStatsRow row;
  row.op = "AllReduce";
  row.size_class_bytes = 1024;
  row.nranks = 2;
  row.count = 3;
  const std::string json = ga::format_collective_stats({row}, "json");
  EXPECT_EQ(json.rfind("{\"collectives\":[{\"op\":\"AllReduce\",\"size_class_bytes\":1024,\"ranks\":2,\"count\":3,", 0), 0u)
      << json;
  const std::string csv = ga::format_collective_stats({row}, "csv");
  EXPECT_EQ(lines(csv), 2u) << csv;
}

TEST(EmptyReport, WaitCsvIsTheHeaderAlone) {
  const gantt::Model m = small_model();
  expect_header_only(ga::format_wait_stats(m, {}, "csv"), "stream");
  const std::string json = ga::format_wait_stats(m, {}, "json");
  EXPECT_NE(json.find("\"streams\":[]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"all\":{\"stream\":\"all\",\"kernels\":0,"), std::string::npos) << json;
  EXPECT_NE(ga::format_wait_stats(m, {}, "text").find("no kernel with a queued stamp waited"), std::string::npos);
}

TEST(EmptyReport, CommCsvIsTheHeaderAlone) {
  expect_header_only(ga::format_comm_stats({}, {"a note"}, "csv"), "comm_id");
  EXPECT_EQ(ga::format_comm_stats({}, {"a note"}, "json"), "{\"communicators\":[]}\n");
}

TEST(EmptyReport, CommCsvIsOneTableOfEveryCommunicatorsPairs) {
  ga::CommMatrix c;
  c.comm_id = 0xab;
  c.nranks = 2;
  c.p2p_bytes = {0, 100, 0, 0};
  c.p2p_ns = {0, 10, 0, 0};
  c.ring_bytes = {0, 0, 50, 0};
  c.ring_ns = {0, 0, 5, 0};
  ga::CommMatrix d = c;
  d.comm_id = 0xcd;
  const std::string csv = ga::format_comm_stats({c, d}, {"a note"}, "csv");
  EXPECT_EQ(csv,
            "comm_id,from,to,p2p_bytes,p2p_us,p2p_GB/s,ring_model_bytes,ring_model_us,slow_pair\n"
            "0xab,0,1,100,0.010,10.00,0,0.000,no\n"
            "0xab,1,0,0,0.000,,50,0.005,no\n"
            "0xcd,0,1,100,0.010,10.00,0,0.000,no\n"
            "0xcd,1,0,0,0.000,,50,0.005,no\n");
}

TEST(EmptyReport, PipelineCsvIsTheHeaderAlone) {
  const gantt::Model m = small_model();
  expect_header_only(ga::format_pipeline_stats(m, {}, "csv", {"a note"}), "comm_id");
  EXPECT_EQ(ga::format_pipeline_stats(m, {}, "json", {"a note"}), "{\"pipelines\":[]}\n");
}

TEST(EmptyReport, MemoryAndMetricsKeepTheirTablesEmpty) {
  const gantt::Model m = small_model();
  EXPECT_EQ(ga::format_memory_stats(m, {}, "json"), "{\"devices\":[]}\n");
  EXPECT_EQ(ga::format_memory_stats(m, {}, "csv").find("no allocations"), std::string::npos);
  EXPECT_EQ(ga::format_metric_stats(m, {}, ga::Format::kJson), "{\"metrics\":[]}\n");
  expect_header_only(ga::format_metric_stats(m, {}, ga::Format::kCsv), "device");
}
