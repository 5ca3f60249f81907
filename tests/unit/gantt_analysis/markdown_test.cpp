// Markdown output (stats, diagnose, diff --format md) shows names from the traced program as
// written: a kernel named <img src=x onerror=alert(1)> must not become HTML in a PR comment.
#include <string>

#include <gtest/gtest.h>

#include "diagnose_builder.h"
#include "fixture.h"
#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/diff.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/table.h"

namespace ga = gantt::analysis;
using namespace gantt_analysis_test;

namespace {

constexpr const char* kHostile = "<img src=x onerror=alert(1)>&amp;|`code`*em*[a](javascript:x)";

// Our own Markdown uses no raw HTML, so any '<' in a report came from the program unescaped.
void expect_no_html(const std::string& md) {
  EXPECT_EQ(md.find('<'), std::string::npos) << md;
  EXPECT_EQ(md.find("&amp;|"), std::string::npos) << "an entity passed through as written:\n" << md;
}

gantt::Model hostile_model(double scale = 1.0) {
  Builder b;
  for (uint64_t i = 0; i < 10; ++i)
    b.k(kHostile, 7, i * 10'000, 10'000 + i * 10'000, 10'000 + i * 10'000 + static_cast<uint64_t>(8'000 * scale), 32);
  return b.done();
}

}  // namespace

TEST(Markdown, TextEscapesWhatARendererWouldTurnIntoHtml) {
  EXPECT_EQ(ga::markdown_text("<img src=x onerror=alert(1)>"), "&lt;img src=x onerror=alert(1)&gt;");
  EXPECT_EQ(ga::markdown_text("a & b &amp; c"), "a &amp; b &amp;amp; c");
  EXPECT_EQ(ga::markdown_text("![x](http://t/p.png) [y](javascript:z)"), "!\\[x\\](http://t/p.png) \\[y\\](javascript:z)");
  EXPECT_EQ(ga::markdown_text("a|b `c` *d* ~e~ \\f"), "a\\|b \\`c\\` \\*d\\* \\~e\\~ \\\\f");
  EXPECT_EQ(ga::markdown_text("line\nbreak"), "line?break");  // a line break would end a table row
}

TEST(Markdown, UnderscoreInsideAWordStaysAsWritten) {
  EXPECT_EQ(ga::markdown_text("kernels_waited"), "kernels_waited");
  EXPECT_EQ(ga::markdown_text("__nv_static__ share_%"), "\\_\\_nv_static\\_\\_ share\\_%");
}

TEST(Markdown, ALineStartIsNoBlockMarker) {
  EXPECT_EQ(ga::markdown_text("# title", true), "\\# title");
  EXPECT_EQ(ga::markdown_text("- item", true), "\\- item");
  EXPECT_EQ(ga::markdown_text("12. item", true), "12\\. item");
  EXPECT_EQ(ga::markdown_text("    code", true), "&#32;&#32;&#32;&#32;code");
  EXPECT_EQ(ga::markdown_text("# in a cell"), "# in a cell");  // a table cell starts no block
  EXPECT_EQ(ga::markdown_text("-0.5"), "-0.5");
}

TEST(Markdown, TableCellsAreEscaped) {
  ga::Table t;
  t.header = {"kernel", "n"};
  t.rows = {{kHostile, "1"}};
  const std::string md = ga::to_markdown(t);
  expect_no_html(md);
  EXPECT_NE(md.find("| &lt;img src=x onerror=alert(1)&gt;&amp;amp;\\|\\`code\\`\\*em\\*\\[a\\](javascript:x) | 1 |"),
            std::string::npos)
      << md;
}

TEST(Markdown, StatsReportShowsAHostileKernelNameAsText) {
  const gantt::Model m = hostile_model();
  const std::string md = ga::format_stats(ga::compute_stats(m, {}), ga::Format::kMarkdown);
  expect_no_html(md);
  EXPECT_NE(md.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << md;
}

TEST(Markdown, DiffReportShowsAHostileKernelNameAsText) {
  const std::string md = ga::format_diff(ga::diff_models(hostile_model(), hostile_model(1.5)), ga::Format::kMarkdown);
  expect_no_html(md);
  EXPECT_NE(md.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos) << md;
}

TEST(Markdown, DiagnoseReportEscapesTitleEvidenceAndNotes) {
  ga::DiagnoseReport r;
  ga::Finding f;
  f.rule = "low-occupancy";
  f.severity = ga::Severity::kWarning;
  f.title = std::string("# ") + kHostile;
  f.condition = "c";
  f.evidence = {std::string("kernel ") + kHostile};
  f.fix = "f";
  r.findings.push_back(f);
  r.rules.push_back({"low-occupancy", true, ""});
  r.rules.push_back({"sync-stall", false, std::string("nothing in ") + kHostile});
  const std::string md = ga::format_diagnose(r, ga::Format::kMarkdown);
  expect_no_html(md);
  EXPECT_NE(md.find("\n\\# &lt;img"), std::string::npos) << md;  // the title is no heading
  EXPECT_NE(md.find("- evidence: kernel &lt;img"), std::string::npos) << md;
  EXPECT_NE(md.find("- sync-stall: nothing in &lt;img"), std::string::npos) << md;
  // A real capture's findings go through the same writer.
  expect_no_html(ga::format_diagnose(ga::diagnose(hostile_model()), ga::Format::kMarkdown));
}
