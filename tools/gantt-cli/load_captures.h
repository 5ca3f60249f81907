// How every chart and report subcommand reads its captures, so that they agree: several
// captures, or one merged file, are the ranks of one job and are put on one clock; damage is
// reported once on stderr and remembered for the exit code.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <gpuhook/summary_file.h>

#include "gantt/analysis/job_scan.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/summary.h"
#include "gantt/jobs/jobs.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"
#include "gantt/scan/read_plan.h"

namespace gantt_cli {

struct LoadedJob {
  gantt::Model model;
  gantt::RankAlignment alignment;  // what was applied (nothing for a single capture)
  bool corrupt = false;            // a capture was damaged: the subcommand exits 2 after its output
  std::vector<std::string> warnings;  // integrity problems, one line each (load_captures prints them)
};

// The flags of every subcommand that loads captures into a model.
struct LoadFlags {
  uint64_t max_records_per_byte = gantt::kDefaultMaxRecordsPerByte;
  // --max-memory: the most a whole load may take, estimated (estimate_load); 0 = not given. A
  // subcommand that can read a capture as a stream also streams over it (render, diagnose).
  uint64_t max_memory = 0;
  // --in-memory, of the subcommands that have it: load whole, not as a stream, whatever the
  // estimate.
  bool in_memory = false;
};
// --max-records-per-byte and --max-memory (a subcommand may reword the latter's help).
void add_load_flags(CLI::App& cmd, LoadFlags& flags);
// --max-memory alone, for a subcommand that loads captures by other means (whatif).
void add_max_memory_flag(CLI::App& cmd, LoadFlags& flags);
gantt::LoadOptions load_options(const LoadFlags& flags);

// `files` with "-" replaced by a copy of standard input (a capture piped in: `ssh node cat
// run.gpuh | gantt-cli stats -`), kept in a private temporary directory as "stdin.gpuh" and
// removed at exit. The capture reader needs to seek (index, footer), so it is a file. Throws
// std::runtime_error when stdin is a terminal, cannot be copied, or "-" is given twice.
std::vector<std::string> with_stdin(const std::vector<std::string>& files);

// Why a subcommand loads captures whole, for check_load_fits()' refusal: what needs them whole,
// and what reads them as a stream instead ("": not said). And the path they take, whose figure
// a record (gantt/scan/read_plan.h's table) the estimate uses.
struct WholeLoad {
  std::string why;
  gantt::scan::WholePath path;
};

// gantt::load (a merged file becomes its ranks), the ranks put on one clock, and the
// integrity warnings printed on stderr. First check_load_fits() with `whole`.
LoadedJob load_captures(const std::vector<std::string>& files, const LoadFlags& flags, const WholeLoad& whole);
// The same without printing, for loads that run side by side (diff): print job.warnings after.
LoadedJob load_captures_quietly(const std::vector<std::string>& files, const LoadFlags& flags,
                                const WholeLoad& whole);

// One file's clock-alignment inputs, one per section (a merged file holds several): scanned,
// keeping only its collectives' ends (gantt/analysis/clock_scan.h), or loaded whole within
// --max-memory (`whole`) for a file a scan cannot read (a merged file, another tool's trace,
// records a scan cannot join) or with --in-memory. `threads`: the scan's, 0 = every core.
std::vector<gantt::RankClockInput> clock_inputs_of(const std::string& path, const LoadFlags& flags, unsigned threads,
                                                   const WholeLoad& whole);

// Every .gpuh file among `paths` (directories searched recursively), read as far as its
// header: where, on which host, in which scheduler job it was recorded. Files that are not
// captures get one line on stderr and are left out.
std::vector<gantt::jobs::CaptureStamp> read_capture_stamps(const std::vector<std::string>& paths);

// A summary is held to a capture's limits: --max-records-per-byte, and --max-memory (or half
// of usable_memory() without it) for each file parsed.
gpuhook::SummaryLimits summary_limits(const LoadFlags& flags);

// Reads the summary files (.gsum) in the order given and merges them onto `into` (`have`: it
// holds a summary already; set once one is read). False after one line on stderr when a file
// is not a usable summary (gantt::analysis::from_proto's check); a damaged file, or one over
// `flags`' limits, throws gpuhook::CaptureError as a capture does.
bool merge_summary_files(const std::vector<std::string>& paths, const LoadFlags& flags,
                         gantt::analysis::StatsSummary& into, bool& have);

// "N records would take about X loaded, over LIMIT"; LIMIT "--max-memory Y" unless given.
std::string over_budget(const gantt::scan::LoadEstimate& load, const std::string& limit = {});

// A whole load must fit: its estimate (whole.path's figure a record) at most --max-memory,
// or without it half of gantt::scan::usable_memory(): past the memory the machine swaps or the kernel kills
// the process, and the estimate is one capture's shape (a capture of long kernel names or many
// NVTX ranges takes more). When it would not, throws LoadTooLarge that names the files, the
// estimate, the limit, whole.why and the override; --in-memory (flags.in_memory) loads whatever the estimate.
struct LoadTooLarge : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void check_load_fits(const std::vector<std::string>& files, const LoadFlags& flags, const WholeLoad& whole);

// False, after one line on stderr, when a capture has nothing to report on (no header).
bool reportable(const gantt::Model& model);

// What a job scan (analysis/job_scan.h) says before `subcommand`'s report, as a load of the
// captures says it: the capture that cannot be reported, the loader's warnings, then a window
// that starts past the job's end. False: exit 2.
bool said_job_scan(const gantt::analysis::JobScan& job, const char* subcommand);

// A report format by its --format name: text, md, json or csv (each subcommand's flag check
// keeps the name to the ones it offers).
gantt::analysis::Format report_format(const std::string& name);

}  // namespace gantt_cli
