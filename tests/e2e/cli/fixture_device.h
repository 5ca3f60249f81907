// The device record the fabricated test captures share (make_capture, make_costly): an
// A100-like GPU named "Fixture GPU", so that occupancy and wave figures have a device to use.
#pragma once

#include <gpuhook/capture.h>

namespace fixture {

inline void write_device(gpuhook::CaptureWriter& w) {
  gpuhook::v1::Record d;
  auto* dev = d.mutable_device();
  dev->set_ordinal(0);
  dev->set_name("Fixture GPU");
  dev->set_sm_count(108);
  dev->set_max_threads_per_sm(2048);
  dev->set_max_warps_per_sm(64);
  dev->set_max_blocks_per_sm(32);
  dev->set_registers_per_sm(65536);
  dev->set_shared_memory_per_sm_bytes(167936);
  dev->set_warp_size(32);
  w.write(d);
}

}  // namespace fixture
