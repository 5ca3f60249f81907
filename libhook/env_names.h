// Every environment variable the hook reads, in one place. The README's
// "Configuration (GPUHOOK_*)" table documents the same list.
#pragma once

namespace gpuhook::env {

inline constexpr const char kOutput[] = "GPUHOOK_OUTPUT";          // file pattern: %h %p %r %%
inline constexpr const char kApi[] = "GPUHOOK_API";                // launch,sync,memcpy,alloc | all | none
inline constexpr const char kNvtx[] = "GPUHOOK_NVTX";              // 1/0
inline constexpr const char kNccl[] = "GPUHOOK_NCCL";              // 1/0
inline constexpr const char kCuda[] = "GPUHOOK_CUDA";              // 1/0: CUPTI tracing
inline constexpr const char kRange[] = "GPUHOOK_RANGE";            // all | cudaProfilerApi | nvtx:NAME[@A-B] | time:D[+DUR|-END]
inline constexpr const char kRingRecords[] = "GPUHOOK_RING_RECORDS";  // records per thread ring
inline constexpr const char kBufferBytes[] = "GPUHOOK_BUFFER_BYTES";  // one CUPTI buffer
inline constexpr const char kBuffers[] = "GPUHOOK_BUFFERS";          // CUPTI buffers in the pool
inline constexpr const char kFlushMs[] = "GPUHOOK_FLUSH_MS";        // writer flush period
inline constexpr const char kOnFull[] = "GPUHOOK_ON_FULL";          // drop | block
inline constexpr const char kZstdLevel[] = "GPUHOOK_ZSTD_LEVEL";    // 1..19
inline constexpr const char kQuiet[] = "GPUHOOK_QUIET";             // 1: no exit summary line
inline constexpr const char kExitMs[] = "GPUHOOK_EXIT_MS";          // longest wait at a fatal signal or exec
inline constexpr const char kCupti[] = "GPUHOOK_CUPTI";             // path of libcupti to load
// Test-only: make one machine look like several hosts for the multi-host alignment tests.
inline constexpr const char kTestHost[] = "GPUHOOK_TEST_HOST";
inline constexpr const char kTestBootId[] = "GPUHOOK_TEST_BOOT_ID";
inline constexpr const char kTestClockOffsetNs[] = "GPUHOOK_TEST_CLOCK_OFFSET_NS";

// Read, never written by the hook except the two injection variables below.
inline constexpr const char kCudaInjection[] = "CUDA_INJECTION64_PATH";
inline constexpr const char kNvtxInjection[] = "NVTX_INJECTION64_PATH";
inline constexpr const char* kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
inline constexpr const char* kLocalRankVariables[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                      "SLURM_LOCALID"};
// The batch job the process runs in, for `gantt-cli jobs --captures` (first one set wins).
inline constexpr const char* kJobIdVariables[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"};
inline constexpr const char* kWorldSizeVariables[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                                      "SLURM_NTASKS"};

}  // namespace gpuhook::env
