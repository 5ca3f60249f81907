// A small capture whose numbers are known by construction, for stats, diff and diagnose.
//
//   api launch gemm     900-950   (queued 960, submitted 970)
//   gemm  k1            1000-1100  stream 13
//   gemm  k2            1100-1300  stream 13
//   memcpy HtoD         1200-1600  stream 14   (overlaps k2 for 100 ns)
//   host in cudaStreamSynchronize 1500-3500 (tid 100): covers 1900 of the 2000 ns gap
//   gemm  k3            3600-3900  stream 13
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "../gantt/fabricate.h"
#include "gantt/model/model.h"

namespace gantt_analysis_test {

// A temporary file of this test and process, removed when it goes out of scope: ctest runs
// the cases of one binary as separate processes side by side, and a shared name let one case
// read another's half-written file.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& suffix)
      : path(testing::TempDir() + testing::UnitTest::GetInstance()->current_test_info()->name() + "." +
             std::to_string(getpid()) + suffix) {}
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

using namespace gantt_test;

enum : uint32_t { kLaunch = 1, kGemm = 2, kMemcpyAsync = 3, kSync = 4 };

inline void add_small_capture(gantt::ModelBuilder& b, uint64_t shift_ns = 0, uint64_t gemm_extra_ns = 0) {
  b.add(header());
  b.add(a100());
  b.add(string_def(kLaunch, "cudaLaunchKernel"));
  b.add(string_def(kGemm, "_Z4gemmPfS_S_i"));
  b.add(string_def(kMemcpyAsync, "cudaMemcpyAsync"));
  b.add(string_def(kSync, "cudaStreamSynchronize"));
  const uint64_t s = shift_ns, x = gemm_extra_ns;
  b.add(api(kLaunch, 100, s + 900, s + 950, 1));
  b.add(api(kLaunch, 100, s + 960, s + 980, 2));
  b.add(api(kMemcpyAsync, 100, s + 990, s + 995, 3));
  b.add(api(kSync, 100, s + 1500, s + 3500, 0));
  b.add(api(kLaunch, 100, s + 3510, s + 3520, 4));
  b.add(kernel(kGemm, 13, 1, s + 960, s + 970, s + 1000, s + 1100 + x));
  b.add(kernel(kGemm, 13, 2, s + 985, s + 990, s + 1100 + x, s + 1300 + x));
  b.add(memcpy_rec(v1::COPY_HTOD, 4096, 14, 3, s + 1200 + x, s + 1600 + x));
  b.add(kernel(kGemm, 13, 4, s + 3530, s + 3540, s + 3600 + x, s + 3900 + 2 * x));
}

inline gantt::Model small_model() {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture("small.gpuh");
  add_small_capture(b);
  b.end_capture({});
  return m;
}

}  // namespace gantt_analysis_test
