// gpuhook_synth: synthetic captures shaped like real ones, for benchmarks and for tests that
// need N kernels without a GPU. Kernel names are realistic mangled C++ (100-200 bytes, a few
// dozen distinct), launches are spread over streams, each kernel is paired with its launch
// ApiCall by correlation id, and the timing has jitter. Deterministic for a given seed.
// This is fabricated data: no figure computed from it is a GPU figure.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gpuhook/capture.h>

namespace gpuhook::synth {

struct SynthOptions {
  uint64_t kernels = 100'000;
  uint32_t streams = 8;
  uint32_t distinct_kernel_names = 48;
  bool with_launch_api = true;       // an ApiCall (cudaLaunchKernel) per kernel
  uint32_t cupti_batch = 256;        // kernels arrive in CUPTI buffer batches after their launches
  uint64_t start_ns = 12'345'678'900'000ull;  // MONOTONIC_RAW-like: ~3.4 h after boot
  uint64_t seed = 1;
};

// Receives records in the order a hook's writer thread would see them, plus the interned
// names (intern() must return the id to use, as CaptureWriter::intern does).
struct Sink {
  std::function<uint32_t(std::string_view)> intern;
  std::function<void(const v1::Record&)> write;
};

// The mangled kernel names used, index = the kernel "type".
std::vector<std::string> kernel_names(uint32_t count, uint64_t seed);

// Emits a Header, one DeviceInfo, a ThreadInfo, then the launches and kernels.
void generate(const SynthOptions& options, const Sink& sink);

// Writes a whole capture to `path` (must not exist). Returns "" or the error.
std::string write_capture(const std::string& path, const SynthOptions& options,
                          const WriterOptions& writer_options = {});

// All records of generate() in memory, names as StringDef records in place.
std::vector<v1::Record> make_records(const SynthOptions& options);

}  // namespace gpuhook::synth
