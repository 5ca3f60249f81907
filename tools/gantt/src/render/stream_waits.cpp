// The drawn kernels' wait splits from a stream of records (stream_waits.h). Each step names
// the line of analysis::wait_causes() (waits.cpp) it reproduces.
#include "stream_waits.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace gantt::detail {

WaitContext::WaitContext(std::vector<WaitKernel> kernels) : kernels_(std::move(kernels)) {
  std::vector<size_t> order(kernels_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Equal launches or starts: the later in the file sorts later, as the loaded model's
  // stable sorts keep them.
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(kernels_[a].launch, kernels_[a].seq) < std::tie(kernels_[b].launch, kernels_[b].seq);
  });
  for (size_t i : order) {
    const WaitKernel& k = kernels_[i];
    ByLaunch& s = by_launch_[{k.device, k.stream}];
    s.launches.push_back(k.launch);
    s.kernel.push_back(i);
    s.own.push_back(true);
    for (uint32_t other : k.barrier_streams) {
      ByLaunch& o = by_launch_[{k.device, other}];
      o.launches.push_back(k.launch);
      o.kernel.push_back(i);
      o.own.push_back(false);
    }
  }
  for (auto& [key, s] : by_launch_) s.before.resize(s.kernel.size());
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(kernels_[a].start, kernels_[a].seq) < std::tie(kernels_[b].start, kernels_[b].seq);
  });
  for (size_t i : order) {
    ByStart& d = by_start_[kernels_[i].device];
    d.starts.push_back(kernels_[i].start);
    d.kernel.push_back(i);
  }
  for (auto& [device, d] : by_start_) d.before.resize(d.kernel.size());
}

// end_before(own, launch): the last operation launched before the kernel, the later in the
// file of equal launches. It goes to the first drawn kernel launched after it.
void WaitContext::offer_launch(uint32_t device, uint32_t stream, uint64_t launch, uint64_t seq, uint64_t end) {
  auto it = by_launch_.find({device, stream});
  if (it == by_launch_.end()) return;
  ByLaunch& s = it->second;
  const size_t j = static_cast<size_t>(std::upper_bound(s.launches.begin(), s.launches.end(), launch) - s.launches.begin());
  if (j == s.launches.size()) return;
  Pred& p = s.before[j];
  if (!p.set || std::tie(launch, seq) > std::tie(p.launch, p.seq)) p = {launch, seq, end, true};
}

// by_start's look-back: the latest kernels that started before the kernel. Each goes to
// the first drawn kernel that started after it; that bucket keeps its latest kWaitLookBack.
void WaitContext::offer_start(uint32_t device, uint32_t stream, int32_t priority, uint64_t seq, uint64_t start,
                              uint64_t end) {
  auto it = by_start_.find(device);
  if (it == by_start_.end()) return;
  ByStart& d = it->second;
  const size_t j = static_cast<size_t>(std::upper_bound(d.starts.begin(), d.starts.end(), start) - d.starts.begin());
  if (j == d.starts.size()) return;
  std::vector<Recent>& heap = d.before[j];
  const Recent r{start, seq, end, stream, priority};
  if (heap.size() < analysis::kWaitLookBack) {
    heap.push_back(r);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  } else if (r > heap.front()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    heap.back() = r;
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  }
}

void WaitContext::absorb(const WaitContext& other) {
  for (const auto& [key, s] : other.by_launch_)
    for (size_t j = 0; j < s.before.size(); ++j)
      if (s.before[j].set) offer_launch(key.first, key.second, s.before[j].launch, s.before[j].seq, s.before[j].end);
  for (const auto& [device, d] : other.by_start_)
    for (const std::vector<Recent>& heap : d.before)
      for (const Recent& r : heap) offer_start(device, r.stream, r.priority, r.seq, r.start, r.end);
}

std::map<uint64_t, analysis::WaitSplit> WaitContext::splits(const std::map<uint32_t, int32_t>& stream_priority) const {
  using analysis::WaitCause;
  const auto priority_of = [&](int32_t recorded, uint32_t stream) {
    if (recorded != 0) return recorded;
    auto it = stream_priority.find(stream);
    return it == stream_priority.end() ? 0 : it->second;
  };
  std::vector<uint64_t> prev_end(kernels_.size(), 0), dep_end(kernels_.size(), 0);
  for (const auto& [key, s] : by_launch_) {
    Pred best;
    for (size_t j = 0; j < s.kernel.size(); ++j) {
      const Pred& p = s.before[j];
      if (p.set && (!best.set || std::tie(p.launch, p.seq) > std::tie(best.launch, best.seq))) best = p;
      const uint64_t end = best.set ? best.end : 0;
      if (s.own[j]) prev_end[s.kernel[j]] = end;
      else dep_end[s.kernel[j]] = std::max(dep_end[s.kernel[j]], end);
    }
  }
  std::map<uint64_t, analysis::WaitSplit> out;
  for (const auto& [device, d] : by_start_) {
    for (size_t j = 0; j < d.kernel.size(); ++j) {
      const WaitKernel& k = kernels_[d.kernel[j]];
      analysis::WaitSplit w;
      auto add = [&](WaitCause c, uint64_t from, uint64_t to) {
        if (to > from) w.ns[static_cast<size_t>(c)] += to - from;
      };
      // 1. Its own stream's previous operation.
      const uint64_t q = k.queued, s = k.start;
      const uint64_t own_end = std::min(s, std::max(q, prev_end[d.kernel[j]]));
      add(WaitCause::kOwnStream, q, own_end);
      // 2. The legacy stream's barrier (stream_render refuses event waits).
      const uint64_t t = std::min(s, std::max(own_end, dep_end[d.kernel[j]]));
      add(WaitCause::kDependency, own_end, t);
      // 3. Ready: who held the device from then to its start.
      if (t < s) {
        bool higher = false, other = false;
        const int32_t mine = priority_of(k.priority, k.stream);
        size_t n = 0;
        for (size_t b = j + 1; b-- > 0 && n < analysis::kWaitLookBack;) {
          std::vector<Recent> latest = d.before[b];
          std::sort(latest.begin(), latest.end(), std::greater<>());
          for (const Recent& r : latest) {
            if (n++ == analysis::kWaitLookBack) break;
            if (r.end <= t) continue;
            other = true;
            if (priority_of(r.priority, r.stream) < mine) higher = true;  // CUDA: lower number = greater priority
          }
        }
        add(higher ? WaitCause::kPriority : other ? WaitCause::kDeviceFull : WaitCause::kLaunch, t, s);
      }
      out.emplace(k.seq, w);
    }
  }
  return out;
}

}  // namespace gantt::detail
