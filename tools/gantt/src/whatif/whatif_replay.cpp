// The replay: times a whatif::Graph the way the model in whatif.h says a GPU would run it.
//
// A discrete-event loop. Host threads run ahead until a call waits for an op that has no end
// yet; then, of the ops at the head of their lanes whose launch and dependencies are timed,
// the one that could start earliest on what is already booked is placed (ties: the greater
// stream priority, then the earlier launch), as the simulator and the hardware's scheduler do:
// work that is ready early but finds the SMs full competes with what becomes ready meanwhile.
// A thread that waited on it may then run on. Ops are placed roughly in time order, so the
// SMs' and copy engines' bookings only ever need the recent past.
#include <algorithm>
#include <map>
#include <queue>
#include <stdexcept>
#include <unordered_map>

#include "gantt/whatif/whatif.h"

namespace gantt::whatif {

namespace {

constexpr uint64_t kUnset = 0;
constexpr double kShareSlack = 1e-9;

// Times are saturated, never wrapped: a hostile capture's durations cannot turn an end into
// an earlier time.
uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t nonneg(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }

// The SMs of one device: the share in use over time, as a step function (the share from
// each key to the next). Finding room is one sweep over the steps after the ready time.
class SmBook {
 public:
  SmBook() { used_[0] = 0; }
  // The earliest time >= `from` at which `share` more fits for `duration_ns`.
  uint64_t earliest_fit(uint64_t from, uint64_t duration_ns, double share) const {
    if (share <= 0) return from;
    uint64_t candidate = from;
    auto it = std::prev(used_.upper_bound(from));
    for (; it != used_.end(); ++it) {
      const auto next = std::next(it);
      const uint64_t seg_end = next == used_.end() ? UINT64_MAX : next->first;
      if (seg_end <= candidate) continue;
      if (it->first >= sat_add(candidate, std::max<uint64_t>(duration_ns, 1))) break;  // fits over the whole run
      if (it->second + share > 1 + kShareSlack) candidate = seg_end;                   // no room here: after it
      if (candidate == UINT64_MAX) break;
    }
    return candidate;
  }
  void book(uint64_t start_ns, uint64_t end_ns, double share) {
    if (share <= 0 || end_ns <= start_ns) return;
    split_at(start_ns);
    split_at(end_ns);
    for (auto it = used_.find(start_ns); it != used_.end() && it->first < end_ns; ++it) it->second += share;
  }
  // Steps that ended before `t` can no longer hold anything placed at or after it.
  void forget_before(uint64_t t) {
    auto it = std::prev(used_.upper_bound(t));  // the step in force at t
    if (it == used_.begin()) return;
    const double in_force = it->second;
    used_.erase(used_.begin(), std::next(it));
    used_[0] = in_force;
  }

 private:
  void split_at(uint64_t t) {
    auto it = used_.upper_bound(t);
    const double before = std::prev(it)->second;
    used_.emplace_hint(it, t, before);
  }
  std::map<uint64_t, double> used_;
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

// Lanes per op or per call, in one array: a vector each took 24 bytes and an allocation for
// every one of millions of ops and calls. `add(key, value)` is called twice over the same
// pairs in the same order: once to count, once to fill; each key's values keep that order.
class Lists {
 public:
  template <class Pairs>
  Lists(size_t keys, Pairs pairs) : first_(keys + 1, 0) {
    pairs([&](uint32_t key, uint32_t) { ++first_[key + 1]; });
    for (size_t k = 1; k < first_.size(); ++k) first_[k] += first_[k - 1];
    values_.resize(first_.back());
    std::vector<size_t> next(first_.begin(), first_.end() - 1);
    pairs([&](uint32_t key, uint32_t value) { values_[next[key]++] = value; });
  }
  struct Range {
    const uint32_t *b, *e;
    const uint32_t* begin() const { return b; }
    const uint32_t* end() const { return e; }
  };
  Range of(size_t key) const { return {values_.data() + first_[key], values_.data() + first_[key + 1]}; }

 private:
  std::vector<size_t> first_;
  std::vector<uint32_t> values_;
};

class Replayer {
 public:
  explicit Replayer(Graph& g)
      : g_(g),
        dependents_(g.ops.size(),
                    [&g](auto add) {
                      for (uint32_t i = 0; i < g.ops.size(); ++i)
                        for (uint32_t dep : g.ops[i].after)
                          if (dep < g.ops.size()) add(dep, g.ops[i].lane);
                    }),
        launched_(g.calls.size(), [&g](auto add) {
          for (uint32_t i = 0; i < g.ops.size(); ++i)
            if (g.ops[i].call < g.calls.size()) add(g.ops[i].call, g.ops[i].lane);
        }),
        peers_(g.ops.size(), [&g](auto add) {
          for (const auto& [a, z] : g.p2p)
            if (a < g.ops.size() && z < g.ops.size() && a != z) add(a, z), add(z, a);
        }) {
    lane_ops_.resize(g.lanes.size());
    for (uint32_t i = 0; i < g.ops.size(); ++i) {
      if (g.ops[i].lane >= g.lanes.size()) throw std::runtime_error("whatif: an operation has no stream");
      lane_ops_[g.ops[i].lane].push_back(i);
    }
    for (auto& ops : lane_ops_)
      std::stable_sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t b) { return g.ops[a].order < g.ops[b].order; });
    lane_head_.assign(g.lanes.size(), 0);
    lane_end_.assign(g.lanes.size(), 0);
    queued_.assign(g.lanes.size(), false);
    placed_.assign(g.ops.size(), false);
    arrived_.assign(g.ops.size(), false);
    timed_.assign(g.calls.size(), false);
    next_call_.assign(g.threads.size(), 0);
    clock_.resize(g.threads.size());
    for (size_t t = 0; t < g.threads.size(); ++t) clock_[t] = g.threads[t].first_ns;
    // A collective is coupled only when each of its ranks (one op per capture) is here.
    std::unordered_map<uint64_t, std::vector<uint32_t>> members;
    for (uint32_t i = 0; i < g.ops.size(); ++i)
      if (g.ops[i].collective != 0) members[g.ops[i].collective].push_back(i);
    for (const auto& [key, ranks] : g.collective_ranks) {
      auto m = members.find(key);
      if (m == members.end() || m->second.size() != ranks) continue;
      std::vector<uint16_t> captures;
      for (uint32_t op : m->second) captures.push_back(g.ops[op].capture);
      std::sort(captures.begin(), captures.end());
      if (std::adjacent_find(captures.begin(), captures.end()) != captures.end()) continue;
      members_[key] = m->second;
    }
  }

  void run() {
    size_t remaining = g_.ops.size();
    for (size_t t = 0; t < g_.threads.size(); ++t) run_thread(t);
    for (uint32_t lane = 0; lane < g_.lanes.size(); ++lane) consider(lane);
    while (remaining > 0) {
      if (ready_.empty()) throw std::runtime_error(stuck_message());
      const Ready r = ready_.top();
      ready_.pop();
      // A key is a lower bound on when its op can start (bookings only ever add load), so the
      // first op whose key is still its start is the one that could start earliest.
      const uint64_t start = earliest_start(r.op, r.at);
      if (start > r.at) {
        ready_.push({start, r.priority, r.order, r.op, r.lane});
        continue;
      }
      queued_[r.lane] = false;
      remaining -= place(r.op, start);
    }
    for (size_t t = 0; t < g_.threads.size(); ++t)
      if (next_call_[t] < g_.threads[t].calls.size()) throw std::runtime_error(stuck_message());
  }

 private:
  struct Ready {
    uint64_t at;
    int32_t priority;
    uint64_t order;
    uint32_t op, lane;
    // std::priority_queue pops the greatest: the earliest, then the greater stream priority,
    // then the earlier launch.
    bool operator<(const Ready& o) const {
      if (at != o.at) return at > o.at;
      if (priority != o.priority) return priority < o.priority;
      return order > o.order;
    }
  };

  // Runs a host thread until it finishes or waits for an op not yet placed.
  void run_thread(size_t t) {
    const Thread& thread = g_.threads[t];
    while (next_call_[t] < thread.calls.size()) {
      const uint32_t index = thread.calls[next_call_[t]];
      HostCall& c = g_.calls[index];
      if (!timed_[index]) {
        // The host work before it happens whether or not the call stays; a removed call
        // takes no time of its own. Started before it waits: the work it launches itself
        // (a cudaMemcpy's copy) needs its start.
        c.start_ns = sat_add(clock_[t], nonneg(c.gap_ns));
        timed_[index] = true;
        for (uint32_t lane : launched_.of(index)) consider(lane);
        if (c.removed) {
          c.end_ns = c.start_ns;
          clock_[t] = c.end_ns;
          ++next_call_[t];
          continue;
        }
      }
      uint64_t waited_until = 0;
      for (uint32_t op : c.waits) {
        if (op >= g_.ops.size()) continue;
        if (!placed_[op]) {
          waiting_[op].push_back(static_cast<uint32_t>(t));
          return;
        }
        waited_until = std::max(waited_until, g_.ops[op].end_ns);
      }
      c.end_ns = sat_add(c.start_ns, nonneg(c.cost_ns));
      if (waited_until != 0) c.end_ns = std::max(c.end_ns, sat_add(waited_until, nonneg(c.post_wait_ns)));
      clock_[t] = c.end_ns;
      ++next_call_[t];
    }
  }

  // Queues the lane's head op if everything it needs is placed (its time is then final).
  void consider(uint32_t lane) {
    if (queued_[lane] || lane_head_[lane] >= lane_ops_[lane].size()) return;
    const uint32_t op = lane_ops_[lane][lane_head_[lane]];
    if (arrived_[op]) return;  // a collective waiting for its other ranks
    const GpuOp& o = g_.ops[op];
    uint64_t t = o.orig_start_ns;
    if (o.call != kNone) {
      if (o.call >= g_.calls.size() || !timed_[o.call]) return;
      t = sat_add(g_.calls[o.call].start_ns, nonneg(o.ready_offset_ns));
    }
    t = std::max(t, lane_end_[lane]);
    for (uint32_t dep : o.after) {
      if (dep >= g_.ops.size()) continue;
      if (!placed_[dep]) return;
      t = std::max(t, g_.ops[dep].end_ns);
    }
    queued_[lane] = true;
    ready_.push({t, g_.lanes[lane].priority, o.order, op, lane});
  }

  // When `op`, ready at `at`, could start on what is booked now: the arrival for a rank of a
  // collective, else once its copy engine is free and its share of the SMs fits for its whole
  // run.
  uint64_t earliest_start(uint32_t op, uint64_t at) const {
    const GpuOp& o = g_.ops[op];
    if (o.collective != 0 && members_.count(o.collective) != 0) return at;
    if (peers_.of(op).begin() != peers_.of(op).end()) return at;
    const auto d = devices_.find({o.capture, g_.lanes[o.lane].device});
    if (d == devices_.end()) return at;
    uint64_t start = at;
    if (o.engine >= 0 && o.engine < kEngines) start = std::max(start, d->second.engine_free_ns[o.engine]);
    const double share = std::min(o.sm_share, 1.0);
    if (share > 0) start = d->second.sms.earliest_fit(start, nonneg(o.duration_ns), share);
    return start;
  }

  // Places `op` at `start`, where earliest_start() found room for it (and, for the last rank
  // of a collective, all of it); returns how many ops.
  size_t place(uint32_t op, uint64_t start) {
    GpuOp& o = g_.ops[op];
    auto m = o.collective != 0 ? members_.find(o.collective) : members_.end();
    if (m != members_.end()) {
      o.start_ns = start;
      arrived_[op] = true;
      uint64_t last_arrival = 0;
      for (uint32_t x : m->second) {
        if (!arrived_[x]) return 0;
        last_arrival = std::max(last_arrival, g_.ops[x].start_ns);
      }
      for (uint32_t x : m->second) {
        GpuOp& xo = g_.ops[x];
        xo.end_ns = std::max(sat_add(last_arrival, nonneg(xo.transfer_ns)), xo.start_ns);
        finish(x);
      }
      return m->second.size();
    }
    if (peers_.of(op).begin() != peers_.of(op).end()) {
      o.start_ns = start;
      arrived_[op] = true;
      size_t ended = end_if_met(op);
      for (uint32_t peer : peers_.of(op)) ended += end_if_met(peer);
      return ended;
    }
    DeviceState& dev = devices_[{o.capture, g_.lanes[o.lane].device}];
    const uint64_t duration = nonneg(o.duration_ns);
    const double share = std::min(o.sm_share, 1.0);
    if (share > 0) {
      dev.sms.forget_before(start);
      dev.sms.book(start, sat_add(start, std::max<uint64_t>(duration, 1)), share);
    }
    o.start_ns = start;
    o.end_ns = sat_add(start, duration);
    if (o.engine >= 0 && o.engine < kEngines) dev.engine_free_ns[o.engine] = o.end_ns;
    finish(op);
    return 1;
  }

  // A point-to-point op that has arrived ends once all its peers have: at the last arrival plus
  // its transfer. Returns 1 when it ended now.
  size_t end_if_met(uint32_t op) {
    if (!arrived_[op] || placed_[op]) return 0;
    uint64_t last_arrival = g_.ops[op].start_ns;
    for (uint32_t peer : peers_.of(op)) {
      if (!arrived_[peer]) return 0;
      last_arrival = std::max(last_arrival, g_.ops[peer].start_ns);
    }
    GpuOp& o = g_.ops[op];
    o.end_ns = sat_add(last_arrival, nonneg(o.transfer_ns));
    finish(op);
    return 1;
  }

  void finish(uint32_t op) {
    placed_[op] = true;
    const uint32_t lane = g_.ops[op].lane;
    lane_end_[lane] = std::max(lane_end_[lane], g_.ops[op].end_ns);
    ++lane_head_[lane];
    consider(lane);
    for (uint32_t l : dependents_.of(op)) consider(l);
    auto w = waiting_.find(op);
    if (w == waiting_.end()) return;
    std::vector<uint32_t> threads;
    threads.swap(w->second);
    waiting_.erase(w);
    for (uint32_t t : threads) run_thread(t);
  }

  std::string stuck_message() const {
    for (size_t t = 0; t < g_.threads.size(); ++t)
      if (next_call_[t] < g_.threads[t].calls.size()) {
        const HostCall& c = g_.calls[g_.threads[t].calls[next_call_[t]]];
        return "whatif: the replay cannot go on: thread " + std::to_string(g_.threads[t].thread_id) + " waits in " +
               c.name.str() + " for work that can never run (a collective or a send without all its ranks, or a cycle)";
      }
    return "whatif: the replay cannot go on: an operation waits for work that can never run";
  }

  Graph& g_;
  std::vector<std::vector<uint32_t>> lane_ops_;
  std::vector<size_t> lane_head_;
  std::vector<uint64_t> lane_end_;
  std::vector<bool> queued_;   // per lane: its head is in ready_
  std::vector<bool> placed_, arrived_;
  std::vector<bool> timed_;    // per call: its start is known (it may still wait)
  std::vector<size_t> next_call_;
  std::vector<uint64_t> clock_;
  Lists dependents_;  // op -> lanes with an op after it
  Lists launched_;    // call -> lanes of the ops it launched
  Lists peers_;       // op -> the ops it sends to or receives from (Graph::p2p)
  std::unordered_map<uint32_t, std::vector<uint32_t>> waiting_;  // op -> threads waiting for it (few at a time)
  std::priority_queue<Ready> ready_;
  std::map<DeviceKey, DeviceState> devices_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> members_;
};

// Spans of every capture in one pass over the graph.
template <class Start, class End>
std::vector<Span> spans_of(const Graph& g, bool with_removed, Start start, End end) {
  uint16_t captures = 0;
  for (const Thread& t : g.threads) captures = std::max<uint16_t>(captures, static_cast<uint16_t>(t.capture + 1));
  for (const GpuOp& o : g.ops) captures = std::max<uint16_t>(captures, static_cast<uint16_t>(o.capture + 1));
  std::vector<Span> spans(captures);
  auto add = [&](uint16_t capture, uint64_t a, uint64_t b) {
    Span& s = spans[capture];
    if (a != kUnset && (s.first_ns == 0 || a < s.first_ns)) s.first_ns = a;
    if (b != kUnset && b > s.last_ns) s.last_ns = b;
  };
  for (const HostCall& c : g.calls)
    if (with_removed || !c.removed) add(g.threads[c.thread].capture, start(c), end(c));
  for (const GpuOp& o : g.ops) add(o.capture, start(o), end(o));
  return spans;
}

}  // namespace

void replay(Graph& graph) { Replayer(graph).run(); }

std::vector<Span> original_spans(const Graph& graph) {
  return spans_of(graph, true, [](const auto& x) { return x.orig_start_ns; }, [](const auto& x) { return x.orig_end_ns; });
}

std::vector<Span> replayed_spans(const Graph& graph) {
  return spans_of(graph, false, [](const auto& x) { return x.start_ns; }, [](const auto& x) { return x.end_ns; });
}

Span original_span(const Graph& graph, uint16_t capture) {
  const std::vector<Span> all = original_spans(graph);
  return capture < all.size() ? all[capture] : Span{};
}

Span replayed_span(const Graph& graph, uint16_t capture) {
  const std::vector<Span> all = replayed_spans(graph);
  return capture < all.size() ? all[capture] : Span{};
}

}  // namespace gantt::whatif
