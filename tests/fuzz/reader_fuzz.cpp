// libFuzzer target for CaptureReader: any bytes, read strictly, leniently and through a time
// window, must end in records or a CaptureError, never a crash, a hang or a huge allocation.
//   tests/fuzz/run.sh [SECONDS]          (clang++ -fsanitize=fuzzer,address,undefined)
// Built without libFuzzer (GCC), the same entry point replays the seed corpus as a test.
#include <cstddef>
#include <cstdint>
#include <string>

#include <gpuhook/capture.h>

#include "memfd_input.h"

namespace {

void read_all(const std::string& path, gpuhook::ReaderOptions options) {
  try {
    gpuhook::CaptureReader reader(path, options);
    gpuhook::v1::Record r;
    uint64_t n = 0;
    while (reader.next(r)) {
      for (uint32_t id : {0u, 1u, 2u, 1000u}) (void)reader.string(id);
      if (++n > 1'000'000) break;  // bounded by the input size anyway
    }
    (void)reader.integrity();
  } catch (const gpuhook::CaptureError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MemfdInput input("gpuh", data, size);
  if (!input.ok()) return 0;
  const std::string& path = input.path();
  gpuhook::ReaderOptions o;
  read_all(path, o);
  o.strict = false;
  read_all(path, o);
  o.from_ns = 5'000'000'000;
  o.to_ns = 5'002'800'000;
  read_all(path, o);
  return 0;
}
