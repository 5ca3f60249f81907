// One synthetic run of a training-like program, written in each format gantt-cli reads: a
// gpuhook capture, a torch.profiler/Kineto Chrome-trace JSON (plain or gzip'd) and an Nsight
// Systems SQLite export, each with the field layout its documentation gives
// (shared/TRACE-FORMATS.md). The same events in every file, so a test can hold the readers to
// the same figures. Fabricated data, not GPU measurements.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tracegen {

// Times are absolute ns on the wall clock (CLOCK_REALTIME), as Kineto and nsys give them.
struct Device {
  uint32_t ordinal = 0;
  std::string name = "NVIDIA H100 80GB HBM3";
  uint32_t sm_count = 132, cc_major = 9, cc_minor = 0;
  uint32_t max_threads_per_sm = 2048, max_threads_per_block = 1024, warp_size = 32;
  uint32_t registers_per_sm = 65536, registers_per_block = 65536;
  uint64_t shared_memory_per_sm_bytes = 233472, shared_memory_per_block_bytes = 49152,
           shared_memory_per_block_optin_bytes = 232448, global_memory_bytes = 85020000256ull;
};

struct Kernel {
  std::string name;
  uint32_t device = 0, stream = 7, correlation_id = 0;
  int64_t start_ns = 0, end_ns = 0;
  int32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  uint32_t registers_per_thread = 32, shared_memory_bytes = 0;  // static + dynamic
};

// CUPTI's enums: copy_kind CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP),
// memory kinds CUpti_ActivityMemoryKind (1 pageable, 2 pinned, 3 device).
struct Copy {
  uint32_t device = 0, stream = 7, correlation_id = 0;
  int copy_kind = 1, src_kind = 2, dst_kind = 3;
  uint64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;
};

struct Fill {
  uint32_t device = 0, stream = 7, correlation_id = 0;
  int memory_kind = 3;
  uint64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// A runtime API call on a host thread; correlation_id 0 for calls that launch nothing.
struct ApiCall {
  std::string name;  // "cudaLaunchKernel", "cudaStreamSynchronize", ...
  uint32_t cbid = 0;
  uint64_t thread_id = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
};

// CUPTI's CUpti_ActivitySynchronizationType: 1 event synchronize, 2 stream wait event,
// 3 stream synchronize, 4 context synchronize. Host times of the blocking call.
struct Sync {
  int type = 3;
  uint32_t device = 0, stream = 7, correlation_id = 0;
  uint64_t thread_id = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// A record_function / NVTX push-pop range on a host thread (properly nested per thread).
struct Range {
  std::string name;
  uint64_t thread_id = 0;
  int64_t start_ns = 0, end_ns = 0;
};

struct Run {
  std::string host_name = "node-a";
  uint32_t pid = 4242;
  int32_t rank = -1, world_size = 0;  // -1: not a distributed run
  int64_t base_ns = 1'700'000'000'000'000'000;  // Kineto's baseTimeNanoseconds, nsys's session start
  std::vector<Device> devices;
  std::vector<Kernel> kernels;
  std::vector<Copy> copies;
  std::vector<Fill> fills;
  std::vector<ApiCall> calls;
  std::vector<Sync> syncs;
  std::vector<Range> ranges;
};

struct Shape {
  uint64_t steps = 4;             // ProfilerStep#N ranges
  uint64_t kernels_per_step = 6;  // forward and backward kernels per step
  uint32_t seed = 1;              // varies the kernels' durations (deterministically)
  int32_t rank = -1, world_size = 0;
  int64_t slow_ns = 0;            // added to every "gemm" kernel: a regression to find
};

// The name of the all-reduce kernel distributed runs have.
extern const char* const kAllReduce;

// Per step: a pageable HtoD copy, kernels_per_step kernels on stream 7 with a memset among
// them, a DtoH copy, and a cudaStreamSynchronize the host waits in; each step in a
// ProfilerStep#N range with a "forward" range inside; with world_size > 1, an all-reduce of the
// gradients on stream 13 that every rank ends together (the Kineto trace carries c10d's args,
// the capture its kernel only: the hook's NcclCall records are not made up). All times are multiples of 1 ns and
// fit Kineto's 3 decimals of µs exactly.
Run make_run(const Shape& shape);

// Each throws std::runtime_error when the file cannot be written.
void write_gpuh(const Run& run, const std::string& path);
void write_kineto(const Run& run, const std::string& path, bool gzip);
void write_nsys(const Run& run, const std::string& path);

}  // namespace tracegen
