// Other tools' traces read as captures: torch.profiler/Kineto Chrome-trace JSON (plain or
// gzip'd, object or bare-array form) and Nsight Systems SQLite exports. Each importer writes
// the records a capture of the same run would hold (gpuhook::v1::Record), so every subcommand
// reads them through CaptureReader unchanged. Formats are told by content, never by name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <gpuhook/capture.h>

namespace gantt::scan {

// The tool_version an importer writes ends "<format>, read by gantt-cli <version>": a capture
// made from another tool's trace, whose notices say what its format lacks.
inline constexpr std::string_view kImportedMarker = ", read by gantt-cli";
inline bool is_imported(const std::string& tool_version) {
  return tool_version.find(kImportedMarker) != std::string::npos;
}

// torch.profiler numbers its steps ("ProfilerStep#12", as a record_function in Kineto traces
// and as an NVTX range in nsys reports of the same program). One name for all of them makes
// them the repeated range that diff matches kernels under and the steps view trends, as an
// NVTX "train_step" is in a capture; the number is the step's occurrence (--range NAME@N).
inline std::string_view step_range_name(std::string_view name) {
  constexpr std::string_view kStep = "ProfilerStep#";
  return name.substr(0, kStep.size()) == kStep ? name.substr(0, kStep.size() - 1) : name;
}

// A value from a hostile file, fit to quote in an error line: at most 40 bytes of it, every
// byte outside printable ASCII as \xNN (no escape sequence reaches the terminal), "..." when cut.
std::string excerpt(std::string_view text);

enum class TraceFormat { kUnknown, kKinetoJson, kKinetoJsonGzip, kNsysSqlite };

// What a file's first bytes say it is. JSON is recognised by its first character ('{' or '['
// after whitespace); whether it really is a trace is found while reading it.
TraceFormat detect_format(std::string_view head);
const char* to_string(TraceFormat format);

// Makes CaptureReader read these formats (gpuhook::set_foreign_importer). Each file is
// imported once per process, into an anonymous in-memory capture that later readers share.
void enable_trace_import();
// Lets go of every imported capture (a fuzzer's next input is a new file each time).
void forget_imports();

// The importers, writing into `out`. Throw gpuhook::CaptureError naming `path`, the byte offset
// (JSON) or the table and row (SQLite), and what was wrong.
void import_kineto(const std::string& path, int fd, bool gzip, gpuhook::CaptureWriter& out);
void import_nsys(const std::string& path, gpuhook::CaptureWriter& out);

// A Chrome-trace time (µs as decimal text: "12", "12.5", "1712345678901234.567", "1.5e3") as
// integer ns, exactly: never through a double, so that two back-to-back kernels never overlap
// by a rounding. Digits past the ns are dropped. False for text that is no finite,
// non-negative number or whose ns do not fit in 62 bits.
bool parse_us_as_ns(std::string_view text, int64_t* ns);

}  // namespace gantt::scan
