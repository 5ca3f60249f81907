// The records a rank's capture holds for one collective step, as the hook writes them: the
// NCCL call, the cudaLaunchKernel call, and the kernel joined to it by correlation id.
#pragma once

#include <cstdint>
#include <string>

#include "gantt/model/model.h"

namespace gantt::test {

namespace v1 = gpuhook::v1;

inline v1::Record rank_header(int rank, const std::string& host, uint64_t start_monotonic_raw_ns) {
  v1::Record rec;
  auto* h = rec.mutable_header();
  h->set_format_version(1);
  h->set_host_name(host);
  h->set_rank(rank);
  h->set_start_monotonic_raw_ns(start_monotonic_raw_ns);
  return rec;
}

inline v1::Record all_reduce_call(uint32_t name_id, int rank, int nranks, uint64_t sequence, int64_t start_ns,
                                  int64_t end_ns) {
  v1::Record rec;
  auto* n = rec.mutable_nccl();
  n->set_op(v1::NCCL_ALL_REDUCE);
  n->set_name_id(name_id);
  n->set_count(1024);
  n->set_datatype(7);
  n->set_comm_id(77);
  n->set_rank(rank);
  n->set_nranks(nranks);
  n->set_thread_id(10);
  n->set_start_ns(start_ns);
  n->set_end_ns(end_ns);
  n->set_sequence(sequence);
  return rec;
}

inline v1::Record launch_call(uint32_t name_id, uint32_t correlation_id, int64_t start_ns, int64_t end_ns) {
  v1::Record rec;
  auto* a = rec.mutable_api();
  a->set_domain(v1::API_DOMAIN_RUNTIME);
  a->set_cbid(211);  // cudaLaunchKernel
  a->set_name_id(name_id);
  a->set_thread_id(10);
  a->set_start_ns(start_ns);
  a->set_end_ns(end_ns);
  a->set_correlation_id(correlation_id);
  return rec;
}

// A 4-block kernel of 128 threads.
inline v1::Record launched_kernel(uint32_t name_id, uint32_t correlation_id, uint32_t stream, int64_t start_ns,
                                  int64_t end_ns) {
  v1::Record rec;
  auto* k = rec.mutable_kernel();
  k->set_name_id(name_id);
  k->set_correlation_id(correlation_id);
  k->set_stream(stream);
  k->set_start_ns(start_ns);
  k->set_end_ns(end_ns);
  k->set_grid_x(4);
  k->set_grid_y(1);
  k->set_grid_z(1);
  k->set_block_x(128);
  k->set_block_y(1);
  k->set_block_z(1);
  return rec;
}

}  // namespace gantt::test
