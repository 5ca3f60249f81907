// Fuzz target for the foreign-trace readers (torch.profiler/Kineto JSON, plain or gzip'd, and
// Nsight Systems SQLite), reached as every subcommand reaches them: through CaptureReader with
// the importer on. Any bytes end in records or a CaptureError, never a crash, a hang or a huge
// allocation. Built without libFuzzer (GCC), the same entry point replays trace_corpus/.
#include <cstddef>
#include <cstdint>
#include <string>

#include <gpuhook/capture.h>

#include "gantt/scan/trace_import.h"

#include "memfd_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool enabled = (gantt::scan::enable_trace_import(), true);
  (void)enabled;
  const MemfdInput input("trace", data, size);
  if (!input.ok()) return 0;
  try {
    gpuhook::CaptureReader reader(input.path());
    gpuhook::v1::Record r;
    uint64_t n = 0;
    while (reader.next(r) && ++n < 10'000'000) {
    }
  } catch (const gpuhook::CaptureError&) {
  }
  gantt::scan::forget_imports();  // each input is a new file: keep memory flat over a long run
  return 0;
}
