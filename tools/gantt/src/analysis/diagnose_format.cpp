// diagnose output: text for a terminal or CI log, markdown, JSON (stable keys).
#include <algorithm>
#include <string>

#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/table.h"
#include "gantt/model/json.h"
#include "gantt/model/text.h"

namespace gantt::analysis {
namespace {

std::string counts(const DiagnoseReport& r) {
  uint64_t n[3] = {};
  for (const Finding& f : r.findings) ++n[static_cast<int>(f.severity)];
  return std::to_string(r.findings.size()) + " finding(s): " + std::to_string(n[2]) + " error, " + std::to_string(n[1]) +
         " warning, " + std::to_string(n[0]) + " info";
}

std::string upper(const char* s) {
  std::string o(s);
  for (char& c : o) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 32 : c);
  return o;
}

std::string json_report(const DiagnoseReport& r) {
  std::string o = "{\n  \"findings\": [";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"rule\": " + json::quoted(f.rule) + ", \"severity\": " + json::quoted(to_string(f.severity)) +
         ", \"title\": " + json::quoted(f.title) + ", \"condition\": " + json::quoted(f.condition) + ", \"evidence\": [";
    for (size_t k = 0; k < f.evidence.size(); ++k) o += (k ? ", " : "") + json::quoted(f.evidence[k]);
    o += "], \"fix\": " + json::quoted(f.fix) + "}";
  }
  o += r.findings.empty() ? "],\n  \"rules\": [" : "\n  ],\n  \"rules\": [";
  for (size_t i = 0; i < r.rules.size(); ++i) {
    const RuleResult& x = r.rules[i];
    o += i ? ",\n    {" : "\n    {";
    o += "\"rule\": " + json::quoted(x.rule) + ", \"ran\": " + (x.ran ? "true" : "false") +
         ", \"fired\": " + (x.fired ? "true" : "false") + ", \"note\": " + json::quoted(x.note) + "}";
  }
  o += "\n  ]\n}\n";
  return o;
}

}  // namespace

std::string format_diagnose(const DiagnoseReport& r, Format f) {
  if (f == Format::kJson) return json_report(r);
  const bool md = f == Format::kMarkdown;
  std::string o = md ? "**" + counts(r) + "**\n" : counts(r) + "\n";
  for (const Finding& x : r.findings) {
    if (md) {
      o += "\n### " + std::string(to_string(x.severity)) + ": " + markdown_text(x.rule) + "\n\n" +
           markdown_text(x.title, true) + "\n\n- condition: " + markdown_text(x.condition) + "\n";
      for (const auto& e : x.evidence) o += "- evidence: " + markdown_text(e) + "\n";
      o += "- fix: " + markdown_text(x.fix) + "\n";
    } else {
      const std::string title = printable_utf8(x.title);
      o += "\n" + upper(to_string(x.severity)) + " [" + x.rule + "] " + title + "\n  condition: " + x.condition + "\n";
      for (const auto& e : x.evidence) o += "  evidence:  " + printable_utf8(e) + "\n";
      o += "  fix:       " + x.fix + "\n";
    }
  }
  o += md ? "\n**rules not fired**\n\n" : "\nrules not fired:\n";
  // The notes quote the capture too (a kernel, a stream, a range).
  const auto rule_line = [md](const RuleResult& x) {
    return md ? "- " + markdown_text(x.rule + ": " + x.note) + "\n" : "  " + x.rule + ": " + x.note + "\n";
  };
  for (const RuleResult& x : r.rules)
    if (x.ran && !x.fired) o += rule_line(x);
  const bool skipped = std::any_of(r.rules.begin(), r.rules.end(), [](const RuleResult& x) { return !x.ran; });
  if (skipped) o += md ? "\n**rules not run**\n\n" : "\nrules not run:\n";
  for (const RuleResult& x : r.rules)
    if (!x.ran) o += rule_line(x);
  return o;
}

}  // namespace gantt::analysis
