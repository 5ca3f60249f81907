// One NCCL call as the application pays for it, against the fake libnccl.so.2 of the hook's
// tests (its functions return at once). bench.sh runs it without and with LD_PRELOAD.
// Batches with pauses, as in nvtx_bench.cpp, so the recording path is what is timed.
#include <benchmark/benchmark.h>
#include <nccl.h>

#include <time.h>

#include <chrono>
#include <thread>

// This thread's CPU time: on a shared machine wall time would count other processes' turns.
static double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr int kCalls = 2000;

static void BM_NcclAllReduceBatch(benchmark::State& state) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclComm_t comm = nullptr;
  ncclCommInitRank(&comm, 2, id, 0);
  float buf[4] = {};
  for (auto _ : state) {
    double t0 = thread_cpu_s();
    for (int i = 0; i < kCalls; ++i) {
      benchmark::DoNotOptimize(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, nullptr));
    }
    double t1 = thread_cpu_s();
    state.SetIterationTime(t1 - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ncclCommDestroy(comm);
  state.counters["calls_per_batch"] = kCalls;
}
BENCHMARK(BM_NcclAllReduceBatch)->UseManualTime()->Iterations(300)->Repetitions(5)->ReportAggregatesOnly(true);
BENCHMARK_MAIN();
