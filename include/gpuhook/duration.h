// The one duration grammar of the hook's settings (GPUHOOK_RANGE=time:D[-E]) and of
// gantt-cli's flags (--from, --to, ...): a non-negative decimal number and a unit, one of ns,
// us, µs (U+00B5 or U+03BC), ms, s. A bare number is refused: "5" was seconds to the hook and
// nanoseconds to the CLI, and whichever it meant, someone read it the other way.
// Header-only: the hook links nothing of the analysis side.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace gpuhook {

// *ns on success; otherwise false and *why says what is wrong with `text`.
inline bool parse_duration(std::string_view text, uint64_t* ns, std::string* why) {
  const auto fail = [&](const std::string& w) {
    if (why != nullptr) *why = w;
    return false;
  };
  if (text.empty()) return fail("empty; give a number and a unit (e.g. 1.5ms, 200us, 3s, 250000ns)");
  if (text.size() > 40) return fail("too long for a duration");
  const size_t unit_at = text.find_first_not_of("0123456789.");
  const std::string number(text.substr(0, unit_at));
  const std::string_view unit = unit_at == std::string_view::npos ? std::string_view() : text.substr(unit_at);
  if (number.empty() || number == "." || number.find('.') != number.rfind('.'))
    return fail("not a duration (e.g. 1.5ms, 200us, 3s, 250000ns)");
  if (unit.empty()) return fail("a bare number: add a unit (" + number + "s, " + number + "ms, " + number + "us, " + number + "ns)");
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else return fail("unknown unit '" + std::string(unit) + "' (ns, us, µs, ms or s)");
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  const double r = v * scale;
  if (end == number.c_str() || *end != '\0' || !std::isfinite(r) || r > 9.2e18)
    return fail("not a duration (e.g. 1.5ms, 200us, 3s, 250000ns)");
  *ns = static_cast<uint64_t>(std::llround(r));
  return true;
}

}  // namespace gpuhook
