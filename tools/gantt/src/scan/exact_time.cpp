// Chrome-trace times as exact integer ns. Kineto prints each time as µs with three decimals
// from an integer ns (libkineto output_json.cpp), and absolute times then carry 19 significant
// digits: a double keeps about 0.25 µs of them (TRACE-FORMATS.md, A3). So the text is read as
// a decimal: digits, an optional fraction, an optional exponent, scaled by 10^3 for the ns.
#include <cstdint>
#include <string_view>

#include "gantt/scan/trace_import.h"

namespace gantt::scan {

namespace {
constexpr int64_t kMaxNs = int64_t{1} << 62;  // ~146 years in ns: room for base + ts + dur
}

bool parse_us_as_ns(std::string_view text, int64_t* ns) {
  size_t i = 0;
  if (i < text.size() && text[i] == '+') ++i;
  // The digits of the mantissa, with the position of the decimal point among them.
  int64_t mantissa = 0;
  int digits_after_point = 0;
  bool any_digit = false, point = false, overflow = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.') {
      if (point) return false;
      point = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    any_digit = true;
    if (mantissa > (INT64_MAX - 9) / 10) {
      // Past int64: only the fraction's surplus digits (below a ns) may be dropped.
      if (!point) overflow = true;
      continue;
    }
    mantissa = mantissa * 10 + (c - '0');
    if (point) ++digits_after_point;
  }
  if (!any_digit || overflow) return false;
  int exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) negative = text[i++] == '-';
    if (i >= text.size()) return false;
    for (; i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      if (exponent < 1000) exponent = exponent * 10 + (text[i] - '0');
    }
    if (negative) exponent = -exponent;
  }
  if (i != text.size()) return false;
  // value_us = mantissa * 10^(exponent - digits_after_point); ns = that * 10^3.
  int scale = exponent - digits_after_point + 3;
  if (mantissa == 0) {
    *ns = 0;
    return true;
  }
  for (; scale > 0; --scale) {
    if (mantissa > kMaxNs / 10) return false;
    mantissa *= 10;
  }
  for (; scale < 0 && mantissa != 0; ++scale) mantissa /= 10;
  if (mantissa > kMaxNs) return false;
  *ns = mantissa;
  return true;
}

}  // namespace gantt::scan
