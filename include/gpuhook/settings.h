// The hook's settings in one place, for the hook and for gantt-cli: every environment variable
// it reads (docs/configuration.md's table documents the same list), the output
// pattern and its default, and the grammars of GPUHOOK_API (which API records to keep) and
// GPUHOOK_RANGE (what part of the run to capture). The hook parses its environment with them;
// `gantt-cli record` sets the variables by these names and checks --api, --range and the output
// with these grammars before it starts the program. Durations take a unit (gpuhook/duration.h).
// Header-only: nothing links across the hook/analysis boundary.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include <gpuhook/duration.h>

namespace gpuhook::env {

inline constexpr const char kOutput[] = "GPUHOOK_OUTPUT";          // file pattern: %h %p %r %%
inline constexpr const char kApi[] = "GPUHOOK_API";                // launch,sync,memcpy,alloc | all | none
inline constexpr const char kNvtx[] = "GPUHOOK_NVTX";              // 1/0
inline constexpr const char kNccl[] = "GPUHOOK_NCCL";              // 1/0
inline constexpr const char kCuda[] = "GPUHOOK_CUDA";              // 1/0: CUPTI tracing
inline constexpr const char kRange[] = "GPUHOOK_RANGE";            // all | cudaProfilerApi | nvtx:NAME[%N|~P][@A-B] | time:D[+DUR|-END]
inline constexpr const char kSeed[] = "GPUHOOK_SEED";              // nvtx:NAME~P: which occurrences are drawn
// The flight recorder: keep the last DURATION in memory, write it out when a trigger fires.
inline constexpr const char kFlight[] = "GPUHOOK_FLIGHT";                // DURATION (30s); unset = off
inline constexpr const char kFlightMb[] = "GPUHOOK_FLIGHT_MB";           // memory bound, MiB
inline constexpr const char kFlightSignal[] = "GPUHOOK_FLIGHT_SIGNAL";   // USR2 (default), USR1, a number, or none
inline constexpr const char kFlightMax[] = "GPUHOOK_FLIGHT_MAX";         // dumps per process at most
inline constexpr const char kSlow[] = "GPUHOOK_SLOW";                    // NAME:FACTOR: a slow occurrence triggers
inline constexpr const char kHang[] = "GPUHOOK_HANG";                    // DURATION: a synchronize waiting this long triggers
inline constexpr const char kFlightSummary[] = "GPUHOOK_FLIGHT_SUMMARY";  // 1: the NVTX ranges of the whole run to the output
inline constexpr const char kMemUse[] = "GPUHOOK_MEM_USE";          // 1: which allocations each launch, copy, memset is given
inline constexpr const char kSectors[] = "GPUHOOK_SECTORS";          // 1: the global-memory sectors each kernel touched
inline constexpr const char kRingRecords[] = "GPUHOOK_RING_RECORDS";  // records per thread ring
inline constexpr const char kBufferBytes[] = "GPUHOOK_BUFFER_BYTES";  // one CUPTI buffer
inline constexpr const char kBuffers[] = "GPUHOOK_BUFFERS";          // CUPTI buffers in the pool
inline constexpr const char kFlushMs[] = "GPUHOOK_FLUSH_MS";        // writer flush period
inline constexpr const char kOnFull[] = "GPUHOOK_ON_FULL";          // drop | block
inline constexpr const char kZstdLevel[] = "GPUHOOK_ZSTD_LEVEL";    // 1..19
inline constexpr const char kQuiet[] = "GPUHOOK_QUIET";             // 1: no exit summary line
inline constexpr const char kExitMs[] = "GPUHOOK_EXIT_MS";          // longest wait at a fatal signal or exec
inline constexpr const char kCupti[] = "GPUHOOK_CUPTI";             // path of libcupti to load
inline constexpr const char kNvmlHz[] = "GPUHOOK_NVML_HZ";          // NVML samples per second, 0 = off
inline constexpr const char kNvml[] = "GPUHOOK_NVML";               // path of libnvidia-ml to load
inline constexpr const char kMetrics[] = "GPUHOOK_METRICS";         // CUPTI PM sampling: short names (settings::kPmMetricNames)
inline constexpr const char kMetricsHz[] = "GPUHOOK_METRICS_HZ";    // PM samples per second
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

namespace gpuhook::settings {

// GPUHOOK_OUTPUT when unset: a file per process in the working directory.
inline constexpr const char kDefaultOutputPattern[] = "gpuhook-%h-%p.gpuh";

// Expands %h (host), %p (pid), %r (rank, "norank" when unknown) and %% in the output pattern;
// any other %x stays as written.
inline std::string expand_output(const std::string& pattern, const std::string& host, int pid,
                                 std::optional<int32_t> rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char k = pattern[++i];
    if (k == 'h') out += host;
    else if (k == 'p') out += std::to_string(pid);
    else if (k == 'r') out += rank ? std::to_string(*rank) : std::string("norank");
    else if (k == '%') out += '%';
    else {
      out += '%';
      out += k;
    }
  }
  return out;
}

// True when the pattern names one file whatever the process (no %p or %r): a second run
// would find it there, and the hook never overwrites a capture.
inline bool fixed_output(const std::string& pattern) {
  for (size_t i = 0; i + 1 < pattern.size(); ++i)
    if (pattern[i] == '%') {
      if (pattern[i + 1] == 'p' || pattern[i + 1] == 'r') return false;
      ++i;
    }
  return true;
}

// API record groups (GPUHOOK_API); a CUPTI callback id belongs to a group by its name.
enum ApiGroup : uint32_t {
  kApiLaunch = 1u << 0,
  kApiSync = 1u << 1,
  kApiMemcpy = 1u << 2,  // copies and memsets
  kApiAlloc = 1u << 3,   // also turns on MEMORY2 records
  kApiOther = 1u << 4,   // everything else ("all" only)
  kApiAll = 0x1f,
};

enum class RangeKind { kAll, kProfilerApi, kNvtx, kTime };

struct CaptureRange {
  RangeKind kind = RangeKind::kAll;
  std::string nvtx_name;      // kNvtx
  uint64_t first = 1;         // kNvtx: 1-based occurrence window, inclusive
  uint64_t last = UINT64_MAX;
  // kNvtx sampling: every `every`-th occurrence from `first` (NAME%N), or each with
  // `probability` (NAME~P). Sampled occurrences are recorded one by one, each from its push to
  // its pop; unsampled windows span first..last whole.
  uint64_t every = 0;         // 0 = not sampled by count
  double probability = 0;     // 0 = not sampled by chance
  bool sampled() const { return every != 0 || probability != 0; }
  uint64_t delay_ns = 0;      // kTime: from the hook's start
  uint64_t duration_ns = 0;   // kTime: 0 = to the end
  std::string text;           // as given, for the header
};

namespace detail {

inline std::optional<int64_t> parse_int(const char* s) {
  if (s == nullptr || *s == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

// A duration of the range grammar: gpuhook/duration.h's, at most 10^18 ns.
inline std::optional<uint64_t> duration(const std::string& text) {
  uint64_t ns = 0;
  if (!parse_duration(text, &ns, nullptr) || ns > 1'000'000'000'000'000'000ull) return std::nullopt;
  return ns;
}

// splitmix64: the draw of NAME~P. Occurrence k is recorded when
// splitmix64(seed + k) / 2^64 < P, so a seed gives the same occurrences in every run and
// tools can say which were drawn.
inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace detail

// Whether occurrence k (1-based) of a sampled range is recorded.
inline bool occurrence_sampled(const CaptureRange& r, uint64_t k, uint64_t seed) {
  if (k < r.first || k > r.last) return false;
  if (r.every != 0) return (k - r.first) % r.every == 0;
  if (r.probability != 0)
    return static_cast<double>(detail::splitmix64(seed + k)) < r.probability * 18446744073709551616.0;
  return true;
}

inline std::optional<uint32_t> parse_api(const std::string& text) {
  if (text == "all") return kApiAll;
  if (text == "none") return 0u;
  uint32_t mask = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (item == "launch") mask |= kApiLaunch;
    else if (item == "sync") mask |= kApiSync;
    else if (item == "memcpy") mask |= kApiMemcpy;
    else if (item == "alloc") mask |= kApiAlloc;
    else return std::nullopt;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return mask;
}

inline std::optional<CaptureRange> parse_range(const std::string& text) {
  CaptureRange r;
  r.text = text;
  if (text == "all" || text.empty()) {
    r.text.clear();
    return r;
  }
  if (text == "cudaProfilerApi") {
    r.kind = RangeKind::kProfilerApi;
    return r;
  }
  if (text.rfind("time:", 0) == 0) {
    // time:DELAY, time:DELAY+DURATION or time:DELAY-END (END counted from the start too)
    std::string rest = text.substr(5);
    size_t sep = rest.find_first_of("+-");
    auto delay = detail::duration(rest.substr(0, sep));
    if (!delay) return std::nullopt;
    r.kind = RangeKind::kTime;
    r.delay_ns = *delay;
    if (sep != std::string::npos) {
      auto second = detail::duration(rest.substr(sep + 1));
      if (!second) return std::nullopt;
      if (rest[sep] == '+') r.duration_ns = *second;
      else if (*second > *delay) r.duration_ns = *second - *delay;
      if (r.duration_ns == 0) return std::nullopt;
    }
    return r;
  }
  // nvtx:NAME[%N|~P][@A[-B]] or NAME[...]. A '%' or '~' followed by anything but a count or a
  // probability is part of the name.
  std::string spec = text.rfind("nvtx:", 0) == 0 ? text.substr(5) : text;
  size_t at = spec.rfind('@');
  r.kind = RangeKind::kNvtx;
  r.nvtx_name = spec.substr(0, at);
  if (size_t mark = r.nvtx_name.find_last_of("%~"); mark != std::string::npos && mark > 0) {
    const std::string value = r.nvtx_name.substr(mark + 1);
    const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    if (r.nvtx_name[mark] == '%') {
      if (auto n = detail::parse_int(value.c_str())) {
        if (*n < 1) return std::nullopt;
        r.every = static_cast<uint64_t>(*n);
        r.nvtx_name.resize(mark);
      } else if (digits) {
        return std::nullopt;  // a count past int64: a mistake, not a name ending in "%99999..."
      }
    } else if (!value.empty() && value.find_first_not_of("0123456789.") == std::string::npos) {
      char* end = nullptr;
      const double p = std::strtod(value.c_str(), &end);
      if (end == nullptr || *end != '\0' || !(p > 0) || p > 1) return std::nullopt;
      r.probability = p;
      r.nvtx_name.resize(mark);
    }
  }
  if (r.nvtx_name.empty()) return std::nullopt;
  if (at != std::string::npos) {
    std::string window = spec.substr(at + 1);
    size_t dash = window.find('-');
    auto first = detail::parse_int(window.substr(0, dash).c_str());
    if (!first || *first < 1) return std::nullopt;
    r.first = static_cast<uint64_t>(*first);
    r.last = r.first;
    if (dash != std::string::npos) {
      auto last = detail::parse_int(window.substr(dash + 1).c_str());
      if (!last || *last < *first) return std::nullopt;
      r.last = static_cast<uint64_t>(*last);
    }
  }
  return r;
}

// GPUHOOK_METRICS: the hardware counters CUPTI PM sampling reads, by short name; bit i of the
// mask is kPmMetricNames[i]. The CUPTI metric behind each is the hook's business
// (libhook/pm_metrics.cpp); this list is what `gantt-cli record --metrics` checks.
inline constexpr const char* kPmMetricNames[] = {"gr_active",   "sm_active",  "sm_occupancy", "tensor_active",
                                                 "dram_read",   "dram_write", "pcie_rx",      "pcie_tx",
                                                 "nvlink_rx",   "nvlink_tx"};
inline constexpr uint32_t kPmMetricCount = sizeof(kPmMetricNames) / sizeof(kPmMetricNames[0]);
inline constexpr uint32_t kDefaultMetricsHz = 10000;
inline constexpr uint32_t kMaxMetricsHz = 100000;  // 10 us windows; finer overflows the hardware buffer

inline std::string pm_metric_names_text() {
  std::string out;
  for (const char* n : kPmMetricNames) out += (out.empty() ? "" : ",") + std::string(n);
  return out;
}

// "sm_active,dram_read" (or "all") into a mask; nullopt and *unknown = the first name not in
// the list ("" for an empty item or list). Repeats are allowed.
inline std::optional<uint32_t> parse_metrics(const std::string& text, std::string* unknown) {
  if (text == "all") return (1u << kPmMetricCount) - 1;
  uint32_t mask = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    uint32_t i = 0;
    while (i < kPmMetricCount && item != kPmMetricNames[i]) ++i;
    if (i == kPmMetricCount) {
      *unknown = item.substr(0, 64);
      return std::nullopt;
    }
    mask |= 1u << i;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return mask;
}

}  // namespace gpuhook::settings
