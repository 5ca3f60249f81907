#include "config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "env_names.h"

namespace gpuhook::hook {
namespace {

std::optional<int64_t> parse_int(const char* s) {
  if (s == nullptr || *s == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(v);
}

std::optional<bool> parse_bool(const char* s) {
  std::string v = s;
  for (auto& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "1" || v == "on" || v == "yes" || v == "true") return true;
  if (v == "0" || v == "off" || v == "no" || v == "false") return false;
  return std::nullopt;
}

std::optional<uint32_t> parse_api(const std::string& text) {
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

std::optional<CaptureRange> parse_range(const std::string& text) {
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
    auto delay = parse_duration_ns(rest.substr(0, sep));
    if (!delay) return std::nullopt;
    r.kind = RangeKind::kTime;
    r.delay_ns = *delay;
    if (sep != std::string::npos) {
      auto second = parse_duration_ns(rest.substr(sep + 1));
      if (!second) return std::nullopt;
      if (rest[sep] == '+') r.duration_ns = *second;
      else if (*second > *delay) r.duration_ns = *second - *delay;
      if (r.duration_ns == 0) return std::nullopt;
    }
    return r;
  }
  // nvtx:NAME[@A[-B]] or NAME[@A[-B]]
  std::string spec = text.rfind("nvtx:", 0) == 0 ? text.substr(5) : text;
  size_t at = spec.rfind('@');
  r.kind = RangeKind::kNvtx;
  r.nvtx_name = spec.substr(0, at);
  if (r.nvtx_name.empty()) return std::nullopt;
  if (at != std::string::npos) {
    std::string window = spec.substr(at + 1);
    size_t dash = window.find('-');
    auto first = parse_int(window.substr(0, dash).c_str());
    if (!first || *first < 1) return std::nullopt;
    r.first = static_cast<uint64_t>(*first);
    r.last = r.first;
    if (dash != std::string::npos) {
      auto last = parse_int(window.substr(dash + 1).c_str());
      if (!last || *last < *first) return std::nullopt;
      r.last = static_cast<uint64_t>(*last);
    }
  }
  return r;
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

std::optional<uint64_t> parse_duration_ns(const std::string& text) {
  if (text.empty()) return std::nullopt;
  size_t unit_at = text.find_first_not_of("0123456789.");
  std::string number = text.substr(0, unit_at);
  std::string unit = unit_at == std::string::npos ? "s" : text.substr(unit_at);
  if (number.empty() || number.find('.') != number.rfind('.')) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(number.c_str(), &end);
  if (end == number.c_str() || *end != '\0') return std::nullopt;
  double scale;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else return std::nullopt;
  double ns = v * scale;
  if (!std::isfinite(ns) || ns < 0 || ns > 1e18) return std::nullopt;
  return static_cast<uint64_t>(std::llround(ns));
}

Config parse_config(const EnvLookup& getenv_fn, std::vector<std::string>* problems) {
  Config c;
  auto bad = [&](const char* name, const char* value, const std::string& why) {
    if (problems != nullptr) {
      problems->push_back(std::string(name) + "='" + value + "' ignored (" + why + ")");
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
    if (!range) bad(env::kRange, v, "want all, cudaProfilerApi, nvtx:NAME[@FIRST-LAST] or time:DELAY[+DURATION|-END]");
    else c.range = *range;
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
  if (const char* v = getenv_fn(env::kTestHost)) c.test_host = v;
  if (const char* v = getenv_fn(env::kTestBootId)) c.test_boot_id = v;
  integer(env::kTestClockOffsetNs, -(int64_t{1} << 62), int64_t{1} << 62,
          [&](int64_t v) { c.test_clock_offset_ns = v; });

  c.rank = first_int(getenv_fn, env::kRankVariables, std::size(env::kRankVariables));
  c.local_rank = first_int(getenv_fn, env::kLocalRankVariables, std::size(env::kLocalRankVariables));
  c.world_size = first_int(getenv_fn, env::kWorldSizeVariables, std::size(env::kWorldSizeVariables));
  return c;
}

std::string expand_output(const std::string& pattern, const std::string& host, int pid,
                          std::optional<int32_t> rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char k = pattern[++i];
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

}  // namespace gpuhook::hook
