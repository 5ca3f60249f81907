// Each subcommand lives in cmd_<name>.cpp with its own options struct and one
// register_<name>() that adds it to the app. main.cpp only builds the CLI::App.
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

}  // namespace gantt_cli
