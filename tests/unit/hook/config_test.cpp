#include "config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gpuhook::hook {
namespace {

struct Env {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* n) -> const char* {
      auto it = vars.find(n);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

Config parse(const Env& env, std::vector<std::string>* problems = nullptr) {
  std::vector<std::string> local;
  return parse_config(env.lookup(), problems != nullptr ? problems : &local);
}

TEST(Config, DefaultsWithEmptyEnvironment) {
  std::vector<std::string> problems;
  Config c = parse(Env{}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.output_pattern, "gpuhook-%h-%p.gpuh");
  EXPECT_EQ(c.api_mask, kApiLaunch | kApiSync | kApiMemcpy | kApiAlloc);
  EXPECT_TRUE(c.nvtx);
  EXPECT_TRUE(c.nccl);
  EXPECT_EQ(c.range.kind, RangeKind::kAll);
  EXPECT_EQ(c.flush_ms, 100u);
  EXPECT_EQ(c.on_full, OnFull::kDrop);
  EXPECT_FALSE(c.rank.has_value());
}

TEST(Config, ReadsEveryVariable) {
  Env env;
  env.vars = {{"GPUHOOK_OUTPUT", "/tmp/x-%r.gpuh"}, {"GPUHOOK_API", "launch,sync"}, {"GPUHOOK_NVTX", "0"},
              {"GPUHOOK_NCCL", "off"},          {"GPUHOOK_CUDA", "no"},         {"GPUHOOK_RING_RECORDS", "1000"},
              {"GPUHOOK_BUFFER_BYTES", "131072"}, {"GPUHOOK_BUFFERS", "4"},     {"GPUHOOK_FLUSH_MS", "20"},
              {"GPUHOOK_ON_FULL", "block"},     {"GPUHOOK_ZSTD_LEVEL", "7"},    {"GPUHOOK_QUIET", "1"},
              {"GPUHOOK_CUPTI", "/x/libcupti.so"}, {"GPUHOOK_TEST_HOST", "hostB"}, {"GPUHOOK_TEST_BOOT_ID", "b00t"},
              {"GPUHOOK_TEST_CLOCK_OFFSET_NS", "-5000"}, {"OMPI_COMM_WORLD_RANK", "3"}, {"WORLD_SIZE", "8"}};
  std::vector<std::string> problems;
  Config c = parse(env, &problems);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(c.output_pattern, "/tmp/x-%r.gpuh");
  EXPECT_EQ(c.api_mask, kApiLaunch | kApiSync);
  EXPECT_FALSE(c.nvtx);
  EXPECT_FALSE(c.nccl);
  EXPECT_FALSE(c.cuda);
  EXPECT_EQ(c.ring_records, 1024u);  // rounded up to a power of two
  EXPECT_EQ(c.buffer_bytes, 131072u);
  EXPECT_EQ(c.buffers, 4u);
  EXPECT_EQ(c.flush_ms, 20u);
  EXPECT_EQ(c.on_full, OnFull::kBlock);
  EXPECT_EQ(c.zstd_level, 7);
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.cupti_path, "/x/libcupti.so");
  EXPECT_EQ(c.test_host, "hostB");
  EXPECT_EQ(c.test_boot_id, "b00t");
  EXPECT_EQ(c.test_clock_offset_ns, -5000);
  EXPECT_EQ(c.rank, 3);
  EXPECT_EQ(c.world_size, 8);
}

TEST(Config, BadValuesKeepTheDefaultAndSayWhyOnce) {
  Env env;
  env.vars = {{"GPUHOOK_API", "launch,bogus"}, {"GPUHOOK_NVTX", "maybe"}, {"GPUHOOK_RING_RECORDS", "12x"},
              {"GPUHOOK_FLUSH_MS", "1000"},  {"GPUHOOK_ON_FULL", "wait"}, {"GPUHOOK_ZSTD_LEVEL", "99"},
              {"GPUHOOK_RANGE", "time:abc"}, {"GPUHOOK_OUTPUT", ""},     {"GPUHOOK_TEST_CLOCK_OFFSET_NS", "1e9"}};
  std::vector<std::string> problems;
  Config c = parse(env, &problems);
  EXPECT_EQ(problems.size(), env.vars.size());
  for (const auto& p : problems) EXPECT_NE(p.find("GPUHOOK_"), std::string::npos) << p;
  Config d = parse(Env{});
  EXPECT_EQ(c.api_mask, d.api_mask);
  EXPECT_EQ(c.nvtx, d.nvtx);
  EXPECT_EQ(c.ring_records, d.ring_records);
  EXPECT_EQ(c.flush_ms, d.flush_ms);
  EXPECT_EQ(c.on_full, d.on_full);
  EXPECT_EQ(c.zstd_level, d.zstd_level);
  EXPECT_EQ(c.range.kind, RangeKind::kAll);
  EXPECT_EQ(c.output_pattern, d.output_pattern);
  EXPECT_EQ(c.test_clock_offset_ns, 0);
}

TEST(Config, ApiAllAndNone) {
  Env env;
  env.vars = {{"GPUHOOK_API", "all"}};
  EXPECT_EQ(parse(env).api_mask, static_cast<uint32_t>(kApiAll));
  env.vars = {{"GPUHOOK_API", "none"}};
  EXPECT_EQ(parse(env).api_mask, 0u);
}

TEST(Config, FlightRecorder) {
  Env env;
  env.vars = {{"GPUHOOK_FLIGHT", "30s"}, {"GPUHOOK_FLIGHT_MB", "64"}, {"GPUHOOK_FLIGHT_SIGNAL", "USR1"},
              {"GPUHOOK_FLIGHT_MAX", "3"}, {"GPUHOOK_SLOW", "train:step:2.5"}};
  Config c = parse(env);
  EXPECT_EQ(c.flight_ns, 30'000'000'000u);
  EXPECT_EQ(c.flight_bytes, 64u << 20);
  EXPECT_EQ(c.flight_signal, SIGUSR1);
  EXPECT_EQ(c.flight_max, 3u);
  EXPECT_EQ(c.slow_name, "train:step");  // the last ':' splits: names may hold one
  EXPECT_DOUBLE_EQ(c.slow_factor, 2.5);
  EXPECT_EQ(c.flight_text, "GPUHOOK_FLIGHT=30s GPUHOOK_SLOW=train:step:2.5");
  env.vars = {{"GPUHOOK_FLIGHT", "1s"}, {"GPUHOOK_FLIGHT_SIGNAL", "none"}};
  EXPECT_EQ(parse(env).flight_signal, 0);
  // Off by default; GPUHOOK_SLOW alone is refused (nothing to dump); bad values each one line.
  env.vars = {};
  EXPECT_EQ(parse(env).flight_ns, 0u);
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"GPUHOOK_FLIGHT", "30"}, {"GPUHOOK_FLIGHT", "0s"}, {"GPUHOOK_FLIGHT_MB", "0"}, {"GPUHOOK_FLIGHT_SIGNAL", "KILL"},
           {"GPUHOOK_FLIGHT_MAX", "0"}, {"GPUHOOK_SLOW", "step:1"}, {"GPUHOOK_SLOW", ":2"}, {"GPUHOOK_SLOW", "step"}}) {
    env.vars = {{name, value}};
    if (name != "GPUHOOK_FLIGHT") env.vars["GPUHOOK_FLIGHT"] = "1s";
    std::vector<std::string> problems;
    c = parse(env, &problems);
    EXPECT_EQ(problems.size(), 1u) << name << "=" << value;
  }
  env.vars = {{"GPUHOOK_SLOW", "step:2"}};
  std::vector<std::string> problems;
  c = parse(env, &problems);
  EXPECT_EQ(problems.size(), 1u);
  EXPECT_TRUE(c.slow_name.empty());
}

TEST(Config, CaptureRanges) {
  Env env;
  env.vars = {{"GPUHOOK_RANGE", "nvtx:train_step@10-20"}};
  Config c = parse(env);
  EXPECT_EQ(c.range.kind, RangeKind::kNvtx);
  EXPECT_EQ(c.range.nvtx_name, "train_step");
  EXPECT_EQ(c.range.first, 10u);
  EXPECT_EQ(c.range.last, 20u);

  env.vars = {{"GPUHOOK_RANGE", "step@3"}};
  c = parse(env);
  EXPECT_EQ(c.range.nvtx_name, "step");
  EXPECT_EQ(c.range.first, 3u);
  EXPECT_EQ(c.range.last, 3u);

  env.vars = {{"GPUHOOK_RANGE", "cudaProfilerApi"}};
  EXPECT_EQ(parse(env).range.kind, RangeKind::kProfilerApi);

  env.vars = {{"GPUHOOK_RANGE", "time:2s+500ms"}};
  c = parse(env);
  EXPECT_EQ(c.range.kind, RangeKind::kTime);
  EXPECT_EQ(c.range.delay_ns, 2'000'000'000u);
  EXPECT_EQ(c.range.duration_ns, 500'000'000u);

  env.vars = {{"GPUHOOK_RANGE", "time:1s-3s"}};
  c = parse(env);
  EXPECT_EQ(c.range.delay_ns, 1'000'000'000u);
  EXPECT_EQ(c.range.duration_ns, 2'000'000'000u);

  // Sampled: every Nth occurrence, or each with a probability, with or without a window.
  env.vars = {{"GPUHOOK_RANGE", "nvtx:train_step%100@1000-5000"}, {"GPUHOOK_SEED", "7"}};
  c = parse(env);
  EXPECT_EQ(c.range.nvtx_name, "train_step");
  EXPECT_EQ(c.range.every, 100u);
  EXPECT_EQ(c.range.first, 1000u);
  EXPECT_EQ(c.range.last, 5000u);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_TRUE(gpuhook::settings::occurrence_sampled(c.range, 1000, c.seed));
  EXPECT_TRUE(gpuhook::settings::occurrence_sampled(c.range, 1100, c.seed));
  EXPECT_FALSE(gpuhook::settings::occurrence_sampled(c.range, 1099, c.seed));
  EXPECT_FALSE(gpuhook::settings::occurrence_sampled(c.range, 5100, c.seed));  // past LAST
  env.vars = {{"GPUHOOK_RANGE", "nvtx:step~0.25"}};
  c = parse(env);
  EXPECT_EQ(c.range.nvtx_name, "step");
  EXPECT_DOUBLE_EQ(c.range.probability, 0.25);
  uint64_t drawn = 0;
  for (uint64_t k = 1; k <= 100000; ++k) drawn += gpuhook::settings::occurrence_sampled(c.range, k, c.seed);
  EXPECT_NEAR(static_cast<double>(drawn), 25000.0, 600.0);  // binomial sd 137: over 4 sd either way
  // A '%' or '~' not followed by a count or a probability belongs to the name.
  env.vars = {{"GPUHOOK_RANGE", "nvtx:50%_done"}};
  c = parse(env);
  EXPECT_EQ(c.range.nvtx_name, "50%_done");
  EXPECT_FALSE(c.range.sampled());

  for (const char* bad : {"nvtx:@1-2", "x@0", "x@5-2", "time:3s-1s", "time:1s+0s", "time:", "x%0", "x%-2", "x~0",
                          "x~1.5", "x~0.5.5", "x%99999999999999999999"}) {  // a count past int64
    env.vars = {{"GPUHOOK_RANGE", bad}};
    std::vector<std::string> problems;
    c = parse(env, &problems);
    EXPECT_EQ(problems.size(), 1u) << bad;
    EXPECT_EQ(c.range.kind, RangeKind::kAll) << bad;
  }
}

TEST(Config, DurationsCarryUnits) {
  EXPECT_EQ(parse_duration_ns("1500ns"), 1500u);
  EXPECT_EQ(parse_duration_ns("20us"), 20'000u);
  EXPECT_EQ(parse_duration_ns("3ms"), 3'000'000u);
  EXPECT_EQ(parse_duration_ns("1.5s"), 1'500'000'000u);
  EXPECT_FALSE(parse_duration_ns("2").has_value());  // seconds here, nanoseconds in the CLI once: refused
  EXPECT_EQ(parse_duration_ns("3\xCE\xBCs"), 3'000u);
  EXPECT_FALSE(parse_duration_ns("").has_value());
  EXPECT_FALSE(parse_duration_ns("1.2.3s").has_value());
  EXPECT_FALSE(parse_duration_ns("5min").has_value());
  EXPECT_FALSE(parse_duration_ns("-1s").has_value());
}

TEST(Config, OutputPatternExpansion) {
  EXPECT_EQ(expand_output("gpuhook-%h-%p.gpuh", "node1", 42, std::nullopt), "gpuhook-node1-42.gpuh");
  EXPECT_EQ(expand_output("r%r.gpuh", "h", 1, 7), "r7.gpuh");
  EXPECT_EQ(expand_output("r%r.gpuh", "h", 1, std::nullopt), "rnorank.gpuh");
  EXPECT_EQ(expand_output("100%%-%x-%", "h", 1, std::nullopt), "100%-%x-%");
}

TEST(Config, RankComesFromTheFirstVariableSet) {
  Env env;
  env.vars = {{"RANK", "1"}, {"SLURM_PROCID", "9"}};
  EXPECT_EQ(parse(env).rank, 1);
  env.vars = {{"RANK", "junk"}, {"PMI_RANK", "4"}};
  EXPECT_EQ(parse(env).rank, 4);
}

}  // namespace
}  // namespace gpuhook::hook
