// CSV export and event selection on fabricated records.
#include <gtest/gtest.h>

#include <sstream>

#include "fabricate.h"
#include "gantt/export/export.h"
#include "gantt/model/filter.h"
#include "gantt/model/text.h"

using namespace gantt_test;

namespace {

gantt::Model two_kernels(const std::string& hostile) {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("x.gpuh");
  b.add(header());
  b.add(a100());
  b.add(string_def(1, "cudaLaunchKernel"));
  b.add(string_def(2, hostile));
  b.add(string_def(3, "gemm_kernel"));
  b.add(string_def(4, "step"));
  b.add(range(v1::RANGE_PUSH, 4, 9, 1'000'000));
  b.add(api(1, 9, 1'000'100, 1'000'200, 1));
  b.add(range(v1::RANGE_POP, 0, 9, 1'000'300));
  b.add(range(v1::RANGE_PUSH, 4, 9, 2'000'000));
  b.add(api(1, 9, 2'000'100, 2'000'200, 2));
  b.add(range(v1::RANGE_POP, 0, 9, 2'000'300));
  b.add(kernel(2, 7, 1, 0, 0, 1'000'500, 1'001'500));
  b.add(kernel(3, 7, 2, 2'000'150, 2'000'160, 2'000'500, 2'003'500));
  b.end_capture({});
  return m;
}

std::string csv(const gantt::Model& m, const gantt::EventFilter& f = {}) {
  std::ostringstream os;
  gantt::find_exporter("csv")->write(m, gantt::select_events(m, f), gantt::ExportOptions{}, os);
  return os.str();
}

}  // namespace

TEST(ExportCsv, QuotesAndCleansNames) {
  const std::string out = csv(two_kernels("k<\"a,b\">\n\xff"));
  // Quotes doubled, the field quoted, the invalid byte replaced by U+FFFD.
  // A newline in a name would break line-based readers: it is replaced too.
  EXPECT_NE(out.find("\"k<\"\"a,b\"\">\xEF\xBF\xBD\xEF\xBF\xBD\""), std::string::npos) << out;
  EXPECT_EQ(out.find('\xff'), std::string::npos);
}

// Issue 22 item 12: a kernel or range name is the app's text; a cell starting with = + - @
// (or a tab or CR) is a formula to a spreadsheet. Every CSV writer quotes it with a '.
TEST(ExportCsv, NamesThatLookLikeFormulasAreNeutralised) {
  std::string out = csv(two_kernels("=HYPERLINK(\"http://x\",\"y\")"));
  EXPECT_NE(out.find(",\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\","), std::string::npos) << out;
  for (const std::string name : {"+cmd", "-2+3", "@SUM(A1)", "-x"}) {
    out = csv(two_kernels(name));
    EXPECT_NE(out.find(",'" + name.substr(0, 1)), std::string::npos) << name << "\n" << out;
  }
  std::string field;
  gantt::append_csv_field(field, "-12");  // what a negative number looks like stays a number
  EXPECT_EQ(field, "-12");
  field.clear();
  gantt::append_csv_field(field, "plain=1");
  EXPECT_EQ(field, "plain=1");
}

TEST(ExportCsv, UnknownTimesAreEmptyCells) {
  const std::string out = csv(two_kernels("plain"));
  std::istringstream is(out);
  std::string head, row1, row2;
  std::getline(is, head);
  std::getline(is, row1);
  std::getline(is, row2);
  EXPECT_EQ(head.substr(0, 22), "capture,device,stream,");
  // Row 1: launch 1000100, queued/submitted unknown (empty), start, end.
  EXPECT_NE(row1.find(",1000100,,,1000500,1001500,"), std::string::npos) << row1;
  EXPECT_NE(row2.find(",2000100,2000150,2000160,2000500,2003500,"), std::string::npos) << row2;
  EXPECT_NE(row2.find("80x1x1,256x1x1,32,0,1,warps,step"), std::string::npos) << row2;
}

TEST(Filter, KernelRegexRangeAndWindow) {
  const gantt::Model m = two_kernels("alpha_kernel");
  gantt::EventFilter f;
  f.kernel_regex = "^gemm";
  auto s = gantt::select_events(m, f);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(m.display_name(s.events[0]), "gemm_kernel");

  gantt::EventFilter r;
  r.range = "step@2";
  s = gantt::select_events(m, r);
  EXPECT_EQ(s.window_start_ns, 2'000'000u);
  // The second kernel was launched in step@2 and runs after the range closed on the host:
  // the window extends to its end. The first kernel ended long before.
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(m.display_name(s.events[0]), "gemm_kernel");

  r.range = "step@3";
  EXPECT_THROW(gantt::select_events(m, r), std::invalid_argument);
  gantt::EventFilter bad;
  bad.kernel_regex = "([";
  EXPECT_THROW(gantt::select_events(m, bad), std::invalid_argument);

  gantt::EventFilter w;  // capture starts at the header's 1'000'000
  w.from_ns = 0;
  w.to_ns = 10'000;
  s = gantt::select_events(m, w);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(m.display_name(s.events[0]), "alpha_kernel");
}

// Issue 22 item 11: std::regex recursed once per character of the name and overflowed the
// stack (SIGSEGV) on names of 50,000+ characters; RE2 runs in linear time, bounded stack.
TEST(Filter, KernelRegexOnAHugeNameNeitherOverflowsNorHangs) {
  const gantt::Model m = two_kernels(std::string(1'000'000, 'a') + "_kernel");
  gantt::EventFilter f;
  f.kernel_regex = "^(a|b)*_kernel$";
  auto s = gantt::select_events(m, f);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(m.display_name(s.events[0]).size(), 1'000'007u);
  f.kernel_regex = "(a+)+$";  // no match, exponential for a backtracking matcher
  s = gantt::select_events(m, f);
  EXPECT_EQ(s.events.size(), 0u);
}

TEST(Text, ParsesDurationsWithUnits) {
  int64_t ns = 0;
  EXPECT_TRUE(gantt::parse_duration("1.5ms", &ns));
  EXPECT_EQ(ns, 1'500'000);
  EXPECT_TRUE(gantt::parse_duration("200us", &ns));
  EXPECT_EQ(ns, 200'000);
  EXPECT_TRUE(gantt::parse_duration("42ns", &ns));
  EXPECT_EQ(ns, 42);
  EXPECT_TRUE(gantt::parse_duration("7\xC2\xB5s", &ns));  // µs, as people type it
  EXPECT_EQ(ns, 7'000);
  std::string why;
  EXPECT_FALSE(gantt::parse_duration("42", &ns, &why));  // the hook read it as seconds: never guess
  EXPECT_NE(why.find("add a unit"), std::string::npos) << why;
  EXPECT_FALSE(gantt::parse_duration("3 parsecs", &ns));
  EXPECT_FALSE(gantt::parse_duration("-1ms", &ns));
  EXPECT_EQ(gantt::format_duration(2'300'000), "2.30 ms");
  EXPECT_EQ(gantt::ellipsize("abcdef", 3), "abc\xE2\x80\xA6");
}
