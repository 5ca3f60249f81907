// The changes: each rewrites the graph the way the fix would change the program, and says in
// one note what it did and what it assumed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <stdexcept>

#include <re2/re2.h>

#include "gantt/analysis/memory.h"  // saturating_add
#include "gantt/model/occupancy.h"
#include "gantt/model/text.h"
#include "whatif_internal.h"

namespace gantt::whatif::detail {

namespace {

std::string fmt(const char* f, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, a);
  return buf;
}

std::string us(int64_t ns) { return fmt("%.2f us", static_cast<double>(ns) / 1e3); }

// A duration times a factor, kept in range (a factor of 1e6 on a long kernel must not leave
// int64 for llround, whose result is then unspecified).
int64_t scaled(int64_t ns, double factor) {
  const double v = static_cast<double>(ns) * factor;
  if (!(v > 0)) return 0;
  return v >= 1e18 ? int64_t{1000000000000000000} : static_cast<int64_t>(std::llround(v));
}

uint32_t add_lane(Graph& g, const Lane& like, uint32_t stream) {
  Lane l;
  l.capture = like.capture;
  l.device = like.device;
  l.stream = stream;
  l.legacy = false;
  l.blocking = false;  // created cudaStreamNonBlocking, as the fixes do
  l.priority = like.priority;
  l.added = true;
  g.lanes.push_back(l);
  return static_cast<uint32_t>(g.lanes.size() - 1);
}

// Stream ids for added lanes: above every id the capture uses, never the legacy stream's 7
// (a capture whose ids reach UINT32_MAX gets the first free ids above 7).
uint32_t next_stream_id(const Graph& g, uint16_t capture) {
  uint32_t top = 7;
  for (const Lane& l : g.lanes)
    if (l.capture == capture) top = std::max(top, l.stream);
  if (top < UINT32_MAX - 4096) return top + 1;
  uint32_t id = 8;
  for (bool used = true; used; ++id) {
    used = false;
    for (const Lane& l : g.lanes) used |= l.capture == capture && l.stream == id;
    if (!used) return id;
  }
  return id;
}

// The call no longer waits: it costs what a launch costs in its capture.
void make_async(Built& b, uint32_t call) {
  HostCall& c = b.graph.calls[call];
  const int64_t launch = b.launch_cost_ns[b.graph.threads[c.thread].capture];
  c.cost_ns = launch > 0 ? std::min(launch, c.cost_ns > 0 ? c.cost_ns : launch) : c.cost_ns;
  c.post_wait_ns = 0;
  c.launches_only = true;
}

// Op `o` no longer holds its call: the call stops waiting for it, and costs what a launch
// costs once it waits for nothing at all.
void stop_waiting(Built& b, uint32_t o) {
  GpuOp& op = b.graph.ops[o];
  op.host_waits = op.call_waits = false;
  auto& waits = b.call_wait[op.call].ops;
  waits.erase(std::remove(waits.begin(), waits.end(), o), waits.end());
  if (waits.empty() && b.call_wait[op.call].kind == WaitSpec::Kind::kNone) make_async(b, op.call);
}

// The kernels whose name, mangled or demangled, matches the change's regex. RE2, as the
// filter flags: kernel names come from the program, and libstdc++'s backtracking std::regex
// recursed once per character of a 200,000-character name.
std::vector<uint32_t> matching_kernels(const Built& b, const Change& ch) {
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(ch.name, options);
  if (!re.ok()) throw std::invalid_argument("--change " + ch.text + ": not a regular expression: " + re.error());
  std::vector<uint32_t> matched;
  std::unordered_map<std::string, bool> hit;  // per distinct name: demangle and match once
  for (uint32_t o = 0; o < b.graph.ops.size(); ++o) {
    const GpuOp& op = b.graph.ops[o];
    if (op.kind != OpKind::kKernel) continue;
    auto [it, added] = hit.try_emplace(op.name.str(), false);
    if (added) it->second = RE2::PartialMatch(op.name.str(), re) || RE2::PartialMatch(demangle(op.name.str()), re);
    if (it->second) matched.push_back(o);
  }
  if (matched.empty())
    throw std::invalid_argument("--change " + ch.text + ": no kernel name matches " + ch.name +
                                " (kernels in graph launches are kept as recorded)");
  return matched;
}

void scale(Built& b, const Change& ch) {
  const std::vector<uint32_t> matched = matching_kernels(b, ch);
  for (const uint32_t o : matched) b.graph.ops[o].duration_ns = scaled(b.graph.ops[o].duration_ns, ch.factor);
  b.graph.notes.push_back(ch.text + ": " + std::to_string(matched.size()) + " kernel(s) " + fmt("x%.3g", ch.factor));
}

// coalesce=REGEX: each matched kernel's time times its name's ideal over touched sectors. The
// model: a kernel whose loads split into more sectors than they need is bound by moving them
// (warps wait on memory, its SMs mostly idle: diagnose stalled), and takes time in proportion to
// the sectors it moves. A kernel bound by its arithmetic gains less than predicted.
void coalesce(Built& b, const Change& ch) {
  const std::vector<uint32_t> matched = matching_kernels(b, ch);
  std::map<std::string, double> factor;  // per name matched: ideal / touched, 1 = nothing to gain
  std::vector<std::string> uncounted;
  uint64_t touched = 0, ideal = 0;
  for (const uint32_t o : matched) {
    const std::string& name = b.graph.ops[o].name.str();
    if (factor.count(name) != 0 || std::find(uncounted.begin(), uncounted.end(), name) != uncounted.end()) continue;
    auto it = b.sectors.find(name);
    if (it == b.sectors.end()) {
      uncounted.push_back(name);
      continue;
    }
    const SectorCount& c = it->second;
    factor[name] = c.sectors == 0 || c.ideal_sectors >= c.sectors
                       ? 1.0
                       : static_cast<double>(c.ideal_sectors) / static_cast<double>(c.sectors);
    touched = analysis::saturating_add(touched, c.sectors);
    ideal = analysis::saturating_add(ideal, c.ideal_sectors);
  }
  if (factor.empty())
    throw std::invalid_argument("--change " + ch.text + ": no sector counts for the kernels it matches (" +
                                demangle(uncounted.front()) + (uncounted.size() > 1 ? ", ..." : "") + ") in " +
                                b.sectors_source + ": record a run with GPUHOOK_SECTORS=1 and pass it with --sectors-from");
  size_t retimed = 0;
  for (const uint32_t o : matched) {
    auto it = factor.find(b.graph.ops[o].name.str());
    if (it == factor.end() || it->second >= 1) continue;
    b.graph.ops[o].duration_ns = scaled(b.graph.ops[o].duration_ns, it->second);
    ++retimed;
  }
  std::string note = ch.text + ": " + std::to_string(retimed) + " kernel(s) of " + std::to_string(factor.size()) +
                     " name(s) re-timed; their global loads and stores touched " + std::to_string(touched) +
                     " sectors where " + std::to_string(ideal) + " would do" +
                     (touched > 0 ? fmt(" (x%.3g)", static_cast<double>(ideal) / static_cast<double>(touched)) : "") +
                     ", counts from " + b.sectors_source;
  if (!uncounted.empty()) note += "; " + std::to_string(uncounted.size()) + " name(s) without counts kept as recorded";
  b.graph.notes.push_back(note);
}

// The kernel records of the matched ops (those launched by a call, not a graph's members) and
// the devices their captures recorded.
struct KernelRecords {
  std::map<std::pair<uint16_t, uint32_t>, v1::DeviceInfo> devices;  // (capture, ordinal)
  std::vector<std::pair<uint32_t, v1::Kernel>> kernels;             // (op, its record)
};
KernelRecords kernel_records(const Built& b, const std::vector<bool>& matched) {
  KernelRecords out;
  v1::Record r;
  for (uint16_t s = 0; s < b.sections.size(); ++s) {
    const auto& places = b.places[s];
    for (uint32_t i = 0; i < b.sections[s].records.size(); ++i) {
      const bool op = i < places.size() && places[i].kind == RecordPlace::Kind::kOp && places[i].index < matched.size() &&
                      matched[places[i].index];
      b.sections[s].records.get(i, &r);
      if (r.has_device()) out.devices[{s, r.device().ordinal()}] = r.device();
      else if (op && r.has_kernel()) out.kernels.emplace_back(places[i].index, r.kernel());
    }
  }
  return out;
}

bool one_d(const v1::Kernel& k) {
  return k.grid_y() == 1 && k.grid_z() == 1 && k.block_y() == 1 && k.block_z() == 1 && k.grid_x() > 0 && k.block_x() > 0;
}

LaunchShape launch_shape(const v1::Kernel& k) {
  LaunchShape shape;
  shape.threads_per_block = static_cast<uint32_t>(k.block_x());
  shape.registers_per_thread = k.registers_per_thread();
  shape.shared_memory_bytes = uint64_t{k.static_shared_memory_bytes()} + k.dynamic_shared_memory_bytes();
  return shape;
}

// The blocks kernel `k` of capture `capture` has resident on its device at once (SMs x
// resident blocks an SM), its device's limits, and its occupancy; 0 blocks where the capture
// has no record of its device or the shape does not fit.
struct Residency {
  SmLimits sm;
  Occupancy occupancy;
  uint64_t sms = 0;
  uint64_t per_wave = 0;
};
Residency residency(const KernelRecords& records, uint16_t capture, const v1::Kernel& k) {
  Residency r;
  const auto dev = records.devices.find({capture, k.device()});
  if (dev == records.devices.end()) return r;
  r.sm = sm_limits(dev->second);
  r.occupancy = theoretical_occupancy(launch_shape(k), r.sm);
  r.sms = dev->second.sm_count();
  r.per_wave = r.sms * r.occupancy.active_blocks;
  return r;
}

uint64_t waves(uint64_t blocks, uint64_t per_wave) { return (blocks + per_wave - 1) / per_wave; }

// block-size=REGEX[:N]: each matching kernel launched with N threads a block (by default the
// size cudaOccupancyMaxPotentialBlockSize would suggest for its registers and shared memory)
// over the blocks that cover the threads it launched. Its time is its waves of blocks (the
// blocks its device holds at once: SMs x resident blocks, gantt/model/occupancy.h) times its
// measured time per wave: a wave of the new blocks is taken to last as long as a wave of the
// old ones, as it does where the kernel's SMs waited on latency at the old occupancy (what a
// low-occupancy finding is about); where they were already bandwidth-bound the gain is less.
// Only 1-D launches of recorded devices are changed; a launch outside the graph's ops (a
// graph's node) keeps its shape.
void resize_blocks(Built& b, const Change& ch) {
  Graph& g = b.graph;
  std::vector<bool> matched(g.ops.size(), false);
  for (const uint32_t o : matching_kernels(b, ch)) matched[o] = true;
  const KernelRecords records = kernel_records(b, matched);
  uint64_t changed = 0, not_1d = 0, no_device = 0, waves_before = 0, waves_after = 0;
  uint32_t threads_before = 0, threads_after = 0;
  double occupancy_before = 0, occupancy_after = 0;
  for (const auto& [o, k] : records.kernels) {
    GpuOp& op = g.ops[o];
    if (!one_d(k)) {
      ++not_1d;
      continue;
    }
    const Residency res = residency(records, op.capture, k);
    const SmLimits& sm = res.sm;
    const LaunchShape shape = launch_shape(k);
    const Occupancy& before = res.occupancy;
    if (res.per_wave == 0) {
      ++no_device;
      continue;
    }
    LaunchShape next = shape;
    next.threads_per_block = ch.threads ? ch.threads : max_potential_block_size(shape, sm);
    const Occupancy after = next.threads_per_block ? theoretical_occupancy(next, sm) : Occupancy{};
    if (after.active_blocks == 0) {
      const std::string limit = next.threads_per_block > sm.max_threads_per_block
                                    ? "the device runs at most " + std::to_string(sm.max_threads_per_block) + " threads a block"
                                    : "its registers or shared memory are more than a block of that size may use";
      throw std::invalid_argument("--change " + ch.text + ": " + std::to_string(next.threads_per_block) +
                                  " threads a block do not fit " + utf8_clean(demangle(op.name.str())) + " on device " +
                                  std::to_string(k.device()) + " (" + limit + ")");
    }
    const uint64_t threads = uint64_t(k.grid_x()) * uint64_t(k.block_x());
    const uint64_t blocks = (threads + next.threads_per_block - 1) / next.threads_per_block;
    if (blocks > INT32_MAX) {  // grid_x holds 2^31 - 1 blocks
      ++not_1d;
      continue;
    }
    const uint64_t per_wave_after = res.sms * after.active_blocks;
    const uint64_t waves_old = waves(uint64_t(k.grid_x()), res.per_wave), waves_next = waves(blocks, per_wave_after);
    op.duration_ns = scaled(op.duration_ns, static_cast<double>(waves_next) / static_cast<double>(waves_old));
    op.sm_share = std::min(1.0, static_cast<double>(blocks) / static_cast<double>(per_wave_after));
    b.op_shape[o] = {static_cast<uint32_t>(blocks), next.threads_per_block};
    if (changed++ == 0) {
      threads_before = shape.threads_per_block, threads_after = next.threads_per_block;
      occupancy_before = before.fraction, occupancy_after = after.fraction;
    }
    waves_before += waves_old, waves_after += waves_next;
  }
  std::string note = ch.text + ": " + std::to_string(changed) + " kernel(s) relaunched";
  if (changed)
    note += " (the first from " + std::to_string(threads_before) + " to " + std::to_string(threads_after) +
            " threads a block, occupancy " + fmt("%.0f%%", occupancy_before * 100) + " to " + fmt("%.0f%%", occupancy_after * 100) +
            "), " + std::to_string(waves_before) + " waves of blocks to " + std::to_string(waves_after) +
            " at the measured time per wave";
  if (not_1d) note += "; " + std::to_string(not_1d) + " kept: not a 1-D launch";
  if (no_device) note += "; " + std::to_string(no_device) + " kept: their device's SM count or limits not recorded";
  if (changed == 0) throw std::invalid_argument(note);
  g.notes.push_back(note);
}

// fuse=REGEX[:N]: each run of back-to-back launches of matching kernels becomes one launch of
// one kernel over all their blocks, as a fused or grid-stride kernel does the same work with
// one launch. A run: launch calls of one host thread, each launching one matching kernel onto
// the same stream right after the previous one (nothing else on the stream between them, no
// event waited for), of one launch shape (threads a block, registers, shared memory) on one
// recorded device, at most N of them. The fused kernel's time is its waves of blocks (all the
// run's blocks over what the device holds at once) times the run's measured time per wave: a
// wave does the same work fused as apart, and what goes is the part of each small grid's wave
// the device held no block of. The launch calls after the first and the host time between
// them go (the loop that made them launches once). The capture cannot show which kernel read
// what another wrote: a run that spans iterations of the program's loop is fused whole (N
// bounds it).
void fuse_kernels(Built& b, const Change& ch) {
  Graph& g = b.graph;
  std::vector<bool> matched(g.ops.size(), false);
  for (const uint32_t o : matching_kernels(b, ch)) matched[o] = true;
  const KernelRecords records = kernel_records(b, matched);
  std::vector<const v1::Kernel*> kernel_of(g.ops.size(), nullptr);
  for (const auto& [o, k] : records.kernels) kernel_of[o] = &k;
  // Each op's place on its stream, and the one op each call launched (kNone: none or several).
  std::vector<std::vector<uint32_t>> lane_ops(g.lanes.size());
  for (uint32_t o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].lane < g.lanes.size()) lane_ops[g.ops[o].lane].push_back(o);
  std::vector<uint32_t> lane_place(g.ops.size(), 0);
  for (auto& ops : lane_ops) {
    std::stable_sort(ops.begin(), ops.end(), [&](uint32_t x, uint32_t y) { return g.ops[x].order < g.ops[y].order; });
    for (uint32_t i = 0; i < ops.size(); ++i) lane_place[ops[i]] = i;
  }
  constexpr uint32_t kSeveral = kNone - 1;
  std::vector<uint32_t> op_of_call(g.calls.size(), kNone);
  for (uint32_t o = 0; o < g.ops.size(); ++o)
    if (const uint32_t c = g.ops[o].call; c < g.calls.size()) op_of_call[c] = op_of_call[c] == kNone ? o : kSeveral;
  if (b.op_fused_away.size() < g.ops.size()) b.op_fused_away.resize(g.ops.size(), false);

  struct Launch {
    uint32_t call, op;
    const v1::Kernel* kernel;
  };
  uint64_t runs = 0, fused = 0, not_1d = 0, no_device = 0, blocks_first = 0, waves_before = 0, waves_after = 0;
  auto flush = [&](std::vector<Launch>& run) {
    if (run.size() >= 2) {
      const GpuOp& first = g.ops[run[0].op];
      const Residency res = residency(records, first.capture, *run[0].kernel);
      uint64_t blocks = 0, old_waves = 0;
      int64_t time = 0;
      for (const Launch& l : run) {
        blocks += uint64_t(l.kernel->grid_x());
        old_waves += waves(uint64_t(l.kernel->grid_x()), res.per_wave);
        time = g.ops[l.op].duration_ns > INT64_MAX - time ? INT64_MAX : time + std::max<int64_t>(g.ops[l.op].duration_ns, 0);
      }
      const uint64_t new_waves = waves(blocks, res.per_wave);
      GpuOp& op = g.ops[run[0].op];
      op.duration_ns = scaled(time, static_cast<double>(new_waves) / static_cast<double>(old_waves));
      op.sm_share = std::min(1.0, static_cast<double>(blocks) / static_cast<double>(res.per_wave));
      b.op_shape[run[0].op] = {static_cast<uint32_t>(blocks), static_cast<uint32_t>(run[0].kernel->block_x())};
      for (size_t i = 1; i < run.size(); ++i) {
        GpuOp& gone = g.ops[run[i].op];
        gone.duration_ns = 0, gone.sm_share = 0;
        gone.call = run[0].call, gone.ready_offset_ns = op.ready_offset_ns;
        b.op_fused_away[run[i].op] = true;
        g.calls[run[i].call].removed = true;
        g.calls[run[i].call].gap_ns = 0;
      }
      if (runs++ == 0) blocks_first = blocks;
      fused += run.size(), waves_before += old_waves, waves_after += new_waves;
    }
    run.clear();
  };
  // The launch call `c` if it can join a run: one matching 1-D kernel on a recorded device.
  auto fusable = [&](uint32_t c) -> const v1::Kernel* {
    const HostCall& call = g.calls[c];
    const uint32_t o = op_of_call[c];
    if (!call.launches_only || call.removed || o >= g.ops.size() || !matched[o] || (o < b.op_graph.size() && b.op_graph[o].call != kNone))
      return nullptr;
    const v1::Kernel* k = kernel_of[o];
    if (k == nullptr) return nullptr;
    if (!one_d(*k)) return ++not_1d, nullptr;
    if (residency(records, g.ops[o].capture, *k).per_wave == 0) return ++no_device, nullptr;
    return k;
  };
  auto continues = [&](const Launch& last, const Launch& next, uint64_t blocks) {
    const GpuOp &a = g.ops[last.op], &z = g.ops[next.op];
    const v1::Kernel &ka = *last.kernel, &kz = *next.kernel;
    return z.lane == a.lane && lane_place[next.op] == lane_place[last.op] + 1 && z.after.empty() &&
           ka.device() == kz.device() && ka.block_x() == kz.block_x() && ka.registers_per_thread() == kz.registers_per_thread() &&
           ka.static_shared_memory_bytes() == kz.static_shared_memory_bytes() &&
           ka.dynamic_shared_memory_bytes() == kz.dynamic_shared_memory_bytes() &&
           blocks + uint64_t(kz.grid_x()) <= INT32_MAX;  // grid_x holds 2^31 - 1 blocks
  };
  std::vector<Launch> run;
  for (const Thread& t : g.threads) {
    uint64_t blocks = 0;
    for (const uint32_t c : t.calls) {
      const v1::Kernel* k = fusable(c);
      if (k == nullptr) {
        flush(run);
        continue;
      }
      const Launch next{c, op_of_call[c], k};
      if (!run.empty() && (!continues(run.back(), next, blocks) || (ch.launches && run.size() == ch.launches))) flush(run);
      if (run.empty()) blocks = 0;
      run.push_back(next);
      blocks += uint64_t(k->grid_x());
    }
    flush(run);
  }
  std::string note = ch.text + ": " + std::to_string(fused) + " launches in " + std::to_string(runs) + " run(s) become " +
                     std::to_string(runs) + " kernel(s)";
  if (runs)
    note += " (the first over " + std::to_string(blocks_first) + " blocks), " + std::to_string(waves_before) +
            " waves of blocks to " + std::to_string(waves_after) + " at the measured time per wave; " +
            std::to_string(fused - runs) + " launch calls and the host time between them go";
  if (not_1d) note += "; " + std::to_string(not_1d) + " kept: not a 1-D launch";
  if (no_device) note += "; " + std::to_string(no_device) + " kept: their device's SM count or limits not recorded";
  if (runs == 0) throw std::invalid_argument(note + " (no two matching launches follow each other on a stream)");
  g.notes.push_back(note);
}

// priority=REGEX: the streams that run a matching kernel get the SMs first whenever they compete
// with the other streams of their device, as a stream created with the device's greatest
// priority does (cudaStreamCreateWithPriority). One step above the greatest other stream of the
// device: the replay only compares priorities, so how far above does not matter.
void raise_priority(Built& b, const Change& ch) {
  std::vector<bool> raise(b.graph.lanes.size(), false);
  for (const uint32_t o : matching_kernels(b, ch)) raise[b.graph.ops[o].lane] = true;
  std::map<std::pair<uint16_t, uint32_t>, int32_t> greatest_other;  // per capture and device
  for (uint32_t l = 0; l < b.graph.lanes.size(); ++l) {
    if (raise[l]) continue;
    const Lane& lane = b.graph.lanes[l];
    auto [it, added] = greatest_other.try_emplace({lane.capture, lane.device}, lane.priority);
    if (!added) it->second = std::max(it->second, lane.priority);
  }
  size_t raised = 0;
  for (uint32_t l = 0; l < b.graph.lanes.size(); ++l) {
    if (!raise[l]) continue;
    Lane& lane = b.graph.lanes[l];
    const auto it = greatest_other.find({lane.capture, lane.device});
    if (it != greatest_other.end() && it->second < INT32_MAX) lane.priority = std::max(lane.priority, it->second + 1);
    ++raised;
  }
  b.graph.notes.push_back(ch.text + ": " + std::to_string(raised) + " stream(s) above the other streams of their device");
}

// Pinned bandwidth of one direction measured in the capture: bytes over time of its pinned
// copies (the sum, so that large copies weigh as they should), 0 when it has none.
double measured_pinned_gbps(const Graph& g, int8_t engine) {
  double bytes = 0, ns = 0;
  for (const GpuOp& op : g.ops)
    if (op.kind == OpKind::kCopy && op.engine == engine && !op.pageable && op.bytes > 0 && op.duration_ns > 0)
      bytes += static_cast<double>(op.bytes), ns += static_cast<double>(op.duration_ns);
  return ns > 0 ? bytes / ns : 0;  // bytes per ns = GB/s
}

// The pinned bandwidth device `device` of capture `capture` would reach by its PCIe link, and
// the words that say where it came from; 0 when its DeviceInfo names no link (older captures,
// no NVML at record time).
struct LinkFigure {
  double gbps = 0;
  std::string text;
};
LinkFigure link_figure(const Built& b, uint16_t capture, uint32_t device) {
  if (capture >= b.sections.size()) return {};
  const RecordStore& records = b.sections[capture].records;
  v1::Record r;
  for (size_t i = 0; i < records.size(); ++i) {
    records.get(i, &r);
    if (!r.has_device() || r.device().ordinal() != device) continue;
    const v1::DeviceInfo& d = r.device();
    // The max: the current generation falls while the link idles, as it may have when the
    // hook wrote the record.
    uint32_t gen = d.pcie_link_max_generation(), width = d.pcie_link_max_width();
    if (pcie_raw_gbps(gen, width) <= 0) gen = d.pcie_link_generation(), width = d.pcie_link_width();
    const double raw = pcie_raw_gbps(gen, width);
    if (raw <= 0) return {};
    char text[160];
    std::snprintf(text, sizeof text, "from device %u's PCIe gen%u x%u link: %.1f GB/s raw, %.0f%% as pinned copies reach",
                  device, gen, width, raw, kPinnedShareOfPcie * 100);
    return {raw * kPinnedShareOfPcie, text};
  }
  return {};
}

std::pair<uint16_t, uint32_t> link_key(const Graph& g, const GpuOp& op) {
  return {op.capture, op.lane < g.lanes.size() ? g.lanes[op.lane].device : 0};
}

void pin_copies(Built& b, const Change& ch, const Options& options) {
  Graph& g = b.graph;
  size_t changed = 0, unblocked = 0;
  std::string bandwidths;
  for (int8_t engine : {kEngineHtoD, kEngineDtoH}) {
    bool any = false;
    for (const GpuOp& op : g.ops) any |= op.kind == OpKind::kCopy && op.pageable && op.engine == engine;
    if (!any) continue;
    const double given = options.pinned_gbps > 0 ? options.pinned_gbps : measured_pinned_gbps(g, engine);
    const char* dir = engine == kEngineHtoD ? "HtoD" : "DtoH";
    // Without a figure for all, each copy takes its device's link: one entry per (capture, device).
    std::map<std::pair<uint16_t, uint32_t>, LinkFigure> links;
    if (given <= 0) {
      for (const GpuOp& op : g.ops) {
        if (op.kind != OpKind::kCopy || !op.pageable || op.engine != engine) continue;
        const auto key = link_key(g, op);
        if (links.count(key)) continue;
        LinkFigure f = link_figure(b, key.first, key.second);
        if (f.gbps <= 0)
          throw std::invalid_argument(std::string("--change pin-copies: the capture has pageable ") + dir +
                                      " copies but no pinned one to measure the pinned bandwidth from, and device " +
                                      std::to_string(key.second) +
                                      "'s record names no PCIe link (recorded without NVML, or by an older hook); "
                                      "give --pinned-gbps");
        links.emplace(key, std::move(f));
      }
      for (const auto& [key, f] : links)
        bandwidths += std::string(bandwidths.empty() ? "" : ", ") + dir + fmt(" at %.1f GB/s", f.gbps) + " (" +
                      f.text + ")";
    } else {
      bandwidths += std::string(bandwidths.empty() ? "" : ", ") + dir + fmt(" at %.1f GB/s", given) +
                    (options.pinned_gbps > 0 ? " (--pinned-gbps)" : " (measured)");
    }
    for (uint32_t o = 0; o < g.ops.size(); ++o) {
      GpuOp& op = g.ops[o];
      if (op.kind != OpKind::kCopy || !op.pageable || op.engine != engine) continue;
      const double gbps =
          given > 0 ? given : links.at(link_key(g, op)).gbps;
      op.duration_ns = scaled(static_cast<int64_t>(std::min<uint64_t>(op.bytes, uint64_t{1} << 62)), 1.0 / gbps);
      op.pageable = false;
      ++changed;
      // cudaMemcpyAsync returns at once once its memory is pinned; cudaMemcpy still waits.
      if (op.host_waits && !op.call_waits && op.call != kNone) {
        stop_waiting(b, o);
        ++unblocked;
      }
    }
  }
  if (changed == 0) {
    g.notes.push_back(ch.text + ": no copy to or from pageable memory: nothing to change");
    return;
  }
  g.notes.push_back(ch.text + ": " + std::to_string(changed) + " pageable copies, " + bandwidths + "; " +
                    std::to_string(unblocked) + " cudaMemcpyAsync calls no longer block the host");
}

// Each synchronous copy moves to a copy stream of its device and direction; the work its
// stream launched before it (a DtoH copy reads it) and after it (an HtoD copy feeds it) is
// ordered by events, and the host waits for a DtoH copy at its next waiting call.
void async_copies(Built& b, const Change& ch) {
  Graph& g = b.graph;
  std::map<std::tuple<uint16_t, uint32_t, int8_t>, uint32_t> copy_lane;
  std::map<uint16_t, uint32_t> next_id;
  size_t moved = 0, still_blocking = 0;
  std::vector<uint32_t> read_by_host;
  for (uint32_t o = 0; o < g.ops.size(); ++o) {
    GpuOp& op = g.ops[o];
    // Only a synchronous call's copy moves: an asynchronous one that waits for pageable
    // memory stays as written (pin-copies is that change).
    if (op.kind != OpKind::kCopy || !op.call_waits || op.call == kNone || op.engine < 0) continue;
    const Lane from = g.lanes[op.lane];
    auto key = std::make_tuple(from.capture, from.device, op.engine);
    auto it = copy_lane.find(key);
    if (it == copy_lane.end()) {
      if (!next_id.count(from.capture)) next_id[from.capture] = next_stream_id(g, from.capture);
      it = copy_lane.emplace(key, add_lane(g, from, next_id[from.capture]++)).first;
    }
    const uint32_t orig_lane = op.orig_lane;
    op.lane = it->second;
    op.call_waits = false;  // now cudaMemcpyAsync: only pageable memory still holds the host
    ++moved;
    // Off the legacy default stream, the copy loses its implicit order with every blocking
    // stream of the device: the waits stand for it on each of them.
    std::vector<uint32_t> related{orig_lane};
    if (from.legacy)
      for (uint32_t l = 0; l < g.lanes.size(); ++l)
        if (l != orig_lane && !g.lanes[l].added && g.lanes[l].blocking && g.lanes[l].capture == from.capture &&
            g.lanes[l].device == from.device)
          related.push_back(l);
    for (uint32_t lane : related) {
      EventWait ew;
      if (op.engine == kEngineHtoD) {  // what the stream runs next reads the data
        ew.waiting_lane = lane;
        ew.at_order = op.order;
        ew.source_ops = {o};
      } else {  // it reads what the stream wrote before it
        ew.waiting_op = o;
        ew.source_lane = lane;
        ew.source_order = op.order;
      }
      b.event_waits.push_back(ew);
    }
    if (op.pageable) {  // CUDA stages pageable memory: the call still returns when it is done
      ++still_blocking;
      continue;
    }
    stop_waiting(b, o);
    if (op.engine == kEngineDtoH) read_by_host.push_back(o);
  }
  // The host reads what a DtoH copy brought: its thread's next call that still waits (once
  // every copy has been made asynchronous) waits for the copy too, or its last call.
  std::vector<uint32_t> position(g.calls.size(), 0);  // a call's index in its thread
  for (const Thread& t : g.threads)
    for (uint32_t i = 0; i < t.calls.size(); ++i) position[t.calls[i]] = i;
  for (uint32_t o : read_by_host) {
    const Thread& t = g.threads[g.calls[g.ops[o].call].thread];
    uint32_t target = kNone;
    for (size_t i = position[g.ops[o].call] + 1; i < t.calls.size() && target == kNone; ++i) {
      const uint32_t c = t.calls[i];
      if (!g.calls[c].removed && (b.call_wait[c].kind != WaitSpec::Kind::kNone || !b.call_wait[c].ops.empty())) target = c;
    }
    for (size_t i = t.calls.size(); target == kNone && i-- > position[g.ops[o].call];)
      if (!g.calls[t.calls[i]].removed) target = t.calls[i];
    if (target == kNone) continue;
    b.call_wait[target].ops.push_back(o);
    g.calls[target].launches_only = false;  // it waits now: graphs must not fold it
  }
  if (moved == 0) {
    // Copies that wait only for their pageable memory are another change's.
    size_t pageable = 0;
    for (const GpuOp& op : g.ops) pageable += op.kind == OpKind::kCopy && op.host_waits && !op.call_waits;
    g.notes.push_back(ch.text + ": no synchronous copy: nothing to change" +
                      (pageable ? "; " + std::to_string(pageable) +
                                      " asynchronous copies hold the host for their pageable memory (pin-copies)"
                                : std::string()));
    return;
  }
  g.notes.push_back(ch.text + ": " + std::to_string(moved) + " synchronous copies on " + std::to_string(copy_lane.size()) +
                    " copy stream(s)" +
                    (still_blocking ? "; " + std::to_string(still_blocking) +
                                          " still block the host: their memory is pageable (add pin-copies)"
                                    : std::string()));
}

void remove_syncs(Built& b, const Change& ch) {
  Graph& g = b.graph;
  size_t removed = 0, kept = 0;
  std::vector<bool> launched_dtoh(g.calls.size(), false), launches(g.calls.size(), false);
  for (const GpuOp& op : g.ops) {
    if (op.call == kNone) continue;
    launches[op.call] = true;
    if (op.kind == OpKind::kCopy && op.engine == kEngineDtoH) launched_dtoh[op.call] = true;
  }
  // What a call looks like to the host's loop: its name and the work it launched.
  std::vector<std::string> launched_names(g.calls.size());
  for (const GpuOp& op : g.ops)
    if (op.call != kNone) launched_names[op.call] += "|" + op.name.str();
  for (const Thread& t : g.threads) {
    // The last wait of a thread is where it reads its results: kept.
    uint32_t last_wait = kNone;
    for (uint32_t c : t.calls)
      if (b.call_wait[c].kind != WaitSpec::Kind::kNone || !b.call_wait[c].ops.empty()) last_wait = c;
    // A wait the host's loop repeats (every step's) is what the fix drops; one that follows
    // a call no other wait of its name follows (the wait after the loop) stays.
    std::unordered_map<std::string, uint32_t> seen;
    std::vector<std::string> context(t.calls.size());
    for (size_t i = 0; i < t.calls.size(); ++i) {
      const uint32_t prev = i ? t.calls[i - 1] : kNone;
      context[i] = (prev == kNone ? std::string() : g.calls[prev].name.str() + launched_names[prev]) + ">" +
                   g.calls[t.calls[i]].name.str();
      ++seen[context[i]];
    }
    size_t index = 0;
    bool reads_since = false;  // a DtoH copy since the last wait kept: the host reads its data next
    for (uint32_t c : t.calls) {
      const bool repeated = seen[context[index++]] > 1;
      const WaitSpec& w = b.call_wait[c];
      if (launched_dtoh[c]) reads_since = true;
      const bool sync = w.kind == WaitSpec::Kind::kStream || w.kind == WaitSpec::Kind::kDevice ||
                        w.kind == WaitSpec::Kind::kEvent;
      if (!sync || !w.ops.empty()) {
        if (!w.ops.empty() || w.kind != WaitSpec::Kind::kNone) reads_since = false;
        continue;
      }
      if (!ch.name.empty() && g.calls[c].name.str().rfind(ch.name, 0) != 0) continue;
      if (launches[c]) continue;  // it hands work over too: not a synchronising call to drop
      if (c == last_wait || reads_since || !repeated) {
        ++kept;
        reads_since = false;
        continue;
      }
      g.calls[c].removed = true;
      ++removed;
    }
  }
  g.notes.push_back(ch.text + ": " + std::to_string(removed) + " synchronising call(s) removed, " + std::to_string(kept) +
                    " kept (a thread's last wait, a wait before the host reads a device-to-host copy, or one its loop does not"
                    " repeat)");
}

// What makes two operations "the same step" of a stream: kind, name and size.
std::string signature(const GpuOp& op) {
  return std::to_string(static_cast<int>(op.kind)) + "/" + op.name.str() + "/" + std::to_string(op.bytes) + "/" +
         std::to_string(op.copy_kind);
}

// A stream's operations split into chains, each starting where the stream's first operation
// repeats (the HtoD copy of every chunk, or every launch of the one kernel), spread over N
// new streams round robin. The capture cannot show data dependencies between kernels: the
// chains are assumed independent unless the host or an event orders them, which still holds.
void spread_streams(Built& b, const Change& ch) {
  Graph& g = b.graph;
  std::map<uint32_t, std::vector<uint32_t>> by_lane;
  for (uint32_t o = 0; o < g.ops.size(); ++o) {
    const GpuOp& op = g.ops[o];
    if (g.lanes[op.lane].added || op.collective || op.kind == OpKind::kOther || op.kind == OpKind::kHostFunc) continue;
    by_lane[op.lane].push_back(o);
  }
  std::map<uint16_t, uint32_t> next_id;
  size_t spread = 0;
  for (auto& [lane, ops] : by_lane) {
    std::sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t c) { return g.ops[a].order < g.ops[c].order; });
    // The chain head: the most frequent kind of operation, the first seen among equals (setup
    // work before its first occurrence joins the first chain).
    std::map<std::string, std::pair<size_t, size_t>> seen;  // signature -> count, -first position
    for (size_t i = 0; i < ops.size(); ++i) {
      auto [it, added] = seen.emplace(signature(g.ops[ops[i]]), std::make_pair(size_t{0}, i));
      ++it->second.first;
    }
    std::string head;
    size_t best = 0, first = 0;
    for (const auto& [sig, stat] : seen)
      if (stat.first > best || (stat.first == best && stat.second < first)) head = sig, best = stat.first, first = stat.second;
    uint32_t head_op = ops.front();
    for (uint32_t o : ops)
      if (signature(g.ops[o]) == head) {
        head_op = o;
        break;
      }
    std::vector<std::vector<uint32_t>> chains;
    for (uint32_t o : ops) {
      if (chains.empty() || (signature(g.ops[o]) == head && o != chains.back().front() && chains.back().size() > 0 &&
                             std::any_of(chains.back().begin(), chains.back().end(),
                                         [&](uint32_t x) { return signature(g.ops[x]) == head; })))
        chains.emplace_back();
      chains.back().push_back(o);
    }
    const Lane from = g.lanes[lane];
    if (chains.size() < 2) {
      g.notes.push_back(ch.text + ": stream " + std::to_string(from.stream) + " of device " + std::to_string(from.device) +
                        " holds one chain: nothing to spread");
      continue;
    }
    if (!next_id.count(from.capture)) next_id[from.capture] = next_stream_id(g, from.capture);
    std::vector<uint32_t> new_lanes;
    const size_t lanes = std::min<size_t>(ch.streams, chains.size());
    for (size_t i = 0; i < lanes; ++i) new_lanes.push_back(add_lane(g, from, next_id[from.capture]++));
    for (size_t i = 0; i < chains.size(); ++i)
      for (uint32_t o : chains[i]) g.ops[o].lane = new_lanes[i % new_lanes.size()];
    ++spread;
    g.notes.push_back(ch.text + ": stream " + std::to_string(from.stream) + " of device " + std::to_string(from.device) + ": " +
                      std::to_string(chains.size()) + " chains (each starting with " + g.ops[head_op].name.str() +
                      ") over " + std::to_string(ch.streams) + " new streams, assumed independent");
  }
  if (by_lane.empty()) g.notes.push_back(ch.text + ": no stream with operations to spread");
}

// overlap-copies: on each stream, a run of N >= 2 copies right after N kernels or more (a
// step computed in chunks, then sent) moves to a copy stream of its device, and the i-th copy
// waits for the i-th of the last N kernels before the run instead of for all of them, as the
// fix's per-chunk events make it. Which bytes a kernel wrote the capture does not say: the
// chunks are paired by position. The stream's next kernel named as one of those producers
// waits for the run's last copy, since it overwrites what the copies read. Copies the host
// waits for stay where they are (async-copies, pin-copies).
void overlap_copies(Built& b, const Change& ch) {
  Graph& g = b.graph;
  std::map<uint32_t, std::vector<uint32_t>> by_lane;
  for (uint32_t o = 0; o < g.ops.size(); ++o) {
    const GpuOp& op = g.ops[o];
    if (!g.lanes[op.lane].added && !op.collective) by_lane[op.lane].push_back(o);
  }
  auto movable = [&](const GpuOp& op) { return op.kind == OpKind::kCopy && !op.host_waits && !op.call_waits; };
  std::map<uint16_t, uint32_t> next_id;
  size_t moved = 0, runs = 0, streams = 0;
  for (auto& [lane, ops] : by_lane) {
    std::sort(ops.begin(), ops.end(), [&](uint32_t a, uint32_t c) { return g.ops[a].order < g.ops[c].order; });
    // Per kernel, the position of the next kernel of its name on the lane (npos: none), so that
    // each run finds the kernel it joins in one step rather than by a walk to the lane's end.
    constexpr size_t npos = SIZE_MAX;
    std::vector<size_t> next_same(ops.size(), npos);
    {
      std::unordered_map<std::string_view, size_t> later;
      for (size_t k = ops.size(); k-- > 0;) {
        const GpuOp& op = g.ops[ops[k]];
        if (op.kind != OpKind::kKernel) continue;
        auto [it, added] = later.try_emplace(op.name.str(), k);
        if (!added) next_same[k] = std::exchange(it->second, k);
      }
    }
    uint32_t copy_lane = kNone;
    for (size_t i = 0; i < ops.size();) {
      const size_t first_kernel = i;
      while (i < ops.size() && g.ops[ops[i]].kind == OpKind::kKernel) ++i;
      const size_t first_copy = i;
      while (i < ops.size() && movable(g.ops[ops[i]])) ++i;
      const size_t n = i - first_copy;
      if (i == first_kernel) ++i;  // neither a kernel nor a copy to move
      if (n < 2 || first_copy - first_kernel < n) continue;
      if (copy_lane == kNone) {
        const Lane from = g.lanes[lane];
        if (!next_id.count(from.capture)) next_id[from.capture] = next_stream_id(g, from.capture);
        copy_lane = add_lane(g, from, next_id[from.capture]++);
        ++streams;
      }
      size_t join_at = npos;  // the first kernel past the run named as one of its producers
      for (size_t j = 0; j < n; ++j) {
        const size_t producer = first_copy - n + j;
        const uint32_t copy = ops[first_copy + j];
        g.ops[copy].lane = copy_lane;
        EventWait chunk;
        chunk.waiting_op = copy;
        chunk.source_ops = {ops[producer]};
        b.event_waits.push_back(chunk);
        // Within the run the next of a name is another producer; past it, a candidate.
        if (next_same[producer] != npos && next_same[producer] >= i) join_at = std::min(join_at, next_same[producer]);
      }
      if (join_at != npos) {
        EventWait join;
        join.waiting_op = ops[join_at];
        join.source_ops = {ops[i - 1]};
        b.event_waits.push_back(join);
      }
      moved += n;
      ++runs;
    }
  }
  if (moved == 0) {
    g.notes.push_back(ch.text + ": no stream runs two copies or more right after as many kernels: nothing to change");
    return;
  }
  g.notes.push_back(ch.text + ": " + std::to_string(moved) + " copies in " + std::to_string(runs) + " runs on " +
                    std::to_string(streams) + " copy stream(s), each behind the kernel of its position in the run " +
                    "before it (chunks paired by position)");
}

// The smallest period p >= 2 of `names` (names[i] == names[i + p] for every i), 0 if none
// repeats at least twice. The smallest period of a sequence is its length minus its longest
// border (the KMP prefix function): linear, where trying each p was quadratic.
size_t period(const std::vector<std::string>& names) {
  const size_t n = names.size();
  if (n < 4) return 0;
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<uint32_t> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = ids.try_emplace(names[i], static_cast<uint32_t>(ids.size())).first->second;
  std::vector<size_t> border(n, 0);
  for (size_t i = 1; i < n; ++i) {
    size_t k = border[i - 1];
    while (k > 0 && s[i] != s[k]) k = border[k - 1];
    if (s[i] == s[k]) ++k;
    border[i] = k;
  }
  size_t p = n - border[n - 1];
  if (p == 1) p = 2;  // one name repeated: every p is a period; a graph of two launches at least
  return p * 2 <= n ? p : 0;
}

// Runs of launch calls on a thread that repeat one sequence: each repetition becomes one
// graph launch (the first call, at the graph launch's cost); the others and the host time
// between them go; their work keeps its order on its streams. The first repetition is how the
// fix builds the graph (stream capture records the same calls): its calls stay at their
// measured costs, and its last one becomes the first graph launch, after the instantiation
// where the capture measured one (cudaGraphInstantiate).
void graphs(Built& b, const Change& ch, const Options& options) {
  Graph& g = b.graph;
  std::vector<std::vector<uint32_t>> ops_of_call(g.calls.size());
  for (uint32_t o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].call != kNone) ops_of_call[g.ops[o].call].push_back(o);
  // The capture's own cudaGraphLaunch and cudaGraphInstantiate costs, when it has them.
  std::map<uint16_t, std::vector<int64_t>> measured, instantiations;
  for (const HostCall& c : g.calls) {
    if (c.name.str().rfind("cudaGraphLaunch", 0) == 0) measured[g.threads[c.thread].capture].push_back(c.orig_end_ns - c.orig_start_ns);
    if (c.name.str().rfind("cudaGraphInstantiate", 0) == 0)
      instantiations[g.threads[c.thread].capture].push_back(c.orig_end_ns - c.orig_start_ns);
  }
  size_t launches = 0, folded = 0;
  uint64_t next_graph_id = 1;
  for (const Thread& t : g.threads) {
    int64_t cost = static_cast<int64_t>(options.graph_launch_us * 1e3);
    std::string source = "--graph-launch-us";
    if (cost <= 0) {
      if (const auto& m = measured[t.capture]; !m.empty()) {
        cost = median(m), source = "the capture's cudaGraphLaunch";
      } else {
        cost = b.launch_cost_ns[t.capture], source = "one launch call of the capture";
      }
    }
    const int64_t instantiate = median(instantiations[t.capture]);
    auto flush = [&](std::vector<uint32_t>& run) {
      std::vector<std::string> names;
      for (uint32_t c : run) {
        std::string n = g.calls[c].name;
        for (uint32_t o : ops_of_call[c]) n += "|" + g.ops[o].name.str();
        names.push_back(n);
      }
      const size_t p = period(names);
      if (p != 0) {
        for (size_t start = 0; start + p <= run.size(); start += p) {
          // The first repetition is captured: its calls stay and its last launches the graph.
          const bool captured = start == 0;
          const uint32_t launch = run[captured ? p - 1 : start];
          HostCall& first = g.calls[launch];
          first.cost_ns = captured ? cost + instantiate + first.cost_ns : cost;
          b.call_is_graph_launch[launch] = true;
          uint64_t node = 1;
          const uint64_t graph_id = next_graph_id;
          for (size_t i = start; i < start + p; ++i) {
            const uint32_t c = run[i];
            if (!captured && i != start) {
              g.calls[c].removed = true;
              g.calls[c].gap_ns = 0;
              ++folded;
            }
            for (uint32_t o : ops_of_call[c]) {
              g.ops[o].call = launch;
              g.ops[o].ready_offset_ns = first.cost_ns;  // nodes go to the GPU once the launch returns
              if (b.op_graph.size() < g.ops.size()) b.op_graph.resize(g.ops.size());
              b.op_graph[o] = {launch, graph_id, node++};
            }
          }
          ++launches;
        }
        ++next_graph_id;
      }
      run.clear();
    };
    std::vector<uint32_t> run;
    for (uint32_t c : t.calls) {
      if (g.calls[c].launches_only && !g.calls[c].removed && !ops_of_call[c].empty()) run.push_back(c);
      else flush(run);
    }
    flush(run);
    if (launches)
      g.notes.push_back(ch.text + ": graph launch cost " + us(cost) + " (" + source + "); each graph captured from its first " +
                        "repetition's calls, at their measured costs, then " +
                        (instantiate ? "instantiated in " + us(instantiate) + " (the capture's cudaGraphInstantiate)"
                                     : std::string("instantiated at no cost (the capture has no cudaGraphInstantiate to measure)")));
  }
  g.notes.push_back(ch.text + ": " + std::to_string(launches) + " graph launches replace " +
                    std::to_string(launches + folded) + " launch calls");
}

// Each rank's compute between two collectives (a step) set to the mean over the ranks: the
// kernels of the step scaled by mean / own.
void balance_ranks(Built& b, const Change& ch) {
  Graph& g = b.graph;
  const size_t captures = b.sections.size();
  if (captures < 2) throw std::invalid_argument("--change balance-ranks needs the captures of two ranks or more");
  std::vector<std::vector<uint32_t>> ops(captures);
  for (uint32_t o = 0; o < g.ops.size(); ++o) ops[g.ops[o].capture].push_back(o);
  std::vector<std::vector<std::vector<uint32_t>>> steps(captures);  // capture -> step -> kernels
  for (size_t c = 0; c < captures; ++c) {
    std::sort(ops[c].begin(), ops[c].end(), [&](uint32_t a, uint32_t d) { return g.ops[a].order < g.ops[d].order; });
    steps[c].emplace_back();
    for (uint32_t o : ops[c]) {
      if (g.ops[o].collective) steps[c].emplace_back();
      else if (g.ops[o].kind == OpKind::kKernel) steps[c].back().push_back(o);
    }
  }
  for (size_t c = 1; c < captures; ++c)
    if (steps[c].size() != steps[0].size())
      throw std::invalid_argument("--change balance-ranks: the ranks ran different numbers of collectives (" +
                                  std::to_string(steps[0].size() - 1) + " in " + b.sections[0].name + ", " +
                                  std::to_string(steps[c].size() - 1) + " in " + b.sections[c].name + ")");
  size_t retimed = 0;
  double worst = 1;
  for (size_t s = 0; s < steps[0].size(); ++s) {
    std::vector<double> own(captures, 0);
    double mean = 0;
    for (size_t c = 0; c < captures; ++c) {
      for (uint32_t o : steps[c][s]) own[c] += static_cast<double>(g.ops[o].duration_ns);
      mean += own[c] / static_cast<double>(captures);
    }
    for (size_t c = 0; c < captures; ++c) {
      if (own[c] <= 0) continue;
      const double factor = mean / own[c];
      worst = std::min(worst, factor);
      for (uint32_t o : steps[c][s]) {
        g.ops[o].duration_ns = scaled(g.ops[o].duration_ns, factor);
        ++retimed;
      }
    }
  }
  g.notes.push_back(ch.text + ": " + std::to_string(steps[0].size() - 1) + " collectives, " + std::to_string(retimed) +
                    " kernels re-timed to their step's mean over " + std::to_string(captures) + " ranks (slowest rank's compute" +
                    fmt(" x%.2f)", worst));
}

}  // namespace

void apply(Built& b, const std::vector<Change>& changes, const Options& options) {
  for (const Change& ch : changes) {
    switch (ch.kind) {
      case Change::Kind::kScale: scale(b, ch); break;
      case Change::Kind::kCoalesce: coalesce(b, ch); break;
      case Change::Kind::kPinCopies: pin_copies(b, ch, options); break;
      case Change::Kind::kAsyncCopies: async_copies(b, ch); break;
      case Change::Kind::kRemoveSyncs: remove_syncs(b, ch); break;
      case Change::Kind::kStreams: spread_streams(b, ch); break;
      case Change::Kind::kGraphs: graphs(b, ch, options); break;
      case Change::Kind::kBalanceRanks: balance_ranks(b, ch); break;
      case Change::Kind::kPriority: raise_priority(b, ch); break;
      case Change::Kind::kOverlapCopies: overlap_copies(b, ch); break;
      case Change::Kind::kBlockSize: resize_blocks(b, ch); break;
      case Change::Kind::kFuse: fuse_kernels(b, ch); break;
      case Change::Kind::kCheckpoint: checkpoint(b, ch); break;
      case Change::Kind::kFreeIdle: free_idle(b, ch); break;
      case Change::Kind::kPipeline: one_f_one_b(b, ch); break;
    }
    link(b);  // the lanes may have moved: find the waits again
  }
}

}  // namespace gantt::whatif::detail

namespace gantt::whatif {

double pcie_raw_gbps(uint32_t generation, uint32_t width) {
  if (width == 0 || width > 32) return 0;
  double lane_gbps = 0;  // bytes per ns per lane, after the line encoding
  switch (generation) {
    case 1: lane_gbps = 2.5 * 8 / 10 / 8; break;
    case 2: lane_gbps = 5.0 * 8 / 10 / 8; break;
    case 3: lane_gbps = 8.0 * 128 / 130 / 8; break;
    case 4: lane_gbps = 16.0 * 128 / 130 / 8; break;
    case 5: lane_gbps = 32.0 * 128 / 130 / 8; break;
    case 6: lane_gbps = 64.0 * 242 / 256 / 8; break;
    default: return 0;
  }
  return lane_gbps * width;
}

}  // namespace gantt::whatif
