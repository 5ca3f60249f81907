// The synthetic run and its gpuhook capture: the records the hook would write for the same
// events, with queued and submitted unknown (0), as Kineto and nsys traces have them.
#include "trace_gen.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include <gpuhook/capture.h>
#include <gpuhook/version.h>

namespace tracegen {

namespace v1 = gpuhook::v1;

namespace {

// splitmix64: durations that vary by seed, the same on every machine.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

struct KernelKind {
  const char* name;
  int64_t min_ns, max_ns;
  int32_t grid_x, block_x;
  uint32_t registers, shared_bytes;
};

// Demangled names as Kineto and nsys print them; the gemm is the one a regression slows.
constexpr KernelKind kKinds[] = {
    {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
     90'000, 110'000, 264, 384, 168, 197'632},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
     "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
     "at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
     "{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)",
     20'000, 26'000, 1056, 128, 28, 0},
    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous "
     "namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
     14'000, 19'000, 4096, 1024, 40, 0},
    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
     "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
     "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
     "unsigned int, float, 4>)",
     8'000, 12'000, 32, 512, 32, 16},
};

}  // namespace

const char* const kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";

namespace {

bool is_gemm(const KernelKind& k) { return std::string_view(k.name).find("gemm") != std::string_view::npos; }

// CUPTI runtime callback ids (cupti_runtime_cbid.h, CUDA 13.0).
constexpr uint32_t kCbidMemcpy = 31, kCbidMemcpyAsync = 41, kCbidMemsetAsync = 51, kCbidStreamSynchronize = 131,
                   kCbidLaunchKernel = 211, kCbidLaunchKernelExC = 430;

}  // namespace

Run make_run(const Shape& shape) {
  Run run;
  run.rank = shape.rank;
  run.world_size = shape.world_size;
  if (shape.rank >= 0) run.pid = 4242 + static_cast<uint32_t>(shape.rank);
  run.devices.push_back(Device{});
  const uint32_t device = 0, stream = 7;
  const uint64_t thread = run.pid + 1;
  // The ranks of one job run the same steps (one random sequence), so that their collectives
  // end together; each rank reaches them a little later than the one before.
  const bool distributed = shape.world_size > 1;
  Random random{shape.seed * 1000003ull + (distributed ? 0 : static_cast<uint64_t>(shape.rank + 1))};
  uint32_t correlation = 1;
  // 1,234 ns past a µs: times whose ns digits a reader through a double would lose.
  int64_t host = run.base_ns + 5'000'001'234;
  int64_t gpu_free = host;
  auto call = [&](const char* name, uint32_t cbid, int64_t start, int64_t end, uint32_t corr) {
    run.calls.push_back(ApiCall{name, cbid, thread, start, end, corr});
  };
  for (uint64_t step = 0; step < shape.steps; ++step) {
    const int64_t step_start = host;
    // The batch: a pageable HtoD copy, the host blocked in cudaMemcpy until it ends.
    {
      const uint32_t corr = correlation++;
      const int64_t call_start = host + 2'000;
      const int64_t start = std::max(gpu_free, call_start + 9'000);
      const uint64_t bytes = 8u << 20;
      const int64_t end = start + 700'000 + random.between(0, 999);
      run.copies.push_back(Copy{device, stream, corr, 1, 1, 3, bytes, start, end});
      call("cudaMemcpy", kCbidMemcpy, call_start, end + 4'001, corr);
      host = end + 4'001;
      gpu_free = end;
    }
    const int64_t forward_start = host + 500;
    host = forward_start + 1'000;
    for (uint64_t i = 0; i < shape.kernels_per_step; ++i) {
      const uint32_t corr = correlation++;
      const int64_t call_start = host;
      const int64_t call_end = call_start + random.between(3'000, 6'000);
      call("cudaLaunchKernel", kCbidLaunchKernel, call_start, call_end, corr);
      const KernelKind& kind = kKinds[(step + i) % std::size(kKinds)];
      Kernel k;
      k.name = kind.name;
      k.device = device;
      k.stream = stream;
      k.correlation_id = corr;
      k.start_ns = std::max(gpu_free, call_end + 2'017);
      k.end_ns = k.start_ns + random.between(kind.min_ns, kind.max_ns) + (is_gemm(kind) ? shape.slow_ns : 0);
      k.grid[0] = kind.grid_x;
      k.block[0] = kind.block_x;
      k.registers_per_thread = kind.registers;
      k.shared_memory_bytes = kind.shared_bytes;
      gpu_free = k.end_ns;
      run.kernels.push_back(k);
      host = call_end + random.between(1'000, 2'500);
      if (i == 1) {
        // Zeroing the gradients between forward kernels.
        const uint32_t mcorr = correlation++;
        const int64_t mcall_end = host + 3'500;
        call("cudaMemsetAsync", kCbidMemsetAsync, host, mcall_end, mcorr);
        const int64_t start = std::max(gpu_free, mcall_end + 1'999);
        const int64_t end = start + 3'333;
        run.fills.push_back(Fill{device, stream, mcorr, 3, 1u << 20, start, end});
        gpu_free = end;
        host = mcall_end + 1'000;
      }
    }
    run.ranges.push_back(Range{"forward", thread, forward_start, host});
    if (distributed) {
      // The gradients' all-reduce on NCCL's stream: rank r arrives r x 30 us after rank 0, and
      // every rank's kernel ends when the last one arrives.
      const uint32_t corr = correlation++;
      const int64_t call_end = host + 6'000;
      call("cudaLaunchKernelExC", kCbidLaunchKernelExC, host, call_end, corr);
      const int64_t arrival = std::max(gpu_free, call_end + 2'000);
      Kernel k;
      k.name = kAllReduce;
      k.device = device;
      k.stream = 13;
      k.correlation_id = corr;
      k.start_ns = arrival + 30'000 * shape.rank;
      k.end_ns = arrival + 30'000 * (shape.world_size - 1) + 150'000;
      k.grid[0] = 2;
      k.block[0] = 640;
      k.registers_per_thread = 96;
      run.kernels.push_back(k);
      gpu_free = k.end_ns;
      host = call_end + 700;
    }
    // The loss back to the host: an async DtoH copy into pinned memory, then the wait.
    {
      const uint32_t corr = correlation++;
      const int64_t call_end = host + 4'000;
      call("cudaMemcpyAsync", kCbidMemcpyAsync, host, call_end, corr);
      const int64_t start = std::max(gpu_free, call_end + 1'500);
      const int64_t end = start + 2'221;
      run.copies.push_back(Copy{device, stream, corr, 2, 3, 2, 4096, start, end});
      gpu_free = end;
      host = call_end + 700;
    }
    {
      const uint32_t corr = correlation++;
      const int64_t sync_end = std::max(host + 1'000, gpu_free + 3'003);
      call("cudaStreamSynchronize", kCbidStreamSynchronize, host, sync_end, corr);
      run.syncs.push_back(Sync{3, device, stream, corr, thread, host, sync_end});
      host = sync_end + 800;
    }
    run.ranges.push_back(Range{"ProfilerStep#" + std::to_string(step), thread, step_start, host});
    host += 20'000;
  }
  return run;
}

void write_gpuh(const Run& run, const std::string& path) {
  std::string error;
  auto w = gpuhook::CaptureWriter::create(path, gpuhook::WriterOptions{}, &error);
  if (!w) throw std::runtime_error(path + ": " + error);
  const int64_t first = run.ranges.empty() ? run.base_ns : run.ranges.front().start_ns;
  {
    v1::Record r;
    v1::Header* h = r.mutable_header();
    h->set_format_version(gpuhook::kFormatVersion);
    h->set_tool_version(std::string("gpuhook_trace_gen ") + GPUHOOK_VERSION);
    h->set_host_name(run.host_name);
    h->set_pid(run.pid);
    if (run.rank >= 0) {
      h->set_rank(run.rank);
      h->set_world_size(run.world_size);
    }
    h->set_start_monotonic_raw_ns(static_cast<uint64_t>(first));
    h->set_start_realtime_ns(static_cast<uint64_t>(first));
    h->set_clock_domain("CLOCK_REALTIME");
    h->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_SYSTEM_THREAD_IDS);
    w->write(r);
  }
  for (const Device& d : run.devices) {
    v1::Record r;
    v1::DeviceInfo* i = r.mutable_device();
    i->set_ordinal(d.ordinal);
    i->set_name(d.name);
    i->set_sm_count(d.sm_count);
    i->set_cc_major(d.cc_major);
    i->set_cc_minor(d.cc_minor);
    i->set_warp_size(d.warp_size);
    i->set_max_threads_per_sm(d.max_threads_per_sm);
    i->set_max_warps_per_sm(d.max_threads_per_sm / d.warp_size);
    i->set_max_blocks_per_sm(32);
    i->set_max_threads_per_block(d.max_threads_per_block);
    i->set_registers_per_sm(d.registers_per_sm);
    i->set_registers_per_block(d.registers_per_block);
    i->set_shared_memory_per_sm_bytes(d.shared_memory_per_sm_bytes);
    i->set_shared_memory_per_block_bytes(d.shared_memory_per_block_bytes);
    i->set_shared_memory_per_block_optin_bytes(d.shared_memory_per_block_optin_bytes);
    i->set_global_memory_bytes(d.global_memory_bytes);
    w->write(r);
  }
  for (const ApiCall& c : run.calls) {
    gpuhook::ApiFields a;
    a.domain = v1::API_DOMAIN_RUNTIME;
    a.cbid = c.cbid;
    a.name_id = w->intern(c.name);
    a.thread_id = c.thread_id;
    a.start_ns = c.start_ns;
    a.end_ns = c.end_ns;
    a.correlation_id = c.correlation_id;
    w->write(a);
  }
  for (const Kernel& k : run.kernels) {
    gpuhook::KernelFields f;
    f.name_id = w->intern(k.name);
    f.device = k.device;
    f.stream = k.stream;
    f.correlation_id = k.correlation_id;
    f.start_ns = k.start_ns;
    f.end_ns = k.end_ns;
    f.grid_x = k.grid[0];
    f.grid_y = k.grid[1];
    f.grid_z = k.grid[2];
    f.block_x = k.block[0];
    f.block_y = k.block[1];
    f.block_z = k.block[2];
    f.registers_per_thread = k.registers_per_thread;
    f.static_shared_memory_bytes = k.shared_memory_bytes;
    w->write(f);
  }
  for (const Copy& c : run.copies) {
    v1::Record r;
    v1::Memcpy* m = r.mutable_memcpy();
    m->set_copy_kind(static_cast<v1::CopyKind>(c.copy_kind));
    m->set_src_kind(static_cast<v1::MemoryKind>(c.src_kind));
    m->set_dst_kind(static_cast<v1::MemoryKind>(c.dst_kind));
    m->set_bytes(c.bytes);
    m->set_start_ns(c.start_ns);
    m->set_end_ns(c.end_ns);
    m->set_device(c.device);
    m->set_stream(c.stream);
    m->set_correlation_id(c.correlation_id);
    m->set_src_device(c.device);
    m->set_dst_device(c.device);
    w->write(r);
  }
  for (const Fill& f : run.fills) {
    v1::Record r;
    v1::Memset* m = r.mutable_memset();
    m->set_bytes(f.bytes);
    m->set_start_ns(f.start_ns);
    m->set_end_ns(f.end_ns);
    m->set_device(f.device);
    m->set_stream(f.stream);
    m->set_correlation_id(f.correlation_id);
    m->set_memory_kind(static_cast<v1::MemoryKind>(f.memory_kind));
    w->write(r);
  }
  for (const Sync& s : run.syncs) {
    v1::Record r;
    v1::Synchronization* y = r.mutable_sync();
    y->set_type(static_cast<v1::SyncType>(s.type));
    y->set_start_ns(s.start_ns);
    y->set_end_ns(s.end_ns);
    y->set_device(s.device);
    y->set_stream(s.stream);
    y->set_correlation_id(s.correlation_id);
    w->write(r);
  }
  // Ranges as the NVTX push/pop pairs they would be, in time order per thread.
  struct Edge {
    int64_t t;
    bool push;
    const Range* range;
  };
  std::vector<Edge> edges;
  for (const Range& g : run.ranges) {
    edges.push_back({g.start_ns, true, &g});
    edges.push_back({g.end_ns, false, &g});
  }
  std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.range->thread_id != b.range->thread_id) return a.range->thread_id < b.range->thread_id;
    if (a.t != b.t) return a.t < b.t;
    return !a.push && b.push;  // a pop before a push at the same time
  });
  for (const Edge& e : edges) {
    v1::Record r;
    v1::Range* g = r.mutable_range();
    g->set_type(e.push ? v1::RANGE_PUSH : v1::RANGE_POP);
    // A capture's step range has one name for every step (an NVTX "ProfilerStep"), not Kineto's numbered one.
    const std::string& name = e.range->name;
    if (e.push) g->set_name_id(w->intern(name.rfind("ProfilerStep#", 0) == 0 ? std::string("ProfilerStep") : name));
    g->set_thread_id(e.range->thread_id);
    g->set_time_ns(e.t);
    w->write(r);
  }
  if (!w->close()) throw std::runtime_error(path + ": " + w->last_error());
}

}  // namespace tracegen
