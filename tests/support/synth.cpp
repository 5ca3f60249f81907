#include "synth.h"
#include "fake_device.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <unordered_map>

namespace gpuhook::synth {

namespace {

// Pieces of real kernel names (CUTLASS, cuBLAS, PyTorch elementwise/reduce, FlashAttention,
// NCCL): the lengths and the shared prefixes are what matter for compression.
const char* const kPrefixes[] = {
    "_ZN7cutlass6KernelINS_4gemm6kernel13GemmUniversalINS1_11threadblock12MmaPipelinedINS1_9GemmShapeILi",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BUnaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEESt5arrayIPcLm",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11sum_functorIfffEclERNS_14TensorIteratorE",
    "_ZN5flash17flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0EN7cutlass6half_tE",
    "_Z31ncclDevKernel_AllReduce_Sum_f16_RING_LL24ncclDevKernelArgsStorageILm4096EE",
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBase",
    "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "_ZN2at6native43_GLOBAL__N__layer_norm_kernel_cu_1a2b3c4d26vectorized_layer_norm_kernelIN3c104HalfEfEEviT0_PKT_S8_S8_PS5_S9_",
};

constexpr uint64_t kQueueBudgetNs = 1'000'000;

struct KernelType {
  uint32_t name_id = 0;
  uint64_t mean_duration_ns = 0;
  int32_t grid_x = 0, block_x = 0;
  uint32_t registers = 0, static_smem = 0, dynamic_smem = 0;
};

}  // namespace

std::vector<std::string> kernel_names(uint32_t count, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  std::vector<std::string> out;
  for (uint32_t i = 0; i < count; ++i) {
    std::string n = kPrefixes[i % std::size(kPrefixes)];
    // Template arguments that differ between instantiations, up to 100-200 bytes in all.
    n += std::to_string(64 << (rng() % 3)) + "ELi" + std::to_string(32 << (rng() % 3)) + "ELi" +
         std::to_string(8 << (rng() % 3)) + "EEENS_" + std::to_string(i) + "EEEvNT_6ParamsE";
    while (n.size() < 100) n += "NS_5Array" + std::to_string(rng() % 64);
    if (n.size() > 200) n.resize(200);
    out.push_back(std::move(n));
  }
  return out;
}

void generate(const SynthOptions& o, const Sink& sink) {
  std::mt19937_64 rng(o.seed);

  v1::Record rec;
  auto* h = rec.mutable_header();
  h->set_format_version(kFormatVersion);
  h->set_tool_version("synth");
  h->set_host_name("synth-host");
  h->set_boot_id("00000000-0000-0000-0000-000000000000");
  h->set_pid(4242);
  h->set_ppid(1);
  h->add_command_line("python");
  h->add_command_line("train.py");
  h->set_start_monotonic_raw_ns(o.start_ns);
  h->set_start_realtime_ns(1'700'000'000'000'000'000ull);
  h->set_clock_domain("CLOCK_MONOTONIC_RAW");
  h->set_features(v1::FEATURE_LATENCY_TIMESTAMPS | v1::FEATURE_HOST_CLOCK_CALLBACK);
  sink.write(rec);

  rec.Clear();
  auto* d = rec.mutable_device();
  d->set_ordinal(0);
  d->set_name("Synthetic GPU (not a measurement)");
  gpuhook::test::set_sm_limits(d, 9);
  d->set_shared_memory_per_block_optin_bytes(232448);
  d->set_warp_size(32);
  d->set_global_memory_bytes(80ull << 30);
  sink.write(rec);

  const uint64_t thread_id = 4242;
  rec.Clear();
  rec.mutable_thread()->set_thread_id(thread_id);
  rec.mutable_thread()->set_name_id(sink.intern("python3"));
  sink.write(rec);

  const uint32_t launch_name = sink.intern("cudaLaunchKernel");
  std::vector<KernelType> types;
  for (const auto& n : kernel_names(o.distinct_kernel_names, o.seed)) {
    KernelType t;
    t.name_id = sink.intern(n);
    // Log-uniform 2 us .. 200 us: many small elementwise kernels, a few long GEMMs.
    t.mean_duration_ns = static_cast<uint64_t>(2'000.0 * std::exp(std::log(100.0) * static_cast<double>(rng() % 1000) / 1000.0));
    t.grid_x = static_cast<int32_t>(1 + rng() % 1024);
    t.block_x = static_cast<int32_t>(64u << (rng() % 4));
    t.registers = static_cast<uint32_t>(32 + rng() % 200);
    t.static_smem = static_cast<uint32_t>((rng() % 4) * 8192);
    t.dynamic_smem = static_cast<uint32_t>((rng() % 3) * 16384);
    types.push_back(t);
  }
  // A training step repeats a sequence of kernels: cycle through a fixed order with a little
  // randomness, as real iterations do.
  std::vector<uint32_t> order(types.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);

  // Timing model (ns): the host launches back to back with Python-like gaps; each launch
  // takes ~2.8 us of CPU; the GPU queues, submits and runs each kernel once its stream is
  // free. Spreads are normal with realistic sigmas; GPU start/end come from the GPU timer,
  // which ticks in 32 ns steps, while the host-side stamps have full resolution.
  auto normal = [&rng](double mean, double sigma, double floor) {
    return static_cast<uint64_t>(std::max(floor, std::normal_distribution<double>(mean, sigma)(rng)));
  };
  std::vector<uint64_t> stream_free_ns(o.streams, o.start_ns);
  std::vector<v1::Record> batch;
  uint64_t host_ns = o.start_ns;
  uint32_t correlation = 1;
  uint64_t emitted = 0;
  while (emitted < o.kernels) {
    batch.clear();
    uint64_t n = std::min<uint64_t>(o.cupti_batch, o.kernels - emitted);
    for (uint64_t i = 0; i < n; ++i, ++emitted) {
      const KernelType& t = types[order[emitted % order.size()]];
      uint32_t lane = static_cast<uint32_t>(rng() % o.streams);
      uint32_t stream = 7 + 2 * lane;  // CUPTI stream ids
      uint64_t api_start = host_ns;
      uint64_t api_end = api_start + normal(2'800, 400, 1'500);
      // The launch queue is bounded: when the stream is more than ~1 ms behind, the launch
      // call blocks until there is room, as cudaLaunchKernel does.
      uint64_t& free_ns = stream_free_ns[lane];
      if (free_ns > api_end + kQueueBudgetNs) api_end = free_ns - kQueueBudgetNs + normal(2'000, 300, 500);
      host_ns = api_end + normal(1'500, 500, 200);
      if (o.with_launch_api) {
        rec.Clear();
        auto* a = rec.mutable_api();
        a->set_domain(v1::API_DOMAIN_RUNTIME);
        a->set_cbid(211);  // CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
        a->set_name_id(launch_name);
        a->set_thread_id(thread_id);
        a->set_start_ns(static_cast<int64_t>(api_start));
        a->set_end_ns(static_cast<int64_t>(api_end));
        a->set_correlation_id(correlation);
        sink.write(rec);
      }
      v1::Record k;
      auto* kr = k.mutable_kernel();
      uint64_t queued = api_start + normal(1'100, 150, 300);
      uint64_t submitted = queued + normal(900, 300, 100);
      uint64_t start = std::max(submitted + normal(2'500, 600, 800), free_ns + normal(1'200, 300, 500)) & ~31ull;
      double jitter = std::max(0.5, std::normal_distribution<double>(1.0, 0.03)(rng));
      uint64_t end = (start + static_cast<uint64_t>(static_cast<double>(t.mean_duration_ns) * jitter)) & ~31ull;
      free_ns = end;
      kr->set_name_id(t.name_id);
      kr->set_device(0);
      kr->set_context(1);
      kr->set_stream(stream);
      kr->set_correlation_id(correlation);
      kr->set_queued_ns(static_cast<int64_t>(queued));
      kr->set_submitted_ns(static_cast<int64_t>(submitted));
      kr->set_start_ns(static_cast<int64_t>(start));
      kr->set_end_ns(static_cast<int64_t>(end));
      kr->set_grid_x(t.grid_x);
      kr->set_grid_y(1);
      kr->set_grid_z(1);
      kr->set_block_x(t.block_x);
      kr->set_block_y(1);
      kr->set_block_z(1);
      kr->set_registers_per_thread(t.registers);
      kr->set_static_shared_memory_bytes(t.static_smem);
      kr->set_dynamic_shared_memory_bytes(t.dynamic_smem);
      kr->set_channel_id(lane);  // one hardware channel per stream
      batch.push_back(std::move(k));
      ++correlation;
    }
    // CUPTI hands kernel records over in buffers, after their launches.
    for (const auto& k : batch) sink.write(k);
  }
}

std::string write_capture(const std::string& path, const SynthOptions& options, const WriterOptions& wo) {
  std::string err;
  auto w = CaptureWriter::create(path, wo, &err);
  if (!w) return err;
  Sink sink{[&w](std::string_view s) { return w->intern(s); }, [&w](const v1::Record& r) { w->write(r); }};
  generate(options, sink);
  if (!w->close()) return w->last_error();
  return "";
}

std::vector<v1::Record> make_records(const SynthOptions& options) {
  std::vector<v1::Record> out;
  std::unordered_map<std::string, uint32_t> ids;
  Sink sink{[&](std::string_view s) {
              auto [it, fresh] = ids.emplace(std::string(s), static_cast<uint32_t>(ids.size() + 1));
              if (fresh) {
                v1::Record r;
                r.mutable_string_def()->set_id(it->second);
                r.mutable_string_def()->set_value(std::string(s));
                out.push_back(std::move(r));
              }
              return it->second;
            },
            [&](const v1::Record& r) { out.push_back(r); }};
  generate(options, sink);
  return out;
}

}  // namespace gpuhook::synth
