#include "load_captures.h"

#include <iostream>

namespace gantt_cli {

void add_load_flags(CLI::App& cmd, LoadFlags& flags) {
  cmd.add_option("--max-records-per-byte", flags.max_records_per_byte,
                 "refuse a capture that decodes to more records than this per byte of file (repeated chunks; "
                 "0 = no limit)")
      ->capture_default_str();
}

gantt::LoadOptions load_options(const LoadFlags& flags) {
  gantt::LoadOptions o;
  o.max_records_per_byte = flags.max_records_per_byte;
  return o;
}

LoadedJob load_captures_quietly(const std::vector<std::string>& files, const LoadFlags& flags) {
  LoadedJob job;
  // A merged file (gantt-cli merge) becomes one capture per rank.
  job.model = gantt::load(files, load_options(flags));
  job.warnings = gantt::integrity_warnings(job.model, &job.corrupt);
  job.alignment = gantt::align_model_ranks(job.model);
  return job;
}

LoadedJob load_captures(const std::vector<std::string>& files, const LoadFlags& flags) {
  LoadedJob job = load_captures_quietly(files, flags);
  for (const std::string& line : job.warnings) std::cerr << "gantt-cli: " << line << "\n";
  return job;
}

bool reportable(const gantt::Model& model) {
  const std::string bad = gantt::analysis::unusable_capture(model);
  if (!bad.empty()) std::cerr << "gantt-cli: " << bad << "\n";
  return bad.empty();
}

gantt::analysis::Format report_format(const std::string& name) {
  using gantt::analysis::Format;
  return name == "md" ? Format::kMarkdown : name == "json" ? Format::kJson : name == "csv" ? Format::kCsv : Format::kText;
}

}  // namespace gantt_cli
