// Text helpers shared by the writers: names come from the traced program and are
// untrusted bytes (any length, any content, not necessarily UTF-8).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gantt {

// Valid UTF-8 stays as is; each invalid byte becomes U+FFFD. Control characters become
// U+FFFD too (XML 1.0 forbids most of them; tabs and newlines would break labels and rows).
void append_utf8_clean(std::string& out, std::string_view s);
std::string utf8_clean(std::string_view s);

// XML text and attribute escaping (& < > " ') of the cleaned string.
void append_xml_escaped(std::string& out, std::string_view s);

// RFC 4180: quoted when it holds , " CR or LF (quotes doubled); cleaned to UTF-8; a cell
// that a spreadsheet would run as a formula gets a leading ' (csv_formula_like).
void append_csv_field(std::string& out, std::string_view s);

// True when a spreadsheet would take the cell for a formula: it starts with = + - @ (or a
// tab or CR), and is not a plain negative number. Names come from the traced app, so every
// CSV writer checks this (OWASP's "CSV injection").
bool csv_formula_like(std::string_view cell);

// At most `max_chars` code points of s, with "…" when cut (for labels).
std::string ellipsize(std::string_view s, size_t max_chars);

// "12.3 us", "4.56 ms", "1.20 s": 3 significant digits, unit chosen by magnitude.
std::string format_duration(int64_t ns);
// "4.0 KiB", "1.5 GiB"
std::string format_bytes(uint64_t bytes);

// CUPTI names API functions with their version suffix ("cudaMemcpy_v3020"); people know
// them without it. Other names are returned unchanged.
std::string_view api_display_name(std::string_view name);

// Parses "1.5ms", "200us", "3s", "250000ns", "250000" (ns). false on bad input.
bool parse_duration(std::string_view text, int64_t* ns);

}  // namespace gantt
