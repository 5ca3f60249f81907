// pipeline=1f1b[:M]: a GPipe pipeline's steps rescheduled as 1F1B, as Megatron-LM runs it
// (PipeDream-flush), with M micro-batches per step.
//
// The pipeline is the ranks that send to and receive from their neighbours (Graph::p2p, matched
// by link_p2p): one capture per stage, its sends and receives on one stream. On that stream a
// stage's work is read as units: a forward unit is the kernels between the receive of its
// input from the previous stage and the send of its output to the next, a backward unit the same
// the other way. Where two units meet with no transfer between them (the last stage turning
// from its last forward to its first backward, the first stage from its last backward to the
// next step's first forward) they are told apart by the count of kernels a unit of that
// direction has elsewhere on the stage. A step is a run of forward units then a run of backward
// units (GPipe), the same count on every stage.
//
// Each step is then laid out again: a micro-batch's kernels are those of the recorded
// micro-batch it falls in, each taking m/M of its time (m recorded, M wanted: compute linear in
// the micro-batch's size), and a transfer the stage's median one in its direction, its fixed
// latency kept and the rest m/M of it (the latency: the smallest NCCL operation's transfer in
// the captures, a barrier's all-reduce of a few bytes; none without one). The order is Megatron-LM's: min(p-s-1, M) warm-up forwards on stage s, then
// one forward and one backward in turn, the send of a forward's output grouped with the receive
// of a backward's input from the same neighbour (and the other way), then the cool-down
// backwards. The new sends and receives are matched again, so the replay's point-to-point
// coupling times the new bubble.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "whatif_internal.h"

namespace gantt::whatif::detail {

namespace {

// A transfer's direction as its stage sees it: forward in (from s-1), forward out (to s+1),
// backward in (from s+1), backward out (to s-1).
enum Tag : uint8_t { kForwardIn, kForwardOut, kBackwardIn, kBackwardOut, kTags };

struct Unit {
  bool forward = true;
  std::vector<uint32_t> compute;
  uint32_t in = kNone, out = kNone;  // its receive and its send, where it has them
};

struct Stage {
  uint16_t capture = 0;
  uint32_t lane = kNone;
  std::vector<std::vector<Unit>> steps;  // per step: its forward units, then its backward units
  int64_t transfer_ns[kTags] = {};       // the median transfer of each direction
  uint32_t template_op[kTags] = {kNone, kNone, kNone, kNone};
  P2pEnd template_end[kTags];            // a recorded send or receive of each direction
};

std::string stage_text(size_t s) { return "stage " + std::to_string(s); }

// ns times f, within the graph's bound on a duration (2^50 ns, about 13 days): a hostile capture's
// durations and a micro-batch count far below the recorded one cannot overflow it.
int64_t scaled_ns(int64_t ns, double f) {
  constexpr double kMax = static_cast<double>(int64_t{1} << 50);
  return static_cast<int64_t>(std::llround(std::clamp(static_cast<double>(ns) * f, 0.0, kMax)));
}

[[noreturn]] void refuse(const Change& ch, const std::string& why) {
  throw std::invalid_argument("--change " + ch.text + ": " + why);
}

// The ranks of the one communicator whose sends and receives join neighbours, each a capture.
// Returns per stage (rank) its capture and the tag of every transfer its ops carry.
std::vector<Stage> find_stages(const Built& b, const Change& ch, std::unordered_map<uint32_t, Tag>* tag_of) {
  const Graph& g = b.graph;
  if (b.p2p_ends.empty()) refuse(ch, "the captures hold no ncclSend or ncclRecv between ranks of a communicator: there is no pipeline to reschedule");
  std::map<uint64_t, size_t> per_comm;
  for (const P2pEnd& e : b.p2p_ends) ++per_comm[e.comm_id];
  const uint64_t comm = std::max_element(per_comm.begin(), per_comm.end(), [](const auto& x, const auto& y) {
                          return x.second < y.second;
                        })->first;
  std::map<int32_t, uint16_t> capture_of_rank;
  std::map<uint16_t, std::map<Tag, P2pEnd>> ends_of;
  for (const P2pEnd& e : b.p2p_ends) {
    if (e.comm_id != comm || e.op >= g.ops.size()) continue;
    const int32_t rank = e.send ? e.src : e.dst, peer = e.send ? e.dst : e.src;
    if (peer != rank - 1 && peer != rank + 1)
      refuse(ch, "rank " + std::to_string(rank) + " sends to or receives from rank " + std::to_string(peer) +
                     ": a pipeline's transfers join neighbouring stages only");
    const uint16_t capture = g.ops[e.op].capture;
    auto [it, added] = capture_of_rank.emplace(rank, capture);
    if (!added && it->second != capture) refuse(ch, "rank " + std::to_string(rank) + " appears in two captures");
    const Tag tag = e.send ? (peer > rank ? kForwardOut : kBackwardOut) : (peer < rank ? kForwardIn : kBackwardIn);
    ends_of[capture][tag] = e;
    auto [t, fresh] = tag_of->emplace(e.op, tag);
    if (!fresh && t->second != tag)
      refuse(ch, "rank " + std::to_string(rank) +
                     " already groups its sends and receives (a 1F1B-shaped step): pipeline=1f1b reschedules GPipe, "
                     "where every forward pass of a step comes before its backward passes");
  }
  for (const P2pEnd& e : b.p2p_ends)
    if (e.comm_id == comm && (capture_of_rank.count(e.src) == 0 || capture_of_rank.count(e.dst) == 0))
      refuse(ch, "give every stage's capture: rank " + std::to_string(e.send ? e.src : e.dst) + " " +
                     (e.send ? "sends to" : "receives from") + " rank " + std::to_string(e.send ? e.dst : e.src) +
                     ", whose capture is not among the inputs");
  const int32_t p = static_cast<int32_t>(capture_of_rank.size());
  if (p < 2 || capture_of_rank.begin()->first != 0 || capture_of_rank.rbegin()->first != p - 1)
    refuse(ch, "give every stage's capture: the transfers name ranks " + std::to_string(capture_of_rank.begin()->first) +
                   " to " + std::to_string(capture_of_rank.rbegin()->first) + " of which " + std::to_string(p) +
                   " are in the inputs");
  std::vector<Stage> stages(static_cast<size_t>(p));
  for (const auto& [rank, capture] : capture_of_rank) {
    Stage& st = stages[static_cast<size_t>(rank)];
    st.capture = capture;
    for (const auto& [tag, e] : ends_of[capture]) st.template_end[tag] = e;
  }
  for (const auto& [op, tag] : *tag_of) {
    const auto it = std::find_if(stages.begin(), stages.end(), [&](const Stage& s) { return s.capture == g.ops[op].capture; });
    if (it == stages.end()) continue;
    if (it->lane == kNone) it->lane = g.ops[op].lane;
    if (it->lane != g.ops[op].lane)
      refuse(ch, stage_text(static_cast<size_t>(it - stages.begin())) + " sends and receives on more than one stream");
  }
  return stages;
}

// The stage's lane read as units and steps (see the top of the file).
void read_steps(const Built& b, const Change& ch, const std::unordered_map<uint32_t, Tag>& tag_of, size_t index, Stage& st) {
  const Graph& g = b.graph;
  std::vector<uint32_t> ops;
  for (uint32_t o = 0; o < g.ops.size(); ++o)
    if (g.ops[o].lane == st.lane && (o >= b.op_fused_away.size() || !b.op_fused_away[o])) ops.push_back(o);
  std::stable_sort(ops.begin(), ops.end(), [&](uint32_t x, uint32_t y) { return g.ops[x].order < g.ops[y].order; });
  // Tokens: a transfer (its tag), a kernel, or other work (a collective, a copy), which no unit
  // holds.
  struct Run {
    std::vector<uint32_t> kernels;
    int prev = -1, next = -1;  // the tag before and after it, -1 none (other work, or the end)
    uint32_t prev_op = kNone, next_op = kNone;
  };
  std::vector<Run> runs;
  int last_tag = -1;
  uint32_t last_tag_op = kNone;
  bool in_run = false;
  for (uint32_t o : ops) {
    const auto t = tag_of.find(o);
    const bool compute = t == tag_of.end() && g.ops[o].kind == OpKind::kKernel;
    if (compute) {
      if (!in_run) {
        runs.push_back({});
        runs.back().prev = last_tag, runs.back().prev_op = last_tag_op;
        in_run = true;
      }
      runs.back().kernels.push_back(o);
      continue;
    }
    if (in_run && t != tag_of.end()) runs.back().next = t->second, runs.back().next_op = o;
    in_run = false;
    last_tag = t != tag_of.end() ? t->second : -1;
    last_tag_op = t != tag_of.end() ? o : kNone;
  }
  auto forward_of = [](int tag) { return tag == kForwardIn || tag == kForwardOut; };
  // The count of kernels a unit of each direction has, from the runs that hold one direction.
  std::map<bool, std::map<size_t, size_t>> sizes;
  for (const Run& r : runs) {
    if (r.prev < 0 && r.next < 0) continue;
    const bool first = r.prev >= 0 ? forward_of(r.prev) : forward_of(r.next);
    const bool last = r.next >= 0 ? forward_of(r.next) : forward_of(r.prev);
    if (first == last) ++sizes[first][r.kernels.size()];
  }
  auto size_of = [&](bool forward) -> size_t {
    const auto& m = sizes[forward];
    if (m.empty()) return 0;
    return std::max_element(m.begin(), m.end(), [](const auto& x, const auto& y) { return x.second < y.second; })->first;
  };
  std::vector<Unit> units;
  for (const Run& r : runs) {
    if (r.prev < 0 && r.next < 0) continue;  // work with no transfer on either side: not the pipeline's
    const bool first = r.prev >= 0 ? forward_of(r.prev) : forward_of(r.next);
    const bool last = r.next >= 0 ? forward_of(r.next) : forward_of(r.prev);
    Unit a;
    a.forward = first;
    if (r.prev == (first ? kForwardIn : kBackwardIn)) a.in = r.prev_op;
    if (first == last) {
      a.compute = r.kernels;
      if (r.next == (first ? kForwardOut : kBackwardOut)) a.out = r.next_op;
      units.push_back(std::move(a));
      continue;
    }
    // Two units with no transfer between them: split by the size of either direction's units.
    size_t split = size_of(first);
    if (split == 0 && size_of(last) != 0 && size_of(last) < r.kernels.size()) split = r.kernels.size() - size_of(last);
    if (split == 0 || split >= r.kernels.size())
      refuse(ch, stage_text(index) + " runs " + std::to_string(r.kernels.size()) +
                     " kernels between a transfer of one direction and one of the other, and no unit elsewhere says "
                     "how many of them are the first direction's");
    Unit z;
    z.forward = last;
    a.compute.assign(r.kernels.begin(), r.kernels.begin() + static_cast<std::ptrdiff_t>(split));
    z.compute.assign(r.kernels.begin() + static_cast<std::ptrdiff_t>(split), r.kernels.end());
    if (r.next == (last ? kForwardOut : kBackwardOut)) z.out = r.next_op;
    units.push_back(std::move(a));
    units.push_back(std::move(z));
  }
  // Steps: forward units, then backward units.
  for (size_t i = 0; i < units.size();) {
    std::vector<Unit> step;
    while (i < units.size() && units[i].forward) step.push_back(units[i++]);
    const size_t forwards = step.size();
    while (i < units.size() && !units[i].forward) step.push_back(units[i++]);
    if (forwards == 0 || forwards * 2 != step.size())
      refuse(ch, stage_text(index) + " step " + std::to_string(st.steps.size() + 1) + " has " + std::to_string(forwards) +
                     " forward and " + std::to_string(step.size() - forwards) +
                     " backward micro-batches: pipeline=1f1b reschedules GPipe steps (every forward, then every backward)");
    st.steps.push_back(std::move(step));
  }
  if (st.steps.empty()) refuse(ch, stage_text(index) + " has no step of forward and backward passes");
  // Each direction's transfer: the median of the stage's.
  std::vector<int64_t> transfers[kTags];
  for (const auto& [op, tag] : tag_of)
    if (g.ops[op].capture == st.capture) {
      transfers[tag].push_back(g.ops[op].transfer_ns);
      if (st.template_op[tag] == kNone || op < st.template_op[tag]) st.template_op[tag] = op;  // the first: the same every run
    }
  for (int t = 0; t < kTags; ++t) st.transfer_ns[t] = median(transfers[t]);
}

}  // namespace

void one_f_one_b(Built& b, const Change& ch) {
  Graph& g = b.graph;
  std::unordered_map<uint32_t, Tag> tag_of;
  std::vector<Stage> stages = find_stages(b, ch, &tag_of);
  for (size_t s = 0; s < stages.size(); ++s) read_steps(b, ch, tag_of, s, stages[s]);
  const size_t steps = stages[0].steps.size(), m = stages[0].steps[0].size() / 2;
  for (size_t s = 0; s < stages.size(); ++s) {
    if (stages[s].steps.size() != steps)
      refuse(ch, stage_text(s) + " has " + std::to_string(stages[s].steps.size()) + " steps and stage 0 " +
                     std::to_string(steps));
    for (size_t t = 0; t < steps; ++t)
      if (stages[s].steps[t].size() != 2 * m)
        refuse(ch, stage_text(s) + " step " + std::to_string(t + 1) + " has " + std::to_string(stages[s].steps[t].size() / 2) +
                       " micro-batches and stage 0's first " + std::to_string(m));
  }
  const size_t micro = ch.micro_batches != 0 ? ch.micro_batches : m;
  const double factor = static_cast<double>(m) / static_cast<double>(micro);
  // A transfer's fixed latency: the smallest NCCL operation's measured transfer, among those that
  // move fewer bytes than the pipeline's, where its ranks all took part (matched sends, whole
  // collectives).
  uint64_t pipeline_bytes = UINT64_MAX;
  for (const P2pEnd& e : b.p2p_ends)
    if (e.bytes > 0) pipeline_bytes = std::min(pipeline_bytes, e.bytes);
  std::vector<bool> coupled(g.ops.size(), false);
  for (const auto& [a, z] : g.p2p) coupled[a] = coupled[z] = true;
  int64_t latency_ns = 0;
  bool latency_found = false;
  std::string latency_source = "no smaller NCCL operation in the captures to measure it by";  // text: the ops grow below
  for (uint32_t o = 0; o < g.ops.size(); ++o) {
    const GpuOp& op = g.ops[o];
    if (op.kind != OpKind::kCollective || op.bytes == 0 || op.bytes >= pipeline_bytes || op.transfer_ns <= 0) continue;
    if (op.collective == 0 && !coupled[o]) continue;
    if (latency_found && op.transfer_ns >= latency_ns) continue;
    latency_found = true;
    latency_ns = op.transfer_ns;
    latency_source = "the smallest NCCL operation's transfer in the captures, " +
                     (op.call < g.calls.size() ? g.calls[op.call].name.str().substr(0, 60) : std::string("a collective")) +
                     " of " + std::to_string(op.bytes) + " B";
  }
  auto scaled_transfer = [&](int64_t ns) {
    const int64_t fixed = std::min(latency_ns, ns);
    return fixed + scaled_ns(ns - fixed, factor);
  };
  const int32_t p = static_cast<int32_t>(stages.size());
  if (b.op_fused_away.size() < g.ops.size()) b.op_fused_away.resize(g.ops.size(), false);
  if (b.op_source.size() < g.ops.size()) b.op_source.resize(g.ops.size(), kNone);
  // The recorded units' ops give way to the new ones.
  std::vector<bool> replaced(g.ops.size(), false);
  // Per channel (from, to), the new sends and receives in schedule order.
  std::map<std::pair<int32_t, int32_t>, std::vector<uint32_t>> sends, receives;
  size_t made = 0;
  for (size_t t = 0; t < steps; ++t) {
    for (int32_t s = 0; s < p; ++s) {
      Stage& st = stages[static_cast<size_t>(s)];
      const std::vector<Unit>& step = st.steps[t];
      uint64_t base = UINT64_MAX;
      for (const Unit& u : step) {
        for (uint32_t o : u.compute) base = std::min(base, g.ops[o].order), replaced[o] = true;
        for (uint32_t o : {u.in, u.out})
          if (o != kNone) base = std::min(base, g.ops[o].order), replaced[o] = true;
      }
      uint64_t next_order = base;
      auto add = [&](uint32_t source, int64_t duration) {
        GpuOp op = g.ops[source];
        op.duration_ns = duration;
        op.order = next_order++;
        op.collective = 0;
        const uint32_t index = static_cast<uint32_t>(g.ops.size());
        g.ops.push_back(std::move(op));
        b.op_fused_away.push_back(false);
        b.op_source.push_back(source);
        replaced.push_back(false);
        ++made;
        return index;
      };
      // The step's own transfers stand for the new ones (their launching calls are the step's).
      uint32_t step_template[kTags];
      std::copy(std::begin(st.template_op), std::end(st.template_op), std::begin(step_template));
      for (auto u = step.rbegin(); u != step.rend(); ++u) {
        if (u->in != kNone) step_template[u->forward ? kForwardIn : kBackwardIn] = u->in;
        if (u->out != kNone) step_template[u->forward ? kForwardOut : kBackwardOut] = u->out;
      }
      const bool first = s == 0, last = s == p - 1;
      // One micro-batch's kernels, from the recorded one it falls in.
      auto compute = [&](bool forward, size_t j) {
        const size_t source = std::min(m - 1, j * m / micro);
        const Unit& u = step[forward ? source : m + source];
        for (uint32_t o : u.compute)
          add(o, scaled_ns(g.ops[o].duration_ns, factor));
      };
      // One transfer kernel carrying `tags` (one, or a send and a receive to one neighbour).
      auto transfer = [&](std::initializer_list<Tag> tags) {
        uint32_t source = kNone;
        int64_t ns = 0;
        for (Tag tag : tags) {
          if (source == kNone) source = step_template[tag];
          ns = std::max(ns, scaled_transfer(st.transfer_ns[tag]));
        }
        if (source == kNone) refuse(ch, stage_text(static_cast<size_t>(s)) + " lacks a transfer of a direction it needs");
        const uint32_t op = add(source, 0);
        g.ops[op].transfer_ns = ns;
        Built::AddedTransfers& calls = b.added_transfers[op];
        calls.template_call = g.ops[source].call;
        for (Tag tag : tags) {
          const int32_t peer = tag == kForwardOut || tag == kBackwardIn ? s + 1 : s - 1;
          const bool send = tag == kForwardOut || tag == kBackwardOut;
          (send ? sends[{s, peer}] : receives[{peer, s}]).push_back(op);
          P2pEnd end = st.template_end[tag];
          end.op = op;
          end.bytes = static_cast<uint64_t>(scaled_ns(static_cast<int64_t>(std::min<uint64_t>(end.bytes, uint64_t{1} << 50)), factor));
          calls.ends.push_back(end);
        }
      };
      const size_t warmup = std::min<size_t>(static_cast<size_t>(p - s - 1), micro), steady = micro - warmup;
      for (size_t i = 0; i < warmup; ++i) {
        if (!first) transfer({kForwardIn});
        compute(true, i);
        if (!last) transfer({kForwardOut});
      }
      if (steady > 0 && !first) transfer({kForwardIn});
      for (size_t k = 0; k < steady; ++k) {
        compute(true, warmup + k);
        if (!last) transfer({kForwardOut, kBackwardIn});
        compute(false, k);
        if (!first) {
          if (k + 1 == steady) transfer({kBackwardOut});
          else transfer({kBackwardOut, kForwardIn});
        }
      }
      for (size_t j = steady; j < micro; ++j) {
        if (!last) transfer({kBackwardIn});
        compute(false, j);
        if (!first) transfer({kBackwardOut});
      }
      if (next_order - base >= (uint64_t{1} << 19))
        refuse(ch, "a step of " + std::to_string(micro) + " micro-batches takes more launches than one step can order");
    }
  }
  if (b.nccl_record_dropped.size() < g.calls.size()) b.nccl_record_dropped.resize(g.calls.size(), false);
  for (uint32_t o = 0; o < replaced.size(); ++o) {
    if (!replaced[o]) continue;
    GpuOp& gone = g.ops[o];
    if (tag_of.count(o) != 0 && gone.call < g.calls.size()) b.nccl_record_dropped[gone.call] = true;
    gone.duration_ns = 0, gone.sm_share = 0, gone.transfer_ns = 0;
    b.op_fused_away[o] = true;
  }
  std::vector<std::pair<uint32_t, uint32_t>> p2p;
  for (const auto& pair : g.p2p)
    if (!replaced[pair.first] && !replaced[pair.second]) p2p.push_back(pair);
  for (const auto& [channel, list] : sends) {
    const auto r = receives.find(channel);
    if (r == receives.end() || r->second.size() != list.size())
      refuse(ch, "the new schedule's sends from rank " + std::to_string(channel.first) + " to " +
                     std::to_string(channel.second) + " do not meet as many receives");
    for (size_t k = 0; k < list.size(); ++k) p2p.emplace_back(list[k], r->second[k]);
  }
  g.p2p = std::move(p2p);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: %d stages, %zu step(s) of %zu micro-batches (GPipe) as 1F1B with %zu: each micro-batch's kernels "
                "at %.3g of the recorded ones' time (linear in its size), each transfer %.1f us of latency (%s) and "
                "%.3g of the rest; %zu operations in place of the recorded ones, each new transfer written with "
                "its NCCL calls",
                ch.text.c_str(), p, steps, m, micro, factor, static_cast<double>(latency_ns) / 1000.0,
                latency_source.c_str(),
                factor, made);
  g.notes.push_back(buf);
}

}  // namespace gantt::whatif::detail
