// The flight recorder (GPUHOOK_FLIGHT=DURATION): the writer's chunks go to memory instead of
// a file, the last DURATION of them kept (at most GPUHOOK_FLIGHT_MB, the oldest let go), and
// written out as a capture of their own when a trigger fires: a signal, gpuhook_trigger(), a
// slow occurrence of an NVTX range (GPUHOOK_SLOW=NAME:FACTOR) or a fatal signal. The program
// runs on; each dump is its own file.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <gpuhook/capture.h>

namespace gpuhook::hook {

// The chunks of the last duration_ns, at most max_bytes, oldest first.
class FlightBuffer final : public FrameSink {
 public:
  FlightBuffer(uint64_t duration_ns, uint64_t max_bytes) : duration_ns_(duration_ns), max_bytes_(max_bytes) {}
  void frame(ChunkFrame&& f) override;
  // While a trigger waits for the writer, frames that reach back to `from_ns` stay (the byte
  // bound still wins): a writer that gets to the dump late still writes the duration before the
  // trigger. Triggers that join a waiting one hold from the earliest of them. Any thread,
  // async-signal-safe.
  void hold(uint64_t from_ns) {
    uint64_t seen = hold_ns_.load(std::memory_order_acquire);
    while ((seen == 0 || from_ns < seen) &&
           !hold_ns_.compare_exchange_weak(seen, from_ns, std::memory_order_acq_rel)) {
    }
  }
  uint64_t held() const { return hold_ns_.load(std::memory_order_acquire); }
  // After the dump: the hold it was written under goes, one set since stays.
  void release(uint64_t from_ns) { hold_ns_.compare_exchange_strong(from_ns, 0, std::memory_order_acq_rel); }
  const std::deque<ChunkFrame>& frames() const { return frames_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t frames_dropped() const { return frames_dropped_; }

 private:
  void trim();
  const uint64_t duration_ns_, max_bytes_;
  std::deque<ChunkFrame> frames_;
  uint64_t bytes_ = 0, newest_ns_ = 0, frames_dropped_ = 0;
  std::atomic<uint64_t> hold_ns_{0};
};

// GPUHOOK_SLOW=NAME:FACTOR, fed from the writer thread with the range records it drains (no
// cost on the program's threads): an occurrence of NAME longer than FACTOR times the median of
// the ones before it (the last kWindow, after kWarmup) is slow.
class SlowDetector {
 public:
  static constexpr size_t kWindow = 101, kWarmup = 20, kMaxDepth = 256, kMaxThreads = 4096;
  SlowDetector(std::string name, double factor) : name_(std::move(name)), factor_(factor) {}
  bool enabled() const { return !name_.empty(); }
  void push(uint64_t thread, std::string_view name, uint64_t t);
  // True when the occurrence this pop ends is slow; *why says which, how long, against what.
  bool pop(uint64_t thread, uint64_t t, std::string* why);
  uint64_t occurrences() const { return occurrences_; }

 private:
  struct Open {
    bool ours;
    uint64_t start;
  };
  const std::string name_;
  const double factor_;
  std::unordered_map<uint64_t, std::vector<Open>> stacks_;
  std::vector<uint64_t> recent_;  // the last kWindow durations, a ring
  size_t next_ = 0;
  uint64_t occurrences_ = 0;
};

}  // namespace gpuhook::hook
