// The simulator's occupancy model and its GPUHOOK_SIM_* / cost-file parsing, tested on their
// own (compiled in, since the library exports only the CUDA and CUPTI entry points).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "cudart/config.h"
#include "cudart/device_model.h"

namespace gpuhook::sim {
namespace {

TEST(OccupancyModel, LimitsBindInTheCalculatorsOrder) {
  EXPECT_EQ(model::blocks_per_sm(32, 32, 0), 32);     // blocks per SM
  EXPECT_EQ(model::blocks_per_sm(256, 32, 0), 8);     // 2048 threads / 64 warps
  EXPECT_EQ(model::blocks_per_sm(1024, 32, 0), 2);
  EXPECT_EQ(model::blocks_per_sm(256, 64, 0), 4);     // 64 regs x 256 threads = 16 K per block
  EXPECT_EQ(model::blocks_per_sm(256, 255, 0), 1);    // 255 regs round to 256 per thread
  EXPECT_EQ(model::blocks_per_sm(128, 32, 48 * 1024), 4);  // (48 + 1 reserved) KiB in 228 KiB
  EXPECT_EQ(model::blocks_per_sm(48, 32, 0), 32);     // 48 threads occupy 2 warps
  EXPECT_EQ(model::blocks_per_sm(0, 32, 0), 0);
  EXPECT_EQ(model::blocks_per_sm(1025, 32, 0), 0);
}

class ConfigEnv : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : {"GPUHOOK_SIM_COSTS", "GPUHOOK_SIM_SCALE", "GPUHOOK_SIM_NOISE",
                          "GPUHOOK_SIM_QUEUE_DEPTH", "GPUHOOK_SIM_BLOCK_NS"}) {
      unsetenv(v);
    }
  }
  std::string write(const std::string& text) {
    const std::string path = "/tmp/gpuhook-sim-config-" + std::to_string(getpid()) + ".simcost";
    std::ofstream(path) << text;
    return path;
  }
};

TEST_F(ConfigEnv, CostFileFirstMatchWinsAndBadLinesAreSkipped) {
  setenv("GPUHOOK_SIM_COSTS",
         write("# comment\nsaxpy 4000 64\nsax 9\nbroken\nneg -3\n  gelu 700 # trailing\n").c_str(), 1);
  const SimConfig c = SimConfig::from_environment();
  ASSERT_EQ(c.costs.size(), 3u);
  int regs = 0;
  EXPECT_EQ(c.block_ns_for("_Z5saxpyifPKfPf", &regs), 4000);
  EXPECT_EQ(regs, 64);
  EXPECT_EQ(c.block_ns_for("_Z4saxXv", nullptr), 9);
  EXPECT_EQ(c.block_ns_for("_Z8ffn_geluPKfPfi", nullptr), 700);
  EXPECT_EQ(c.block_ns_for("unknown", nullptr), static_cast<double>(c.block_ns));
}

TEST_F(ConfigEnv, CostFileKeysGiveThePmSamplingLoadAndBadOnesSkipTheLine) {
  setenv("GPUHOOK_SIM_COSTS",
         write("gather 50000 sm_active=0.12 dram_read=0.6\ngemm 1000 64 tensor=0.8\n"
               "bad1 10 sm_active=2\nbad2 10 colour=0.5\nbad3 10 dram_read=\n").c_str(),
         1);
  const SimConfig c = SimConfig::from_environment();
  ASSERT_EQ(c.costs.size(), 2u);
  const KernelCost* g = c.cost_for("_Z6gatherPKfPf");
  ASSERT_NE(g, nullptr);
  EXPECT_DOUBLE_EQ(g->sm_active, 0.12);
  EXPECT_DOUBLE_EQ(g->dram_read, 0.6);
  EXPECT_DOUBLE_EQ(g->dram_write, 0);
  EXPECT_EQ(g->registers_per_thread, 0);
  const KernelCost* m = c.cost_for("gemm_kernel");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->registers_per_thread, 64);
  EXPECT_DOUBLE_EQ(m->tensor, 0.8);
  EXPECT_DOUBLE_EQ(m->sm_active, 1.0);
  EXPECT_EQ(c.cost_for("bad1"), nullptr);
}

TEST_F(ConfigEnv, ScaleItemsMultiplyAndBadItemsAreIgnored) {
  setenv("GPUHOOK_SIM_SCALE", "saxpy:1.1,axp:2,bad,:3,zero:0,neg:-1", 1);
  const SimConfig c = SimConfig::from_environment();
  ASSERT_EQ(c.scales.size(), 2u);
  EXPECT_DOUBLE_EQ(c.scale_for("_Z5saxpy"), 2.2);
  EXPECT_DOUBLE_EQ(c.scale_for("other"), 1.0);
}

TEST_F(ConfigEnv, BadNumbersKeepDefaultsAndLimitsHold) {
  setenv("GPUHOOK_SIM_NOISE", "lots", 1);
  setenv("GPUHOOK_SIM_BLOCK_NS", "-5", 1);
  setenv("GPUHOOK_SIM_QUEUE_DEPTH", "0", 1);
  SimConfig c = SimConfig::from_environment();
  EXPECT_EQ(c.noise, 0.0);
  EXPECT_EQ(c.block_ns, SimConfig{}.block_ns);
  EXPECT_EQ(c.queue_depth, 1u);
  setenv("GPUHOOK_SIM_NOISE", "3", 1);
  c = SimConfig::from_environment();
  EXPECT_LE(c.noise, 0.9);
}

TEST_F(ConfigEnv, MissingCostFileFallsBackToDefaults) {
  setenv("GPUHOOK_SIM_COSTS", "/nonexistent/gpuhook.simcost", 1);
  const SimConfig c = SimConfig::from_environment();
  EXPECT_TRUE(c.costs.empty());
  EXPECT_EQ(c.block_ns_for("anything", nullptr), static_cast<double>(c.block_ns));
}

}  // namespace
}  // namespace gpuhook::sim
