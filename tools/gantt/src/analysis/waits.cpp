// Why each launch waited (analysis/waits.h).
#include "gantt/analysis/waits.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "gantt/analysis/table.h"
#include "gantt/model/json.h"

namespace gantt::analysis {

namespace {

constexpr size_t kLookBack = kWaitLookBack;

struct Op {
  uint32_t event;
  uint64_t launch, start, end;
  uint32_t corr = 0;  // the launching call's correlation id: call order within a process
};

// The hook's default API set leaves cudaEventRecord and cudaStreamWaitEvent out of the host
// calls it records, but CUPTI still gives their CUDA_EVENT and SYNCHRONIZATION records the
// calls' correlation ids, which count up in call order within a process: the order that
// places an event's record and its waits among the launches.
uint32_t end_index_before_corr(const std::vector<Op>& by_corr, uint32_t corr) {
  auto it = std::lower_bound(by_corr.begin(), by_corr.end(), corr, [](const Op& o, uint32_t v) { return o.corr < v; });
  return it == by_corr.begin() ? kNone : static_cast<uint32_t>(it - by_corr.begin() - 1);
}

// cudaEventRecord calls per (capture, event id), in call order: which record a later wait on
// the event refers to (the last one called before it).
class EventRecords {
 public:
  explicit EventRecords(const Model& m) {
    for (size_t i = 0; i < m.cuda_events.size(); ++i)
      by_event_[{m.cuda_events.capture[i], m.cuda_events.event_id[i]}].emplace_back(m.cuda_events.correlation_id[i],
                                                                                   static_cast<uint32_t>(i));
    for (auto& [key, v] : by_event_) std::sort(v.begin(), v.end());
  }
  // The record's row in Model::cuda_events and its correlation id, or false when none.
  bool before(uint16_t capture, uint32_t event_id, uint32_t corr, uint32_t* row, uint32_t* record_corr) const {
    auto it = by_event_.find({capture, event_id});
    if (it == by_event_.end()) return false;
    auto r = std::lower_bound(it->second.begin(), it->second.end(), std::make_pair(corr, uint32_t{0}));
    if (r == it->second.begin()) return false;
    *record_corr = (r - 1)->first;
    *row = (r - 1)->second;
    return true;
  }

 private:
  std::map<std::pair<uint16_t, uint32_t>, std::vector<std::pair<uint32_t, uint32_t>>> by_event_;  // (corr, row)
};

// One device of one capture: its operations per stream in launch order, and all of them in
// start order.
struct Device {
  std::map<uint32_t, std::vector<Op>> by_stream;       // launch order
  std::map<uint32_t, std::vector<Op>> by_stream_corr;  // call order (correlation ids), ops that have one
  std::vector<Op> by_start;
  // The legacy stream's barrier, by the launch of each of its ops: the latest end, over the
  // blocking streams, of each one's last op launched before it (legacy_barrier()).
  std::vector<std::pair<uint64_t, uint64_t>> legacy_barrier;  // (launch, end), launch order
};

uint64_t launch_of(const Model& m, uint32_t e) {
  const uint64_t l = m.launch_ns(e);
  if (l) return l;
  return m.events.queued_ns[e] ? m.events.queued_ns[e] : m.events.start_ns[e];
}

// The end of the last op of `ops` (launch order) launched before `t`, 0 when none.
uint64_t end_before(const std::vector<Op>& ops, uint64_t t) {
  auto it = std::lower_bound(ops.begin(), ops.end(), t, [](const Op& o, uint64_t v) { return o.launch < v; });
  return it == ops.begin() ? 0 : (it - 1)->end;
}

// Fills d.legacy_barrier in one sweep of the blocking streams' ops in launch order, keeping
// each stream's last end in a multiset: n log n. Asking every stream for each legacy launch
// made render grow with kernels x streams (72.2 s on a 78 KB capture of 60,000 streams).
template <typename Blocking>
void legacy_barrier(Device& d, Blocking blocking) {
  auto legacy = d.by_stream.find(kLegacyStreamId);
  if (legacy == d.by_stream.end()) return;
  std::vector<std::pair<uint64_t, const Op*>> ops;  // (launch, op), of the blocking streams
  std::vector<uint32_t> stream_of;
  for (const auto& [stream, list] : d.by_stream)
    if (stream != kLegacyStreamId && blocking(stream))
      for (const Op& op : list) {
        ops.emplace_back(op.launch, &op);
        stream_of.push_back(stream);
      }
  std::vector<size_t> order(ops.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Launch order; within a stream its own order (by_stream is sorted stably by launch).
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ops[a].first < ops[b].first; });
  std::unordered_map<uint32_t, uint64_t> last_end;  // stream -> its last op's end so far
  std::multiset<uint64_t> ends;
  size_t next = 0;
  for (const Op& op : legacy->second) {
    for (; next < order.size() && ops[order[next]].first < op.launch; ++next) {
      const uint32_t stream = stream_of[order[next]];
      auto [it, fresh] = last_end.try_emplace(stream, 0);
      if (!fresh) ends.erase(ends.find(it->second));
      it->second = ops[order[next]].second->end;
      ends.insert(it->second);
    }
    d.legacy_barrier.emplace_back(op.launch, ends.empty() ? 0 : *ends.rbegin());
  }
}

}  // namespace

const char* to_string(WaitCause cause) {
  switch (cause) {
    case WaitCause::kOwnStream: return "own stream";
    case WaitCause::kDependency: return "event or legacy stream";
    case WaitCause::kPriority: return "higher-priority work";
    case WaitCause::kDeviceFull: return "device full";
    case WaitCause::kLaunch: return "launch";
  }
  return "?";
}

WaitCause WaitSplit::largest() const {
  size_t best = 0;
  for (size_t i = 1; i < kWaitCauses; ++i)
    if (ns[i] > ns[best]) best = i;
  return static_cast<WaitCause>(best);
}

WaitCause WaitSplit::largest_not_own() const {
  size_t best = static_cast<size_t>(WaitCause::kPriority);
  for (size_t i = best + 1; i < kWaitCauses; ++i)
    if (ns[i] > ns[best]) best = i;
  return static_cast<WaitCause>(best);
}

std::vector<WaitSplit> wait_causes(const Model& m, const std::vector<uint32_t>& events) {
  const EventTable& ev = m.events;
  std::vector<uint32_t> wanted;
  for (uint32_t e : events)
    if (e < ev.size() && ev.kind[e] == EventKind::kKernel && ev.queued_ns[e] && ev.start_ns[e] > ev.queued_ns[e] &&
        ev.end_ns[e] >= ev.start_ns[e])
      wanted.push_back(e);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<WaitSplit> out;
  if (wanted.empty()) return out;

  using Key = std::pair<uint16_t, uint32_t>;
  std::map<Key, Device> devices;
  for (uint32_t e = 0; e < ev.size(); ++e) {
    if (ev.kind[e] == EventKind::kSync || ev.kind[e] == EventKind::kHostFunc || !ev.start_ns[e] || ev.end_ns[e] < ev.start_ns[e])
      continue;
    Device& d = devices[{ev.capture[e], ev.device[e]}];
    const Op op{e, launch_of(m, e), ev.start_ns[e], ev.end_ns[e], ev.correlation_id[e]};
    d.by_stream[ev.stream[e]].push_back(op);
    d.by_stream_corr[ev.stream[e]];  // every stream has a list, maybe empty
    if (op.corr != 0) d.by_stream_corr[ev.stream[e]].push_back(op);
    if (ev.kind[e] == EventKind::kKernel || ev.kind[e] == EventKind::kNccl) d.by_start.push_back(op);
  }
  for (auto& [key, d] : devices) {
    for (auto& [stream, ops] : d.by_stream)
      std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.launch < b.launch; });
    for (auto& [stream, ops] : d.by_stream_corr)
      std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.corr < b.corr; });
    std::stable_sort(d.by_start.begin(), d.by_start.end(), [](const Op& a, const Op& b) { return a.start < b.start; });
  }
  // Streams as created: non-blocking ones do not sync with the legacy stream.
  std::map<std::pair<uint16_t, uint32_t>, bool> non_blocking;
  for (size_t i = 0; i < m.streams.size(); ++i)
    non_blocking[{m.streams.capture[i], m.streams.stream[i]}] = (m.streams.flags[i] & 0xFFFF) == StreamTable::kNonBlocking;
  auto blocking = [&](uint16_t capture, uint32_t stream) {
    if (stream == kLegacyStreamId) return false;
    auto nb = non_blocking.find({capture, stream});
    return nb == non_blocking.end() || !nb->second;
  };
  for (auto& [key, d] : devices)
    legacy_barrier(d, [&, capture = key.first](uint32_t stream) { return blocking(capture, stream); });
  // cudaStreamWaitEvent calls per (capture, waiting stream), by correlation id (call order).
  const EventRecords records(m);
  std::map<std::pair<uint16_t, uint32_t>, std::vector<std::pair<uint32_t, uint32_t>>> waits;  // (corr, row)
  for (size_t i = 0; i < m.stream_waits.size(); ++i)
    if (m.stream_waits.correlation_id[i] != 0)
      waits[{m.stream_waits.capture[i], m.stream_waits.stream[i]}].emplace_back(m.stream_waits.correlation_id[i],
                                                                                static_cast<uint32_t>(i));
  for (auto& [key, v] : waits) std::sort(v.begin(), v.end());

  out.reserve(wanted.size());
  for (uint32_t e : wanted) {
    auto dit = devices.find({ev.capture[e], ev.device[e]});
    if (dit == devices.end()) continue;
    const Device& d = dit->second;
    const uint16_t capture = ev.capture[e];
    const uint32_t stream = ev.stream[e];
    const uint64_t q = ev.queued_ns[e], s = ev.start_ns[e], launch = launch_of(m, e);
    WaitSplit w;
    w.event = e;
    auto add = [&](WaitCause c, uint64_t from, uint64_t to) {
      if (to > from) w.ns[static_cast<size_t>(c)] += to - from;
    };
    // 1. Its own stream's previous operation.
    uint64_t t = q;
    auto own_it = d.by_stream.find(stream);
    if (own_it == d.by_stream.end()) continue;
    const std::vector<Op>& own = own_it->second;
    const uint64_t prev_end = end_before(own, launch);
    const uint64_t own_end = std::min(s, std::max(q, prev_end));
    add(WaitCause::kOwnStream, t, own_end);
    t = own_end;
    // 2. What it was told to wait for: events, and the legacy stream's barrier.
    uint64_t dep_end = 0;
    // The legacy stream waits for every blocking stream's work launched before it; a blocking
    // stream waits for the legacy stream's.
    if (stream == kLegacyStreamId) {
      auto b = std::lower_bound(d.legacy_barrier.begin(), d.legacy_barrier.end(), std::make_pair(launch, uint64_t{0}));
      if (b != d.legacy_barrier.end() && b->first == launch) dep_end = std::max(dep_end, b->second);
    } else if (blocking(capture, stream)) {
      if (auto legacy = d.by_stream.find(kLegacyStreamId); legacy != d.by_stream.end())
        dep_end = std::max(dep_end, end_before(legacy->second, launch));
    }
    if (auto wv = waits.find({capture, stream}); wv != waits.end() && ev.correlation_id[e] != 0) {
      // The waits issued since its stream's previous launch (earlier ones held that one too).
      const auto& own_corr = d.by_stream_corr.at(stream);
      const uint32_t prev = end_index_before_corr(own_corr, ev.correlation_id[e]);
      const uint32_t since = prev == kNone ? 0 : own_corr[prev].corr;
      auto lo = std::upper_bound(wv->second.begin(), wv->second.end(), std::make_pair(since, UINT32_MAX));
      for (auto it = lo; it != wv->second.end() && it->first < ev.correlation_id[e]; ++it) {
        uint32_t row = 0, recorded = 0;
        if (!records.before(capture, m.stream_waits.event_id[it->second], it->first, &row, &recorded)) continue;
        auto src = d.by_stream_corr.find(m.cuda_events.stream[row]);
        if (src == d.by_stream_corr.end()) continue;
        const uint32_t x = end_index_before_corr(src->second, recorded);
        if (x != kNone) dep_end = std::max(dep_end, src->second[x].end);
      }
    }
    const uint64_t ready = std::min(s, std::max(t, dep_end));
    add(WaitCause::kDependency, t, ready);
    t = ready;
    // 3. Ready: who held the device from then to its start.
    if (t < s) {
      bool higher = false, other = false;
      auto it = std::lower_bound(d.by_start.begin(), d.by_start.end(), s, [](const Op& o, uint64_t v) { return o.start < v; });
      for (size_t n = 0; it != d.by_start.begin() && n < kLookBack; ++n) {
        --it;
        if (it->event == e || it->end <= t) continue;
        other = true;
        if (ev.priority[it->event] < ev.priority[e]) higher = true;  // CUDA: lower number = greater priority
      }
      add(higher ? WaitCause::kPriority : other ? WaitCause::kDeviceFull : WaitCause::kLaunch, t, s);
    }
    out.push_back(w);
  }
  return out;
}

std::vector<std::pair<uint32_t, uint32_t>> event_dependencies(const Model& m) {
  const EventTable& ev = m.events;
  std::vector<std::pair<uint32_t, uint32_t>> out;
  if (m.stream_waits.size() == 0) return out;
  // Per (capture, stream), the GPU work in call order.
  std::map<std::pair<uint16_t, uint32_t>, std::vector<Op>> by_stream;
  for (uint32_t e = 0; e < ev.size(); ++e) {
    if (ev.kind[e] == EventKind::kSync || !ev.start_ns[e] || ev.end_ns[e] < ev.start_ns[e] || ev.correlation_id[e] == 0) continue;
    by_stream[{ev.capture[e], ev.stream[e]}].push_back({e, 0, ev.start_ns[e], ev.end_ns[e], ev.correlation_id[e]});
  }
  for (auto& [key, ops] : by_stream)
    std::stable_sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.corr < b.corr; });
  const EventRecords records(m);
  for (size_t w = 0; w < m.stream_waits.size(); ++w) {
    const uint16_t capture = m.stream_waits.capture[w];
    const uint32_t at = m.stream_waits.correlation_id[w];
    uint32_t row = 0, recorded = 0;
    if (at == 0 || !records.before(capture, m.stream_waits.event_id[w], at, &row, &recorded)) continue;
    auto src = by_stream.find({capture, m.cuda_events.stream[row]});
    auto dst = by_stream.find({capture, m.stream_waits.stream[w]});
    if (src == by_stream.end() || dst == by_stream.end()) continue;
    const uint32_t s = end_index_before_corr(src->second, recorded);
    auto d = std::upper_bound(dst->second.begin(), dst->second.end(), at, [](uint32_t v, const Op& o) { return v < o.corr; });
    if (s == kNone || d == dst->second.end()) continue;
    out.emplace_back(src->second[s].event, d->event);
  }
  return out;
}

std::string format_wait_stats(const Model& m, const std::vector<WaitSplit>& splits, const std::string& format) {
  struct Row {
    uint64_t kernels = 0, waited = 0;
    std::array<uint64_t, kWaitCauses> ns{};
  };
  std::map<std::tuple<uint16_t, uint32_t, uint32_t>, Row> rows;
  Row all;
  for (const WaitSplit& w : splits) {
    Row& r = rows[{m.events.capture[w.event], m.events.device[w.event], m.events.stream[w.event]}];
    for (Row* x : {&r, &all}) {
      ++x->kernels;
      x->waited += w.total();
      for (size_t c = 0; c < kWaitCauses; ++c) x->ns[c] += w.ns[c];
    }
  }
  auto lane = [&](const std::tuple<uint16_t, uint32_t, uint32_t>& k) {
    return device_label(m.captures.size(), std::get<0>(k), std::get<1>(k)) + " stream " + std::to_string(std::get<2>(k));
  };
  if (format == "json") {
    std::string o = "{\"causes\":[";
    for (size_t c = 0; c < kWaitCauses; ++c) o += (c ? "," : "") + json::quoted(to_string(static_cast<WaitCause>(c)));
    o += "],\"streams\":[";
    bool first = true;
    auto row_json = [&](const std::string& name, const Row& r) {
      std::string x = "{\"stream\":" + json::quoted(name) + ",\"kernels\":" + std::to_string(r.kernels) +
                      ",\"queued_ns\":" + std::to_string(r.waited) + ",\"by_cause_ns\":[";
      for (size_t c = 0; c < kWaitCauses; ++c) x += (c ? "," : "") + std::to_string(r.ns[c]);
      return x + "]}";
    };
    for (const auto& [k, r] : rows) {
      o += (first ? "" : ",") + row_json(lane(k), r);
      first = false;
    }
    return o + "],\"all\":" + row_json("all", all) + "}\n";
  }
  Table t;
  t.header = {"stream", "kernels_waited", "queued_us"};
  for (size_t c = 0; c < kWaitCauses; ++c) {
    std::string name = to_string(static_cast<WaitCause>(c));
    for (char& ch : name)
      if (ch == ' ' || ch == '-') ch = '_';
    t.header.push_back(name + "_us");
  }
  t.header.push_back("not_own_ordering_%");
  t.right.assign(t.header.size(), true);
  t.right[0] = false;
  auto add = [&](const std::string& name, const Row& r) {
    std::vector<std::string> cells{name, std::to_string(r.kernels), us(static_cast<int64_t>(r.waited))};
    uint64_t not_own = 0;
    for (size_t c = 0; c < kWaitCauses; ++c) {
      cells.push_back(us(static_cast<int64_t>(r.ns[c])));
      if (!is_own_ordering(static_cast<WaitCause>(c))) not_own += r.ns[c];
    }
    cells.push_back(r.waited ? fixed(100.0 * static_cast<double>(not_own) / static_cast<double>(r.waited), 1) : "-");
    t.rows.push_back(std::move(cells));
  };
  if (splits.empty() && format == "csv") return to_csv(t);  // the header: an empty table, not a sentence
  if (splits.empty()) {
    const std::string imported = m.imported_format();
    return "no kernel with a queued stamp waited in the capture(s) (" +
           (imported.empty() ? std::string("latency timestamps off?") : imported + "s have no queued stamps") + ")\n";
  }
  for (const auto& [k, r] : rows) add(lane(k), r);
  add("all", all);
  if (format == "md") return to_markdown(t);
  if (format == "csv") return to_csv(t);
  return "why kernels waited between queued and start (own stream and event/legacy are the program's own ordering):\n" +
         to_text(t);
}

}  // namespace gantt::analysis
