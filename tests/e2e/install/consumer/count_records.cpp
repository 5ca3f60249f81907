// Reads a capture through the installed API: counts records and kernels, and finds the time
// span through the format's list of time fields. Prints "records N kernels K span A..B".
#include <cinttypes>
#include <cstdio>
#include <limits>

#include <gpuhook/capture.h>
#include <gpuhook/record_times.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: count_records CAPTURE\n");
    return 2;
  }
  try {
    gpuhook::CaptureReader reader(argv[1]);
    gpuhook::v1::Record r;
    uint64_t records = 0, kernels = 0;
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    while (reader.next(r)) {
      ++records;
      if (r.has_kernel()) ++kernels;
      if (r.has_clock_sync()) continue;  // a clock pair, not an event time
      gpuhook::visit_times(r, [&](bool& has, int64_t& v) {
        if (!has || v == 0) return;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      });
    }
    std::printf("records %" PRIu64 " kernels %" PRIu64 " span %" PRId64 "..%" PRId64 "\n", records, kernels, lo, hi);
  } catch (const gpuhook::CaptureError& e) {
    std::fprintf(stderr, "count_records: %s\n", e.what());
    return 2;
  }
  return 0;
}
