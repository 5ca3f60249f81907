// Pipeline bubbles per stage (analysis/pipeline.h).
#include "gantt/analysis/pipeline.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "gantt/analysis/intervals.h"
#include "gantt/analysis/table.h"
#include "gantt/model/json.h"
#include "pipeline_work.h"

namespace gantt::analysis {

namespace {

namespace v1 = gpuhook::v1;

struct Candidate {
  detail::PipelineCandidate pipeline;
  bool chain = true;  // every transfer joins neighbours
  // A pipeline has a direction: a stage's send is the output of its own work, never answered
  // in the same NCCL group (the same kernel) by a receive from that peer. sendrecv_perf -g 2
  // pairs every send so (each rank sends to the other and receives from it at once): an
  // exchange, which pipeline-bubble called a 2-stage pipeline with 1F1B advice.
  std::set<std::tuple<int32_t, uint32_t, int32_t>> recvs;  // (rank, kernel event, peer)
  std::vector<std::tuple<int32_t, uint32_t, int32_t>> sends;
  bool directed() const {
    if (sends.empty()) return true;  // no kernels to tell: as before
    for (const auto& s : sends)
      if (!recvs.count(s)) return true;
    return false;
  }
};

// The step windows of one stage: per occurrence of the step range, its GPU work.
struct Window {
  uint64_t lo = UINT64_MAX, hi = 0;
  std::vector<Interval> busy, p2p;
};

void clip(std::vector<Interval>& v, uint64_t lo, uint64_t hi) {
  for (Interval& iv : v) iv = {std::max(iv.first, lo), std::min(iv.second, hi)};
  merge_intervals(v);  // drops what the clip emptied
}

using detail::timed_event;
using detail::top_range;

std::string_view top_name_of(const Model& m, uint32_t top) {
  return top == kNone ? std::string_view() : m.string(m.ranges.name[top]);
}

}  // namespace

double PipelineReport::bubble_share() const {
  uint64_t bubble = 0, step = 0;
  for (const PipelineStage& s : stages) {
    bubble += s.bubble_ns;
    step += s.step_ns;
  }
  return step ? static_cast<double>(bubble) / static_cast<double>(step) : 0;
}

double PipelineReport::ideal_share() const {
  const double p = nranks;
  return micro_batches > 0 && p > 1 ? (p - 1) / (micro_batches + p - 1) : 0;
}

namespace detail {

bool timed_event(const Model& m, uint32_t e) {
  return e < m.events.size() && m.events.start_ns[e] != 0 && m.events.end_ns[e] > m.events.start_ns[e];
}

uint32_t top_range(const Model& m, uint32_t range) {
  for (int hops = 0; range < m.ranges.size() && m.ranges.parent[range] != kNone && hops < (1 << 16); ++hops)
    range = m.ranges.parent[range];
  return range < m.ranges.size() ? range : kNone;
}

std::vector<PipelineCandidate> pipeline_candidates(const Model& m, std::vector<std::string>* notes) {
  const NcclTable& n = m.nccl;
  std::map<uint64_t, Candidate> comms;
  for (uint32_t i = 0; i < n.size(); ++i) {
    if (n.op[i] != v1::NCCL_SEND && n.op[i] != v1::NCCL_RECV) continue;
    Candidate& c = comms[n.comm_id[i]];
    if (c.pipeline.nranks == 0) c.pipeline.nranks = n.nranks[i];
    const int32_t me = n.rank[i], peer = n.root_or_peer[i];
    if (n.nranks[i] != c.pipeline.nranks || me < 0 || me >= c.pipeline.nranks || peer < 0 || peer >= c.pipeline.nranks ||
        std::llabs(static_cast<long long>(me) - peer) != 1) {
      c.chain = false;
      continue;
    }
    const uint32_t e = n.event[i];
    const uint32_t device = timed_event(m, e) ? m.events.device[e] : static_cast<uint32_t>(std::max(n.device[i], 0));
    c.pipeline.stage.try_emplace(me, n.capture[i], device);
    c.pipeline.calls.push_back(i);
    if (timed_event(m, e)) {
      const auto key = std::make_tuple(me, e, peer);
      if (n.op[i] == v1::NCCL_SEND) c.sends.push_back(key);
      else c.recvs.insert(key);
    }
  }
  // Each pipeline reads the work on its stages' devices. A real job has a pipeline or two per
  // GPU, but a file can give thousands of communicators the same two GPUs (20,000 of them in
  // 110 KiB kept stats --by pipeline busy for six minutes): the ones with the most sends and
  // receives are analysed, the others counted.
  std::vector<PipelineCandidate> pipelines;
  for (auto& [comm_id, c] : comms) {
    if (!c.chain || c.pipeline.nranks < 2 || c.pipeline.nranks > kMaxPipelineStages || c.pipeline.stage.size() < 2) continue;
    if (!c.directed()) {
      if (notes) {
        char id[32];
        std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(comm_id));
        notes->push_back(std::string("communicator ") + id +
                         ": every send is paired with a receive from the same peer in one group, an exchange "
                         "(sendrecv) with no direction, not a pipeline");
      }
      continue;
    }
    c.pipeline.comm_id = comm_id;
    pipelines.push_back(std::move(c.pipeline));
  }
  if (pipelines.size() > kMaxPipelines) {
    std::stable_sort(pipelines.begin(), pipelines.end(),
                     [](const auto& a, const auto& b) { return a.calls.size() > b.calls.size(); });
    if (notes)
      notes->push_back(std::to_string(pipelines.size()) + " communicators look like pipelines: the " +
                       std::to_string(kMaxPipelines) + " with the most sends and receives are shown");
    pipelines.resize(kMaxPipelines);
    std::sort(pipelines.begin(), pipelines.end(), [](const auto& a, const auto& b) { return a.comm_id < b.comm_id; });
  }
  return pipelines;
}

void StepWork::absorb(const StepWork& other) {
  lo = std::min(lo, other.lo);
  hi = std::max(hi, other.hi);
  busy.absorb(other.busy);
  for (const auto& [comm, v] : other.p2p) p2p[comm].insert(p2p[comm].end(), v.begin(), v.end());
}

StageWork::StageWork(const std::vector<PipelineCandidate>& pipelines, std::optional<StepNames> steps)
    : steps_(std::move(steps)) {
  for (const PipelineCandidate& p : pipelines)
    for (const auto& [rank, where] : p.stage) devices_.try_emplace(where);
}

bool stage_work(EventKind kind, uint64_t start, uint64_t end) {
  return start != 0 && end > start && kind != EventKind::kSync && kind != EventKind::kHostFunc;
}

void StageWork::add(uint16_t capture, uint32_t device, EventKind kind, uint64_t start, uint64_t end, uint32_t top,
                    std::string_view top_name, const std::vector<uint64_t>& comms) {
  auto d = devices_.find({capture, device});
  if (d == devices_.end()) return;
  const auto add_to = [&](StepWork& w) {
    w.lo = std::min(w.lo, start);
    w.hi = std::max(w.hi, end);
    for (uint64_t comm : comms) w.p2p[comm].emplace_back(start, end);
    if (kind != EventKind::kNccl) w.busy.add(start, end);
  };
  add_to(d->second.whole);
  if (top == kNone || (steps_ && steps_->count(top_name) == 0)) return;
  auto [it, fresh] = d->second.by_top.try_emplace(top);
  if (fresh) {
    it->second.first = top_name;
    ++windows_;
  }
  add_to(it->second.second);
}

void StageWork::absorb(const StageWork& other) {
  for (const auto& [where, d] : other.devices_) {
    Device& mine = devices_[where];
    mine.whole.absorb(d.whole);
    for (const auto& [top, named] : d.by_top) {
      auto [it, fresh] = mine.by_top.try_emplace(top);
      if (fresh) {
        it->second.first = named.first;
        ++windows_;
      }
      it->second.second.absorb(named.second);
    }
  }
}

const StageWork::Device* StageWork::at(uint16_t capture, uint32_t device) const {
  auto it = devices_.find({capture, device});
  return it == devices_.end() ? nullptr : &it->second;
}

std::string pipeline_step(const Model& m, const PipelineCandidate& c, const std::function<std::string(uint32_t call)>& top_name,
                          const std::string& step_range) {
  if (!step_range.empty()) return step_range;
  std::map<std::string, uint64_t> votes;
  for (uint32_t i : c.calls)
    if (timed_event(m, m.nccl.event[i]))
      if (std::string name = top_name(i); !name.empty()) ++votes[name];
  std::string step;
  uint64_t best = 0;
  for (const auto& [name, count] : votes)
    if (count > best) best = count, step = name;
  return step;
}

std::vector<PipelineReport> pipeline_reports(const Model& m, const std::vector<PipelineCandidate>& pipelines,
                                             const StageWork& work, const std::function<std::string(uint32_t call)>& top_name,
                                             const std::string& step_range) {
  const NcclTable& n = m.nccl;
  std::vector<PipelineReport> out;
  for (const PipelineCandidate& c : pipelines) {
      const std::string step = pipeline_step(m, c, top_name, step_range);
    PipelineReport r;
    r.comm_id = c.comm_id;
    r.nranks = c.nranks;
    r.step = step;
    for (const auto& [rank, where] : c.stage) {
      PipelineStage s;
      s.rank = rank;
      s.capture = where.first;
      s.device = where.second;
      const StageWork::Device* d = work.at(where.first, where.second);
      const auto count = [&](const StepWork& sw) {
        if (sw.hi <= sw.lo) return;
        Window w{sw.lo, sw.hi, sw.busy.spans(), {}};
        if (auto p = sw.p2p.find(c.comm_id); p != sw.p2p.end()) w.p2p = p->second;
        clip(w.busy, w.lo, w.hi);
        clip(w.p2p, w.lo, w.hi);
        const uint64_t step_ns = w.hi - w.lo, busy = total_length(w.busy);
        const uint64_t bubble = total_length(w.p2p) - intersection_length(w.p2p, w.busy);
        ++s.steps;
        s.step_ns += step_ns;
        s.busy_ns += busy;
        s.bubble_ns += bubble;
        if (bubble > s.worst_step_bubble_ns) s.worst_step_bubble_ns = bubble, s.worst_step_ns = step_ns;
      };
      if (d && step.empty()) count(d->whole);  // the whole capture is one step
      else if (d)
        for (const auto& [top, named] : d->by_top)
          if (named.first == step) count(named.second);
      r.stages.push_back(s);
    }
    // Micro-batches: stage 0's forward sends per step.
    if (!r.stages.empty() && r.stages.front().rank == 0 && r.stages.front().steps) {
      uint64_t sends = 0;
      for (uint32_t i : c.calls) {
        if (n.op[i] != v1::NCCL_SEND || n.rank[i] != 0 || n.root_or_peer[i] != 1 || !timed_event(m, n.event[i])) continue;
        if (!step.empty() && top_name(i) != step) continue;
        ++sends;
      }
      r.micro_batches = static_cast<double>(sends) / static_cast<double>(r.stages.front().steps);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace detail

std::vector<PipelineReport> pipeline_reports(const Model& m, const std::string& step_range, std::vector<std::string>* notes) {
  const std::vector<detail::PipelineCandidate> pipelines = detail::pipeline_candidates(m, notes);
  // The kernels of each pipeline's calls, by event.
  std::map<uint32_t, std::vector<uint64_t>> comms_of;
  for (const detail::PipelineCandidate& p : pipelines)
    for (uint32_t i : p.calls)
      if (timed_event(m, m.nccl.event[i])) {
        std::vector<uint64_t>& comms = comms_of[m.nccl.event[i]];
        if (std::find(comms.begin(), comms.end(), p.comm_id) == comms.end()) comms.push_back(p.comm_id);
      }
  // Only the steps the reports read: a load knows them before it reads the work.
  const auto top_name = [&m](uint32_t call) {
    return std::string(top_name_of(m, top_range(m, m.events.range[m.nccl.event[call]])));
  };
  detail::StepNames steps;
  for (const detail::PipelineCandidate& p : pipelines) steps.insert(detail::pipeline_step(m, p, top_name, step_range));
  detail::StageWork work(pipelines, std::move(steps));
  const EventTable& ev = m.events;
  const std::vector<uint64_t> none;
  for (uint32_t e = 0; e < ev.size(); ++e) {
    if (!detail::stage_work(ev.kind[e], ev.start_ns[e], ev.end_ns[e]) || !work.wanted(ev.capture[e], ev.device[e])) continue;
    const uint32_t top = top_range(m, ev.range[e]);
    const auto comms = comms_of.find(e);
    work.add(ev.capture[e], ev.device[e], ev.kind[e], ev.start_ns[e], ev.end_ns[e], top, top_name_of(m, top),
             comms == comms_of.end() ? none : comms->second);
  }
  return detail::pipeline_reports(m, pipelines, work, top_name, step_range);
}

std::string format_pipeline_stats(const Model& m, const std::vector<PipelineReport>& reports, const std::string& format,
                                  const std::vector<std::string>& notes) {
  auto share_text = [](double v) { return fixed(100 * v, 1) + "%"; };
  if (format == "json") {
    std::string o = "{\"pipelines\":[";
    for (size_t k = 0; k < reports.size(); ++k) {
      const PipelineReport& r = reports[k];
      std::string mb, share, ideal;
      json::append_number(mb, r.micro_batches, 2);
      json::append_number(share, r.bubble_share(), 4);
      json::append_number(ideal, r.ideal_share(), 4);
      char id[24];
      std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(r.comm_id));
      o += (k ? "," : "") + std::string("{\"comm_id\":") + json::quoted(id) + ",\"stages_total\":" + std::to_string(r.nranks) +
           ",\"step\":" + json::quoted(r.step) + ",\"micro_batches_per_step\":" + mb + ",\"bubble_share\":" + share +
           ",\"ideal_share\":" + ideal + ",\"stages\":[";
      for (size_t i = 0; i < r.stages.size(); ++i) {
        const PipelineStage& s = r.stages[i];
        o += (i ? "," : "") + std::string("{\"stage\":") + std::to_string(s.rank) + ",\"capture\":" + std::to_string(s.capture) +
             ",\"device\":" + std::to_string(s.device) + ",\"steps\":" + std::to_string(s.steps) + ",\"step_ns\":" +
             std::to_string(s.step_ns) + ",\"busy_ns\":" + std::to_string(s.busy_ns) + ",\"bubble_ns\":" +
             std::to_string(s.bubble_ns) + ",\"worst_step_bubble_ns\":" + std::to_string(s.worst_step_bubble_ns) +
             ",\"worst_step_ns\":" + std::to_string(s.worst_step_ns) + "}";
      }
      o += "]}";
    }
    return o + "]}\n";
  }
  const auto comm_hex = [](uint64_t comm_id) {
    char id[24];
    std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(comm_id));
    return std::string(id);
  };
  const auto stage_cells = [&](const PipelineStage& s) {
    const double steps = s.steps ? static_cast<double>(s.steps) : 1;
    return std::vector<std::string>{std::to_string(s.rank), device_label(m.captures.size(), s.capture, s.device),
                                    std::to_string(s.steps), us(static_cast<double>(s.step_ns) / steps),
                                    share_text(s.step_ns ? static_cast<double>(s.busy_ns) / static_cast<double>(s.step_ns) : 0),
                                    us(static_cast<double>(s.bubble_ns) / steps), share_text(s.share()),
                                    us(static_cast<int64_t>(s.worst_step_bubble_ns))};
  };
  const std::vector<std::string> stage_header = {"stage", "device", "steps", "step_us", "busy", "bubble_us", "bubble",
                                                 "worst_step_bubble_us"};
  if (format == "csv") {
    // One table for a spreadsheet or a script: no prose, and a header only when there is no pipeline.
    Table t;
    t.header = {"comm_id", "step"};
    t.header.insert(t.header.end(), stage_header.begin(), stage_header.end());
    for (const PipelineReport& r : reports)
      for (const PipelineStage& s : r.stages) {
        std::vector<std::string> row = {comm_hex(r.comm_id), r.step};
        const std::vector<std::string> cells = stage_cells(s);
        row.insert(row.end(), cells.begin(), cells.end());
        t.rows.push_back(std::move(row));
      }
    return to_csv(t);
  }
  const bool md = format == "md";
  // Lines of prose; in Markdown each its own paragraph (a line right after a table is a row).
  const auto line = [md](const std::string& s) { return md ? markdown_text(s, true) + "\n\n" : s + "\n"; };
  std::string out;
  for (const std::string& note : notes) out += line(note);
  for (const PipelineReport& r : reports) {
    out += line("pipeline on communicator " + comm_hex(r.comm_id) + ": " + std::to_string(r.nranks) + " stages, step = " +
                (r.step.empty() ? std::string("the whole capture") : "range \"" + r.step + "\""));
    Table t;
    t.header = stage_header;
    t.right = {true, false, true, true, true, true, true, true};
    for (const PipelineStage& s : r.stages) t.rows.push_back(stage_cells(s));
    out += md ? to_markdown(t) + "\n" : to_text(t);
    std::string bubble = "bubble: " + share_text(r.bubble_share()) + " of the stages' step time";
    if (r.micro_batches > 0)
      bubble += "; " + fixed(r.micro_batches, 1) + " micro-batches per step over " + std::to_string(r.nranks) +
                " stages: a GPipe or 1F1B schedule with no other cost idles (p-1)/(m+p-1) = " + share_text(r.ideal_share());
    out += line(bubble);
    if (!md) out += "\n";
  }
  if (reports.empty())
    out += line("no pipeline: no NCCL communicator whose sends and receives only join neighbouring ranks (r <-> r+1)");
  return out + line("(bubble: time a stage's GPU ran none of its own work while one of its sends or receives was in "
                    "flight, within a step: from the first start to the last end of the work launched inside the step range)");
}

}  // namespace gantt::analysis
