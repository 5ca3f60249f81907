// The replay: times a whatif::Graph the way the model in whatif.h says a GPU would run it.
//
// A discrete-event loop. Host threads run ahead until a call waits for an op that has no end
// yet; then, of the ops at the head of their lanes whose launch and dependencies are timed,
// the one that could start earliest is placed (ties: the greater stream priority, then the
// earlier launch), as the simulator and the hardware's scheduler do. A thread that waited on
// it may then run on. Ops are placed roughly in time order, so the SMs' and copy engines'
// bookings only ever need the recent past.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "gantt/whatif.h"

namespace gantt::whatif {

namespace {

constexpr uint64_t kUnset = 0;
constexpr double kShareSlack = 1e-9;

// The SMs of one device: the kernels placed on it and the share each holds.
class SmBook {
 public:
  // The earliest time >= `from` at which `share` more fits for `duration_ns`.
  uint64_t earliest_fit(uint64_t from, int64_t duration_ns, double share) const {
    if (share <= 0) return from;
    std::vector<uint64_t> candidates{from};
    for (const Booking& b : booked_)
      if (b.end_ns > from) candidates.push_back(b.end_ns);
    std::sort(candidates.begin(), candidates.end());
    for (uint64_t t : candidates)
      if (fits(t, t + static_cast<uint64_t>(std::max<int64_t>(duration_ns, 1)), share)) return t;
    return candidates.back();  // after every booking ends, everything fits
  }
  void book(uint64_t start_ns, uint64_t end_ns, double share) {
    if (share > 0) booked_.push_back({start_ns, std::max(end_ns, start_ns + 1), share});
  }
  // Bookings that ended before `t` can no longer hold anything placed at or after it.
  void forget_before(uint64_t t) {
    if (booked_.size() < 256) return;
    booked_.erase(std::remove_if(booked_.begin(), booked_.end(), [t](const Booking& b) { return b.end_ns <= t; }),
                  booked_.end());
  }

 private:
  struct Booking {
    uint64_t start_ns, end_ns;
    double share;
  };
  // The share in use is greatest at `from` or at a booking's start inside [from, to).
  bool fits(uint64_t from, uint64_t to, double share) const {
    auto used_at = [&](uint64_t t) {
      double used = 0;
      for (const Booking& b : booked_)
        if (b.start_ns <= t && t < b.end_ns) used += b.share;
      return used;
    };
    if (used_at(from) + share > 1 + kShareSlack) return false;
    for (const Booking& b : booked_)
      if (b.start_ns > from && b.start_ns < to && used_at(b.start_ns) + share > 1 + kShareSlack) return false;
    return true;
  }
  std::vector<Booking> booked_;
};

struct DeviceKey {
  uint16_t capture;
  uint32_t device;
  bool operator<(const DeviceKey& o) const { return capture != o.capture ? capture < o.capture : device < o.device; }
};

struct DeviceState {
  SmBook sms;
  uint64_t engine_free_ns[kEngines] = {};
};

class Replayer {
 public:
  explicit Replayer(Graph& g) : g_(g) {
    lane_ops_.resize(g.lanes.size());
    for (uint32_t i = 0; i < g.ops.size(); ++i) {
      if (g.ops[i].lane >= g.lanes.size()) throw std::runtime_error("whatif: an operation has no stream");
      lane_ops_[g.ops[i].lane].push_back(i);
    }
    for (auto& ops : lane_ops_)
      std::stable_sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t b) { return g.ops[a].order < g.ops[b].order; });
    lane_head_.assign(g.lanes.size(), 0);
    lane_end_.assign(g.lanes.size(), 0);
    placed_.assign(g.ops.size(), false);
    arrived_.assign(g.ops.size(), false);
    next_call_.assign(g.threads.size(), 0);
    timed_.assign(g.calls.size(), false);
    clock_.resize(g.threads.size());
    for (size_t t = 0; t < g.threads.size(); ++t) clock_[t] = g.threads[t].first_ns;
    for (const auto& [key, ranks] : g.collective_ranks) needed_[key] = ranks;
    for (uint32_t i = 0; i < g.ops.size(); ++i)
      if (g.ops[i].collective != 0) members_[g.ops[i].collective].push_back(i);
    for (auto it = needed_.begin(); it != needed_.end();) {  // a collective missing a rank keeps its measured time
      auto m = members_.find(it->first);
      if (m == members_.end() || m->second.size() != it->second) it = needed_.erase(it);
      else ++it;
    }
  }

  void run() {
    size_t remaining = g_.ops.size();
    for (;;) {
      run_threads();
      if (remaining == 0) break;
      uint32_t best = kNone;
      uint64_t best_at = 0;
      for (uint32_t lane = 0; lane < g_.lanes.size(); ++lane) {
        if (lane_head_[lane] >= lane_ops_[lane].size()) continue;
        const uint32_t op = lane_ops_[lane][lane_head_[lane]];
        if (arrived_[op]) continue;  // a collective waiting for its other ranks
        uint64_t at = 0;
        if (!earliest(op, &at)) continue;
        if (best == kNone || at < best_at || (at == best_at && better(op, best))) best = op, best_at = at;
      }
      if (best == kNone) throw std::runtime_error(stuck_message());
      remaining -= place(best, best_at);
    }
    run_threads();
    for (size_t t = 0; t < g_.threads.size(); ++t)
      if (next_call_[t] < g_.threads[t].calls.size()) throw std::runtime_error(stuck_message());
  }

 private:
  // Runs every host thread until it finishes or waits for an op not yet placed.
  void run_threads() {
    for (size_t t = 0; t < g_.threads.size(); ++t) {
      const Thread& thread = g_.threads[t];
      while (next_call_[t] < thread.calls.size()) {
        HostCall& c = g_.calls[thread.calls[next_call_[t]]];
        if (c.removed) {  // the host work before it still happens; the call itself is gone
          clock_[t] += static_cast<uint64_t>(std::max<int64_t>(c.gap_ns, 0));
          c.start_ns = c.end_ns = clock_[t];
          ++next_call_[t];
          continue;
        }
        // Started before it waits: the work it launches itself (a cudaMemcpy's copy) needs its start.
        const uint32_t index = thread.calls[next_call_[t]];
        if (!timed_[index]) {
          c.start_ns = clock_[t] + static_cast<uint64_t>(std::max<int64_t>(c.gap_ns, 0));
          timed_[index] = true;
        }
        uint64_t waited_until = 0;
        bool blocked = false;
        for (uint32_t op : c.waits) {
          if (!placed_[op]) {
            blocked = true;
            break;
          }
          waited_until = std::max(waited_until, g_.ops[op].end_ns);
        }
        if (blocked) break;
        c.end_ns = c.start_ns + static_cast<uint64_t>(std::max<int64_t>(c.cost_ns, 0));
        if (waited_until != 0)
          c.end_ns = std::max(c.end_ns, waited_until + static_cast<uint64_t>(std::max<int64_t>(c.post_wait_ns, 0)));
        clock_[t] = c.end_ns;
        ++next_call_[t];
      }
    }
  }

  // When `op` could start, if its launch and everything before it are placed.
  bool earliest(uint32_t op, uint64_t* at) const {
    const GpuOp& o = g_.ops[op];
    uint64_t t = 0;
    if (o.call != kNone) {
      if (!timed_[o.call]) return false;
      t = g_.calls[o.call].start_ns + static_cast<uint64_t>(std::max<int64_t>(o.ready_offset_ns, 0));
    } else {
      t = o.orig_start_ns;
    }
    t = std::max(t, lane_end_[o.lane]);
    for (uint32_t dep : o.after) {
      if (!placed_[dep]) return false;
      t = std::max(t, g_.ops[dep].end_ns);
    }
    *at = t;
    return true;
  }

  bool better(uint32_t a, uint32_t b) const {
    const int32_t pa = g_.lanes[g_.ops[a].lane].priority, pb = g_.lanes[g_.ops[b].lane].priority;
    if (pa != pb) return pa > pb;
    return g_.ops[a].order < g_.ops[b].order;
  }

  // Places `op` (and, for the last rank of a collective, all of it); returns how many ops.
  size_t place(uint32_t op, uint64_t at) {
    GpuOp& o = g_.ops[op];
    DeviceState& dev = devices_[{o.capture, g_.lanes[o.lane].device}];
    if (o.collective != 0 && needed_.count(o.collective)) {
      o.start_ns = at;
      arrived_[op] = true;
      const auto& members = members_[o.collective];
      uint64_t last_arrival = 0;
      for (uint32_t m : members) {
        if (!arrived_[m]) return 0;
        last_arrival = std::max(last_arrival, g_.ops[m].start_ns);
      }
      for (uint32_t m : members) {
        GpuOp& mo = g_.ops[m];
        mo.end_ns = std::max(last_arrival + static_cast<uint64_t>(std::max<int64_t>(mo.transfer_ns, 0)), mo.start_ns);
        finish(m);
      }
      return members.size();
    }
    uint64_t start = at;
    const uint64_t duration = static_cast<uint64_t>(std::max<int64_t>(o.duration_ns, 0));
    if (o.engine >= 0 && o.engine < kEngines) start = std::max(start, dev.engine_free_ns[o.engine]);
    if (o.sm_share > 0) {
      dev.sms.forget_before(at);
      start = dev.sms.earliest_fit(start, o.duration_ns, std::min(o.sm_share, 1.0));
      dev.sms.book(start, start + duration, std::min(o.sm_share, 1.0));
    }
    o.start_ns = start;
    o.end_ns = start + duration;
    if (o.engine >= 0 && o.engine < kEngines) dev.engine_free_ns[o.engine] = o.end_ns;
    finish(op);
    return 1;
  }

  void finish(uint32_t op) {
    placed_[op] = true;
    const uint32_t lane = g_.ops[op].lane;
    lane_end_[lane] = std::max(lane_end_[lane], g_.ops[op].end_ns);
    ++lane_head_[lane];
  }

  std::string stuck_message() const {
    for (size_t t = 0; t < g_.threads.size(); ++t)
      if (next_call_[t] < g_.threads[t].calls.size()) {
        const HostCall& c = g_.calls[g_.threads[t].calls[next_call_[t]]];
        return "whatif: the replay cannot go on: thread " + std::to_string(g_.threads[t].thread_id) + " waits in " +
               c.name + " for work that can never run (a collective without all its ranks, or a cycle)";
      }
    return "whatif: the replay cannot go on: an operation waits for work that can never run";
  }

  Graph& g_;
  std::vector<std::vector<uint32_t>> lane_ops_;
  std::vector<size_t> lane_head_;
  std::vector<uint64_t> lane_end_;
  std::vector<bool> placed_, arrived_;
  std::vector<bool> timed_;  // per call: its start is known (it may still wait)
  std::vector<size_t> next_call_;
  std::vector<uint64_t> clock_;
  std::map<DeviceKey, DeviceState> devices_;
  std::unordered_map<uint64_t, uint32_t> needed_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> members_;
};

template <class Start, class End>
Span span_of(const Graph& g, uint16_t capture, bool with_removed, Start start, End end) {
  Span s;
  auto add = [&](uint64_t a, uint64_t b) {
    if (a != kUnset && (s.first_ns == 0 || a < s.first_ns)) s.first_ns = a;
    if (b != kUnset && b > s.last_ns) s.last_ns = b;
  };
  for (const HostCall& c : g.calls)
    if (g.threads[c.thread].capture == capture && (with_removed || !c.removed)) add(start(c), end(c));
  for (const GpuOp& o : g.ops)
    if (o.capture == capture) add(start(o), end(o));
  return s;
}

}  // namespace

void replay(Graph& graph) { Replayer(graph).run(); }

Span original_span(const Graph& graph, uint16_t capture) {
  return span_of(graph, capture, true, [](const auto& x) { return x.orig_start_ns; }, [](const auto& x) { return x.orig_end_ns; });
}

Span replayed_span(const Graph& graph, uint16_t capture) {
  return span_of(graph, capture, false, [](const auto& x) { return x.start_ns; }, [](const auto& x) { return x.end_ns; });
}

}  // namespace gantt::whatif
