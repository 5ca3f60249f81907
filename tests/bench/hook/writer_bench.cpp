// The writer's throughput for CUPTI kernel records: fabricated CUpti_ActivityKernel10
// buffers as CUPTI fills them -> conversion -> CaptureWriter (protobuf, zstd) -> a file.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "config.h"
#include "cupti_convert.h"
#include "recorder.h"
#include "writer.h"

namespace gpuhook::hook {
namespace {

constexpr size_t kRecordsPerBuffer = 4096;  // about 1 MiB of Kernel10 records, the default buffer

// One buffer's records, in the order CUPTI would hand them over.
class BufferSource : public GpuSource {
 public:
  explicit BufferSource(const std::vector<const CUpti_Activity*>* buffer) : buffer_(buffer) {}
  void poll(RecordSink& sink, bool, bool) override {
    if (!ready) return;
    ready = false;
    for (const CUpti_Activity* a : *buffer_) convert_activity(a, options, sink);
  }
  uint64_t take_cupti_dropped() override { return 0; }
  uint64_t take_no_buffer_dropped() override { return 0; }
  bool ready = false;
  ConvertOptions options;

 private:
  const std::vector<const CUpti_Activity*>* buffer_;
};

std::vector<CUpti_ActivityKernel10> kernel_records() {
  static const char* kNames[] = {"_Z6gemm_kernelPfS_S_iii", "_Z10add_kernelPfi",
                                 "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"};
  std::vector<CUpti_ActivityKernel10> buffer(kRecordsPerBuffer);
  uint64_t t = 1'000'000'000;
  for (size_t i = 0; i < buffer.size(); ++i) {
    CUpti_ActivityKernel10& k = buffer[i];
    std::memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.queued = t;
    k.submitted = t + 800;
    k.start = t + 2'000 + i % 7;
    k.end = k.start + 3'000 + i % 101;
    t = k.end + 150;
    k.correlationId = static_cast<uint32_t>(i + 1);
    k.streamId = 7 + i % 3;
    k.gridX = 128;
    k.gridY = k.gridZ = k.blockY = k.blockZ = 1;
    k.blockX = 256;
    k.registersPerThread = 32;
    k.name = kNames[i % 3];
  }
  return buffer;
}

// The cudaLaunchKernel record of each kernel: same correlation id, launched before it queued.
std::vector<CUpti_ActivityAPI> launch_records(const std::vector<CUpti_ActivityKernel10>& kernels) {
  std::vector<CUpti_ActivityAPI> out(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    CUpti_ActivityAPI& a = out[i];
    std::memset(&a, 0, sizeof(a));
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    a.start = kernels[i].queued - 1'100;
    a.end = a.start + 2'800 + i % 13;
    a.processId = 4242;
    a.threadId = 4242;
    a.correlationId = kernels[i].correlationId;
  }
  return out;
}

// Writes 256 buffers through one Writer per iteration; `records` counts what went in.
void run_writer(benchmark::State& state, const std::vector<const CUpti_Activity*>& buffer, bool with_names,
                bool flight = false) {
  Config config;
  // The flight recorder keeping everything: these records' times are not "now", and a real
  // window would leave them out unwritten, which costs nothing.
  if (flight) config.flight_ns = 1ull << 62;
  config.output_pattern = "/tmp/gpuhook-writer-bench-" + std::to_string(getpid()) + ".gpuh";
  recorder().config = &config;
  ProcessFacts facts;
  facts.host = "bench";
  facts.pid = static_cast<uint32_t>(getpid());
  uint64_t records = 0;
  for (auto _ : state) {
    Writer writer(config, facts);
    BufferSource source(&buffer);
    if (with_names) {
      source.options.callback_name = [](CUpti_CallbackDomain, uint32_t) { return "cudaLaunchKernel"; };
    }
    writer.set_gpu_source(&source);
    for (int b = 0; b < 256; ++b) {  // 256 buffers (1M records of one kind, 2M of pairs), then close
      source.ready = true;
      writer.drain_once(false, false);
    }
    writer.finish();
    records += 256 * buffer.size();
    state.PauseTiming();
    unlink(config.output_pattern.c_str());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}

void BM_WriterKernelRecords(benchmark::State& state) {
  static const auto kernels = kernel_records();
  std::vector<const CUpti_Activity*> buffer;
  for (const auto& k : kernels) buffer.push_back(reinterpret_cast<const CUpti_Activity*>(&k));
  run_writer(state, buffer, false);
}
BENCHMARK(BM_WriterKernelRecords)->Unit(benchmark::kMillisecond)->Iterations(5);

// What the hook writes per launch by default: the kernel and its cudaLaunchKernel record,
// launches first as CUPTI's runtime buffers complete before the kernels' (items = records).
std::vector<const CUpti_Activity*> launch_pair_buffer() {
  static const auto kernels = kernel_records();
  static const auto launches = launch_records(kernels);
  std::vector<const CUpti_Activity*> buffer;
  for (size_t i = 0; i < kernels.size(); i += 256) {
    for (size_t j = i; j < i + 256 && j < kernels.size(); ++j) buffer.push_back(reinterpret_cast<const CUpti_Activity*>(&launches[j]));
    for (size_t j = i; j < i + 256 && j < kernels.size(); ++j) buffer.push_back(reinterpret_cast<const CUpti_Activity*>(&kernels[j]));
  }
  return buffer;
}

void BM_WriterLaunchPairs(benchmark::State& state) { run_writer(state, launch_pair_buffer(), true); }
BENCHMARK(BM_WriterLaunchPairs)->Unit(benchmark::kMillisecond)->Iterations(5);

// The same through the flight recorder: chunks kept in memory (the oldest let go past 256
// MiB) instead of written; the goal is within 10% of normal recording.
void BM_WriterLaunchPairsFlight(benchmark::State& state) { run_writer(state, launch_pair_buffer(), true, true); }
BENCHMARK(BM_WriterLaunchPairsFlight)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace gpuhook::hook

BENCHMARK_MAIN();
