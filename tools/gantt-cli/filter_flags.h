// The event-selection flags that render and export share (--from --to --range --kernel
// --device --stream), declared once so both subcommands accept and check them the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "gantt/filter.h"
#include "gantt/text.h"

namespace gantt_cli {

struct FilterFlags {
  std::string from, to, range, kernel;
  std::vector<uint32_t> devices, streams;
};

void add_filter_flags(CLI::App& cmd, FilterFlags& flags);

// Throws CLI::ValidationError naming the flag when a duration does not parse.
gantt::EventFilter make_filter(const FilterFlags& flags);

// "" = not given (-1); otherwise nanoseconds, or CLI::ValidationError naming `flag`.
int64_t duration_arg(const std::string& flag, const std::string& text);

}  // namespace gantt_cli
