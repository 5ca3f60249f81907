// What reading captures whole would take, decided before any record is decoded.
//
// Most subcommands scan a capture in memory that does not grow with its records. The paths that
// still hold every record (a loaded model, whatif's replay) first estimate their peak from the
// chunk indexes and what a record takes on that path, and, over the limit, load nothing: the
// figures are in one table here, and docs/scan.md prints the same table (a test holds the two
// together).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gantt::scan {

// A path that holds a capture's records whole.
enum class WholePath : uint8_t {
  kClocks,     // info: the ranks' clocks of a capture a scan cannot read
  kExport,     // export to JSON or CSV (--in-memory, standard input)
  kMerge,      // merge: an input a scan cannot read, one at a time
  kDiagnose,   // diagnose --in-memory
  kDiffPage,   // diff -o x.html (both captures)
  kStats,      // stats --by graph
  kChart,      // render --in-memory -o x.svg
  kPage,       // render -o x.html
  kWhatif,     // whatif: the replay beside the records
};

// A path's peak RSS over the records of its capture's index, measured on a 2 M-kernel capture
// (`ranks_gen_job DIR 1 2000000`, 4.04 M records, /usr/bin/time), and the figure the estimate
// uses: the measured one rounded up, for captures of other shapes (longer names, more ranges).
struct WholeCost {
  WholePath path;
  const char* what;          // as docs/scan.md names the path
  uint32_t measured_bytes;   // a record, measured
  uint32_t estimated_bytes;  // a record, estimated
};
inline constexpr WholeCost kWholeCosts[] = {
    {WholePath::kClocks, "`info`, the ranks' clocks of a capture a scan cannot read", 95, 100},
    {WholePath::kExport, "`export` to JSON or CSV (`--in-memory`, standard input)", 102, 110},
    {WholePath::kMerge, "`merge` (an input a scan cannot read, one at a time)", 109, 115},
    {WholePath::kDiagnose, "`diagnose --in-memory`", 132, 140},
    {WholePath::kDiffPage, "`diff -o x.html` (both captures)", 167, 175},
    {WholePath::kStats, "`stats --by graph`", 181, 190},
    {WholePath::kChart, "`render --in-memory -o x.svg` (`--view flame`: 102)", 188, 195},
    {WholePath::kPage, "`render -o x.html`", 206, 215},
    {WholePath::kWhatif, "`whatif --change pin-copies` (the replay beside its records)", 315, 330},
};

// The estimate's figure for `path`.
constexpr uint64_t bytes_per_record(WholePath path) {
  for (const WholeCost& c : kWholeCosts)
    if (c.path == path) return c.estimated_bytes;
  return 0;
}

// A capture without a chunk index (its writer was killed) is estimated from its size. Records
// compress to 9 bytes each in gpuhook_make_capture's random synthetic captures and to 1.6 in
// ranks_gen_job's regular ones: 4 errs towards reading a large file as a stream.
inline constexpr uint64_t kFileBytesPerRecord = 4;

// The memory this process may use: the machine's, or its cgroup's limit (a container, a
// scheduler's job step) when that is less.
uint64_t usable_memory();

// What holding `files` whole on `path` would take, against `max_memory` (0: half of
// usable_memory(), and at most `default_cap`).
struct LoadEstimate {
  uint64_t records = 0, bytes = 0, budget = 0;
  bool fits() const { return bytes <= budget; }
};
// Reads each file as far as its index (gpuhook::CaptureReader; throws gpuhook::CaptureError for
// a file that is not a capture that far). A hostile index's counts saturate, never wrap.
LoadEstimate estimate_load(const std::vector<std::string>& files, WholePath path, uint64_t max_memory,
                           uint64_t default_cap = UINT64_MAX);

}  // namespace gantt::scan
