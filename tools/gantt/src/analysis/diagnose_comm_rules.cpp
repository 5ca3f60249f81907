// The diagnose rules the ranks' point-to-point traffic shows: pipeline bubbles
// (analysis/pipeline.h) and a link slower than the others (analysis/p2p.h).
#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "gantt/analysis/p2p.h"
#include "gantt/analysis/pipeline.h"
#include "gantt/analysis/table.h"
#include "gantt/model/text.h"
#include "diagnose_rules.h"

namespace gantt::analysis::detail {

namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

// ---------------------------------------------------------------- 10. pipeline bubble
void rule_pipeline_bubble(const Model& m, const std::vector<PipelineReport>& reports, DiagnoseReport& r) {
  RuleResult res{"pipeline-bubble", false, ""};
  if (reports.empty()) res.note = "no pipeline (NCCL sends and receives between neighbouring ranks only)";
  for (const PipelineReport& p : reports) {
    const double share = p.bubble_share();
    if (share < kPipelineBubbleShare) {
      res.note = "pipeline on " + hex(p.comm_id) + ": bubble " + pct(100 * share) + " of the step time, under " +
                 pct(100 * kPipelineBubbleShare);
      continue;
    }
    Finding f;
    f.rule = res.rule;
    f.title = std::to_string(p.nranks) + "-stage pipeline: the stages idle " + pct(100 * share) +
              " of each step waiting for their neighbours' activations or gradients";
    f.condition = "in the steps (" + (p.step.empty() ? std::string("the whole capture") : "range \"" + utf8_clean(p.step) + "\"") +
                  "), the stages' GPUs ran none of their own work while a send or receive was in flight for at least " +
                  pct(100 * kPipelineBubbleShare) + " of the step time";
    std::vector<const PipelineStage*> worst;
    for (const PipelineStage& s : p.stages) worst.push_back(&s);
    std::stable_sort(worst.begin(), worst.end(), [](const PipelineStage* a, const PipelineStage* b) { return a->share() > b->share(); });
    for (size_t i = 0; i < worst.size() && i < 4; ++i) {
      const PipelineStage& s = *worst[i];
      const uint64_t steps = std::max<uint64_t>(s.steps, 1);
      f.evidence.push_back("stage " + std::to_string(s.rank) + " (" + device_label(m.captures.size(), s.capture, s.device) +
                           "): bubble " + usn(s.bubble_ns / steps) + " of a " + usn(s.step_ns / steps) + " step (" +
                           pct(100 * s.share()) + "), over " + std::to_string(s.steps) + " steps");
    }
    if (p.micro_batches > 0)
      f.evidence.push_back(fixed(p.micro_batches, 1) + " micro-batches per step over " + std::to_string(p.nranks) +
                           " stages: even a schedule with no other cost idles (p-1)/(m+p-1) = " + pct(100 * p.ideal_share()));
    f.fix = "split the step into more micro-batches: the bubble is (p-1)/(m+p-1) of the step. A 1F1B schedule keeps at most "
            "p micro-batches' activations alive (GPipe keeps all m), so m can grow without more memory; an interleaved "
            "schedule (several model chunks per stage) divides the bubble by the chunks. Stages whose bubble stands out "
            "wait on a slow neighbour: balance the layers across stages (`stats --by pipeline`, `render --deps`)";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  r.rules.push_back(res);
}

// ---------------------------------------------------------------- 11. slow link
// A rank pair whose point-to-point transfers move at under half the bandwidth of the median
// pair of its communicator. Only pairs that moved enough per transfer to be bandwidth-bound
// are compared (below that, the fixed latency sets the rate), and a pair needs a few
// transfers so one late measurement cannot name it.
constexpr double kSlowLinkShare = 0.5;
constexpr uint64_t kSlowLinkMinBytes = 64u << 10;
constexpr uint64_t kSlowLinkMinTransfers = 3;
constexpr size_t kSlowLinkMinPairs = 3;

void rule_slow_link(const P2pMatch& matched, DiagnoseReport& r) {
  RuleResult res{"slow-link", false, ""};
  struct Pair {
    uint64_t bytes = 0, ns = 0, transfers = 0;
    double gbps() const { return ns ? static_cast<double>(bytes) / static_cast<double>(ns) : 0; }
  };
  std::map<uint64_t, std::map<std::pair<int32_t, int32_t>, Pair>> comms;
  for (const P2pTransfer& t : matched.transfers) {
    if (!t.transfer_ns()) continue;
    Pair& p = comms[t.comm_id][{t.from, t.to}];
    p.bytes += t.bytes;
    p.ns += t.transfer_ns();
    ++p.transfers;
  }
  if (comms.empty()) res.note = "no matched NCCL send/receive pairs with kernels";
  for (const auto& [comm, pairs] : comms) {
    std::vector<std::pair<std::pair<int32_t, int32_t>, Pair>> eligible;
    for (const auto& [key, p] : pairs)
      if (p.transfers >= kSlowLinkMinTransfers && p.bytes / p.transfers >= kSlowLinkMinBytes) eligible.emplace_back(key, p);
    if (eligible.size() < kSlowLinkMinPairs) {
      res.note = "communicator " + hex(comm) + ": " + std::to_string(eligible.size()) + " rank pairs with " +
                 std::to_string(kSlowLinkMinTransfers) + "+ transfers of " + bytes_text(kSlowLinkMinBytes) +
                 "+ each, fewer than the " + std::to_string(kSlowLinkMinPairs) + " to compare";
      continue;
    }
    std::vector<double> rates;
    for (const auto& e : eligible) rates.push_back(e.second.gbps());
    std::sort(rates.begin(), rates.end());
    const size_t mid = rates.size() / 2;
    const double median = rates.size() % 2 ? rates[mid] : (rates[mid - 1] + rates[mid]) / 2;
    std::vector<std::pair<std::pair<int32_t, int32_t>, Pair>> slow;
    for (const auto& e : eligible)
      if (e.second.gbps() < kSlowLinkShare * median) slow.push_back(e);
    if (slow.empty()) {
      res.note = "communicator " + hex(comm) + ": every rank pair within " + pct(100 * kSlowLinkShare) +
                 " of the median pair's " + fixed(median, 1) + " GB/s";
      continue;
    }
    std::stable_sort(slow.begin(), slow.end(), [](const auto& a, const auto& b) { return a.second.gbps() < b.second.gbps(); });
    const auto& [worst_pair, worst] = slow.front();
    const bool both_ways = std::any_of(slow.begin(), slow.end(), [&](const auto& e) {
      return e.first.first == worst_pair.second && e.first.second == worst_pair.first;
    });
    Finding f;
    f.rule = res.rule;
    const int32_t a = both_ways ? std::min(worst_pair.first, worst_pair.second) : worst_pair.first;
    const int32_t b = both_ways ? std::max(worst_pair.first, worst_pair.second) : worst_pair.second;
    f.title = "ranks " + std::to_string(a) + (both_ways ? " <-> " : " -> ") + std::to_string(b) +
              ": point-to-point transfers at " + fixed(worst.gbps(), 1) + " GB/s, the median pair " + fixed(median, 1) + " GB/s";
    f.condition = "on communicator " + hex(comm) + ", a rank pair's transfers (" + std::to_string(kSlowLinkMinTransfers) +
                  "+ of " + bytes_text(kSlowLinkMinBytes) + "+ each, timed from when both ends had started to when the "
                  "data had arrived) moved under " + pct(100 * kSlowLinkShare) + " of the median pair's bandwidth";
    for (size_t i = 0; i < slow.size() && i < 4; ++i) {
      const Pair& p = slow[i].second;
      f.evidence.push_back("rank " + std::to_string(slow[i].first.first) + " -> rank " + std::to_string(slow[i].first.second) +
                           ": " + std::to_string(p.transfers) + " transfers, " + bytes_text(p.bytes) + " in " + usn(p.ns) +
                           " = " + fixed(p.gbps(), 2) + " GB/s");
    }
    f.evidence.push_back(std::to_string(eligible.size()) + " pairs compared; median " + fixed(median, 2) + " GB/s");
    if (both_ways) f.evidence.push_back("slow in both directions: the link between the two, not one rank's load");
    f.fix = "check what joins the two GPUs: `nvidia-smi topo -m` (NV# vs PIX/PHB/SYS), `nvidia-smi nvlink --status` for "
            "links down or degraded, and NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH for the transport NCCL chose "
            "(a pair over SHM or NET where the others use P2P/NVLink has fallen back). `render --view comm --topology "
            "FILE` draws the measured bandwidth on the machine's links; place the heaviest neighbours on the fast links";
    r.findings.push_back(std::move(f));
    res.fired = true;
  }
  r.rules.push_back(res);
}

}  // namespace gantt::analysis::detail
