// Writes fixture captures for the render tests and benchmarks with the real CaptureWriter:
//   gantt_fixture_gen basic|hostile|empty|unaligned OUT.gpuh
//   gantt_fixture_gen big OUT.gpuh N        (N kernels on 4 streams, for benchmarks)
// Every value is fixed (no clock, no randomness) so the goldens are stable.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "capture_builder.h"

namespace v1 = gpuhook::v1;

namespace {

gpuhook::WriterOptions by_size() {
  gpuhook::WriterOptions o;
  o.flush_interval_ns = ~0ull;  // chunk by size only: deterministic files
  return o;
}

struct Gen {
  gpuhook::test::CaptureBuilder b;
  uint32_t corr = 0;

  explicit Gen(const std::string& path) : b(path, by_size()) {
    if (!b.ok()) std::fprintf(stderr, "gantt_fixture_gen: %s: %s\n", path.c_str(), b.error().c_str());
  }
  void header(uint64_t features) { b.header("fixture-host", 4242, 1'000'000'000, features)->set_tool_version("fixture"); }
  // A runtime call with the next correlation id, which it returns.
  uint32_t api(const std::string& name, uint64_t tid, uint64_t begin, uint64_t end) {
    b.api(name, tid, begin, end, ++corr);
    return corr;
  }
  void kernel(const std::string& name, uint32_t stream, uint32_t c, uint64_t q, uint64_t sub, uint64_t begin,
              uint64_t end, int block = 256, uint32_t regs = 32, uint32_t smem = 0, uint32_t device = 0,
              int grid = 216) {
    auto k = b.kernel(name, stream, c, begin, end, {grid, block, regs});
    k->set_device(device);
    if (q) k->set_queued_ns(static_cast<int64_t>(q));
    if (sub) k->set_submitted_ns(static_cast<int64_t>(sub));
    k->set_dynamic_shared_memory_bytes(smem);
  }
};

constexpr uint64_t T0 = 1'000'000'000;  // capture start
constexpr uint64_t US = 1000;

// Three training steps on one A100: compute on stream 13, uploads on stream 14 that overlap
// it, a download serialised after compute on stream 13, a long queue, a low-occupancy
// kernel, an all-reduce, and a 2 ms idle gap while the host sits in cudaStreamSynchronize.
void basic(Gen& g, bool shared_clock) {
  g.header(shared_clock ? (v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS | v1::FEATURE_NVTX)
                        : (v1::FEATURE_LATENCY_TIMESTAMPS | v1::FEATURE_NVTX));
  g.b.sm_device(0, 8);
  g.b.thread(100, "main");
  // Without the timestamp callback (a capture some other writer made) the GPU clock is its
  // own, here 1.5 ms behind the host's: drawn as recorded, and the chart says UNALIGNED.
  const uint64_t gpu_skew = shared_clock ? 0 : 1500 * US;
  auto k = [&](const std::string& name, uint32_t stream, uint32_t c, uint64_t launch, uint64_t b, uint64_t e,
               uint32_t regs = 32) {
    // The low-occupancy kernel's grid takes four waves of the device at its occupancy (108 SMs
    // x 2 blocks at 128 registers): a grid that fits at once is not flagged.
    g.kernel(name, stream, c, launch + 5 * US - gpu_skew, launch + 8 * US - gpu_skew, b - gpu_skew, e - gpu_skew, 256, regs,
             0, 0, regs >= 128 ? 4 * 216 : 216);
  };
  uint64_t t = T0 + 100 * US;
  for (int step = 0; step < 3; ++step) {
    g.b.range(v1::RANGE_PUSH, "train_step", 100, t);
    // Upload the next batch on the copy stream while compute runs.
    uint32_t c = g.api("cudaMemcpyAsync", 100, t + 2 * US, t + 12 * US);
    g.b.copy(v1::COPY_HTOD, 64 << 20, 14, c, t + 20 * US - gpu_skew, t + 420 * US - gpu_skew);
    g.b.range(v1::RANGE_PUSH, "forward", 100, t + 15 * US);
    uint64_t gpu = t + 30 * US;
    for (int i = 0; i < 6; ++i) {
      const uint64_t launch = t + 20 * US + uint64_t(i) * 10 * US;
      c = g.api("cudaLaunchKernel", 100, launch, launch + 4 * US);
      const bool low_occ = (i == 2);
      const uint64_t dur = (i == 1 ? 180 : 60) * US;
      k(i == 0 ? "_Z6gemm_fILi128EEvPKfS1_Pfi" : low_occ ? "_Z12layer_norm_fPfPKfi" : "_Z7relu_fwPfi", 13, c, launch,
        gpu, gpu + dur, low_occ ? 128 : 32);
      gpu += dur + 3 * US;
    }
    g.b.range(v1::RANGE_POP, "", 100, t + 90 * US);
    // Download the loss right after compute, on the compute stream: serialised.
    c = g.api("cudaMemcpyAsync", 100, t + 95 * US, t + 100 * US);
    g.b.copy(v1::COPY_DTOH, 4 << 20, 13, c, gpu + 2 * US - gpu_skew, gpu + 80 * US - gpu_skew);
    gpu += 85 * US;
    // All-reduce of the gradients.
    {
      auto nc = g.b.nccl(v1::NCCL_ALL_REDUCE, "ncclAllReduce", 100, t + 105 * US, t + 130 * US);
      nc->set_bytes(256 << 20);
      nc->set_rank(0);
      nc->set_nranks(2);
    }
    c = g.api("cudaLaunchKernel", 100, t + 110 * US, t + 118 * US);
    k("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 15, c, t + 110 * US, gpu, gpu + 400 * US);
    // A launch that queues behind the all-reduce for 300 us.
    c = g.api("cudaLaunchKernel", 100, t + 135 * US, t + 140 * US);
    k("_Z9optimizerPfS_f", 15, c, t + 135 * US, gpu + 402 * US, gpu + 470 * US);
    const uint64_t end = gpu + 470 * US;
    // The host waits for the step, then prepares the next batch for 2 ms with the GPU idle.
    g.api("cudaStreamSynchronize", 100, t + 145 * US, end + 5 * US);
    g.b.range(v1::RANGE_POP, "", 100, end + 6 * US);
    g.api("cudaStreamSynchronize", 100, end + 10 * US, end + 2010 * US);
    t = end + 2020 * US;
  }
}

// Names a program can produce and a chart must survive.
void hostile(Gen& g) {
  g.header(v1::FEATURE_HOST_CLOCK_CALLBACK);
  g.b.sm_device(0, 9);
  g.b.thread(7, "<script>alert(1)</script>");
  const std::string names[] = {
      "<script>alert('x')</script>", "a&b&amp;c", "quote\"s'and\"more", std::string(10 * 1024, 'K'),
      "bad\xff\xfe utf8 \xc3\x28 \xed\xa0\x80 end", std::string("nul\0inside", 10), "]]><!-- -->",
      "_Z3fooILi1EEvv", "tab\tnew\nline\rcr"};
  uint64_t t = T0 + 10 * US;
  g.b.range(v1::RANGE_PUSH, "<range & \"stuff\">", 7, t);
  int i = 0;
  for (const std::string& n : names) {
    const uint32_t c = g.api(n, 7, t, t + 5 * US);
    g.kernel(n, static_cast<uint32_t>(13 + (i++ % 2)), c, t + 6 * US, t + 7 * US, t + 10 * US, t + 110 * US);
    t += 120 * US;
  }
  g.b.range(v1::RANGE_POP, "", 7, t);
}

void big(Gen& g, uint64_t n) {
  g.header(v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS);
  g.b.sm_device(0, 9);
  g.b.thread(1, "main");
  const std::string names[] = {"_Z4gemmPfS_S_i", "_Z7softmaxPfi", "_Z9layernormPfS_i", "_Z4reluPfi",
                               "_Z9attentionPKfS0_S0_Pfi", "_Z7dropoutPfif", "_Z6embedPKiPf", "_Z4adamPfS_S_f"};
  uint64_t host = T0 + 10 * US;
  uint64_t stream_free[4] = {host, host, host, host};
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t s = static_cast<uint32_t>(i % 4);
    const uint64_t dur = 2 * US + (i * 7919 % 13) * 500;  // 2..8 us, deterministic
    const uint32_t c = g.api("cudaLaunchKernel", 1, host, host + 1500);
    const uint64_t q = host + 1000, b = std::max(stream_free[s], host + 3000);
    g.kernel(names[i % 8], 13 + s, c, q, q + 500, b, b + dur, 128 + 128 * int(i % 4), 32 + 8 * uint32_t(i % 5));
    stream_free[s] = b + dur + 200;
    host += 1600;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gantt_fixture_gen basic|unaligned|hostile|empty|big OUT.gpuh [N]\n");
    return 2;
  }
  const std::string what = argv[1];
  Gen g(argv[2]);
  if (!g.b.ok()) return 2;
  if (what == "basic") basic(g, true);
  else if (what == "unaligned") basic(g, false);
  else if (what == "hostile") hostile(g);
  else if (what == "empty") { g.header(v1::FEATURE_HOST_CLOCK_CALLBACK); g.b.sm_device(0, 8); }
  else if (what == "big") big(g, argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000);
  else { std::fprintf(stderr, "gantt_fixture_gen: unknown scenario %s\n", what.c_str()); return 2; }
  if (!g.b.close()) {
    std::fprintf(stderr, "gantt_fixture_gen: %s\n", g.b.error().c_str());
    return 2;
  }
  return 0;
}
