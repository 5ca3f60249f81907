// DiagnoseWork: the diagnose rules' figures, accumulated event by event (diagnose_work.h).
#include "diagnose_work.h"

#include <algorithm>

#include "gantt/analysis/table.h"

namespace gantt::analysis::detail {
namespace {

// Events of one device held to be put in start order (7.5 MiB of them). A share reads a
// device's records in the order CUPTI delivered them, about the order of their launches: a
// stream with a backlog holds its kernels' starts back behind the other streams' by as many
// launches as it has queued. The earlier half is taken when it is full.
constexpr size_t kStartWindow = size_t{1} << 16;
// Launches of one host thread onto one device held to be put in launch order: kernels of
// several streams end, and so arrive, out of their launch order by at most a queue's depth.
constexpr size_t kLaunchWindow = 1024;
// Compute events whose overlap with later ones is still counted (fragmentation). Past it, the
// one ending first is judged on what overlapped it so far.
constexpr size_t kMaxOpen = 4096;

bool is_compute(const WorkEvent& e) { return e.kind == EventKind::kKernel || e.kind == EventKind::kNccl; }

void emit_launch(LaunchLane& lane, uint64_t t, DurationDigest& intervals) {
  if (lane.any) intervals.add(static_cast<int64_t>(t - lane.last));
  else lane.first = t;
  lane.last = t;
  lane.any = true;
}

// Adds [a, b) to an open event's union of the time others ran beside it (a never decreases).
void cover(DeviceWork::Open& o, uint64_t a, uint64_t b) {
  if (b <= a) return;
  if (o.covered_to == o.covered_from) {
    o.covered_from = a, o.covered_to = b;
  } else if (a <= o.covered_to) {
    o.covered_to = std::max(o.covered_to, b);
  } else {
    o.covered += o.covered_to - o.covered_from;
    o.covered_from = a, o.covered_to = b;
  }
}

void judge(const DeviceWork::Open& o, ShapeWork& s, uint64_t slot) {
  const uint64_t exec = o.end - o.start;
  const uint64_t shared = o.covered + (o.covered_to - o.covered_from);
  const bool ok = static_cast<double>(shared) >= kSharedFraction * static_cast<double>(exec);
  if (slot < s.kept.size()) s.kept[slot].second = ok;
  else if (ok) s.shared_exec.add(static_cast<int64_t>(exec));
}

// Removes [start, end) from sorted, disjoint gaps.
void fill_gaps(std::vector<Interval>& gaps, uint64_t start, uint64_t end) {
  auto it = std::upper_bound(gaps.begin(), gaps.end(), start, [](uint64_t t, const Interval& g) { return t < g.second; });
  while (it != gaps.end() && it->first < end) {
    if (start <= it->first && end >= it->second) {
      it = gaps.erase(it);
    } else if (start > it->first && end < it->second) {
      const Interval after{end, it->second};
      it->second = start;
      gaps.insert(it + 1, after);
      return;
    } else {
      if (start <= it->first) it->first = end;
      else it->second = start;
      ++it;
    }
  }
}

}  // namespace

uint64_t count_at_least(const DurationDigest& d, double at) {
  uint64_t n = 0;
  if (d.exact()) {
    for (int64_t v : d.samples()) n += static_cast<double>(v) >= at;
    return n;
  }
  for (const auto& [bucket, count] : d.sketch().positive()) n += QuantileSketch::bucket_value(bucket) >= at ? count : 0;
  return n;
}

void OccupancyWork::add(uint64_t exec_ns, const Occupancy& o, const Waves& w, bool fits_at_once, uint64_t block_threads,
                        uint32_t registers) {
  if (o.limit == OccupancyLimit::kUnknown) {
    exec += exec_ns;
    ++count;
    return;
  }
  // As the model keeps it: a float.
  const float fraction = static_cast<float>(o.fraction);
  if (fits_at_once) {
    fits_exec += exec_ns;
    ++fits;
    if (fraction <= kLowOccupancy + 1e-6) fitting = w;
    return;
  }
  exec += exec_ns;
  ++count;
  ++occ[fraction];
  ++limits[o.limit];
  block = block_threads;
  regs = registers;
  if (most.blocks == 0 || waves(w) > waves(most)) most = w;
}

void OccupancyWork::merge(const OccupancyWork& later) {
  if (later.most.blocks != 0 && (most.blocks == 0 || waves(later.most) > waves(most))) most = later.most;
  if (later.fitting.blocks != 0) fitting = later.fitting;
  if (!later.occ.empty()) block = later.block, regs = later.regs;
  exec += later.exec, count += later.count, fits_exec += later.fits_exec, fits += later.fits;
  for (const auto& [v, n] : later.occ) occ[v] += n;
  for (const auto& [v, n] : later.limits) limits[v] += n;
}

DiagnoseWork::DiagnoseWork(const Model& context) {
  occupancy_by_capture_.reserve(context.captures.size());
  for (const CaptureInfo& c : context.captures) occupancy_by_capture_.emplace_back(c.devices);
  if (context.captures.size() > 1) rank_balance_.assign(context.captures.size(), BusyTracker(0));
}
DiagnoseWork::DiagnoseWork(DiagnoseWork&&) noexcept = default;
DiagnoseWork::~DiagnoseWork() = default;

DeviceWork& DiagnoseWork::device(uint16_t capture, uint32_t ordinal) {
  const auto at = std::lower_bound(devices_.begin(), devices_.end(), std::make_pair(capture, ordinal),
                                   [](const auto& d, const auto& key) { return std::make_pair(d->capture, d->ordinal) < key; });
  if (at != devices_.end() && (*at)->capture == capture && (*at)->ordinal == ordinal) return **at;
  auto d = std::make_unique<DeviceWork>();
  d->capture = capture;
  d->ordinal = ordinal;
  return **devices_.insert(at, std::move(d));
}

void DiagnoseWork::add(const WorkEvent& e) {
  if (!last_window_ || last_window_->device->capture != e.capture || last_window_->device->ordinal != e.device) {
    last_window_ = &windows_[{e.capture, e.device}];
    if (!last_window_->device) {
      last_window_->device = &device(e.capture, e.device);
      last_window_->events.reserve(kStartWindow);
      last_window_->spare.reserve(kStartWindow);
      last_window_->keys.reserve(kStartWindow);
    }
  }
  Window& w = *last_window_;
  w.keys.push_back({e.start_ns, seq_++, static_cast<uint32_t>(w.events.size())});
  w.events.push_back(e);
  if (w.keys.size() >= kStartWindow) release(w, kStartWindow / 2);
}

void DiagnoseWork::release(Window& w, size_t n) {
  const auto by_start = [](const Pending& a, const Pending& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.seq < b.seq;
  };
  // One stream's work, or streams taking turns, comes in order: a check is cheaper than a sort.
  if (!std::is_sorted(w.keys.begin(), w.keys.end(), by_start)) std::sort(w.keys.begin(), w.keys.end(), by_start);
  n = std::min(n, w.keys.size());
  for (size_t i = 0; i < n; ++i) take(*w.device, w.events[w.keys[i].slot]);
  w.spare.clear();
  for (size_t i = n; i < w.keys.size(); ++i) {
    w.spare.push_back(w.events[w.keys[i].slot]);
    w.keys[i].slot = static_cast<uint32_t>(w.spare.size() - 1);
  }
  w.keys.erase(w.keys.begin(), w.keys.begin() + static_cast<std::ptrdiff_t>(n));
  w.events.swap(w.spare);
}

void DiagnoseWork::add_sync(const SyncCall& call) {
  if (syncs_.size() >= kMaxSyncs) {
    syncs_capped_ = true;
    return;
  }
  syncs_sorted_ = syncs_sorted_ && (syncs_.empty() || syncs_.back().start_ns <= call.start_ns);
  syncs_.push_back(call);
}

// Keeps, of the gaps between the share's first and latest kGapWindow, those a synchronize call
// read so far overlaps (starts before the gap ends, ends after it starts): sync-stall judges
// no other (diagnose_host_rules.cpp), and the gaps of a long capture outnumber its calls.
void DiagnoseWork::prune_gaps(DeviceWork& d) {
  if (!syncs_sorted_) {
    std::stable_sort(syncs_.begin(), syncs_.end(), [](const SyncCall& a, const SyncCall& b) { return a.start_ns < b.start_ns; });
    syncs_sorted_ = true;
  }
  std::vector<uint64_t> starts, latest_end;  // the device's capture's calls by start; the latest end so far
  for (const SyncCall& c : syncs_) {
    if (c.capture != d.capture) continue;
    starts.push_back(c.start_ns);
    latest_end.push_back(std::max(latest_end.empty() ? 0 : latest_end.back(), c.end_ns));
  }
  const size_t from = std::max(d.gaps_judged, kGapWindow), to = d.gaps.size() - kGapWindow;
  size_t out = from;
  for (size_t i = from; i < to; ++i) {
    const Interval g = d.gaps[i];
    const size_t before = static_cast<size_t>(std::lower_bound(starts.begin(), starts.end(), g.second) - starts.begin());
    if (before != 0 && latest_end[before - 1] > g.first) d.gaps[out++] = g;
  }
  d.gaps.erase(d.gaps.begin() + static_cast<std::ptrdiff_t>(out), d.gaps.begin() + static_cast<std::ptrdiff_t>(to));
  d.gaps_judged = out;
}

void DiagnoseWork::close_open(DeviceWork& d, uint64_t before) {
  size_t kept = 0;
  for (size_t i = 0; i < d.open.size(); ++i) {
    DeviceWork::Open& o = d.open[i];
    if (o.end <= before) judge(o, *o.shape, o.slot);
    else d.open[kept++] = o;
  }
  d.open.resize(kept);
}

void DiagnoseWork::take(DeviceWork& d, const WorkEvent& e) {
  const uint64_t exec = e.end_ns - e.start_ns;
  if (e.start_ns < d.last_start) {
    // Work found after later work was taken (an NCCL kernel the scan joins to its call at the
    // end): the idle gaps it ran in are not idle.
    ++d.late;
    fill_gaps(d.gaps, e.start_ns, e.end_ns);
  }
  d.last_start = std::max(d.last_start, e.start_ns);
  d.first_ns = d.first_ns == 0 ? e.start_ns : std::min(d.first_ns, e.start_ns);
  d.last_ns = std::max(d.last_ns, e.end_ns);
  if (d.busy_end != 0 && e.start_ns > d.busy_end) {
    if (d.gaps.size() < kMaxGaps) d.gaps.emplace_back(d.busy_end, e.start_ns);
    else d.gaps_capped = true;
    if (d.gaps.size() >= std::max(d.gaps_judged, kGapWindow) + 2 * kGapWindow) prune_gaps(d);
  }
  d.busy_end = std::max(d.busy_end, e.end_ns);
  const bool compute = is_compute(e);
  d.all.add(e.start_ns, e.end_ns,
            compute ? BusyTracker::Work::kCompute
                    : e.kind == EventKind::kMemcpy ? BusyTracker::Work::kCopy : BusyTracker::Work::kOther);
  if (e.kind != EventKind::kNccl) {
    d.balance.add(e.start_ns, e.end_ns, BusyTracker::Work::kOther);
    if (e.capture < rank_balance_.size()) rank_balance_[e.capture].add(e.start_ns, e.end_ns, BusyTracker::Work::kOther);
  }
  if (e.kind == EventKind::kMemcpy) {
    ++d.copies;
    d.copy_bytes += e.bytes;
    d.sync_copies += e.host_waits;
  }
  if (!compute) return;
  StreamWork& s = d.stream_memo.at(d.streams, e.stream);
  if (s.compute++ == 0) s.span = {e.start_ns, e.end_ns};
  s.compute_ns += exec;
  s.span.second = std::max(s.span.second, e.end_ns);
  if (e.graph_node) {
    ++d.graph_nodes;
  } else {
    d.compute_exec.add(static_cast<int64_t>(exec));
    ++s.launches;
    if (s.names.size() < kRepeatWindow) s.names.push_back(e.name);
    ++s.by_name[e.name];
    if (e.launch_ns != 0) {
      LaunchLane& lane = d.lane_memo.at(d.launch_lanes, e.launch_thread);
      lane.window.push(e.launch_ns);
      if (lane.window.size() > kLaunchWindow) {
        emit_launch(lane, lane.window.top(), d.launch_intervals);
        lane.window.pop();
      }
    }
  }
  if (e.kind == EventKind::kKernel) {
    s.kernel_exec.add(static_cast<int64_t>(exec));
    s.priority = e.priority;
    if (s.first_name == kNone) s.first_name = e.name;
    const uint64_t q = e.queued_ns, b = e.start_ns;
    if (q != 0 && b >= q) {
      const uint64_t wait = b - q;
      if (wait >= kPrioMinWaitNs && static_cast<double>(wait) >= kPrioWaitRatio * static_cast<double>(exec))
        s.waits.add(static_cast<int64_t>(wait));
    }
  }
  // low-occupancy, over every device.
  occupancy_total_ += exec;
  OccupancyWork& a = occupancy_memo_.at(occupancy_, e.name);
  KernelOccupancy& kernels = occupancy_by_capture_.at(e.capture);
  const Occupancy& o = kernels.of(e.device, e.block, e.registers_per_thread, e.shared_memory_bytes);
  const OccupancyWork::Waves w{dim3_count(e.grid), kernels.blocks_at_once(e.device, o)};
  a.add(exec, o, w, kernels.fits_at_once(e.device, o, w.blocks), dim3_count(e.block), e.registers_per_thread);
  // fragmentation: the time other compute ran beside each, counted as later ones start.
  close_open(d, e.start_ns);
  uint64_t beside_end = 0;
  for (DeviceWork::Open& p : d.open) {
    beside_end = std::max(beside_end, p.end);
    cover(p, e.start_ns, std::min(p.end, e.end_ns));
  }
  ShapeWork& shape = d.shape_memo.at(d.shapes, {e.name, w.blocks, dim3_count(e.block)});
  if (shape.exec.count() == 0) shape.name = e.name;
  shape.exec.add(static_cast<int64_t>(exec));
  DeviceWork::Open mine{e.start_ns, e.end_ns, 0, 0, 0, &shape, UINT64_MAX};
  if (shape.kept.size() < kFragKept) {
    mine.slot = shape.kept.size();
    shape.kept.emplace_back(exec, false);
  }
  if (beside_end > e.start_ns) cover(mine, e.start_ns, std::min(beside_end, e.end_ns));
  if (d.open.size() >= kMaxOpen) {
    const auto first = std::min_element(d.open.begin(), d.open.end(), [](const auto& x, const auto& y) { return x.end < y.end; });
    judge(*first, *first->shape, first->slot);
    d.open.erase(first);
  }
  d.open.push_back(mine);
}

void DiagnoseWork::drain() {
  for (auto& [key, w] : windows_) release(w, w.keys.size());
  windows_.clear();
  last_window_ = nullptr;
  for (auto& d : devices_) {
    for (const DeviceWork::Open& o : d->open) judge(o, *o.shape, o.slot);
    d->open.clear();
    for (auto& [thread, lane] : d->launch_lanes) {
      while (!lane.window.empty()) {
        emit_launch(lane, lane.window.top(), d->launch_intervals);
        lane.window.pop();
      }
    }
  }
  std::stable_sort(syncs_.begin(), syncs_.end(), [](const SyncCall& a, const SyncCall& b) { return a.start_ns < b.start_ns; });
  syncs_sorted_ = true;
}

void DiagnoseWork::absorb(DiagnoseWork&& later) {
  drain();
  later.drain();
  for (auto& ld : later.devices_) {
    DeviceWork& d = device(ld->capture, ld->ordinal);
    DeviceWork& l = *ld;
    d.late += l.late;
    if (d.busy_end != 0 && l.first_ns > d.busy_end && d.gaps.size() < kMaxGaps) d.gaps.emplace_back(d.busy_end, l.first_ns);
    for (const Interval& g : l.gaps) {
      if (d.gaps.size() < kMaxGaps) d.gaps.push_back(g);
      else d.gaps_capped = true;
    }
    d.gaps_capped = d.gaps_capped || l.gaps_capped;
    d.busy_end = std::max(d.busy_end, l.busy_end);
    d.first_ns = d.first_ns == 0 ? l.first_ns : std::min(d.first_ns, l.first_ns);
    d.last_ns = std::max(d.last_ns, l.last_ns);
    d.last_start = std::max(d.last_start, l.last_start);
    d.all.absorb(std::move(l.all));
    d.balance.absorb(std::move(l.balance));
    d.copies += l.copies;
    d.copy_bytes += l.copy_bytes;
    d.sync_copies += l.sync_copies;
    d.compute_exec.merge(l.compute_exec);
    d.graph_nodes += l.graph_nodes;
    for (auto& [id, ls] : l.streams) {
      StreamWork& s = d.streams[id];
      if (s.compute == 0) s.span = ls.span;
      else s.span = {std::min(s.span.first, ls.span.first), std::max(s.span.second, ls.span.second)};
      s.compute += ls.compute;
      s.compute_ns += ls.compute_ns;
      s.launches += ls.launches;
      for (uint32_t n : ls.names)
        if (s.names.size() < kRepeatWindow) s.names.push_back(n);
      for (const auto& [n, c] : ls.by_name) s.by_name[n] += c;
      if (ls.kernel_exec.count() != 0) s.priority = ls.priority;
      s.kernel_exec.merge(ls.kernel_exec);
      s.waits.merge(ls.waits);
      if (s.first_name == kNone) s.first_name = ls.first_name;
    }
    // A thread's launches read by two shares: the interval across the boundary when they follow on.
    for (auto& [thread, ll] : l.launch_lanes) {
      if (!ll.any) continue;
      LaunchLane& lane = d.launch_lanes[thread];
      if (!lane.any) lane.first = ll.first;
      else if (ll.first >= lane.last) d.launch_intervals.add(static_cast<int64_t>(ll.first - lane.last));
      lane.last = ll.last;
      lane.any = true;
    }
    d.launch_intervals.merge(l.launch_intervals);
    for (auto& [key, ls] : l.shapes) {
      ShapeWork& s = d.shapes[key];
      if (s.exec.count() == 0) s.name = ls.name;
      s.exec.merge(ls.exec);
      for (const auto& [exec, ok] : ls.kept) {
        if (s.kept.size() < kFragKept) s.kept.emplace_back(exec, ok);
        else if (ok) s.shared_exec.add(static_cast<int64_t>(exec));
      }
      s.shared_exec.merge(ls.shared_exec);
    }
  }
  for (auto& [name, la] : later.occupancy_) occupancy_[name].merge(la);
  occupancy_total_ += later.occupancy_total_;
  for (const SyncCall& s : later.syncs_) add_sync(s);
  syncs_capped_ = syncs_capped_ || later.syncs_capped_;
  for (size_t c = 0; c < rank_balance_.size() && c < later.rank_balance_.size(); ++c)
    rank_balance_[c].absorb(std::move(later.rank_balance_[c]));
  std::stable_sort(syncs_.begin(), syncs_.end(), [](const SyncCall& a, const SyncCall& b) { return a.start_ns < b.start_ns; });
  syncs_sorted_ = true;
}

void DiagnoseWork::complete() {
  drain();
  for (auto& d : devices_) {
    d->totals = d->all.finish();
    d->balance_totals = d->balance.finish();
  }
  rank_totals_.clear();
  for (BusyTracker& t : rank_balance_) rank_totals_.push_back(t.finish());
}

uint64_t DiagnoseWork::late() const {
  uint64_t n = 0;
  for (const auto& d : devices_) n += d->late;
  return n;
}

bool DiagnoseWork::busy_exact() const {
  for (const auto& d : devices_)
    if (!d->all.exact() || !d->balance.exact()) return false;
  for (const BusyTracker& t : rank_balance_)
    if (!t.exact()) return false;
  return true;
}

std::string device_label(const DiagnoseWork& w, const DeviceWork& d) {
  return analysis::device_label(w.captures(), d.capture, d.ordinal);
}

}  // namespace gantt::analysis::detail
