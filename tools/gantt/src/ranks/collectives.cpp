// Collectives matched across ranks, straggler and imbalance reports, and the per-collective
// statistics (`stats --by collective`).
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>
#include <tuple>

#include <gpuhook/nccl_types.h>

#include "gantt/noise/noise.h"
#include "gantt/ranks/ranks.h"
#include "stats_util.h"

namespace gantt {

using ranks_detail::median;

using enum gpuhook::NcclOpCode;
using gpuhook::nccl_datatype_bytes;
using gpuhook::nccl_op_is_collective;

const char* nccl_op_name(uint8_t op) {
  switch (op) {
    case kNcclAllReduce: return "AllReduce";
    case kNcclBroadcast: return "Broadcast";
    case kNcclReduce: return "Reduce";
    case kNcclAllGather: return "AllGather";
    case kNcclReduceScatter: return "ReduceScatter";
    case kNcclSend: return "Send";
    case kNcclRecv: return "Recv";
    case kNcclAllToAll: return "AlltoAll";
    case kNcclGather: return "Gather";
    case kNcclScatter: return "Scatter";
    default: return "Unknown";
  }
}

double bus_factor(uint8_t op, int32_t nranks) {
  if (nranks < 1) return 1;
  double n = nranks;
  switch (op) {
    case kNcclAllReduce: return 2 * (n - 1) / n;
    case kNcclAllGather: case kNcclReduceScatter: case kNcclAllToAll: return (n - 1) / n;
    default: return 1;
  }
}

uint64_t collective_size_bytes(uint8_t op, uint64_t count, int32_t datatype, int32_t nranks) {
  uint64_t bytes = count * nccl_datatype_bytes(datatype);
  switch (op) {
    // count is per rank for these; nccl-tests reports the whole buffer.
    case kNcclAllGather: case kNcclReduceScatter: case kNcclAllToAll: case kNcclGather: case kNcclScatter:
      return bytes * static_cast<uint64_t>(nranks > 0 ? nranks : 1);
    default: return bytes;
  }
}

std::vector<CollectiveInstance> match_collectives(const std::vector<RankCollectiveCall>& calls) {
  std::map<std::pair<uint64_t, uint64_t>, CollectiveInstance> by_key;
  for (const RankCollectiveCall& c : calls) {
    if (!nccl_op_is_collective(c.op) || c.kernel_start_ns == 0 || c.kernel_end_ns < c.kernel_start_ns) continue;
    CollectiveInstance& inst = by_key[{c.comm_id, c.sequence}];
    if (inst.arrivals.empty()) {
      inst.comm_id = c.comm_id;
      inst.sequence = c.sequence;
      inst.op = c.op;
      inst.count = c.count;
      inst.datatype = c.datatype;
      inst.nranks = c.nranks;
      inst.size_bytes = collective_size_bytes(c.op, c.count, c.datatype, c.nranks);
    }
    // The same rank twice (a capture given twice) counts once.
    bool seen = false;
    for (const Arrival& a : inst.arrivals) seen |= a.capture == c.capture;
    if (!seen) inst.arrivals.push_back({c.capture, c.global_rank, c.kernel_start_ns, c.kernel_end_ns, c.event});
  }
  std::vector<CollectiveInstance> out;
  out.reserve(by_key.size());
  for (auto& [key, inst] : by_key) {
    std::sort(inst.arrivals.begin(), inst.arrivals.end(), [](const Arrival& a, const Arrival& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.global_rank < b.global_rank;
    });
    inst.first_arrival_ns = inst.arrivals.front().start_ns;
    inst.last_arrival_ns = inst.arrivals.back().start_ns;
    inst.last_rank = inst.arrivals.back().global_rank;
    inst.arrival_spread_ns = inst.last_arrival_ns - inst.first_arrival_ns;
    std::vector<uint64_t> transfer;
    for (const Arrival& a : inst.arrivals) {
      inst.wait_ns += inst.last_arrival_ns - a.start_ns;
      transfer.push_back(a.end_ns > inst.last_arrival_ns ? a.end_ns - inst.last_arrival_ns : 0);
    }
    inst.transfer_ns = static_cast<uint64_t>(median(transfer));
    inst.complete = inst.nranks > 0 && inst.arrivals.size() == static_cast<size_t>(inst.nranks);
    out.push_back(std::move(inst));
  }
  std::sort(out.begin(), out.end(), [](const CollectiveInstance& a, const CollectiveInstance& b) {
    return std::tie(a.first_arrival_ns, a.comm_id, a.sequence) < std::tie(b.first_arrival_ns, b.comm_id, b.sequence);
  });
  return out;
}

namespace {

// 1.4826 x the median absolute deviation: the standard deviation of normal data, robust to
// the few huge delays a descheduled thread produces.
int64_t robust_spread(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::vector<int64_t> copy = v;
  const double mid = median(copy);
  for (int64_t& x : v) x = static_cast<int64_t>(std::llround(std::fabs(static_cast<double>(x) - mid)));
  return static_cast<int64_t>(std::llround(1.4826 * median(v)));
}

}  // namespace

StragglerReport find_straggler(const std::vector<CollectiveInstance>& collectives, const StragglerOptions& options) {
  StragglerReport report;
  std::map<int32_t, RankStraggling> ranks;
  std::map<int32_t, std::vector<int64_t>> lateness;
  std::vector<uint64_t> transfer;
  for (const CollectiveInstance& inst : collectives) {
    if (!inst.complete || inst.arrivals.size() < 2) continue;
    ++report.collectives;
    report.total_wait_ns += inst.wait_ns;
    transfer.push_back(inst.transfer_ns);
    std::vector<uint64_t> starts;
    for (const Arrival& a : inst.arrivals) starts.push_back(a.start_ns);
    double mid = median(starts);
    for (const Arrival& a : inst.arrivals) {
      RankStraggling& r = ranks[a.global_rank];
      r.global_rank = a.global_rank;
      ++r.collectives;
      lateness[a.global_rank].push_back(static_cast<int64_t>(std::llround(static_cast<double>(a.start_ns) - mid)));
    }
    const Arrival& last = inst.arrivals.back();
    const Arrival& second = inst.arrivals[inst.arrivals.size() - 2];
    if (last.start_ns - second.start_ns > options.tie_margin_ns) {
      RankStraggling& r = ranks[last.global_rank];
      ++r.times_last;
      r.wait_caused_ns += inst.wait_ns;
    }
  }
  report.collective_median_ns = static_cast<uint64_t>(median(transfer));
  for (auto& [rank, r] : ranks) {
    std::vector<int64_t> own = lateness[rank];
    r.lateness_median_ns = static_cast<int64_t>(std::llround(median(own)));
    r.lateness_jitter_ns = robust_spread(lateness[rank]);
    report.ranks.push_back(r);
  }
  const RankStraggling* worst = nullptr;
  for (const RankStraggling& r : report.ranks)
    if (!worst || r.times_last > worst->times_last ||
        (r.times_last == worst->times_last && r.wait_caused_ns > worst->wait_caused_ns))
      worst = &r;
  char buf[768];
  if (report.collectives < options.min_collectives || !worst) {
    snprintf(buf, sizeof buf, "%" PRIu64 " complete collectives: too few to name a straggler (need %" PRIu64 ")",
             report.collectives, options.min_collectives);
    report.reason = buf;
    return report;
  }
  // The noise the lateness is judged against: the candidate's own arrival jitter, or the
  // other ranks' (pooled), whichever is larger.
  std::vector<int64_t> others;
  for (const auto& [rank, v] : lateness)
    if (rank != worst->global_rank) others.insert(others.end(), v.begin(), v.end());
  const double jitter = static_cast<double>(std::max(worst->lateness_jitter_ns, robust_spread(others)));
  const RankTest test = mann_whitney(others, lateness[worst->global_rank]);
  const double late = static_cast<double>(worst->lateness_median_ns);
  const double fraction = static_cast<double>(worst->times_last) / static_cast<double>(worst->collectives);
  const double collective = static_cast<double>(report.collective_median_ns);
  std::vector<std::string> why_not;
  char part[160];
  if (fraction < options.min_last_fraction) {
    snprintf(part, sizeof part, "last at only %.0f%% (< %.0f%%)", fraction * 100, options.min_last_fraction * 100);
    why_not.push_back(part);
  }
  if (late < static_cast<double>(options.min_lateness_ns)) {
    snprintf(part, sizeof part, "%.1f us late (< %.1f us)", late / 1e3, static_cast<double>(options.min_lateness_ns) / 1e3);
    why_not.push_back(part);
  }
  if (late < options.min_jitter_multiple * jitter) {
    snprintf(part, sizeof part, "%.1f us late is within %.0fx the arrival jitter of %.1f us", late / 1e3,
             options.min_jitter_multiple, jitter / 1e3);
    why_not.push_back(part);
  }
  if (!test.valid || test.p_greater > options.alpha) {
    snprintf(part, sizeof part, "not later than the other ranks by a rank test (p %.3g > %.3g)", test.p_greater,
             options.alpha);
    why_not.push_back(part);
  }
  if (late < options.min_collective_fraction * collective) {
    snprintf(part, sizeof part, "%.1f us late is under %.0f%% of the collective's own %.1f us", late / 1e3,
             options.min_collective_fraction * 100, collective / 1e3);
    why_not.push_back(part);
  }
  if (why_not.empty()) {
    report.straggler = worst->global_rank;
    report.straggler_last_fraction = fraction;
    report.straggler_wait_caused_ns = worst->wait_caused_ns;
    snprintf(buf, sizeof buf,
             "rank %d arrived last at %" PRIu64 " of %" PRIu64 " collectives (%.0f%%), a median %.1f us after the others' "
             "median (arrival jitter %.1f us, the collective itself %.1f us), and made the other ranks wait %.3f ms in "
             "total (%.0f%% of all waiting at collectives)",
             worst->global_rank, worst->times_last, worst->collectives, fraction * 100, late / 1e3, jitter / 1e3,
             collective / 1e3, static_cast<double>(worst->wait_caused_ns) / 1e6,
             report.total_wait_ns ? 100.0 * static_cast<double>(worst->wait_caused_ns) / static_cast<double>(report.total_wait_ns) : 0.0);
  } else {
    std::string reasons;
    for (size_t i = 0; i < why_not.size(); ++i) reasons += (i ? "; " : "") + why_not[i];
    snprintf(buf, sizeof buf,
             "no straggler: the most frequent last arriver (rank %d) was last at %.0f%% of %" PRIu64
             " collectives with a median lateness of %.1f us, but: %s",
             worst->global_rank, fraction * 100, worst->collectives, late / 1e3, reasons.c_str());
  }
  report.reason = buf;
  return report;
}

ImbalanceReport busy_imbalance(const std::vector<RankIntervals>& ranks) {
  std::map<int32_t, std::vector<std::pair<uint64_t, uint64_t>>> merged_input;
  for (const RankIntervals& r : ranks)
    merged_input[r.global_rank].insert(merged_input[r.global_rank].end(), r.intervals.begin(), r.intervals.end());
  std::vector<RankBusy> busy;
  for (auto& [rank, iv] : merged_input) {
    std::sort(iv.begin(), iv.end());
    RankBusy b;
    b.global_rank = rank;
    uint64_t cur_start = 0, cur_end = 0, first = 0, last = 0;
    bool open = false;
    for (const auto& [s, e] : iv) {
      if (e <= s) continue;
      if (!open) {
        first = s;
        cur_start = s;
        cur_end = e;
        open = true;
      } else if (s <= cur_end) {
        cur_end = std::max(cur_end, e);
      } else {
        b.busy_ns += cur_end - cur_start;
        cur_start = s;
        cur_end = e;
      }
      last = std::max(last, e);
    }
    if (open) b.busy_ns += cur_end - cur_start;
    b.span_ns = open ? last - first : 0;
    busy.push_back(b);
  }
  return busy_imbalance(std::move(busy));
}

ImbalanceReport busy_imbalance(std::vector<RankBusy> ranks) {
  ImbalanceReport report;
  std::stable_sort(ranks.begin(), ranks.end(), [](const RankBusy& a, const RankBusy& b) { return a.global_rank < b.global_rank; });
  double sum = 0;
  for (const RankBusy& b : ranks) {
    sum += static_cast<double>(b.busy_ns);
    if (report.busiest_rank < 0 || b.busy_ns > report.max_busy_ns) {
      report.max_busy_ns = b.busy_ns;
      report.busiest_rank = b.global_rank;
    }
  }
  report.ranks = std::move(ranks);
  if (!report.ranks.empty()) {
    report.mean_busy_ns = sum / static_cast<double>(report.ranks.size());
    if (report.mean_busy_ns > 0)
      report.imbalance = (static_cast<double>(report.max_busy_ns) - report.mean_busy_ns) / report.mean_busy_ns;
  }
  return report;
}

std::vector<CollectiveStatsRow> collective_stats(const std::vector<CollectiveInstance>& collectives) {
  std::map<std::tuple<std::string, uint64_t, int32_t>, CollectiveStatsRow> rows;
  std::map<std::tuple<std::string, uint64_t, int32_t>, uint8_t> ops;
  for (const CollectiveInstance& inst : collectives) {
    if (inst.arrivals.empty()) continue;
    uint64_t cls = 0;
    if (inst.size_bytes > 0) {
      cls = 1;
      while (cls <= inst.size_bytes / 2) cls *= 2;
    }
    auto key = std::make_tuple(std::string(nccl_op_name(inst.op)), cls, inst.nranks);
    CollectiveStatsRow& row = rows[key];
    ops[key] = inst.op;
    row.op = std::get<0>(key);
    row.size_class_bytes = cls;
    row.nranks = inst.nranks;
    ++row.count;
    row.total_bytes += inst.size_bytes;
    std::vector<uint64_t> kernel;
    for (const Arrival& a : inst.arrivals) kernel.push_back(a.end_ns - a.start_ns);
    row.time_ns += static_cast<uint64_t>(median(kernel));
    row.transfer_ns += inst.transfer_ns;
    row.wait_ns += inst.wait_ns;
  }
  std::vector<CollectiveStatsRow> out;
  for (auto& [key, row] : rows) {
    if (row.transfer_ns > 0) {
      row.algbw_gbps = static_cast<double>(row.total_bytes) / static_cast<double>(row.transfer_ns);
      row.busbw_gbps = row.algbw_gbps * bus_factor(ops[key], row.nranks);
    }
    out.push_back(row);
  }
  return out;
}

namespace {
std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30)) snprintf(buf, sizeof buf, "%" PRIu64 " GiB", b >> 30);
  else if (b >= (1ull << 20)) snprintf(buf, sizeof buf, "%" PRIu64 " MiB", b >> 20);
  else if (b >= (1ull << 10)) snprintf(buf, sizeof buf, "%" PRIu64 " KiB", b >> 10);
  else snprintf(buf, sizeof buf, "%" PRIu64 " B", b);
  return buf;
}
}  // namespace

std::string format_collective_stats(const std::vector<CollectiveStatsRow>& rows) {
  std::string out;
  char buf[512];
  snprintf(buf, sizeof buf, "%-14s %9s %5s %7s %12s %12s %12s %10s %10s\n", "collective", "size>=", "ranks", "count",
           "time_ms", "transfer_ms", "wait_ms", "algbw_GB/s", "busbw_GB/s");
  out += buf;
  for (const CollectiveStatsRow& r : rows) {
    snprintf(buf, sizeof buf, "%-14s %9s %5d %7" PRIu64 " %12.3f %12.3f %12.3f %10.2f %10.2f\n", r.op.c_str(),
             human_bytes(r.size_class_bytes).c_str(), r.nranks, r.count, static_cast<double>(r.time_ns) / 1e6,
             static_cast<double>(r.transfer_ns) / 1e6, static_cast<double>(r.wait_ns) / 1e6, r.algbw_gbps, r.busbw_gbps);
    out += buf;
  }
  if (rows.empty()) out += "(no NCCL collectives with kernels in the capture)\n";
  return out;
}

}  // namespace gantt
