#include "config.h"

#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "env_names.h"
#include "message_text.h"

namespace gpuhook::hook {
namespace {

using settings::detail::parse_int;

std::optional<bool> parse_bool(const char* s) {
  std::string v = s;
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "1" || v == "on" || v == "yes" || v == "true") return true;
  if (v == "0" || v == "off" || v == "no" || v == "false") return false;
  return std::nullopt;
}

std::optional<int32_t> first_int(const EnvLookup& getenv_fn, const char* const* names, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const char* v = getenv_fn(names[i]);
    if (v == nullptr) continue;
    auto parsed = parse_int(v);
    if (parsed && *parsed >= 0 && *parsed <= INT32_MAX) return static_cast<int32_t>(*parsed);
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> parse_duration_ns(const std::string& text) { return settings::detail::duration(text); }

Config parse_config(const EnvLookup& getenv_fn, std::vector<std::string>* problems) {
  Config c;
  auto bad = [&](const char* name, const char* value, const std::string& why) {
    if (problems != nullptr) {
      problems->push_back(std::string(name) + "=" + quoted(value) + " ignored (" + why + ")");
    }
  };
  auto integer = [&](const char* name, int64_t lo, int64_t hi, auto assign) {
    const char* v = getenv_fn(name);
    if (v == nullptr) return;
    auto parsed = parse_int(v);
    if (!parsed || *parsed < lo || *parsed > hi) {
      bad(name, v, "want an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
      return;
    }
    assign(*parsed);
  };
  auto boolean = [&](const char* name, bool* out) {
    const char* v = getenv_fn(name);
    if (v == nullptr) return;
    auto parsed = parse_bool(v);
    if (!parsed) {
      bad(name, v, "want 1 or 0");
      return;
    }
    *out = *parsed;
  };

  if (const char* v = getenv_fn(env::kOutput)) {
    if (*v == '\0') bad(env::kOutput, v, "empty");
    else c.output_pattern = v;
  }
  if (const char* v = getenv_fn(env::kApi)) {
    auto mask = parse_api(v);
    if (!mask) {
      bad(env::kApi, v, "want a list of launch,sync,memcpy,alloc or all or none");
    } else {
      c.api_mask = *mask;
      c.api_text = v;
    }
  }
  boolean(env::kNvtx, &c.nvtx);
  boolean(env::kNccl, &c.nccl);
  boolean(env::kCuda, &c.cuda);
  boolean(env::kQuiet, &c.quiet);
  if (const char* v = getenv_fn(env::kRange)) {
    auto range = parse_range(v);
    if (!range)
      bad(env::kRange, v,
          "want all, cudaProfilerApi, nvtx:NAME[%N|~P][@FIRST-LAST] (%N: every Nth occurrence, ~P: each with "
          "probability P in (0,1]) or time:DELAY[+DURATION|-END], durations with a unit: 2s, 500ms, 20us, 100ns");
    else c.range = *range;
  }
  integer(env::kSeed, 0, INT64_MAX, [&](int64_t v) { c.seed = static_cast<uint64_t>(v); });
  if (const char* v = getenv_fn(env::kFlight)) {
    auto d = parse_duration_ns(v);
    if (!d || *d == 0) bad(env::kFlight, v, "want a duration with a unit: 30s, 500ms");
    else c.flight_ns = *d;
  }
  integer(env::kFlightMb, 1, 1 << 16, [&](int64_t v) { c.flight_bytes = static_cast<uint64_t>(v) << 20; });
  integer(env::kFlightMax, 1, 1000, [&](int64_t v) { c.flight_max = static_cast<uint32_t>(v); });
  if (const char* v = getenv_fn(env::kFlightSignal)) {
    const std::string s = v;
    if (s == "none" || s == "0") c.flight_signal = 0;
    else if (s == "USR1" || s == "SIGUSR1") c.flight_signal = SIGUSR1;
    else if (s == "USR2" || s == "SIGUSR2") c.flight_signal = SIGUSR2;
    else if (auto n = parse_int(v); n && *n >= SIGRTMIN && *n <= SIGRTMAX) c.flight_signal = static_cast<int>(*n);
    else bad(env::kFlightSignal, v, "want USR1, USR2, a real-time signal number, or none");
  }
  if (const char* v = getenv_fn(env::kSlow)) {
    const std::string s = v;
    const size_t colon = s.rfind(':');
    char* end = nullptr;
    const double factor = colon == std::string::npos ? 0 : std::strtod(s.c_str() + colon + 1, &end);
    if (colon == 0 || colon == std::string::npos || end == nullptr || *end != '\0' || !(factor > 1) || factor > 1e6)
      bad(env::kSlow, v, "want NAME:FACTOR, an NVTX range and a factor over 1: train_step:2");
    else c.slow_name = s.substr(0, colon), c.slow_factor = factor;
  }
  boolean(env::kFlightSummary, &c.flight_summary);
  boolean(env::kMemUse, &c.mem_use);
  boolean(env::kSectors, &c.sectors);
  if (const char* v = getenv_fn(env::kHang)) {
    auto d = parse_duration_ns(v);
    if (!d || *d < 1'000'000) bad(env::kHang, v, "want a duration of 1ms or more, with a unit: 30s, 500ms");
    else c.hang_ns = *d;
  }
  if (c.flight_ns != 0) {
    // Shown in the exit line and in each dump's header: the values as a message shows them.
    c.flight_text = std::string(env::kFlight) + "=" + shown(getenv_fn(env::kFlight));
    if (!c.slow_name.empty()) c.flight_text += std::string(" ") + env::kSlow + "=" + shown(getenv_fn(env::kSlow));
    if (c.hang_ns != 0) c.flight_text += std::string(" ") + env::kHang + "=" + shown(getenv_fn(env::kHang));
  } else {
    if (!c.slow_name.empty()) {
      bad(env::kSlow, getenv_fn(env::kSlow), "needs GPUHOOK_FLIGHT: a slow occurrence triggers a flight recorder dump");
      c.slow_name.clear();
    }
    if (c.hang_ns != 0) {
      bad(env::kHang, getenv_fn(env::kHang), "needs GPUHOOK_FLIGHT: a hang triggers a flight recorder dump");
      c.hang_ns = 0;
    }
  }
  integer(env::kRingRecords, 64, 1 << 20, [&](int64_t v) {
    uint32_t p = 64;
    while (p < v) p <<= 1;  // rings index with a mask
    c.ring_records = p;
  });
  integer(env::kBufferBytes, 64 << 10, 256 << 20,
          [&](int64_t v) { c.buffer_bytes = static_cast<uint64_t>(v) & ~uint64_t{7}; });
  integer(env::kBuffers, 2, 1024, [&](int64_t v) { c.buffers = static_cast<uint32_t>(v); });
  // The capture must survive a kill with at most ~100 ms lost: longer periods are refused.
  integer(env::kFlushMs, 1, 100, [&](int64_t v) { c.flush_ms = static_cast<uint32_t>(v); });
  integer(env::kZstdLevel, 1, 19, [&](int64_t v) { c.zstd_level = static_cast<int>(v); });
  integer(env::kExitMs, 10, 60'000, [&](int64_t v) { c.exit_ms = static_cast<uint32_t>(v); });
  if (const char* v = getenv_fn(env::kOnFull)) {
    if (std::strcmp(v, "drop") == 0) c.on_full = OnFull::kDrop;
    else if (std::strcmp(v, "block") == 0) c.on_full = OnFull::kBlock;
    else bad(env::kOnFull, v, "want drop or block");
  }
  if (const char* v = getenv_fn(env::kCupti)) c.cupti_path = v;
  integer(env::kNvmlHz, 0, 1000, [&](int64_t v) { c.nvml_hz = static_cast<uint32_t>(v); });
  if (const char* v = getenv_fn(env::kNvml)) c.nvml_path = v;
  if (const char* v = getenv_fn(env::kMetrics); v != nullptr && *v != '\0') {
    std::string unknown;
    if (auto mask = settings::parse_metrics(v, &unknown)) {
      c.pm_metrics = *mask;
    } else {
      bad(env::kMetrics, v, "unknown metric \"" + shown(unknown) + "\"; valid: " + settings::pm_metric_names_text() + " or all");
    }
  }
  integer(env::kMetricsHz, 1, settings::kMaxMetricsHz, [&](int64_t v) { c.pm_hz = static_cast<uint32_t>(v); });
  if (const char* v = getenv_fn(env::kTestHost)) c.test_host = v;
  if (const char* v = getenv_fn(env::kTestBootId)) c.test_boot_id = v;
  integer(env::kTestClockOffsetNs, -(int64_t{1} << 62), int64_t{1} << 62,
          [&](int64_t v) { c.test_clock_offset_ns = v; });

  c.rank = first_int(getenv_fn, env::kRankVariables, std::size(env::kRankVariables));
  c.local_rank = first_int(getenv_fn, env::kLocalRankVariables, std::size(env::kLocalRankVariables));
  c.world_size = first_int(getenv_fn, env::kWorldSizeVariables, std::size(env::kWorldSizeVariables));
  for (const char* name : env::kJobIdVariables)
    if (const char* v = getenv_fn(name); v != nullptr && *v != '\0') {
      c.job_id.assign(v, strnlen(v, 256));
      break;
    }
  if (const char* v = getenv_fn(env_internal::kRunPid); v != nullptr && *v != '\0') c.in_hooked_run = true;
  return c;
}


}  // namespace gpuhook::hook
