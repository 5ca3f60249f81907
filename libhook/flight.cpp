// The flight recorder's memory and its slow-occurrence trigger (flight.h).
#include "flight.h"

#include <algorithm>
#include <cstdio>

namespace gpuhook::hook {

void FlightBuffer::frame(ChunkFrame&& f) {
  if (f.max_ns > newest_ns_) newest_ns_ = f.max_ns;
  bytes_ += f.bytes.size();
  frames_.push_back(std::move(f));
  trim();
}

// The oldest frames go while the rest still hold the duration and no waiting trigger holds
// them, or over the memory bound: the newest frame always stays, even alone over the bound.
void FlightBuffer::trim() {
  while (frames_.size() > 1) {
    const ChunkFrame& oldest = frames_.front();
    const uint64_t hold = hold_ns_.load(std::memory_order_acquire);
    const bool too_old = newest_ns_ > duration_ns_ && frames_[1].min_ns != 0 && frames_[1].min_ns < newest_ns_ &&
                         oldest.max_ns < newest_ns_ - duration_ns_ && (hold == 0 || oldest.max_ns < hold);
    if (!too_old && bytes_ <= max_bytes_) break;
    bytes_ -= oldest.bytes.size();
    frames_.pop_front();
    ++frames_dropped_;
  }
}

void SlowDetector::push(uint64_t thread, std::string_view name, uint64_t t) {
  if (stacks_.size() >= kMaxThreads && stacks_.find(thread) == stacks_.end()) return;
  std::vector<Open>& stack = stacks_[thread];
  if (stack.size() < kMaxDepth) stack.push_back({name == name_, t});
}

bool SlowDetector::pop(uint64_t thread, uint64_t t, std::string* why) {
  auto it = stacks_.find(thread);
  if (it == stacks_.end() || it->second.empty()) return false;
  const Open open = it->second.back();
  it->second.pop_back();
  if (!open.ours || t < open.start) return false;
  const uint64_t duration = t - open.start;
  ++occurrences_;
  bool slow = false;
  if (recent_.size() >= kWarmup) {
    std::vector<uint64_t> sorted = recent_;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    const uint64_t median = sorted[sorted.size() / 2];
    if (median > 0 && static_cast<double>(duration) > factor_ * static_cast<double>(median)) {
      slow = true;
      char line[256];
      std::snprintf(line, sizeof line, "occurrence %llu of '%.80s' took %.3f ms, %.1fx the median %.3f ms of the last %zu",
                    static_cast<unsigned long long>(occurrences_), name_.c_str(), static_cast<double>(duration) / 1e6,
                    static_cast<double>(duration) / static_cast<double>(median), static_cast<double>(median) / 1e6,
                    recent_.size());
      *why = line;
    }
  }
  // A slow occurrence joins the median too: a run that turned slow for good stops firing.
  if (recent_.size() < kWindow) recent_.push_back(duration);
  else recent_[next_] = duration;
  next_ = (next_ + 1) % kWindow;
  return slow;
}

}  // namespace gpuhook::hook
