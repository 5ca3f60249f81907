// Tables for the analysis reports: aligned text for a terminal, GitHub markdown, CSV.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gantt::analysis {

struct Table {
  std::vector<std::string> header;
  std::vector<bool> right;  // right-align this column (numbers)
  std::vector<std::vector<std::string>> rows;
};

std::string to_text(const Table& t);      // columns padded with spaces, two apart
std::string to_markdown(const Table& t);  // | a | b |, every cell through markdown_text()
std::string to_csv(const Table& t);       // RFC 4180 quoting; cells that start with = + - @ get a ' (spreadsheet formulas)

// Text for a Markdown document (a table cell, a list item, a line): names and paths come from the
// traced program, and GitHub or any CommonMark renderer must show them as written, never turn
// them into HTML. Cleaned as printable_utf8 (no control characters, so no line breaks); < > &
// become character references (raw HTML such as <img onerror=...>, autolinks, entities); the
// ASCII punctuation that makes markup (\ ` * _ [ ] | ~: code, emphasis, links and images, a
// table's cell break, strikethrough) gets a backslash (an underscore inside a word needs none), which CommonMark allows before any
// ASCII punctuation. `starts_line`: the text begins a line, so a leading block marker (# - +
// = 1. 1) or indentation, which would make a heading, list, rule or code block) is escaped too.
// Every writer of Markdown puts program text through here.
std::string markdown_text(std::string_view s, bool starts_line = false);

// Exact decimal microseconds from ns ("12.345"), by integers.
std::string us(int64_t ns);
std::string us(double ns);  // rounded to the nearest ns first
std::string fixed(double v, int decimals);
// A device in a table row: "gpu3", or "c1.gpu3" when several captures are loaded.
std::string device_label(size_t captures, uint32_t capture, uint32_t device);
// Human byte counts: "512 B", "4.0 KiB", "1.5 MiB".
std::string bytes_text(uint64_t b);

}  // namespace gantt::analysis
