// JSON text pieces shared by the Chrome trace exporter and the JSON reports (stats, diff,
// diagnose). Names in a capture come from the program (kernel names, NVTX strings) and are
// untrusted bytes: every string goes through append_string.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gantt::json {

// Appends `bytes` as a quoted JSON string: quote, backslash and every control character
// escaped, U+2028/U+2029 escaped (JavaScript parsers that eval JSON choke on them), and
// each byte that is not part of well-formed UTF-8 (gantt/model/text.h utf8_sequence_length)
// replaced by U+FFFD. U+FFFE and U+FFFF pass through: JSON allows them, unlike XML.
void append_string(std::string& out, std::string_view bytes);
std::string quoted(std::string_view bytes);

// Appends a nanosecond count as microseconds with exactly three decimals ("123.456"),
// by integer arithmetic: no binary floating point, so 1 ns steps survive at any magnitude.
void append_us_from_ns(std::string& out, int64_t ns);

// Appends a finite double with up to `decimals` decimals, or null for NaN/inf (JSON has
// no literal for them).
void append_number(std::string& out, double value, int decimals = 6);

}  // namespace gantt::json
