// Text helpers shared by the writers: names come from the traced program and are
// untrusted bytes (any length, any content, not necessarily UTF-8).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gantt {

// Length of the well-formed UTF-8 sequence at s[i], or 0 when the byte there does not start
// one (RFC 3629 table: no overlongs, no surrogates, nothing past U+10FFFF, no truncated
// sequence). Every writer decides validity here; what each output format then refuses on
// top of well-formedness is its own rule (below, and gantt/model/json.h).
size_t utf8_sequence_length(std::string_view s, size_t i);

// True for U+FFFE and U+FFFF (EF BF BE, EF BF BF). They are well-formed UTF-8 and legal in
// JSON (RFC 8259 allows any scalar value), but XML 1.0's Char production excludes them, so
// an SVG holding one does not parse.
bool is_xml_forbidden_noncharacter(std::string_view s, size_t i, size_t length);

// True for U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR (E2 80 A8, E2 80 A9): legal
// everywhere, but JavaScript before ES2019 ends a string literal at them and some terminals
// and editors end a line.
bool is_line_or_paragraph_separator(std::string_view s, size_t i, size_t length);

// Valid UTF-8 stays as is; each invalid byte becomes U+FFFD. Control characters become
// U+FFFD too (XML 1.0 forbids most of them; tabs and newlines would break labels and rows),
// and so do U+FFFE/U+FFFF: labels, tooltips and CSV cells all may end up in an SVG.
void append_utf8_clean(std::string& out, std::string_view s);
std::string utf8_clean(std::string_view s);

// For terminals and tables: well-formed UTF-8 kept, every other byte U+FFFD, control
// characters (which move a terminal's cursor) and U+2028/U+2029 (which end a line in some
// terminals and editors) '?'.
std::string printable_utf8(std::string_view bytes);

// XML text and attribute escaping (& < > " ') of the cleaned string.
void append_xml_escaped(std::string& out, std::string_view s);
// The same, line by line: each '\n' becomes a character reference (&#10;) that viewers show
// as a line break in a tooltip, where the cleaning would have made it U+FFFD.
void append_xml_escaped_lines(std::string& out, std::string_view s);

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

// Parses "1.5ms", "200us", "200µs", "3s", "250000ns" (gpuhook/duration.h: a bare number is
// refused). false, and *why says why, on bad input.
bool parse_duration(std::string_view text, int64_t* ns, std::string* why = nullptr);

}  // namespace gantt
