// Fabricated capture records for libgantt tests: the values a CUPTI buffer and the hook
// would produce, built in memory so no GPU and no file are needed.
#pragma once

#include <cstdint>
#include <string>

#include <gpuhook/capture.h>

#include "fake_device.h"

namespace gantt_test {

namespace v1 = gpuhook::v1;

inline v1::Record header(uint64_t features = v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS) {
  v1::Record r;
  auto* h = r.mutable_header();
  h->set_format_version(1);
  h->set_host_name("testhost");
  h->set_pid(42);
  h->set_start_monotonic_raw_ns(1'000'000);
  h->set_clock_domain("CLOCK_MONOTONIC_RAW");
  h->set_features(features);
  return r;
}

// An A100 (sm_80) as cudaGetDeviceProperties reports it.
inline v1::Record a100(uint32_t ordinal = 0) {
  v1::Record r;
  auto* d = r.mutable_device();
  d->set_ordinal(ordinal);
  d->set_name("NVIDIA A100-SXM4-80GB");
  gpuhook::test::set_sm_limits(d, 8);
  d->set_shared_memory_per_block_optin_bytes(166912);
  d->set_reserved_shared_memory_per_block_bytes(1024);
  d->set_warp_size(32);
  return r;
}

// An H100 SXM (sm_90).
inline v1::Record h100(uint32_t ordinal = 0) {
  v1::Record r = a100(ordinal);
  auto* d = r.mutable_device();
  d->set_name("NVIDIA H100 80GB HBM3");
  gpuhook::test::set_sm_limits(d, 9);
  d->set_shared_memory_per_block_optin_bytes(232448);
  return r;
}

inline v1::Record string_def(uint32_t id, const std::string& value) {
  v1::Record r;
  r.mutable_string_def()->set_id(id);
  r.mutable_string_def()->set_value(value);
  return r;
}

inline v1::Record api(uint32_t name_id, uint64_t tid, uint64_t start, uint64_t end, uint32_t corr) {
  v1::Record r;
  auto* a = r.mutable_api();
  a->set_domain(v1::API_DOMAIN_RUNTIME);
  a->set_name_id(name_id);
  a->set_thread_id(tid);
  if (start) a->set_start_ns(static_cast<int64_t>(start));
  if (end) a->set_end_ns(static_cast<int64_t>(end));
  a->set_correlation_id(corr);
  return r;
}

inline v1::Record kernel(uint32_t name_id, uint32_t stream, uint32_t corr, uint64_t queued, uint64_t submitted,
                         uint64_t start, uint64_t end, int block_x = 256, uint32_t regs = 32, uint32_t smem = 0) {
  v1::Record r;
  auto* k = r.mutable_kernel();
  k->set_name_id(name_id);
  k->set_device(0);
  k->set_stream(stream);
  k->set_correlation_id(corr);
  if (queued) k->set_queued_ns(static_cast<int64_t>(queued));
  if (submitted) k->set_submitted_ns(static_cast<int64_t>(submitted));
  if (start) k->set_start_ns(static_cast<int64_t>(start));
  if (end) k->set_end_ns(static_cast<int64_t>(end));
  k->set_grid_x(80);
  k->set_grid_y(1);
  k->set_grid_z(1);
  k->set_block_x(block_x);
  k->set_block_y(1);
  k->set_block_z(1);
  k->set_registers_per_thread(regs);
  k->set_dynamic_shared_memory_bytes(smem);
  return r;
}

inline v1::Record memcpy_rec(v1::CopyKind kind, uint64_t bytes, uint32_t stream, uint32_t corr, uint64_t start,
                             uint64_t end) {
  v1::Record r;
  auto* m = r.mutable_memcpy();
  m->set_copy_kind(kind);
  m->set_bytes(bytes);
  m->set_stream(stream);
  m->set_correlation_id(corr);
  m->set_start_ns(static_cast<int64_t>(start));
  m->set_end_ns(static_cast<int64_t>(end));
  return r;
}

// A host function as the hook records it: run on `tid`, queued under `external_id`.
inline v1::Record host_function(uint32_t name_id, uint32_t stream, uint64_t tid, uint64_t start, uint64_t end,
                                uint64_t external_id) {
  v1::Record r;
  auto* h = r.mutable_host_function();
  h->set_name_id(name_id);
  h->set_stream(stream);
  h->set_thread_id(tid);
  h->set_launch_thread_id(1);
  h->set_start_ns(static_cast<int64_t>(start));
  h->set_end_ns(static_cast<int64_t>(end));
  h->set_external_id(external_id);
  h->set_api(v1::HOST_FUNCTION_API_LAUNCH);
  return r;
}

// CUPTI's record that the call with `corr` was made under the hook's `external_id`.
inline v1::Record external(uint64_t external_id, uint32_t corr) {
  v1::Record r;
  r.mutable_external_correlation()->set_kind(5);  // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2
  r.mutable_external_correlation()->set_external_id(external_id);
  r.mutable_external_correlation()->set_correlation_id(corr);
  return r;
}

inline v1::Record range(v1::RangeType type, uint32_t name_id, uint64_t tid, uint64_t time) {
  v1::Record r;
  auto* g = r.mutable_range();
  g->set_type(type);
  g->set_name_id(name_id);
  g->set_thread_id(tid);
  g->set_time_ns(static_cast<int64_t>(time));
  return r;
}

inline v1::Record clock_sync(uint64_t host, uint64_t gpu, uint32_t device = 0) {
  v1::Record r;
  r.mutable_clock_sync()->set_host_ns(static_cast<int64_t>(host));
  r.mutable_clock_sync()->set_gpu_ns(static_cast<int64_t>(gpu));
  r.mutable_clock_sync()->set_device(device);
  return r;
}

}  // namespace gantt_test
