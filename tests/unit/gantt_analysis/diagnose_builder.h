// A capture built launch by launch for the diagnose rules' tests: kernels and copies with their
// launching calls, on devices 0 and 1; next_capture() starts another rank's capture.
#pragma once

#include <cstdint>
#include <string>

#include "fixture.h"

namespace gantt_analysis_test {

enum : uint32_t { kK = 20, kK2 = 21, kMemcpy = 22 };

struct Builder {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  uint32_t corr = 1;
  int32_t grid_x = 80;  // blocks of the next launches (the A100 fixture has 108 SMs)
  explicit Builder(int32_t rank = -1) { begin(rank); }
  void begin(int32_t rank) {
    b.begin_capture(rank < 0 ? std::string("diag.gpuh") : "rank" + std::to_string(rank) + ".gpuh");
    v1::Record h = header();
    if (rank >= 0) h.mutable_header()->set_rank(rank);
    b.add(h);
    b.add(a100());
    b.add(a100(1));
    b.add(string_def(kLaunch, "cudaLaunchKernel"));
    b.add(string_def(kSync, "cudaStreamSynchronize"));
    b.add(string_def(kMemcpy, "cudaMemcpy"));
    b.add(string_def(kMemcpyAsync, "cudaMemcpyAsync"));
    b.add(string_def(kK, "workKernel"));
    b.add(string_def(kK2, "otherKernel"));
  }
  void next_capture(int32_t rank) {
    b.end_capture({});
    corr = 1;
    begin(rank);
  }
  void k(uint32_t name, uint32_t stream, uint64_t launch, uint64_t start, uint64_t end, int block = 256,
         uint32_t device = 0) {
    b.add(api(kLaunch, 100, launch, launch + 500, corr));
    v1::Record r = kernel(name, stream, corr, launch + 400, launch + 450, start, end, block);
    r.mutable_kernel()->set_device(device);
    r.mutable_kernel()->set_grid_x(grid_x);
    b.add(r);
    ++corr;
  }
  void copy(uint32_t api_name, uint32_t stream, uint64_t launch, uint64_t start, uint64_t end) {
    b.add(api(api_name, 100, launch, api_name == kMemcpy ? end + 100 : launch + 300, corr));
    b.add(memcpy_rec(v1::COPY_HTOD, 1 << 20, stream, corr, start, end));
    ++corr;
  }
  void sync(uint64_t from, uint64_t to) { b.add(api(kSync, 100, from, to, 0)); }
  gantt::Model done() {
    b.end_capture({});
    return std::move(m);
  }
};

}  // namespace gantt_analysis_test
