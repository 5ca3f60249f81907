// A capture built launch by launch for the diagnose rules' tests: kernels and copies with their
// launching calls, on devices 0 and 1; next_capture() starts another rank's capture. Each
// record goes through the shared CaptureBuilder to a capture file (`file`, which diagnose_scan
// reads) and, by its tap, to a model, so the two hold the same records.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "capture_builder.h"
#include "fixture.h"

namespace gantt_analysis_test {

inline constexpr const char* kK = "workKernel";
inline constexpr const char* kK2 = "otherKernel";

struct Builder {
  TempFile file{"." + std::to_string(++builders()) + ".diag.gpuh"};  // the first capture's records
  uint32_t corr = 1;
  int32_t grid_x = 80;  // blocks of the next launches (the A100 fixture has 108 SMs)
  explicit Builder(int32_t rank = -1) {
    std::remove(file.path.c_str());
    begin(std::make_unique<gpuhook::test::CaptureBuilder>(file.path), rank);
    EXPECT_TRUE(cap->ok()) << cap->error();
  }
  static int& builders() {  // a file name of its own for each builder of a test
    static int n = 0;
    return n;
  }
  gpuhook::test::CaptureBuilder& capture() { return *cap; }
  void next_capture(int32_t rank) {
    end();
    corr = 1;
    begin(std::make_unique<gpuhook::test::CaptureBuilder>(), rank);  // the file keeps the first capture alone
  }
  // cudaLaunchKernel on thread 100, of correlation `corr`.
  void launch(uint64_t from, uint64_t to) { cap->api("cudaLaunchKernel", 100, from, to, corr); }
  // The kernel of correlation `corr` with `grid_x` blocks of `block` threads, 32 registers each.
  gpuhook::test::Open<v1::Kernel> kernel(const std::string& name, uint32_t stream, uint64_t queued,
                                         uint64_t submitted, uint64_t start, uint64_t end, int block = 256) {
    auto r = cap->kernel(name, stream, corr, start, end, {grid_x, block, 32});
    if (queued) r->set_queued_ns(static_cast<int64_t>(queued));
    if (submitted) r->set_submitted_ns(static_cast<int64_t>(submitted));
    return r;
  }
  void k(const std::string& name, uint32_t stream, uint64_t launch_ns, uint64_t start, uint64_t end, int block = 256,
         uint32_t device = 0) {
    launch(launch_ns, launch_ns + 500);
    kernel(name, stream, launch_ns + 400, launch_ns + 450, start, end, block)->set_device(device);
    ++corr;
  }
  // A host-to-device MiB by `api` ("cudaMemcpy" returns after the copy, "cudaMemcpyAsync" at once).
  void copy(const std::string& api, uint32_t stream, uint64_t launch_ns, uint64_t start, uint64_t end) {
    cap->api(api, 100, launch_ns, api == "cudaMemcpy" ? end + 100 : launch_ns + 300, corr);
    cap->copy(v1::COPY_HTOD, 1 << 20, stream, corr, start, end);
    ++corr;
  }
  void sync(uint64_t from, uint64_t to) { cap->api("cudaStreamSynchronize", 100, from, to, 0); }
  gantt::Model done() {
    end();
    return std::move(m);
  }

 private:
  gantt::Model m;
  gantt::ModelBuilder b{m};
  std::unique_ptr<gpuhook::test::CaptureBuilder> cap;  // after b: its last record goes to b

  void begin(std::unique_ptr<gpuhook::test::CaptureBuilder> next, int32_t rank) {
    cap = std::move(next);
    cap->tap([this](const v1::Record& r) { b.add(r); });
    b.begin_capture(rank < 0 ? std::string("diag.gpuh") : "rank" + std::to_string(rank) + ".gpuh");
    auto h = cap->header("testhost", 42, 1'000'000, v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS);
    if (rank >= 0) h->set_rank(rank);
    cap->sm_device(0, 8);
    cap->sm_device(1, 8);
  }
  void end() {
    if (!cap) return;
    cap->close();  // the open record reaches the model first
    cap.reset();
    b.end_capture({});
  }
};

}  // namespace gantt_analysis_test
