#include "gantt/model/json.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixture.h"

namespace gj = gantt::json;

namespace {

// A hostile name and what a JSON parser must hand back for it (as UTF-8).
struct Case {
  std::string input;
  std::string decoded;
};

const std::string kFffd = "\xEF\xBF\xBD";

std::vector<Case> hostile_cases() {
  return {
      {"plain_kernel", "plain_kernel"},
      {"quote\"back\\slash", "quote\"back\\slash"},
      {std::string("nul\0byte", 8), std::string("nul\0byte", 8)},
      {"ctl\x01\x1f\x7f\n\r\t\b\f", "ctl\x01\x1f\x7f\n\r\t\b\f"},
      {"</script><b>&amp;", "</script><b>&amp;"},
      {"void f<int>(float*, char const*)", "void f<int>(float*, char const*)"},
      {"\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80", "\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"},
      {"sep\xE2\x80\xA8line\xE2\x80\xA9", "sep\xE2\x80\xA8line\xE2\x80\xA9"},
      {"bad\xFF", "bad" + kFffd},
      {"cont\x80\xBF", "cont" + kFffd + kFffd},
      {"overlong\xC0\xAF", "overlong" + kFffd + kFffd},
      {"overlong3\xE0\x80\xAF", "overlong3" + kFffd + kFffd + kFffd},
      {"surrogate\xED\xA0\x80", "surrogate" + kFffd + kFffd + kFffd},
      {"toobig\xF4\x90\x80\x80", "toobig" + kFffd + kFffd + kFffd + kFffd},
      {"trunc\xE2\x82", "trunc" + kFffd + kFffd},
      {"\xF0\x9F\x98", kFffd + kFffd + kFffd},
      {"", ""},
  };
}

std::string hex(std::string_view s) {
  static const char k[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(k[c >> 4]);
    out.push_back(k[c & 15]);
  }
  return out;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (pclose(p) != 0) out = "FAILED:" + out;
  return out;
}

bool have(const char* tool) { return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0; }

std::string write_array(const std::string& path) {
  std::string doc = "[";
  bool first = true;
  for (const Case& c : hostile_cases()) {
    if (!first) doc += ",";
    first = false;
    gj::append_string(doc, c.input);
  }
  doc += "]";
  std::ofstream(path, std::ios::binary) << doc;
  std::string expected;
  for (const Case& c : hostile_cases()) expected += hex(c.decoded) + "\n";
  return expected;
}

}  // namespace

TEST(JsonString, EscapesWhatJsonRequires) {
  EXPECT_EQ(gj::quoted("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(gj::quoted("\n\t\x01"), R"("\n\t\u0001")");
  EXPECT_EQ(gj::quoted(std::string("\0", 1)), R"("\u0000")");
  EXPECT_EQ(gj::quoted("\xFF"), R"("\ufffd")");
  EXPECT_EQ(gj::quoted("\xE2\x80\xA8"), R"("\u2028")");
  EXPECT_EQ(gj::quoted("\xC3\xA9"), "\"\xC3\xA9\"");  // valid UTF-8 passes through
}

TEST(JsonString, OutputIsAlwaysValidUtf8WithoutRawControls) {
  // Every byte value at every position of a short string: nothing raw below 0x20 survives,
  // and the quotes balance.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 17) {
      const std::string in{static_cast<char>(a), static_cast<char>(b)};
      const std::string out = gj::quoted(in);
      for (unsigned char c : out) ASSERT_GE(c, 0x20) << a << "," << b;
      ASSERT_EQ(out.front(), '"');
      ASSERT_EQ(out.back(), '"');
    }
  }
}

TEST(JsonTime, NanosecondsBecomeExactMicroseconds) {
  const auto us = [](int64_t ns) {
    std::string s;
    gj::append_us_from_ns(s, ns);
    return s;
  };
  EXPECT_EQ(us(0), "0.000");
  EXPECT_EQ(us(1), "0.001");
  EXPECT_EQ(us(123456), "123.456");
  EXPECT_EQ(us(-1), "-0.001");
  // Past 2^53 ns a double would lose the last nanosecond; integers do not.
  EXPECT_EQ(us(9007199254740993), "9007199254740.993");
  EXPECT_EQ(us(INT64_MAX), "9223372036854775.807");
  EXPECT_EQ(us(INT64_MIN), "-9223372036854775.808");
}

TEST(JsonNumber, FiniteTrimmedAndNullForNonFinite) {
  const auto num = [](double v, int d) {
    std::string s;
    gj::append_number(s, v, d);
    return s;
  };
  EXPECT_EQ(num(12.5, 6), "12.5");
  EXPECT_EQ(num(3.0, 2), "3");
  EXPECT_EQ(num(-0.0001, 2), "0");
  EXPECT_EQ(num(1.0 / 0.0, 2), "null");
  EXPECT_EQ(num(0.0 / 0.0, 2), "null");
}

TEST(JsonParsers, PythonDecodesHostileNames) {
  if (!have("python3")) GTEST_SKIP() << "python3 not installed";
  const gantt_analysis_test::TempFile file(".json");
  const std::string& path = file.path;
  const std::string expected = write_array(path);
  const std::string got = run("python3 -c 'import json,sys\nfor s in json.load(open(sys.argv[1], encoding=\"utf-8\")): print(s.encode(\"utf-8\").hex())' " + path);
  EXPECT_EQ(got, expected);
}

TEST(JsonParsers, NodeDecodesHostileNames) {
  if (!have("node")) GTEST_SKIP() << "node not installed";
  const gantt_analysis_test::TempFile file(".json");
  const std::string& path = file.path;
  const std::string expected = write_array(path);
  const std::string got = run("node -e 'const fs=require(\"fs\");for (const s of JSON.parse(fs.readFileSync(process.argv[1],\"utf8\"))) console.log(Buffer.from(s,\"utf8\").toString(\"hex\"))' " + path);
  EXPECT_EQ(got, expected);
}
