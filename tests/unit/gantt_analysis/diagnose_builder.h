// A capture built launch by launch for the diagnose rules' tests: kernels and copies with their
// launching calls, on devices 0 and 1; next_capture() starts another rank's capture. Each
// record goes to a model and to a capture file (`file`), which diagnose_scan reads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <gpuhook/capture.h>

#include "fixture.h"

namespace gantt_analysis_test {

enum : uint32_t { kK = 20, kK2 = 21, kMemcpy = 22 };

struct Builder {
  gantt::Model m;
  gantt::ModelBuilder b{m};
  TempFile file{"." + std::to_string(++builders()) + ".diag.gpuh"};  // the first capture's records
  std::unique_ptr<gpuhook::CaptureWriter> writer;
  uint32_t corr = 1;
  int32_t grid_x = 80;  // blocks of the next launches (the A100 fixture has 108 SMs)
  explicit Builder(int32_t rank = -1) {
    std::remove(file.path.c_str());
    std::string err;
    writer = gpuhook::CaptureWriter::create(file.path, gpuhook::WriterOptions{}, &err);
    EXPECT_TRUE(writer) << err;
    begin(rank);
  }
  static int& builders() {  // a file name of its own for each builder of a test
    static int n = 0;
    return n;
  }
  void add(const v1::Record& r) {
    b.add(r);
    if (writer) writer->write(r);
  }
  void begin(int32_t rank) {
    b.begin_capture(rank < 0 ? std::string("diag.gpuh") : "rank" + std::to_string(rank) + ".gpuh");
    v1::Record h = header();
    h.mutable_header()->set_format_version(gpuhook::kFormatVersion);
    if (rank >= 0) h.mutable_header()->set_rank(rank);
    add(h);
    add(a100());
    add(a100(1));
    add(string_def(kLaunch, "cudaLaunchKernel"));
    add(string_def(kSync, "cudaStreamSynchronize"));
    add(string_def(kMemcpy, "cudaMemcpy"));
    add(string_def(kMemcpyAsync, "cudaMemcpyAsync"));
    add(string_def(kK, "workKernel"));
    add(string_def(kK2, "otherKernel"));
  }
  void next_capture(int32_t rank) {
    b.end_capture({});
    writer.reset();  // the file keeps the first capture alone
    corr = 1;
    begin(rank);
  }
  void k(uint32_t name, uint32_t stream, uint64_t launch, uint64_t start, uint64_t end, int block = 256,
         uint32_t device = 0) {
    add(api(kLaunch, 100, launch, launch + 500, corr));
    v1::Record r = kernel(name, stream, corr, launch + 400, launch + 450, start, end, block);
    r.mutable_kernel()->set_device(device);
    r.mutable_kernel()->set_grid_x(grid_x);
    add(r);
    ++corr;
  }
  void copy(uint32_t api_name, uint32_t stream, uint64_t launch, uint64_t start, uint64_t end) {
    add(api(api_name, 100, launch, api_name == kMemcpy ? end + 100 : launch + 300, corr));
    add(memcpy_rec(v1::COPY_HTOD, 1 << 20, stream, corr, start, end));
    ++corr;
  }
  void sync(uint64_t from, uint64_t to) { add(api(kSync, 100, from, to, 0)); }
  gantt::Model done() {
    b.end_capture({});
    if (writer) writer->close();
    writer.reset();
    return std::move(m);
  }
};

}  // namespace gantt_analysis_test
