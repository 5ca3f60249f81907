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

class BufferSource : public GpuSource {
 public:
  explicit BufferSource(const std::vector<CUpti_ActivityKernel10>* buffer) : buffer_(buffer) {}
  void poll(RecordSink& sink, bool, bool) override {
    if (!ready) return;
    ready = false;
    ConvertOptions options;
    for (const auto& k : *buffer_) convert_activity(reinterpret_cast<const CUpti_Activity*>(&k), options, sink);
  }
  uint64_t take_cupti_dropped() override { return 0; }
  uint64_t take_no_buffer_dropped() override { return 0; }
  bool ready = false;

 private:
  const std::vector<CUpti_ActivityKernel10>* buffer_;
};

void BM_WriterKernelRecords(benchmark::State& state) {
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
  Config config;
  config.output_pattern = "/tmp/gpuhook-writer-bench-" + std::to_string(getpid()) + ".gpuh";
  recorder().config = &config;
  ProcessFacts facts;
  facts.host = "bench";
  facts.pid = static_cast<uint32_t>(getpid());
  uint64_t records = 0;
  for (auto _ : state) {
    Writer writer(config, facts);
    BufferSource source(&buffer);
    writer.set_gpu_source(&source);
    for (int b = 0; b < 256; ++b) {  // 256 buffers = 1,048,576 records, then close
      source.ready = true;
      writer.drain_once(false, false);
    }
    writer.finish();
    records += 256 * kRecordsPerBuffer;
    state.PauseTiming();
    unlink(config.output_pattern.c_str());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(records));
}
BENCHMARK(BM_WriterKernelRecords)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace
}  // namespace gpuhook::hook

BENCHMARK_MAIN();
