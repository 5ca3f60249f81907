// Clock alignment of GPU timestamps onto the host clock, within one capture.
//
// With the hook's CUPTI timestamp callback (Header.features & FEATURE_HOST_CLOCK_CALLBACK)
// CUPTI stamps GPU records with CLOCK_MONOTONIC_RAW: nothing to do. Otherwise CUPTI's GPU
// clock drifts from the host's (it is resynchronised only periodically), so the ClockSync
// (host_ns, gpu_ns) pairs are fitted per device by least squares:
//     host = gpu + offset_ns + drift * (gpu - reference_gpu_ns)
// and the residual is reported. Nothing is ever shifted without saying so: every output
// prints describe(alignment).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gantt {

enum class AlignMethod : uint8_t {
  kSharedClock = 0,  // host and GPU share one clock: no shift
  kFit = 1,          // least-squares fit of ClockSync pairs
  kNone = 2,         // no shared clock and no pairs: GPU times used as recorded (unaligned)
};

struct DeviceClockFit {
  uint32_t device = 0;
  uint64_t pairs = 0;
  double offset_ns = 0;          // host - gpu at reference_gpu_ns
  double drift = 0;              // d(host-gpu)/d(gpu), dimensionless (1e-6 = 1 ppm)
  uint64_t reference_gpu_ns = 0;
  double residual_rms_ns = 0;    // of the fit over its pairs
  double residual_max_ns = 0;
};

struct ClockAlignment {
  AlignMethod method = AlignMethod::kSharedClock;
  std::vector<DeviceClockFit> fits;  // kFit: one per device that had pairs, sorted by device

  // Maps a GPU time of `device` onto the host clock (0 stays 0).
  uint64_t to_host(uint32_t device, uint64_t gpu_ns) const;
};

struct ClockPair {
  uint32_t device = 0;
  uint64_t host_ns = 0;
  uint64_t gpu_ns = 0;
};

// Fits offset and drift per device. One pair gives an offset only (drift 0).
ClockAlignment fit_clocks(bool shared_clock, const std::vector<ClockPair>& pairs);

// One line for `info` and the chart footer, e.g. "shared clock (CUPTI timestamp callback)"
// or "fitted dev0: offset +1.234 ms, drift +2.1 ppm, residual 0.8 us rms (12 pairs)".
std::string describe(const ClockAlignment& alignment);

}  // namespace gantt
