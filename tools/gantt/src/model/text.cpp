#include "gantt/model/text.h"

#include <gpuhook/duration.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gantt {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const size_t left = s.size() - i;
  const auto cont = [&](size_t k) { return (b(k) & 0xC0) == 0x80; };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return left >= 2 && cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(i + 1) || !cont(i + 2)) return 0;
    if (c == 0xE0 && b(i + 1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(i + 1) > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (c == 0xF0 && b(i + 1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(i + 1) > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

bool is_xml_forbidden_noncharacter(std::string_view s, size_t i, size_t length) {
  return length == 3 && static_cast<unsigned char>(s[i]) == 0xEF && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
         (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xBE;
}

bool is_line_or_paragraph_separator(std::string_view s, size_t i, size_t length) {
  return length == 3 && static_cast<unsigned char>(s[i]) == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
         (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xA8;
}

void append_utf8_clean(std::string& out, std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence_length(s, i);
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (n == 0 || (n == 1 && (c < 0x20 || c == 0x7F))) {
      out += kReplacement;
      ++i;
    } else if (is_xml_forbidden_noncharacter(s, i, n)) {
      out += kReplacement;  // one character, so one replacement (not one per byte)
      i += n;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
}

std::string utf8_clean(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  append_utf8_clean(out, s);
  return out;
}

std::string printable_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      out.push_back('?');
      ++i;
      continue;
    }
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    if (is_line_or_paragraph_separator(s, i, n)) out.push_back('?');
    else out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

void append_xml_escaped(std::string& out, std::string_view s) {
  const std::string clean = utf8_clean(s);
  for (char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
}

void append_xml_escaped_lines(std::string& out, std::string_view s) {
  for (size_t start = 0;;) {
    const size_t nl = s.find('\n', start);
    append_xml_escaped(out, s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (nl == std::string_view::npos) return;
    out += "&#10;";
    start = nl + 1;
  }
}

bool csv_formula_like(std::string_view v) {
  if (v.empty()) return false;
  switch (v[0]) {
    case '=': case '+': case '@': case '\t': case '\r': return true;
    case '-':
      // A leading '-' is also how negative numbers start ("-12", "-3.5%", "-4.2 us" in diff
      // tables): those stay as they are. Anything with an operator after it ("-2+3+cmd|...",
      // the classic DDE payload) or without a digit first is a formula.
      if (v.size() < 2 || (std::isdigit(static_cast<unsigned char>(v[1])) == 0 && v[1] != '.')) return true;
      return v.find_first_of("=+-*/^&()<>!|@;:$'\"", 1) != std::string_view::npos;
    default: return false;
  }
}

void append_csv_field(std::string& out, std::string_view s) {
  std::string clean = utf8_clean(s);
  if (csv_formula_like(clean)) clean.insert(0, 1, '\'');
  if (clean.find_first_of(",\"\r\n") == std::string::npos) {
    out += clean;
    return;
  }
  out += '"';
  for (char c : clean) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

std::string ellipsize(std::string_view s, size_t max_chars) {
  const std::string clean = utf8_clean(s);
  size_t chars = 0, i = 0;
  while (i < clean.size()) {
    if (chars == max_chars) return clean.substr(0, i) + "\xE2\x80\xA6";
    const unsigned char c = static_cast<unsigned char>(clean[i]);
    i += c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : 4;
    ++chars;
  }
  return clean;
}

std::string format_duration(int64_t ns) {
  const double a = std::fabs(static_cast<double>(ns));
  const char* unit = "ns";
  double v = static_cast<double>(ns);
  if (a >= 1e9) { v /= 1e9; unit = "s"; }
  else if (a >= 1e6) { v /= 1e6; unit = "ms"; }
  else if (a >= 1e3) { v /= 1e3; unit = "us"; }
  char buf[48];
  if (unit[0] == 'n' && unit[1] == 's') std::snprintf(buf, sizeof buf, "%lld ns", static_cast<long long>(ns));
  else {
    const double av = std::fabs(v);
    std::snprintf(buf, sizeof buf, av >= 100 ? "%.0f %s" : av >= 10 ? "%.1f %s" : "%.2f %s", v, unit);
  }
  return buf;
}

std::string format_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) { v /= 1024; ++u; }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string_view api_display_name(std::string_view name) {
  const size_t v = name.rfind("_v");
  if (v == std::string_view::npos || v == 0 || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

bool parse_duration(std::string_view text, int64_t* ns, std::string* why) {
  uint64_t v = 0;
  if (!gpuhook::parse_duration(text, &v, why)) return false;
  *ns = static_cast<int64_t>(v);
  return true;
}

}  // namespace gantt
