// The event-selection flags (--from --to --range --kernel --device --stream), declared once so
// that render, export, stats, diagnose and diff accept and check them the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gantt/model/filter.h"
#include "gantt/model/text.h"

namespace gantt_cli {

struct FilterFlags {
  std::string from, to, range, kernel;
  std::vector<uint32_t> devices, streams;
};

void add_filter_flags(CLI::App& cmd, FilterFlags& flags);

// Throws CLI::ValidationError naming the flag when a duration does not parse.
gantt::EventFilter make_filter(const FilterFlags& flags);

// True when any of the flags was given.
bool any_filter(const FilterFlags& flags);
// True for a time window or --range (--from, --to, --range): what cuts a run's time, beside
// what selects its events.
bool windowed(const FilterFlags& flags);

// The analyses' side of the flags (stats, diagnose, diff): `model` keeps only the selected GPU
// events (gantt::restricted), and one line on stderr says what was kept. False, after one line
// naming `subcommand`, when the selection cannot be made (unknown range, bad regex).
bool restrict_to_filter(gantt::Model& model, const FilterFlags& flags, const char* subcommand);

// "" = not given (-1); otherwise nanoseconds, or CLI::ValidationError naming `flag`.
int64_t duration_arg(const std::string& flag, const std::string& text);

}  // namespace gantt_cli
