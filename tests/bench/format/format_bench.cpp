// Throughput of the capture format on one core: serialise + compress (write) and
// decompress + parse (read), on synthetic captures shaped like real ones (tests/support).
// CPU figures of this machine; no GPU is involved.
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gpuhook/capture.h>

#include "synth.h"

namespace {

constexpr uint64_t kKernels = 200'000;

const std::vector<gpuhook::v1::Record>& records(bool with_api) {
  static std::vector<gpuhook::v1::Record> with, without;
  auto& v = with_api ? with : without;
  if (v.empty()) {
    gpuhook::synth::SynthOptions o;
    o.kernels = kKernels;
    o.with_launch_api = with_api;
    v = gpuhook::synth::make_records(o);
  }
  return v;
}

void write_all(benchmark::State& state, bool with_api) {
  const auto& recs = records(with_api);
  for (auto _ : state) {
    int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    std::string err;
    auto w = gpuhook::CaptureWriter::from_fd(fd, gpuhook::WriterOptions{}, &err);
    for (const auto& r : recs) w->write(r);
    w->close();
    benchmark::DoNotOptimize(w->stats().bytes_written);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kKernels));
  state.counters["records_per_kernel"] = static_cast<double>(recs.size()) / kKernels;
}

// Kernel records only: the goal is stated per kernel record.
void BM_WriteKernels(benchmark::State& state) { write_all(state, false); }
// Kernel + launch ApiCall pairs: items are kernels.
void BM_WriteKernelLaunchPairs(benchmark::State& state) { write_all(state, true); }

const std::string& capture_path() {
  static std::string path;
  if (path.empty()) {
    char dir[] = "/tmp/gpuhook-bench-XXXXXX";
    path = std::string(mkdtemp(dir)) + "/read.gpuh";
    gpuhook::synth::SynthOptions o;
    o.kernels = kKernels;
    gpuhook::synth::write_capture(path, o);
  }
  return path;
}

// Records (kernels and launches) decoded into memory, absolute times restored.
void BM_ReadRecords(benchmark::State& state) {
  const std::string& path = capture_path();
  uint64_t records = 0;
  for (auto _ : state) {
    gpuhook::CaptureReader reader(path);
    gpuhook::v1::Record r;
    uint64_t n = 0;
    int64_t busy_ns = 0;
    while (reader.next(r)) {
      if (r.has_kernel()) busy_ns += r.kernel().end_ns() - r.kernel().start_ns();
      ++n;
    }
    benchmark::DoNotOptimize(busy_ns);
    records = n;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * records));
}

// The same records through the streamed readers' path (CaptureReader::next(RecordView&)):
// kernels and launches decoded from their bytes, other kinds parsed by protobuf.
void BM_ReadRecordViews(benchmark::State& state) {
  const std::string& path = capture_path();
  uint64_t records = 0;
  for (auto _ : state) {
    gpuhook::CaptureReader reader(path);
    gpuhook::v1::Record other;
    gpuhook::RecordView view;
    view.record = &other;
    uint64_t n = 0;
    int64_t busy_ns = 0;
    while (reader.next(view)) {
      if (view.kind == gpuhook::v1::Record::kKernel) busy_ns += view.kernel.end_ns - view.kernel.start_ns;
      ++n;
    }
    benchmark::DoNotOptimize(busy_ns);
    records = n;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * records));
}

BENCHMARK(BM_WriteKernels)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_WriteKernelLaunchPairs)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_ReadRecords)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_ReadRecordViews)->Unit(benchmark::kMillisecond)->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
