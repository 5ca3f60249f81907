// The limits cudaGetDeviceProperties reports for an sm_90 (H100/H200) or sm_80 (A100) device,
// for tests and fixtures that fabricate a DeviceInfo record: the values occupancy is computed
// from. Fabricated, not read off a GPU; the caller sets the name and ordinal.
#pragma once

#include <cstdint>

#include <gpuhook/capture.h>

namespace gpuhook::test {

inline void set_sm_limits(v1::DeviceInfo* d, uint32_t cc_major) {
  const bool hopper = cc_major >= 9;
  d->set_sm_count(hopper ? 132 : 108);
  d->set_cc_major(cc_major);
  d->set_cc_minor(0);
  d->set_max_threads_per_sm(2048);
  d->set_max_warps_per_sm(64);
  d->set_max_blocks_per_sm(32);
  d->set_max_threads_per_block(1024);
  d->set_registers_per_sm(65536);
  d->set_registers_per_block(65536);
  d->set_shared_memory_per_sm_bytes(hopper ? 233'472 : 167'936);
  d->set_shared_memory_per_block_bytes(49'152);
}

}  // namespace gpuhook::test
