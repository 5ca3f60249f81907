#include "gantt/model/json.h"

#include <cmath>
#include <cstdio>

#include "gantt/model/text.h"

namespace gantt::json {

void append_string(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            out += "\\u00";
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 0xF]);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (is_line_or_paragraph_separator(s, i, n)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  out.push_back('"');
}

std::string quoted(std::string_view bytes) {
  std::string out;
  append_string(out, bytes);
  return out;
}

void append_us_from_ns(std::string& out, int64_t ns) {
  // Work in unsigned magnitude so INT64_MIN does not overflow on negation.
  const bool negative = ns < 0;
  const uint64_t mag = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%s%llu.%03llu", negative ? "-" : "",
                              static_cast<unsigned long long>(mag / 1000),
                              static_cast<unsigned long long>(mag % 1000));
  out.append(buf, static_cast<size_t>(n));
}

void append_number(std::string& out, double value, int decimals) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  // Trim trailing zeros (and a bare point) so 12.5 prints as 12.5, not 12.500000.
  if (decimals > 0) {
    while (n > 1 && buf[n - 1] == '0') --n;
    if (n > 1 && buf[n - 1] == '.') --n;
  }
  std::string_view v(buf, static_cast<size_t>(n));
  if (v == "-0") v = "0";
  out.append(v);
}

}  // namespace gantt::json
