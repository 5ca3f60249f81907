// The hook's one immutable configuration, parsed once from GPUHOOK_* variables.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gpuhook/settings.h>

namespace gpuhook::hook {

// The grammars of GPUHOOK_API and GPUHOOK_RANGE are <gpuhook/settings.h>: gantt-cli record
// checks its flags with the same code before it starts the program.
using settings::ApiGroup;
using settings::kApiLaunch;
using settings::kApiSync;
using settings::kApiMemcpy;
using settings::kApiAlloc;
using settings::kApiOther;
using settings::kApiAll;
using settings::RangeKind;
using settings::CaptureRange;
using settings::parse_api;
using settings::parse_range;
enum class OnFull { kDrop, kBlock };

struct Config {
  std::string output_pattern = settings::kDefaultOutputPattern;
  uint32_t api_mask = kApiLaunch | kApiSync | kApiMemcpy | kApiAlloc;
  std::string api_text = "launch,sync,memcpy,alloc";
  bool nvtx = true;
  bool nccl = true;
  bool cuda = true;
  CaptureRange range;
  uint64_t seed = 1;                    // GPUHOOK_SEED: which occurrences nvtx:NAME~P draws
  // The flight recorder (flight.h): 0 = off, the normal capture file is written.
  uint64_t flight_ns = 0;
  uint64_t flight_bytes = 256ull << 20;
  int flight_signal = 12;               // SIGUSR2; 0 = none
  uint32_t flight_max = 10;
  std::string slow_name;                // GPUHOOK_SLOW=NAME:FACTOR, "" = off
  double slow_factor = 0;
  std::string flight_text;              // the settings in force, for the dump's header
  bool flight_summary = false;          // GPUHOOK_FLIGHT_SUMMARY: the NVTX ranges of the whole run to the output
  uint64_t hang_ns = 0;                 // GPUHOOK_HANG: a synchronize waiting this long for the GPU, 0 = off
  bool mem_use = false;                 // GPUHOOK_MEM_USE: the addresses each launch, copy, memset is given
  bool sectors = false;                 // GPUHOOK_SECTORS: each kernel's global-memory sectors (sass_sectors.h)
  uint32_t ring_records = 8192;         // power of two
  // 32 x 1 MiB: CUPTI keeps one buffer per launching thread, and the writer returns full
  // ones within a flush period, so 32 covers 16 busy threads with RSS under 64 MiB.
  uint64_t buffer_bytes = 1u << 20;     // one CUPTI activity buffer
  // CUDA 13 fills one buffer per producing thread (CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER
  // defaults to 1): 64 launching threads hold 64 buffers at once. Allocated lazily, so a
  // program with few threads pays for few.
  uint32_t buffers = 128;               // CUPTI buffers in the pool
  uint32_t flush_ms = 100;
  OnFull on_full = OnFull::kDrop;
  // Level 3, the format's own default: with format version 3 and the hand encoders, on 200k
  // simulated launches it costs the writer 190-195 ns per kernel against 180-190 ns at level
  // 1 (noise-level), and on synthetic captures it writes 15.9 bytes per kernel against 17.9.
  int zstd_level = 3;
  bool quiet = false;
  // The longest a fatal signal (SIGTERM, SIGINT, SIGABRT, a fault, std::terminate) or an exec waits for
  // the writer; what is not written by then is counted as dropped and said. With the exit's
  // chunks compressed at level 1 the writer needs well under this.
  uint32_t exit_ms = 1000;
  std::string cupti_path;  // "" = search
  // GPUHOOK_NVML_HZ: NVML reads of every device the process uses, per second; 0 = off. 100 Hz
  // is what the issue of the hardware's counters asks for; NVML's own utilisation averages over
  // 1/6 s to 1 s (nvmlUtilization_t), so faster reads only resample that average.
  uint32_t nvml_hz = 100;
  std::string nvml_path;   // GPUHOOK_NVML, "" = libnvidia-ml.so.1
  // GPUHOOK_METRICS: CUPTI PM sampling of these counters (bit i = settings::kPmMetricNames[i]);
  // 0 = off. Needs profiling permission; NVML (above) runs beside it and is what is left when
  // PM sampling is refused.
  uint32_t pm_metrics = 0;
  uint32_t pm_hz = settings::kDefaultMetricsHz;  // GPUHOOK_METRICS_HZ
  std::string test_host;
  std::string test_boot_id;
  int64_t test_clock_offset_ns = 0;
  std::optional<int32_t> rank;
  std::optional<int32_t> local_rank;
  std::optional<int32_t> world_size;
  std::string job_id;  // env::kJobIdVariables, "" = none
  // GPUHOOK_RUN_PID was set (env_names.h): an earlier image of this process, or a process that
  // started it, ran the hook. A capture name that exists then takes the next free suffix.
  bool in_hooked_run = false;
};

using EnvLookup = std::function<const char*(const char*)>;

// Parses every variable. A bad value leaves the default and adds one message (without the
// "gpuhook: " prefix) to `problems`.
Config parse_config(const EnvLookup& getenv_fn, std::vector<std::string>* problems);

using settings::expand_output;  // %h %p %r %% (gpuhook/settings.h)

// Parses "1500ns", "20us", "3ms", "2s", "1.5s" (no unit = seconds). nullopt when malformed.
std::optional<uint64_t> parse_duration_ns(const std::string& text);

}  // namespace gpuhook::hook
