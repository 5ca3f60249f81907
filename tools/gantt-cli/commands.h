// Each subcommand lives in cmd_<name>.cpp with its own options struct and one
// register_<name>() that adds it to the app. main.cpp only builds the CLI::App, from
// kSubcommands below: the one list of subcommands, from which `gantt-cli --help`'s list, the
// man pages and the shell completions are all made (`gantt-cli generate`, cmd_generate.cpp).
#pragma once

#include <CLI/CLI.hpp>

namespace gantt_cli {

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // diff found a regression, diagnose found a problem
inline constexpr int kExitError = 2;        // bad usage or bad input, one line says what
inline constexpr int kExitNothingRecorded = 3;  // record: the program succeeded, nothing was recorded

// `exit_code` is where the subcommand's callback leaves its result.
void register_record(CLI::App& app, int& exit_code);
void register_info(CLI::App& app, int& exit_code);
void register_dump(CLI::App& app, int& exit_code);
void register_render(CLI::App& app, int& exit_code);
void register_stats(CLI::App& app, int& exit_code);
void register_diff(CLI::App& app, int& exit_code);
void register_diagnose(CLI::App& app, int& exit_code);
void register_export(CLI::App& app, int& exit_code);
void register_merge(CLI::App& app, int& exit_code);
void register_whatif(CLI::App& app, int& exit_code);
void register_jobs(CLI::App& app, int& exit_code);
// The hidden `generate` subcommand: man pages and completions from the built App.
void register_generate(CLI::App& app, int& exit_code);

// What a subcommand's positional arguments are, for the shell completions.
enum class Operands { kCaptures, kAnyFile, kCommand };

struct Subcommand {
  const char* name;
  void (*add)(CLI::App&, int&);
  const char* summary;  // one line: gantt-cli --help's list, the man page's NAME
  const char* doc;      // its page, relative to the source tree (installed under share/doc/gpuhook)
  Operands operands;
};

// In the order `gantt-cli --help` lists them: the way a capture is made, then read.
inline constexpr Subcommand kSubcommands[] = {
    {"record", register_record, "run a command under libgpuhook.so and say where the capture went",
     "docs/record.md", Operands::kCommand},
    {"info", register_info, "what a capture holds and whether it is intact", "docs/info.md", Operands::kCaptures},
    {"dump", register_dump, "every record as one stable line", "docs/dump.md", Operands::kCaptures},
    {"render", register_render, "draw captures as a Gantt chart or flame graph (SVG, PNG, PDF, HTML)",
     "docs/render.md", Operands::kCaptures},
    {"stats", register_stats,
     "per kernel, stream, device, range or collective: counts, times, stages, busy %; --summary", "docs/stats.md",
     Operands::kCaptures},
    {"diff", register_diff, "compare two runs, noise-aware; exit 1 on a regression", "docs/diff.md",
     Operands::kCaptures},
    {"diagnose", register_diagnose, "the classic scheduling mistakes, with evidence and the fix",
     "docs/diagnose.md", Operands::kCaptures},
    {"export", register_export, "Chrome trace JSON (Perfetto), CSV, folded stacks, SQLite", "docs/export.md",
     Operands::kCaptures},
    {"merge", register_merge, "the captures of a multi-rank job as one capture on one clock", "docs/merge.md",
     Operands::kCaptures},
    {"whatif", register_whatif,
     "predict the timeline of a fix (pin copies, remove syncs, streams, graphs, ...) from a capture",
     "docs/whatif.md", Operands::kCaptures},
    {"jobs", register_jobs,
     "the cluster view: scheduler jobs on nodes x time, queue waits, idle GPUs (Slurm sacct, CSV)",
     "docs/jobs.md", Operands::kAnyFile},
};

}  // namespace gantt_cli
