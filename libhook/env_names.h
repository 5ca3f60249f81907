// Every environment variable the hook reads: declared in <gpuhook/settings.h> (namespace
// gpuhook::env), shared with `gantt-cli record`, which sets them by the same names.
#pragma once

#include <gpuhook/settings.h>

namespace gpuhook::hook::env_internal {
// Not a setting: the hook sets it (to its pid) in the environment of the first process it is
// preloaded into, unless it is already there. Every later image of that process (exec) and
// every process it starts then finds it, and knows it belongs to a run the hook already
// records: a capture name that exists (a fixed GPUHOOK_OUTPUT, `gantt-cli record -o x.gpuh`)
// was written by an earlier image or process of the same run, and the next free NAME.N.gpuh
// is taken. Without it, an existing name is a file of somebody else's and is refused.
inline constexpr const char kRunPid[] = "GPUHOOK_RUN_PID";
}  // namespace gpuhook::hook::env_internal
