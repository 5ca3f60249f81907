// Writes the small, deterministic captures the CLI tests read (fabricated records, no GPU):
//   make_capture steps OUT SEED SCALE [ITER [open]]  ITER NVTX "step" ranges of kernels A, B and a
//                                              copy; exec times with 3% noise from SEED; A
//                                              scaled by SCALE; open: the last never popped
//   make_capture nvtx OUT ITER                ITER steps of nested NVTX ranges (step > forward >
//                                              layerN > kernels; a loader thread's copies)
//   make_capture metrics OUT                  kernels and NVML samples with a power cap
//   make_capture pm_metrics OUT               a stalled kernel and a busy one, PM samples
//   make_capture hostile_metrics OUT          metric samples with extreme values, devices, times
//   make_capture hostile OUT                  names with quotes, controls, invalid UTF-8
//   make_capture hostile_device OUT           a device record and launch shapes no GPU has
//   make_capture script_names OUT             kernels named to break out of an HTML page's
//                                              <script> (the HTML output's hostile test)
//   make_capture synth OUT KERNELS SEED [CHUNK_KIB]  gpuhook_synth's realistic capture (names from
//                                              seed 1, so two SEEDs share kernels; SEED
//                                              jitters each exec time by up to 2%)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "capture_builder.h"
#include "synth.h"

namespace v1 = gpuhook::v1;

namespace {

// The CLI tests' conventions over the capture builder: an A100-like "Fixture GPU", the host
// thread 100, kernels of 216 x 256 threads at 32 registers submitted 10 ns after they queue.
struct Out {
  gpuhook::test::CaptureBuilder b;
  explicit Out(const std::string& path, const std::string& host = "fixture",
               const std::vector<std::string>& command_line = {})
      : b(path) {
    if (!b.ok()) {
      std::fprintf(stderr, "make_capture: %s\n", b.error().c_str());
      std::exit(2);
    }
    auto h = b.header(host, 4242, 1'000'000, v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS);
    h->set_format_version(1);
    for (const auto& arg : command_line) h->add_command_line(arg);
    b.fixture_gpu();
  }
  void range(v1::RangeType t, const std::string& name, uint64_t at, uint64_t tid = 100) { b.range(t, name, tid, at); }
  void api(const std::string& name, uint64_t s, uint64_t e, uint32_t corr, uint64_t tid = 100) {
    b.api(name, tid, s, e, corr);
  }
  void kernel(const std::string& name, uint32_t stream, uint32_t corr, uint64_t q, uint64_t s, uint64_t e) {
    auto k = b.kernel(name, stream, corr, s, e, {216, 256, 32});
    k->set_queued_ns(static_cast<int64_t>(q));
    k->set_submitted_ns(static_cast<int64_t>(q + 10));
  }
  void copy(uint32_t stream, uint32_t corr, uint64_t s, uint64_t e, uint64_t bytes) {
    b.copy(v1::COPY_HTOD, bytes, stream, corr, s, e)->set_async(true);
  }
  void memory(v1::MemoryOp op, uint64_t address, uint64_t bytes, uint64_t t) { b.memory(op, address, bytes, t); }
  void sample(uint64_t t, v1::GpuMetric metric, uint64_t value, uint32_t device = 0) {
    b.metric(device, t, metric, value);
  }
  void close() {
    if (!b.close()) {
      std::fprintf(stderr, "make_capture: %s\n", b.error().c_str());
      std::exit(2);
    }
  }
};

// `open`: the last step is never popped (the program ended inside it), and an NVML sample comes
// 5 ms after the last work: the chunk index times the capture's end past the last time a load
// has, so a window that ends with the capture is the load's only when settled on a load's times.
void steps(const std::string& path, uint32_t seed, double scale, int iterations, bool open = false) {
  Out o(path);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.03);
  const auto jitter = [&](double ns) { return static_cast<uint64_t>(ns * std::exp(noise(rng))); };
  uint64_t t = 2'000'000;
  uint32_t corr = 1;
  for (int i = 0; i < iterations; ++i) {
    o.range(v1::RANGE_PUSH, "step", t);
    const uint64_t a = jitter(10'000 * scale), b = jitter(5'000), c = jitter(4'000);
    o.api("cudaLaunchKernel", t, t + 300, corr);
    o.kernel("_Z7kernelAPfi", 7, corr, t + 200, t + 1000, t + 1000 + a);
    ++corr;
    o.api("cudaMemcpyAsync", t + 400, t + 600, corr);
    o.copy(8, corr, t + 1500, t + 1500 + c, 1 << 20);
    ++corr;
    o.api("cudaLaunchKernel", t + 700, t + 900, corr);
    o.kernel("_Z7kernelBv", 7, corr, t + 800, t + 1000 + a, t + 1000 + a + b);
    ++corr;
    const uint64_t end = t + 1000 + a + b;
    o.api("cudaStreamSynchronize", t + 1000, end + 200, 0);
    if (!open || i + 1 < iterations) o.range(v1::RANGE_POP, "", end + 300);
    t = end + 3000;
  }
  if (open) o.sample(t + 5'000'000, v1::GPU_METRIC_GPU_UTIL_PERCENT, 0);
  o.close();
}

// An idle GPU, then 12 kernels "gemm" of 20 ms back to back with a power cap from 100 to
// 220 ms of them, then idle again; NVML read every 10 ms. Every figure is chosen, none
// measured: the goldens pin stats --metrics, the throttled finding and the exports.
void metrics(const std::string& path) {
  Out o(path);
  const uint64_t t0 = 2'000'000, ms = 1'000'000;
  uint32_t corr = 1;
  for (int i = 0; i < 12; ++i) {
    const uint64_t s = t0 + 50 * ms + static_cast<uint64_t>(i) * 20 * ms;
    o.api("cudaLaunchKernel", s - 40'000, s - 35'000, corr);
    o.kernel("_Z4gemmPfS_S_i", 7, corr, s - 38'000, s, s + 20 * ms);
    ++corr;
  }
  for (uint64_t k = 0; k <= 35; ++k) {
    const uint64_t t = t0 + k * 10 * ms;
    const bool busy = t > t0 + 50 * ms && t <= t0 + 290 * ms;
    const bool capped = busy && t >= t0 + 150 * ms && t < t0 + 270 * ms;
    o.sample(t, v1::GPU_METRIC_GPU_UTIL_PERCENT, busy ? 100 : 0);
    o.sample(t, v1::GPU_METRIC_MEMORY_USED_BYTES, 512ull << 20);
    o.sample(t, v1::GPU_METRIC_SM_CLOCK_MHZ, !busy ? 345 : capped ? 1410 : 1980);
    o.sample(t, v1::GPU_METRIC_POWER_MW, !busy ? 80'000 : capped ? 700'000 : 640'000);
    o.sample(t, v1::GPU_METRIC_CLOCKS_EVENT_REASONS, !busy ? 0x1 : capped ? 0x4 : 0);
  }
  o.close();
}

// PM sampling at 10 kHz (one sample per 100 us): 6 kernels "gather" of 2 ms with SM active 12%
// and DRAM read 60% of peak, then 6 kernels "gemm" of 2 ms with SM active 90%, tensor 70%; idle
// around them. Every figure chosen: the goldens pin stats --metrics, the stalled finding, the
// exports and the strips.
void pm_metrics(const std::string& path) {
  Out o(path);
  const uint64_t t0 = 2'000'000, us = 1'000, ms = 1'000'000;
  uint32_t corr = 1;
  for (int i = 0; i < 12; ++i) {
    const uint64_t s = t0 + 5 * ms + static_cast<uint64_t>(i) * 2 * ms;
    o.api("cudaLaunchKernel", s - 40'000, s - 35'000, corr);
    o.kernel(i < 6 ? "_Z6gatherPKiPKfPf" : "_Z4gemmPfS_S_i", 7, corr, s - 38'000, s, s + 2 * ms);
    ++corr;
  }
  for (uint64_t k = 0; k < 340; ++k) {
    const uint64_t t = t0 + 50 * us + k * 100 * us;  // window middles
    const bool gather = t > t0 + 5 * ms && t < t0 + 17 * ms;
    const bool gemm = t > t0 + 17 * ms && t < t0 + 29 * ms;
    o.sample(t, v1::GPU_METRIC_GR_ACTIVE_CENTIPCT, gather || gemm ? 10000 : 0);
    o.sample(t, v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, gather ? 1200 : gemm ? 9000 : 0);
    o.sample(t, v1::GPU_METRIC_TENSOR_ACTIVE_CENTIPCT, gemm ? 7000 : 0);
    o.sample(t, v1::GPU_METRIC_DRAM_READ_CENTIPCT, gather ? 6000 : gemm ? 1500 : 0);
    o.sample(t, v1::GPU_METRIC_DRAM_WRITE_CENTIPCT, gather ? 500 : gemm ? 800 : 0);
  }
  o.close();
}

// Values no counter gives: every PM metric at 0 and at UINT64_MAX, a metric number this build
// does not know, devices past any host's, times at 0 and at the end of the clock; a kernel
// among them. gantt-cli must read, draw and export it without crashing or drawing out of bounds.
void hostile_metrics(const std::string& path) {
  Out o(path);
  const uint64_t t0 = 2'000'000, ms = 1'000'000;
  o.api("cudaLaunchKernel", t0, t0 + 5'000, 1);
  o.kernel("_Z6gatherPKiPKfPf", 7, 1, t0 + 1'000, t0 + 10'000, t0 + 5 * ms);
  for (int m = v1::GPU_METRIC_GR_ACTIVE_CENTIPCT; m <= v1::GPU_METRIC_NVLINK_TX_CENTIPCT; ++m) {
    for (uint64_t k = 0; k < 20; ++k) {
      const uint64_t v = k % 2 == 0 ? UINT64_MAX : 0;
      o.sample(t0 + k * 300'000, static_cast<v1::GpuMetric>(m), v);
    }
    o.sample(t0 + 1'000, static_cast<v1::GpuMetric>(m), UINT64_MAX, 4095);
    o.sample(t0 + 1'000, static_cast<v1::GpuMetric>(m), 5, 4096);
    o.sample(t0 + 2'000, static_cast<v1::GpuMetric>(m), 5, UINT32_MAX);
  }
  o.sample(t0 + 3'000, static_cast<v1::GpuMetric>(99), UINT64_MAX);
  o.sample(t0 + 3'000, static_cast<v1::GpuMetric>(-7), 1);
  o.sample(0, v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, 5000);
  o.sample(static_cast<uint64_t>(INT64_MAX), v1::GPU_METRIC_SM_ACTIVE_CENTIPCT, 5000);
  o.sample(t0 + 4'000, v1::GPU_METRIC_GPU_UTIL_PERCENT, UINT64_MAX);
  o.close();
}

void hostile(const std::string& path) {
  // The header too: host names and arguments are the program's, any bytes.
  Out o(path, "h\xC3\xB4te-\xFF", {"train.py", "--name", "caf\xC3\xA9", "bad\xFE\x01\"q\""});
  const std::string names[] = {
      "quote\"back\\slash", std::string("nul\0byte", 8), "ctl\x01\x1f\n\r\t", "<script>alert(1)</script>&amp;",
      "bad\xFF\xFEutf8", "sep\xE2\x80\xA8", "comma,semi;colon", "=cmd|' /C calc'!A0", std::string(600, 'x')};
  uint64_t t = 2'000'000;
  uint32_t corr = 1;
  for (const std::string& n : names) {
    o.range(v1::RANGE_PUSH, "range;" + n, t);
    o.api("cudaLaunchKernel", t, t + 100, corr);
    o.kernel(n, 7, corr, t + 50, t + 200, t + 1200);
    o.range(v1::RANGE_POP, "", t + 1300);
    ++corr;
    t += 2000;
  }
  o.close();
}

// Issue 22 item 9: values no GPU reports. A warp of 2^31 threads (registers per warp
// truncate to 0) and a block of 65537 x 65535 threads (2^32 - 1: warps per block wrapped to 0)
// each divided by zero in the occupancy calculator; times at the ends of the range.
void hostile_device(const std::string& path) {
  Out o(path);
  {
    auto d = o.b.device(1, "Hostile GPU");
    d->set_cc_major(9);
    d->set_max_warps_per_sm(64);
    d->set_max_blocks_per_sm(32);
    d->set_registers_per_sm(65536);
    d->set_shared_memory_per_sm_bytes(167936);
    d->set_warp_size(0x80000000u);
  }
  {
    auto d = o.b.device(2, "Sane GPU");  // a sane sm_80 for the launch shapes
    d->set_cc_major(8);
    d->set_max_warps_per_sm(64);
    d->set_max_blocks_per_sm(32);
    d->set_registers_per_sm(65536);
    d->set_shared_memory_per_sm_bytes(167936);
    d->set_warp_size(32);
  }
  uint64_t t = 2'000'000;
  uint32_t corr = 1;
  for (uint32_t device : {1u, 2u}) {
    for (int i = 0; i < 3; ++i, ++corr, t += 10'000) {
      o.api("cudaLaunchKernel", t, t + 100, corr);
      auto k = o.b.kernel("huge_block", 7, corr, t + 200, t + 5'000, {1, 65537, i == 2 ? 0xFFFFFFFFu : 32});
      k->set_device(device);
      k->set_block_y(65535);
      if (i == 1) k->set_block_x(256), k->set_block_y(1);
    }
  }
  o.close();
}

// NVTX ranges nested three deep, as a training loop marks them: per iteration "step" >
// "forward" > "layer0".."layer2" (a gemm and a relu each) and "step" > "backward" (a gemm per
// layer), on thread 100; thread 101 loads data in "load" ranges (a copy each), overlapping.
// Each forward layer allocates its activations (1, 2, 3 MiB), backward frees them, and a
// 64 MiB weight buffer stays for the whole run: memory in use rises and falls per step.
// The HTML page's range <-> kernel linkage and memory strip are checked on it (tests/browser).
void nvtx(const std::string& path, int iterations) {
  Out o(path);
  uint64_t t = 2'000'000;
  uint32_t corr = 1;
  o.memory(v1::MEMORY_OP_ALLOC, 0x7f0000000000, 64ull << 20, t - 1000);
  const auto launch = [&](const std::string& kernel, uint64_t exec_ns, uint32_t stream) {
    o.api("cudaLaunchKernel", t, t + 200, corr);
    o.kernel(kernel, stream, corr, t + 100, t + 400, t + 400 + exec_ns);
    ++corr;
    t += exec_ns + 600;
  };
  for (int i = 0; i < iterations; ++i) {
    const uint64_t step_at = t;
    o.range(v1::RANGE_PUSH, "step", t);
    o.range(v1::RANGE_PUSH, "forward", t += 100);
    for (int l = 0; l < 3; ++l) {
      o.range(v1::RANGE_PUSH, "layer" + std::to_string(l), t += 100);
      o.memory(v1::MEMORY_OP_ALLOC, 0x7f1000000000 + (static_cast<uint64_t>(l) << 24), static_cast<uint64_t>(l + 1) << 20, t);
      launch("gemm_fwd", 4000 + 1000 * l, 7);
      launch("relu", 800, 7);
      o.range(v1::RANGE_POP, "", t += 50);
    }
    o.range(v1::RANGE_POP, "", t += 50);
    o.range(v1::RANGE_PUSH, "backward", t += 100);
    for (int l = 0; l < 3; ++l) {
      launch("gemm_bwd", 6000, 7);
      o.memory(v1::MEMORY_OP_FREE, 0x7f1000000000 + (static_cast<uint64_t>(2 - l) << 24), 0, t);
    }
    o.range(v1::RANGE_POP, "", t += 50);
    o.range(v1::RANGE_POP, "", t += 50);
    // The loader thread: a range and a copy inside the step's time, on its own thread.
    o.range(v1::RANGE_PUSH, "load", step_at + 500, 101);
    o.api("cudaMemcpyAsync", step_at + 600, step_at + 800, corr, 101);
    o.copy(8, corr, step_at + 900, step_at + 3900, 1 << 20);
    ++corr;
    o.range(v1::RANGE_POP, "", step_at + 4000, 101);
    t += 2000;
  }
  o.close();
}

// Names that close a <script> element, open a comment or an element, or end a JavaScript
// line: the HTML page must show each as text (tests/browser).
void script_names(const std::string& path) {
  Out o(path);
  const std::string names[] = {"</script><script>alert(1)</script>\"'", "<img src=x onerror=alert(1)>",
                               "<!--<script>", "&lt;b&gt;\xE2\x80\xA8\"", "gemm_ok"};
  uint64_t t = 2'000'000;
  uint32_t corr = 1;
  for (int i = 0; i < 3; ++i) {
    for (const std::string& n : names) {
      o.api("cudaLaunchKernel", t, t + 100, corr);
      o.kernel(n, 7, corr, t + 50, t + 200, t + 1200);
      ++corr;
      t += 2000;
    }
  }
  o.close();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "steps" && argc >= 5) {
    steps(argv[2], static_cast<uint32_t>(std::strtoul(argv[3], nullptr, 10)), std::strtod(argv[4], nullptr),
          argc > 5 ? std::atoi(argv[5]) : 20, argc > 6 && std::string(argv[6]) == "open");
  } else if (mode == "nvtx" && argc == 4) {
    nvtx(argv[2], std::atoi(argv[3]));
  } else if (mode == "metrics" && argc == 3) {
    metrics(argv[2]);
  } else if (mode == "pm_metrics" && argc == 3) {
    pm_metrics(argv[2]);
  } else if (mode == "hostile_metrics" && argc == 3) {
    hostile_metrics(argv[2]);
  } else if (mode == "hostile" && argc == 3) {
    hostile(argv[2]);
  } else if (mode == "script_names" && argc == 3) {
    script_names(argv[2]);
  } else if (mode == "hostile_device" && argc == 3) {
    hostile_device(argv[2]);
  } else if (mode == "synth" && (argc == 5 || argc == 6)) {
    gpuhook::synth::SynthOptions so;
    so.kernels = std::strtoull(argv[3], nullptr, 10);
    std::string err;
    gpuhook::WriterOptions wo;
    if (argc == 6) wo.chunk_bytes = std::strtoull(argv[5], nullptr, 10) << 10;  // CHUNK_KIB: more chunks, fewer records
    auto w = gpuhook::CaptureWriter::create(argv[2], wo, &err);
    if (!w) {
      std::fprintf(stderr, "make_capture: %s\n", err.c_str());
      return 2;
    }
    std::mt19937_64 rng(std::strtoull(argv[4], nullptr, 10));
    std::uniform_real_distribution<double> u(-0.02, 0.02);
    gpuhook::synth::Sink sink;
    sink.intern = [&](std::string_view s) { return w->intern(s); };
    sink.write = [&](const v1::Record& r) {
      if (r.kind_case() != v1::Record::kKernel || !r.kernel().has_start_ns()) {
        w->write(r);
        return;
      }
      v1::Record k = r;
      const int64_t d = k.kernel().end_ns() - k.kernel().start_ns();
      k.mutable_kernel()->set_end_ns(k.kernel().start_ns() + static_cast<int64_t>(static_cast<double>(d) * (1 + u(rng))));
      w->write(k);
    };
    gpuhook::synth::generate(so, sink);
    if (!w->close()) {
      std::fprintf(stderr, "make_capture: %s\n", w->last_error().c_str());
      return 2;
    }
  } else {
    std::fprintf(stderr, "usage: make_capture steps OUT SEED SCALE [ITER [open]] | nvtx OUT ITER | hostile OUT | hostile_device OUT | script_names OUT | synth OUT KERNELS SEED [CHUNK_KIB]\n");
    return 2;
  }
  return 0;
}
