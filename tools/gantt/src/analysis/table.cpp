#include "gantt/analysis/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "gantt/model/json.h"
#include "gantt/model/text.h"

namespace gantt::analysis {
namespace {

// Display width in code points, so demangled names with UTF-8 still line up.
size_t width(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

// Names come from the program: cleaned for a terminal, and cut so that one 600-byte
// template name does not push every other column off the screen.
constexpr size_t kMaxCell = 96;
std::string printable(std::string_view s) {
  std::string out = printable_utf8(s);
  if (width(out) <= kMaxCell) return out;
  size_t i = 0, w = 0;
  while (i < out.size() && w < kMaxCell - 1) {
    ++i;
    while (i < out.size() && (static_cast<unsigned char>(out[i]) & 0xC0) == 0x80) ++i;
    ++w;
  }
  return out.substr(0, i) + "\xE2\x80\xA6";
}

}  // namespace

std::string to_text(const Table& t) {
  std::vector<size_t> w(t.header.size(), 0);
  for (size_t c = 0; c < t.header.size(); ++c) w[c] = width(t.header[c]);
  for (const auto& row : t.rows)
    for (size_t c = 0; c < row.size() && c < w.size(); ++c) w[c] = std::max(w[c], width(printable(row[c])));
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t c = 0; c < w.size(); ++c) {
      const std::string cell = c < cells.size() ? printable(cells[c]) : std::string();
      const std::string pad(w[c] - width(cell), ' ');
      const bool right = c < t.right.size() && t.right[c];
      if (c > 0) l += "  ";
      l += right ? pad + cell : cell + (c + 1 < w.size() ? pad : std::string());
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(t.header);
  for (const auto& row : t.rows) line(row);
  return out;
}

std::string to_markdown(const Table& t) {
  const auto cell = [](std::string_view s) { return markdown_text(printable(s)); };
  std::string out = "|";
  for (const auto& h : t.header) out += " " + cell(h) + " |";
  out += "\n|";
  for (size_t c = 0; c < t.header.size(); ++c) out += (c < t.right.size() && t.right[c]) ? "---:|" : "---|";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (const auto& v : row) out += " " + cell(v) + " |";
    out += "\n";
  }
  return out;
}

std::string markdown_text(std::string_view s, bool starts_line) {
  const std::string clean = printable_utf8(s);
  std::string out;
  out.reserve(clean.size() + clean.size() / 8);
  size_t i = 0;
  if (starts_line) {
    // Indentation (a code block from four spaces) as character references, which keep it.
    for (; i < clean.size() && clean[i] == ' '; ++i) out += "&#32;";
    size_t digits = i;
    while (digits < clean.size() && std::isdigit(static_cast<unsigned char>(clean[digits]))) ++digits;
    if (digits > i && digits < clean.size() && (clean[digits] == '.' || clean[digits] == ')')) {
      out.append(clean, i, digits - i);  // "1." or "1)" starts an ordered list
      out += '\\';
      i = digits;
    } else if (i < clean.size() && (clean[i] == '#' || clean[i] == '-' || clean[i] == '+' || clean[i] == '=')) {
      out += '\\';  // a heading, a list item, a thematic break or a setext underline
    }
  }
  const auto alnum = [&](size_t k) { return k < clean.size() && std::isalnum(static_cast<unsigned char>(clean[k])); };
  for (; i < clean.size(); ++i) {
    const char c = clean[i];
    // An underscore between two letters or digits can neither open nor close emphasis
    // (CommonMark's flanking rules): "kernels_waited" stays as written.
    if (c == '_' && i > 0 && alnum(i - 1) && alnum(i + 1)) {
      out += c;
      continue;
    }
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\\': case '`': case '*': case '_': case '[': case ']': case '|': case '~':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

std::string to_csv(const Table& t) {
  const auto cell = [](std::string_view s) {
    std::string v = printable_utf8(s);
    if (csv_formula_like(v)) v = "'" + v;
    if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
    std::string o = "\"";
    for (char c : v) {
      if (c == '"') o += "\"\"";
      else o.push_back(c);
    }
    return o + "\"";
  };
  std::string out;
  const auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) out += (c ? "," : "") + cell(cells[c]);
    out += "\n";
  };
  line(t.header);
  for (const auto& row : t.rows) line(row);
  return out;
}

std::string us(int64_t ns) {
  std::string s;
  json::append_us_from_ns(s, ns);
  return s;
}

std::string us(double ns) { return us(static_cast<int64_t>(std::llround(ns))); }

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s(buf);
  if (s == "-0.0" || s == "-0.00" || s == "-0" || s == "-0.000") s.erase(0, 1);
  return s;
}

std::string device_label(size_t captures, uint32_t capture, uint32_t device) {
  std::string l = captures > 1 ? "c" + std::to_string(capture) + ".gpu" : "gpu";
  return l + std::to_string(device);
}

std::string bytes_text(uint64_t b) {
  if (b < 1024) return std::to_string(b) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  return fixed(v, 1) + " " + units[u];
}

}  // namespace gantt::analysis
