// Large copies and memsets between device buffers, as p2pBandwidthLatencyTest and the bandwidth
// samples make them: a host that synchronises returns when the work ends on the planned
// timeline, not when this machine has moved the bytes, and the bytes are there for whatever
// reads them next (a copy on another stream, a copy back to the host, a free).
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "check.h"

namespace {
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool all_equal(const std::vector<unsigned char>& v, unsigned char value) {
  for (unsigned char x : v) {
    if (x != value) return false;
  }
  return true;
}
}  // namespace

int main() {
  constexpr size_t kBytes = size_t{128} << 20;
  constexpr int kCopies = 8;

  // What this machine takes to move the buffer once, for the bound below: a wait that moved
  // the bytes itself would take about kCopies of it, whatever else runs on the machine.
  std::vector<unsigned char> from(kBytes, 1);
  std::vector<unsigned char> to(kBytes, 0);
  const Clock::time_point m0 = Clock::now();
  std::memcpy(to.data(), from.data(), kBytes);
  const double memmove_ms = ms_since(m0);
  EXPECT_TRUE(to[kBytes - 1] == 1);

  unsigned char* src = nullptr;
  unsigned char* dst = nullptr;
  unsigned char* third = nullptr;
  CHECK_OK(cudaMalloc(&src, kBytes));
  CHECK_OK(cudaMalloc(&dst, kBytes));
  CHECK_OK(cudaMalloc(&third, kBytes));
  cudaStream_t s;
  cudaStream_t other;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CHECK_OK(cudaMemsetAsync(src, 7, kBytes, s));
  cudaEvent_t begin;
  cudaEvent_t end;
  CHECK_OK(cudaEventCreate(&begin));
  CHECK_OK(cudaEventCreate(&end));

  CHECK_OK(cudaEventRecord(begin, s));
  for (int i = 0; i < kCopies; ++i) CHECK_OK(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice, s));
  CHECK_OK(cudaEventRecord(end, s));
  const Clock::time_point w0 = Clock::now();
  CHECK_OK(cudaStreamSynchronize(s));
  const double wait_ms = ms_since(w0);
  float planned_ms = 0;
  CHECK_OK(cudaEventElapsedTime(&planned_ms, begin, end));
  std::printf("%d copies of %zu MiB: planned %.3f ms, the host waited %.3f ms, one memmove here %.3f ms\n",
              kCopies, kBytes >> 20, planned_ms, wait_ms, memmove_ms);
  EXPECT_TRUE(wait_ms < 2 * memmove_ms);

  // Another stream reads what the copies wrote, after an event; the host then reads it back.
  CHECK_OK(cudaStreamWaitEvent(other, end, 0));
  CHECK_OK(cudaMemcpyAsync(third, dst, kBytes, cudaMemcpyDeviceToDevice, other));
  std::vector<unsigned char> back(4096);
  CHECK_OK(cudaStreamSynchronize(other));
  CHECK_OK(cudaMemcpy(back.data(), third + kBytes - back.size(), back.size(), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(all_equal(back, 7));

  // A memset the host did not wait for is there for the copy back behind it (to pageable
  // memory: the call returns with the data).
  CHECK_OK(cudaMemsetAsync(src, 9, kBytes, s));
  CHECK_OK(cudaMemcpyAsync(back.data(), src, back.size(), cudaMemcpyDeviceToHost, s));
  EXPECT_TRUE(all_equal(back, 9));

  // Freeing memory that a copy still writes: cudaFree waits for it.
  CHECK_OK(cudaMemcpyAsync(dst, third, kBytes, cudaMemcpyDeviceToDevice, s));
  CHECK_OK(cudaFree(dst));
  CHECK_OK(cudaFree(third));
  CHECK_OK(cudaFree(src));
  CHECK_OK(cudaEventDestroy(begin));
  CHECK_OK(cudaEventDestroy(end));
  CHECK_OK(cudaStreamDestroy(s));
  CHECK_OK(cudaStreamDestroy(other));
  std::printf("OK\n");
  return 0;
}
