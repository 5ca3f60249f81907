// Wide NVTX names to UTF-8 without the C locale, cuts at whole characters, interned names.
#include "nvtx_names.h"

#include <gtest/gtest.h>

#include <clocale>
#include <cstring>
#include <string>

namespace gpuhook::hook {
namespace {

std::string utf8(const wchar_t* w, size_t cap, bool* cut) {
  std::string out(cap, '\0');
  size_t n = utf8_from_wide(w, out.data(), cap, cut);
  EXPECT_EQ(out[n], '\0');
  out.resize(n);
  return out;
}

TEST(NvtxNames, WideNamesBecomeUtf8InTheCLocale) {
  // A program is in the "C" locale until it calls setlocale; wcrtomb then fails on "ü".
  ASSERT_STREQ(std::setlocale(LC_CTYPE, nullptr), "C");
  bool cut = true;
  EXPECT_EQ(utf8(L"schritt-\u00fc-\u6b65", 64, &cut), "schritt-\xC3\xBC-\xE6\xAD\xA5");
  EXPECT_FALSE(cut);
  EXPECT_EQ(utf8(L"\U0001F680", 64, &cut), "\xF0\x9F\x9A\x80");
}

TEST(NvtxNames, ValuesThatAreNotCharactersBecomeTheReplacementCharacter) {
  bool cut = false;
  const wchar_t bad[] = {L'a', static_cast<wchar_t>(0xD800), static_cast<wchar_t>(0x110000), L'b', 0};
  EXPECT_EQ(utf8(bad, 64, &cut), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
}

TEST(NvtxNames, AWideNameThatDoesNotFitEndsAtAWholeCharacter) {
  bool cut = false;
  // "ab步" is 5 bytes; with room for 4 bytes and the NUL, 步 does not fit and is left out whole.
  EXPECT_EQ(utf8(L"ab\u6b65", 5, &cut), "ab");
  EXPECT_TRUE(cut);
}

TEST(NvtxNames, Utf8PrefixNeverEndsInsideACharacter) {
  const char* s = "ab\xE6\xAD\xA5" "c";
  EXPECT_EQ(utf8_prefix(s, 2), 2u);
  EXPECT_EQ(utf8_prefix(s, 3), 2u);
  EXPECT_EQ(utf8_prefix(s, 4), 2u);
  EXPECT_EQ(utf8_prefix(s, 5), 5u);
}

TEST(NvtxNames, InterningKeepsOneEntryPerTextForTheProcess) {
  const InternedName* a = intern_name("nvtx-names-test-domain");
  const InternedName* b = intern_name(std::string("nvtx-names-test-domain").c_str());
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_STREQ(a->text, "nvtx-names-test-domain");
  EXPECT_EQ(intern_name(L"dom\u00e4ne"), intern_name("dom\xC3\xA4ne"));
}

TEST(NvtxNames, AnInternedNamePastTheLimitIsCutAndMarked) {
  std::string huge(kMaxNameBytes + 100, 'q');
  const InternedName* n = intern_name(huge.c_str());
  EXPECT_EQ(std::string(n->text), std::string(kMaxNameBytes, 'q') + kCutMarker);
}

}  // namespace
}  // namespace gpuhook::hook
