// Writes a synthetic multi-rank job for the scale benchmark: N captures (one per rank, 8
// ranks per host) of E GPU events each, every event with the runtime API call that launched
// it. Each step is compute kernels then one all-reduce whose NCCL call, launch and kernel
// look as the hook records them. Hosts have known clock offsets (written to offsets.txt)
// and REALTIME anchors off by an NTP-like error; rank 5 is a straggler. With `p2p`, each step
// ends in a point-to-point transfer instead: rank r receives from r - 1 and sends to r + 1 (a
// pipeline's stages, the last only receiving, the first only sending).
//   gen_job DIR [captures=64] [events=100000] [p2p]
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include <gpuhook/capture.h>

#include "fake_device.h"

namespace v1 = gpuhook::v1;

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gen_job DIR [captures] [events per capture] [p2p]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int captures = argc > 2 ? atoi(argv[2]) : 64;
  const int events = argc > 3 ? atoi(argv[3]) : 100000;
  const bool p2p = argc > 4 && std::string(argv[4]) == "p2p";
  constexpr int kRanksPerHost = 8, kKernelsPerStep = 99;
  constexpr uint64_t kKernelNs = 9'000, kStraggleNs = 60'000;
  constexpr int kStraggler = 5;
  const int steps = events / (kKernelsPerStep + 1);
  const uint64_t comm_id = 0x5eedc0ffee;
  FILE* truth = fopen((dir + "/offsets.txt").c_str(), "w");
  if (!truth) {
    perror("offsets.txt");
    return 1;
  }
  std::mt19937_64 host_rng(7);
  std::uniform_int_distribution<int64_t> host_offset(-5'000'000, 5'000'000), ntp(-1'000'000, 1'000'000);
  std::vector<int64_t> offsets, ntp_errors;
  for (int h = 0; h < (captures + kRanksPerHost - 1) / kRanksPerHost; ++h) {
    offsets.push_back(h == 0 ? 0 : host_offset(host_rng));
    ntp_errors.push_back(h == 0 ? 0 : ntp(host_rng));
  }
  const uint64_t base_ns = 5'000'000'000'000ull;  // true time of the job's start
  for (int r = 0; r < captures; ++r) {
    const int host = r / kRanksPerHost;
    const int64_t off = offsets[static_cast<size_t>(host)];
    // The capture's clock reads true time + off.
    auto t = [&](uint64_t true_ns) { return static_cast<int64_t>(true_ns) + off; };
    fprintf(truth, "%d %" PRId64 "\n", r, -off);  // what alignment must add
    char path[4096];
    snprintf(path, sizeof path, "%s/rank%02d.gpuh", dir.c_str(), r);
    std::string err;
    auto w = gpuhook::CaptureWriter::create(path, gpuhook::WriterOptions{}, &err);
    if (!w) {
      fprintf(stderr, "%s: %s\n", path, err.c_str());
      return 1;
    }
    v1::Record rec;
    auto* h = rec.mutable_header();
    h->set_format_version(1);
    h->set_host_name("node" + std::to_string(host));
    h->set_boot_id("boot-" + std::to_string(host));
    h->set_pid(static_cast<uint32_t>(1000 + r));
    h->set_rank(r);
    h->set_world_size(captures);
    h->set_start_monotonic_raw_ns(static_cast<uint64_t>(t(base_ns)));
    h->set_start_realtime_ns(1'760'000'000'000'000'000ull + static_cast<uint64_t>(ntp_errors[static_cast<size_t>(host)]));
    h->set_clock_domain("CLOCK_MONOTONIC_RAW");
    h->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_NCCL);
    w->write(rec);
    rec.Clear();
    auto* d = rec.mutable_device();
    d->set_ordinal(0);
    d->set_name("synthetic H200");
    gpuhook::test::set_sm_limits(d, 9);
    d->set_warp_size(32);
    w->write(rec);
    const uint32_t launch = w->intern("cudaLaunchKernel");
    // A stage sends to the next one, the last receives from the one before.
    const bool sends = p2p && r + 1 < captures;
    const uint32_t nccl_name = w->intern(!p2p ? "ncclAllReduce" : sends ? "ncclSend" : "ncclRecv");
    const uint32_t nccl_kernel = w->intern(p2p ? "_Z24ncclDevKernel_SendRecv_P24ncclDevKernelArgsStorageILm4096EE"
                                                 : "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE");
    uint32_t names[8];
    for (int k = 0; k < 8; ++k) names[k] = w->intern("_Z12layer_kernelILi" + std::to_string(k) + "EEvPfPKfi");
    std::mt19937_64 rng(static_cast<uint64_t>(r) * 7919 + 1);
    std::uniform_int_distribution<int> jitter(0, 400);
    const uint64_t tid = 5000 + static_cast<uint64_t>(r);
    uint32_t corr = 1;
    uint64_t gpu = base_ns + 100'000, host_t = base_ns + 50'000;
    const uint64_t step_ns = kKernelsPerStep * kKernelNs + kStraggleNs + 200'000;
    // NVML's counters as the hook reads them by default (GPUHOOK_NVML_HZ=100): every 10 ms one
    // read of the device, each counter a sample at the read's time.
    uint64_t next_read = base_ns;
    auto nvml_read = [&](uint64_t at) {
      static const std::pair<v1::GpuMetric, uint64_t> kCounters[] = {
          {v1::GPU_METRIC_GPU_UTIL_PERCENT, 92}, {v1::GPU_METRIC_SM_CLOCK_MHZ, 1980}, {v1::GPU_METRIC_POWER_MW, 610'000},
          {v1::GPU_METRIC_TEMPERATURE_C, 61}, {v1::GPU_METRIC_MEMORY_USED_BYTES, uint64_t{40} << 30}};
      for (const auto& [metric, value] : kCounters) {
        rec.Clear();
        auto* m = rec.mutable_metric_sample();
        m->set_time_ns(t(at));
        m->set_device(0);
        m->set_metric(metric);
        m->set_value(value + (metric == v1::GPU_METRIC_GPU_UTIL_PERCENT ? (at / 10'000'000) % 7 : 0));
        w->write(rec);
      }
    };
    for (int s = 0; s < steps; ++s) {
      const uint64_t step_start = base_ns + 100'000 + static_cast<uint64_t>(s) * step_ns;
      for (; next_read <= step_start; next_read += 10'000'000) nvml_read(next_read);
      gpu = std::max(gpu, step_start);
      host_t = std::max(host_t, step_start - 50'000);
      for (int k = 0; k < kKernelsPerStep; ++k) {
        rec.Clear();
        auto* a = rec.mutable_api();
        a->set_domain(v1::API_DOMAIN_RUNTIME);
        a->set_cbid(211);
        a->set_name_id(launch);
        a->set_thread_id(tid);
        a->set_start_ns(t(host_t));
        a->set_end_ns(t(host_t + 2'000));
        a->set_correlation_id(corr);
        w->write(rec);
        rec.Clear();
        auto* kr = rec.mutable_kernel();
        kr->set_name_id(names[k % 8]);
        kr->set_stream(7);
        kr->set_correlation_id(corr++);
        kr->set_queued_ns(t(host_t + 1'000));
        kr->set_submitted_ns(t(host_t + 1'500));
        const uint64_t dur = kKernelNs + static_cast<uint64_t>(jitter(rng)) + (r == kStraggler && k == 0 ? kStraggleNs : 0);
        kr->set_start_ns(t(gpu));
        kr->set_end_ns(t(gpu + dur));
        kr->set_grid_x(264);
        kr->set_grid_y(1);
        kr->set_grid_z(1);
        kr->set_block_x(256);
        kr->set_block_y(1);
        kr->set_block_z(1);
        kr->set_registers_per_thread(32);
        gpu += dur;
        host_t += 3'000;
        w->write(rec);
        w->maybe_flush(0);
      }
      // The all-reduce: every rank's kernel ends when the slowest rank has arrived.
      const uint64_t last_arrival = step_start + kKernelsPerStep * kKernelNs + kStraggleNs + 400 * kKernelsPerStep;
      const uint64_t end = last_arrival + 50'000;
      rec.Clear();
      auto* n = rec.mutable_nccl();
      n->set_op(!p2p ? v1::NCCL_ALL_REDUCE : sends ? v1::NCCL_SEND : v1::NCCL_RECV);
      n->set_name_id(nccl_name);
      n->set_count(1 << 20);
      n->set_datatype(7);
      n->set_bytes(4 << 20);
      n->set_reduce_op(p2p ? -1 : 0);
      n->set_root_or_peer(!p2p ? -1 : sends ? r + 1 : r - 1);
      n->set_comm_id(comm_id);
      n->set_rank(r);
      n->set_nranks(captures);
      n->set_stream(7);
      n->set_thread_id(tid);
      n->set_start_ns(t(host_t));
      n->set_end_ns(t(host_t + 5'000));
      n->set_sequence(static_cast<uint64_t>(s));
      // As the hook records a call: its own id, pushed as CUPTI's external correlation id
      // (CUSTOM2) around the call, joins the call to the kernel it launched.
      const uint64_t external = static_cast<uint64_t>(s) + 1;
      n->set_external_id(external);
      w->write(rec);
      rec.Clear();
      auto* x = rec.mutable_external_correlation();
      x->set_kind(5);
      x->set_external_id(external);
      x->set_correlation_id(corr);
      w->write(rec);
      rec.Clear();
      auto* a = rec.mutable_api();
      a->set_domain(v1::API_DOMAIN_RUNTIME);
      a->set_cbid(211);
      a->set_name_id(launch);
      a->set_thread_id(tid);
      a->set_start_ns(t(host_t + 1'000));
      a->set_end_ns(t(host_t + 3'000));
      a->set_correlation_id(corr);
      w->write(rec);
      rec.Clear();
      auto* kr = rec.mutable_kernel();
      kr->set_name_id(nccl_kernel);
      kr->set_stream(7);
      kr->set_correlation_id(corr++);
      kr->set_start_ns(t(gpu));
      kr->set_end_ns(t(std::max(end, gpu + 1'000)));
      kr->set_grid_x(16);
      kr->set_grid_y(1);
      kr->set_grid_z(1);
      kr->set_block_x(512);
      kr->set_block_y(1);
      kr->set_block_z(1);
      w->write(rec);
      gpu = std::max(end, gpu + 1'000);
      host_t += 6'000;
    }
    if (!w->close()) {
      fprintf(stderr, "%s: %s\n", path, w->last_error().c_str());
      return 1;
    }
  }
  fclose(truth);
  printf("wrote %d captures of %d GPU events to %s\n", captures, steps * (kKernelsPerStep + 1), dir.c_str());
  return 0;
}
