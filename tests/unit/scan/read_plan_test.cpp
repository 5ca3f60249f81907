// The read plan's table of what a record takes on each path that loads captures whole: the one
// docs/scan.md prints is this one, and an estimate uses its path's figure.
#include "gantt/scan/read_plan.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gpuhook/capture.h>

namespace {

using gantt::scan::WholePath;

// docs/scan.md's rows "| path | measured | estimated |", in order.
struct DocRow {
  std::string what;
  uint32_t measured, estimated;
};
std::vector<DocRow> doc_rows() {
  std::ifstream in(GPUHOOK_SOURCE_DIR "/docs/scan.md");
  EXPECT_TRUE(in) << "docs/scan.md";
  std::vector<DocRow> rows;
  bool in_table = false;
  const std::regex row(R"(^\| (.+) \| (\d+)(?: B a record)? \| (\d+) \|$)");
  for (std::string line; std::getline(in, line);) {
    if (line == "| path | measured | estimated |") {
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("|---", 0) == 0) continue;
    std::smatch m;
    if (!std::regex_match(line, m, row)) break;
    rows.push_back({m[1], static_cast<uint32_t>(std::stoul(m[2])), static_cast<uint32_t>(std::stoul(m[3]))});
  }
  return rows;
}

TEST(ReadPlan, TheDocsTableIsTheCodesTable) {
  const std::vector<DocRow> rows = doc_rows();
  ASSERT_EQ(rows.size(), std::size(gantt::scan::kWholeCosts)) << "docs/scan.md's table has another number of paths";
  for (size_t i = 0; i < rows.size(); ++i) {
    const gantt::scan::WholeCost& c = gantt::scan::kWholeCosts[i];
    EXPECT_EQ(rows[i].what, c.what) << "row " << i;
    EXPECT_EQ(rows[i].measured, c.measured_bytes) << c.what;
    EXPECT_EQ(rows[i].estimated, c.estimated_bytes) << c.what;
  }
}

TEST(ReadPlan, AnEstimateTakesItsPathsFigureForEachIndexedRecord) {
  char path[] = "/tmp/read_plan_testXXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::remove(path);
  {
    std::string error;
    auto w = gpuhook::CaptureWriter::create(path, {}, &error);
    ASSERT_TRUE(w) << error;
    gpuhook::v1::Record r;
    r.mutable_header()->set_pid(1);
    ASSERT_TRUE(w->write(r));
    for (int i = 0; i < 999; ++i) {
      gpuhook::v1::Record k;
      k.mutable_kernel()->set_start_ns(1000 + i);
      k.mutable_kernel()->set_end_ns(2000 + i);
      ASSERT_TRUE(w->write(k));
    }
    ASSERT_TRUE(w->close());
  }
  const auto chart = gantt::scan::estimate_load({path}, WholePath::kChart, 0);
  const auto whatif = gantt::scan::estimate_load({path}, WholePath::kWhatif, 1000);
  std::remove(path);
  EXPECT_EQ(chart.records, 1000u);
  EXPECT_EQ(chart.bytes, 1000 * gantt::scan::bytes_per_record(WholePath::kChart));
  EXPECT_EQ(whatif.bytes, 1000 * gantt::scan::bytes_per_record(WholePath::kWhatif));
  EXPECT_GT(whatif.bytes, chart.bytes);
  EXPECT_EQ(whatif.budget, 1000u);
  EXPECT_FALSE(whatif.fits());
  EXPECT_EQ(chart.budget, gantt::scan::usable_memory() / 2);
}

}  // namespace
