// The one way libgantt and gantt-cli open a capture file (STYLE rule 15): a reader over it that
// also reads the other tools' traces (torch.profiler/Kineto JSON, Nsight Systems SQLite: each
// imported once per process, trace_import.h), without a caller having to turn that on first.
// `ctest -R gantt_parts_include_only_below` fails on a CaptureReader made anywhere else under tools/.
#pragma once

#include <memory>
#include <string>

#include <gpuhook/capture.h>

namespace gantt::scan {

// Throws gpuhook::CaptureError as the reader's constructor does (kIo, kNotACapture, kTooNew, or
// an importer's error naming the byte it could not read).
std::unique_ptr<gpuhook::CaptureReader> open_capture(const std::string& path, const gpuhook::ReaderOptions& options = {});

}  // namespace gantt::scan
