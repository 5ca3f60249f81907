#include "load_captures.h"

#include <algorithm>
#include <ctime>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include <gpuhook/capture.h>
#include <gpuhook/summary_file.h>

#include "gantt/analysis/clock_scan.h"
#include "gantt/analysis/table.h"
#include "gantt/model/text.h"
#include "gantt/scan/open.h"

namespace gantt_cli {

void add_load_flags(CLI::App& cmd, LoadFlags& flags) {
  cmd.add_option("--max-records-per-byte", flags.max_records_per_byte,
                 "refuse a capture that decodes to more records than this per byte of file (repeated chunks; "
                 "0 = no limit)")
      ->capture_default_str();
  add_max_memory_flag(cmd, flags);
}

void add_max_memory_flag(CLI::App& cmd, LoadFlags& flags) {
  cmd.add_option("--max-memory", flags.max_memory,
                 "the most loading the captures whole may take, estimated from their chunk indexes and what a "
                 "record takes loaded on this subcommand's path (100 to 330 bytes), e.g. 16G; over it they are not "
                 "loaded and one line says why (default: half the memory this process may use)")
      ->transform(CLI::AsSizeValue(false))
      // CLI11 runs a transform added later before those added earlier: this sees the text as typed.
      ->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            // AsSizeValue reads "-1" as 2^64 - 1: no limit at all, the opposite of what was typed.
            const size_t at = text.find_first_not_of(" \t");
            return at != std::string::npos && text[at] == '-' ? "a size cannot be negative" : "";
          },
          ""))
      ->check(CLI::Validator(
          [](std::string& bytes) -> std::string {
            return bytes == "0" ? "0 bytes would load nothing; give a size such as 16G" : "";
          },
          ""));
}

gantt::LoadOptions load_options(const LoadFlags& flags) {
  gantt::LoadOptions o;
  o.max_records_per_byte = flags.max_records_per_byte;
  return o;
}

namespace {

std::string g_stdin_dir;  // the private directory of the stdin copy, removed at exit

void remove_stdin_copy() {
  if (g_stdin_dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(g_stdin_dir, ec);
}

}  // namespace

std::vector<std::string> with_stdin(const std::vector<std::string>& files) {
  std::vector<std::string> out = files;
  bool seen = false;
  for (std::string& f : out) {
    if (f != "-") continue;
    if (seen) throw std::runtime_error("'-' (standard input) can be given once");
    seen = true;
    if (!g_stdin_dir.empty()) {  // read already (diff loads its sides one by one)
      f = g_stdin_dir + "/stdin.gpuh";
      continue;
    }
    if (isatty(STDIN_FILENO)) throw std::runtime_error("'-' reads a capture from standard input, which is a terminal");
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/gantt-cli-stdin.XXXXXX";
    if (!mkdtemp(dir.data())) throw std::runtime_error("cannot make a temporary directory for standard input: " + dir);
    g_stdin_dir = dir;
    std::atexit(remove_stdin_copy);
    const std::string path = dir + "/stdin.gpuh";
    std::ofstream copy(path, std::ios::binary);
    char buf[1 << 16];
    while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) copy.write(buf, std::cin.gcount());
    copy.close();
    if (!copy) throw std::runtime_error("cannot copy standard input to " + path + " (disk full?)");
    f = path;
  }
  return out;
}

LoadedJob load_captures_quietly(const std::vector<std::string>& files, const LoadFlags& flags,
                                const WholeLoad& whole) {
  LoadedJob job;
  const std::vector<std::string> paths = with_stdin(files);
  check_load_fits(paths, flags, whole);
  // A merged file (gantt-cli merge) becomes one capture per rank.
  job.model = gantt::load(paths, load_options(flags));
  job.warnings = gantt::integrity_warnings(job.model, &job.corrupt);
  job.alignment = gantt::align_model_ranks(job.model);
  return job;
}

LoadedJob load_captures(const std::vector<std::string>& files, const LoadFlags& flags, const WholeLoad& whole) {
  LoadedJob job = load_captures_quietly(files, flags, whole);
  for (const std::string& line : job.warnings) std::cerr << "gantt-cli: " << line << "\n";
  return job;
}

std::vector<gantt::RankClockInput> clock_inputs_of(const std::string& path, const LoadFlags& flags, unsigned threads,
                                                   const WholeLoad& whole) {
  gantt::analysis::EventScanOptions so;
  so.load = load_options(flags);
  so.threads = threads;
  std::string why_not;
  if (!flags.in_memory)
    if (auto scanned = gantt::analysis::scan_clock_input(path, so, &why_not)) return {std::move(*scanned)};
  WholeLoad why = whole;
  if (!why_not.empty()) why.why += " (" + why_not + ")";
  check_load_fits({path}, flags, why);
  return gantt::rank_clock_inputs(gantt::load({path}, so.load));
}

gpuhook::SummaryLimits summary_limits(const LoadFlags& flags) {
  gpuhook::SummaryLimits limits;
  limits.max_records_per_byte = flags.max_records_per_byte;
  limits.max_memory_bytes = flags.max_memory ? flags.max_memory : gantt::scan::usable_memory() / 2;
  if (flags.in_memory && !flags.max_memory) limits.max_memory_bytes = 0;
  return limits;
}

bool merge_summary_files(const std::vector<std::string>& paths, const LoadFlags& flags,
                         gantt::analysis::StatsSummary& into, bool& have) {
  for (const std::string& path : paths) {
    gantt::analysis::StatsSummary one;
    try {
      one = gantt::analysis::from_proto(gpuhook::read_summary_file(path, summary_limits(flags)));
    } catch (const std::invalid_argument& e) {
      std::cerr << "gantt-cli: " << path << ": not a usable summary: " << e.what() << "\n";
      return false;
    }
    if (have) gantt::analysis::merge(into, one);
    else into = std::move(one);
    have = true;
  }
  return true;
}

void check_load_fits(const std::vector<std::string>& files, const LoadFlags& flags, const WholeLoad& whole) {
  if (flags.in_memory) return;
  gantt::scan::LoadEstimate load;
  try {
    load = gantt::scan::estimate_load(files, whole.path, flags.max_memory);
  } catch (const gpuhook::CaptureError&) {
    return;  // not readable as far as its index: the load says what is wrong, as for any capture
  }
  if (load.fits()) return;  // the budget: --max-memory, else half of usable_memory()
  const bool piped = files.size() == 1 && !g_stdin_dir.empty() && files.front() == g_stdin_dir + "/stdin.gpuh";
  const std::string what = piped ? "standard input"
                           : files.size() == 1 ? files.front()
                                               : std::to_string(files.size()) + " captures";
  const std::string limit =
      flags.max_memory != 0 ? "" : "half the " + gantt::analysis::bytes_text(gantt::scan::usable_memory()) + " this process may use";
  throw LoadTooLarge(what + ": " + over_budget(load, limit) + (whole.why.empty() ? std::string() : "; " + whole.why) +
                     ". Not loaded: --max-memory SIZE loads it anyway");
}

std::string over_budget(const gantt::scan::LoadEstimate& load, const std::string& limit) {
  return std::to_string(load.records) + " records would take about " + gantt::analysis::bytes_text(load.bytes) +
         " loaded, over " + (limit.empty() ? "--max-memory " + gantt::analysis::bytes_text(load.budget) : limit);
}

bool reportable(const gantt::Model& model) {
  const std::string bad = gantt::analysis::unusable_capture(model);
  if (!bad.empty()) std::cerr << "gantt-cli: " << bad << "\n";
  return bad.empty();
}

bool said_job_scan(const gantt::analysis::JobScan& job, const char* subcommand) {
  if (!job.unusable.empty()) {
    std::cerr << "gantt-cli: " << job.unusable << "\n";
    return false;
  }
  for (const std::string& line : job.warnings) std::cerr << "gantt-cli: " << line << "\n";
  if (!job.empty_window.empty()) {
    std::cerr << "gantt-cli: " << subcommand << ": " << job.empty_window << "\n";
    return false;
  }
  return true;
}

gantt::analysis::Format report_format(const std::string& name) {
  using gantt::analysis::Format;
  return name == "md" ? Format::kMarkdown : name == "json" ? Format::kJson : name == "csv" ? Format::kCsv : Format::kText;
}

// Every .gpuh under the paths (directories searched recursively), its header only.
std::vector<gantt::jobs::CaptureStamp> read_capture_stamps(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (auto it = std::filesystem::recursive_directory_iterator(
               p, std::filesystem::directory_options::skip_permission_denied, ec);
           !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && it->path().extension() == ".gpuh") files.push_back(it->path().string());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<gantt::jobs::CaptureStamp> out;
  for (const std::string& f : files) {
    try {
      const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(f, gpuhook::ReaderOptions{false, 0, 0});
      gpuhook::CaptureReader& reader = *opened_reader;
      gpuhook::v1::Record r;
      while (reader.next(r) && r.kind_case() != gpuhook::v1::Record::kHeader) {
      }
      if (r.kind_case() != gpuhook::v1::Record::kHeader) continue;
      gantt::jobs::CaptureStamp s;
      s.path = f;
      s.host = gantt::utf8_clean(r.header().host_name());
      s.job_id = gantt::utf8_clean(r.header().job_id());
      // The record's times are wall-clock as the cluster prints them: the capture's start in
      // this machine's local time (TZ), the zone sacct printed in when run here.
      const time_t t = static_cast<time_t>(r.header().start_realtime_ns() / 1'000'000'000);
      std::tm tm{};
      if (t != 0 && localtime_r(&t, &tm)) s.start_s = static_cast<int64_t>(timegm(&tm));
      out.push_back(std::move(s));
    } catch (const gpuhook::CaptureError& e) {
      std::cerr << "gantt-cli: " << e.file() << ": byte " << e.offset() << ": " << e.what() << "; skipped\n";
    }
  }
  return out;
}

}  // namespace gantt_cli
