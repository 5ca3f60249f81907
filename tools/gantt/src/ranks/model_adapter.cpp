// Fills the pure rank analyses' inputs from a loaded Model, and applies an alignment back.
#include <map>

#include <gpuhook/capture.h>
#include <gpuhook/nccl_types.h>

#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"

namespace gantt {

namespace {

void shift(std::vector<uint64_t>& column, const std::vector<uint16_t>& capture, const std::vector<int64_t>& offset) {
  for (size_t i = 0; i < column.size(); ++i) {
    if (column[i] == 0) continue;  // unknown stays unknown
    const int64_t off = offset[capture[i]];
    column[i] = static_cast<uint64_t>(static_cast<int64_t>(column[i]) + off);
  }
}

}  // namespace

int32_t global_rank(const Model& model, uint16_t capture) {
  if (capture < model.captures.size() && model.captures[capture].header.has_rank())
    return model.captures[capture].header.rank();
  return capture;
}

std::vector<RankClockInput> rank_clock_inputs(const Model& model) {
  std::vector<RankClockInput> inputs(model.captures.size());
  for (size_t c = 0; c < model.captures.size(); ++c) {
    const auto& h = model.captures[c].header;
    inputs[c].host = h.host_name();
    inputs[c].boot_id = h.boot_id();
    inputs[c].start_monotonic_raw_ns = h.start_monotonic_raw_ns();
    inputs[c].start_realtime_ns = h.start_realtime_ns();
  }
  const NcclTable& nc = model.nccl;
  for (size_t i = 0; i < nc.size(); ++i) {
    if (!gpuhook::nccl_op_is_collective(nc.op[i]) || nc.event[i] == kNone) continue;
    const uint64_t end = model.events.end_ns[nc.event[i]];
    if (end == 0) continue;
    inputs[nc.capture[i]].ends.push_back({nc.comm_id[i], nc.sequence[i], end});
  }
  return inputs;
}

void apply_rank_alignment(Model& model, const RankAlignment& alignment) {
  std::vector<int64_t> offset(model.captures.size(), 0);
  bool any = false;
  for (size_t c = 0; c < offset.size() && c < alignment.captures.size(); ++c) {
    offset[c] = alignment.captures[c].offset_ns;
    any |= offset[c] != 0;
  }
  if (!any) return;
  EventTable& e = model.events;
  shift(e.queued_ns, e.capture, offset);
  shift(e.submitted_ns, e.capture, offset);
  shift(e.start_ns, e.capture, offset);
  shift(e.end_ns, e.capture, offset);
  shift(model.api.start_ns, model.api.capture, offset);
  shift(model.api.end_ns, model.api.capture, offset);
  shift(model.ranges.start_ns, model.ranges.capture, offset);
  shift(model.ranges.end_ns, model.ranges.capture, offset);
  shift(model.nccl.start_ns, model.nccl.capture, offset);
  shift(model.nccl.end_ns, model.nccl.capture, offset);
  // Allocations and counter samples are on the host clock too: left as recorded, a rank on
  // another host had its memory peak and its NVML samples milliseconds away from its kernels.
  shift(model.memory.time_ns, model.memory.capture, offset);
  shift(model.memory.first_use_ns, model.memory.capture, offset);
  shift(model.memory.last_use_ns, model.memory.capture, offset);
  shift(model.metrics.time_ns, model.metrics.capture, offset);
  for (size_t c = 0; c < model.captures.size(); ++c) {
    CaptureInfo& info = model.captures[c];
    const auto moved = [&](uint64_t t) { return t ? static_cast<uint64_t>(static_cast<int64_t>(t) + offset[c]) : t; };
    info.first_ns = moved(info.first_ns);
    info.last_ns = moved(info.last_ns);
    for (auto& [time, text] : info.flight_dumps) time = moved(time);
  }
}

std::vector<RankCollectiveCall> collective_calls(const Model& model) {
  std::vector<RankCollectiveCall> calls;
  const NcclTable& nc = model.nccl;
  for (size_t i = 0; i < nc.size(); ++i) {
    if (!gpuhook::nccl_op_is_collective(nc.op[i])) continue;
    RankCollectiveCall c;
    c.capture = nc.capture[i];
    c.rank = nc.rank[i];
    c.global_rank = global_rank(model, nc.capture[i]);
    c.op = nc.op[i];
    c.comm_id = nc.comm_id[i];
    c.sequence = nc.sequence[i];
    c.count = nc.count[i];
    c.datatype = nc.datatype[i];
    c.nranks = nc.nranks[i];
    if (nc.event[i] != kNone) {
      c.event = nc.event[i];
      c.kernel_start_ns = model.events.start_ns[nc.event[i]];
      c.kernel_end_ns = model.events.end_ns[nc.event[i]];
    }
    calls.push_back(c);
  }
  return calls;
}

namespace {

// Work for balance: GPU work other than NCCL's kernels, whose time is mostly waiting for the
// other ranks (what is left, the transfer, is the same on every rank of a collective).
bool balance_work(const EventTable& e, size_t i) {
  if (e.kind[i] == EventKind::kNccl || e.kind[i] == EventKind::kSync || e.kind[i] == EventKind::kHostFunc) return false;
  return e.start_ns[i] != 0 && e.end_ns[i] > e.start_ns[i];
}

}  // namespace

std::vector<RankIntervals> rank_busy_intervals(const Model& model) {
  std::vector<RankIntervals> out(model.captures.size());
  for (size_t c = 0; c < out.size(); ++c) out[c].global_rank = global_rank(model, static_cast<uint16_t>(c));
  const EventTable& e = model.events;
  for (size_t i = 0; i < e.size(); ++i)
    if (balance_work(e, i)) out[e.capture[i]].intervals.push_back({e.start_ns[i], e.end_ns[i]});
  return out;
}

std::vector<RankIntervals> device_busy_intervals(const Model& model) {
  std::map<uint32_t, RankIntervals> by;
  const EventTable& e = model.events;
  // Every device that ran any GPU work has a row, so a device of NCCL kernels only counts 0.
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.kind[i] == EventKind::kSync || e.kind[i] == EventKind::kHostFunc) continue;
    if (e.start_ns[i] == 0 || e.end_ns[i] <= e.start_ns[i]) continue;
    RankIntervals& d = by[e.device[i]];
    d.global_rank = static_cast<int32_t>(e.device[i]);
    if (balance_work(e, i)) d.intervals.push_back({e.start_ns[i], e.end_ns[i]});
  }
  std::vector<RankIntervals> out;
  out.reserve(by.size());
  for (auto& [device, d] : by) out.push_back(std::move(d));
  return out;
}

}  // namespace gantt
