// NVTX push+pop as the application pays for it. bench.sh runs this program twice, without
// and with NVTX_INJECTION64_PATH=libgpuhook.so, and reports the difference per pair.
//
// Timed in batches of kPairs with a pause between batches: the pause lets the writer drain
// the ring, so the batch measures the recording path, not the drop path of a full ring (a
// tight NVTX loop outruns any writer; then records are dropped and counted, which is cheaper).
#include <benchmark/benchmark.h>
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#include <chrono>
#include <thread>

// This thread's CPU time: on a shared machine wall time would count other processes' turns.
static double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr int kPairs = 2000;  // 4000 records: half of the default 8192-record ring

static void BM_NvtxPushPopBatch(benchmark::State& state) {
  for (auto _ : state) {
    double t0 = thread_cpu_s();
    for (int i = 0; i < kPairs; ++i) {
      nvtxRangePushA("step");
      nvtxRangePop();
    }
    double t1 = thread_cpu_s();
    state.SetIterationTime(t1 - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  state.counters["pairs_per_batch"] = kPairs;
}
BENCHMARK(BM_NvtxPushPopBatch)->UseManualTime()->Iterations(300)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_MAIN();
