// One UTF-8 rule for every writer (gantt/model/text.h), and the one place the formats differ:
// U+FFFE and U+FFFF are well-formed and legal in JSON but outside XML 1.0's Char production.
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "gantt/model/json.h"
#include "gantt/render/render.h"
#include "gantt/render/scene.h"
#include "gantt/model/text.h"

namespace gantt {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";
const std::string kFffe = "\xEF\xBF\xBE";
const std::string kFfff = "\xEF\xBF\xBF";

TEST(Utf8SequenceLength, AcceptsWellFormedAndRejectsWhatRfc3629Forbids) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8_sequence_length("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xF4\x8F\xBF\xBF", 0), 4u);  // U+10FFFF
  EXPECT_EQ(utf8_sequence_length(kFffe, 0), 3u);
  EXPECT_EQ(utf8_sequence_length(kFfff, 0), 3u);
  EXPECT_EQ(utf8_sequence_length("\xC0\xAF", 0), 0u);          // overlong
  EXPECT_EQ(utf8_sequence_length("\xE0\x80\xAF", 0), 0u);      // overlong
  EXPECT_EQ(utf8_sequence_length("\xED\xA0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(utf8_sequence_length("\xF4\x90\x80\x80", 0), 0u);  // past U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xE2\x82", 0), 0u);          // truncated
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // stray continuation
}

TEST(Noncharacters, JsonKeepsUfffeAndUffffBecauseJsonAllowsThem) {
  EXPECT_EQ(json::quoted("a" + kFffe + "b" + kFfff), "\"a" + kFffe + "b" + kFfff + "\"");
}

TEST(Noncharacters, SvgReplacesUfffeAndUffffBecauseXmlForbidsThem) {
  Scene scene;
  scene.title = "title" + kFffe;
  scene.text(make_text(1, 2, "label" + kFfff, 10, Color{}));
  std::ostringstream svg;
  write_svg(scene, svg);
  const std::string out = svg.str();
  EXPECT_EQ(out.find(kFffe), std::string::npos);
  EXPECT_EQ(out.find(kFfff), std::string::npos);
  EXPECT_NE(out.find("title" + kFffd), std::string::npos);
  EXPECT_NE(out.find("label" + kFffd), std::string::npos);
}

TEST(Noncharacters, CleanedTextAndCsvCellsReplaceThemTooSinceTheyMayEndUpInAnSvg) {
  EXPECT_EQ(utf8_clean("x" + kFffe + kFfff), "x" + kFffd + kFffd);
  std::string cell;
  append_csv_field(cell, kFfff);
  EXPECT_EQ(cell, kFffd);
  EXPECT_EQ(utf8_clean("\xEF\xBF\xBD\xEF\xBF\xBC"), "\xEF\xBF\xBD\xEF\xBF\xBC");  // U+FFFD, U+FFFC stay
}

TEST(PrintableUtf8, ControlsAndLineSeparatorsBecomeQuestionMarksInvalidBytesUfffd) {
  EXPECT_EQ(printable_utf8("a\nb\x7F"), "a?b?");
  EXPECT_EQ(printable_utf8("x\xE2\x80\xA8y\xE2\x80\xA9"), "x?y?");
  EXPECT_EQ(printable_utf8("bad\xFF"), "bad" + kFffd);
  EXPECT_EQ(printable_utf8("\xC3\xA9"), "\xC3\xA9");
}

}  // namespace
}  // namespace gantt
