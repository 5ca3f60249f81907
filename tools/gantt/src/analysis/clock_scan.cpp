// A capture's clock-alignment inputs from a scan: its header from the scan's context, and the
// end of every collective kernel the loader's NCCL join names (EventScanOptions::join_nccl),
// which is what rank_clock_inputs() reads off a loaded model.
#include "gantt/analysis/clock_scan.h"

#include <algorithm>
#include <memory>
#include <set>
#include <tuple>

#include <gpuhook/nccl_types.h>

namespace gantt::analysis {

namespace {

class CollectiveEnds : public EventConsumer {
 public:
  void event(const ScannedEvent& e, const gpuhook::CaptureReader&) override {
    if (e.kind != EventKind::kNccl || e.nccl == nullptr || e.end_ns == 0) return;
    if (!gpuhook::nccl_op_is_collective(e.nccl->op)) return;
    ends.push_back({e.nccl->comm_id, e.nccl->sequence, e.end_ns});
  }
  std::vector<CollectiveEnd> ends;
};

}  // namespace

bool collective_call(const ScannedEvent& e, uint16_t capture, int32_t global_rank, RankCollectiveCall* out) {
  if (e.kind != EventKind::kNccl || e.nccl == nullptr || !gpuhook::nccl_op_is_collective(e.nccl->op)) return false;
  const ScannedNccl& n = *e.nccl;
  *out = {capture, n.rank, global_rank, n.op, n.comm_id, n.sequence, n.count, n.datatype, n.nranks, e.start_ns, e.end_ns};
  return true;
}

bool one_call_each(const std::vector<RankCollectiveCall>& calls) {
  std::set<std::tuple<uint16_t, uint64_t, uint64_t>> seen;
  for (const RankCollectiveCall& c : calls)
    if (c.kernel_start_ns != 0 && !seen.emplace(c.capture, c.comm_id, c.sequence).second) return false;
  return true;
}

RankClockInput clock_input(const EventScanner& scanner, std::vector<RankCollectiveCall>::const_iterator from,
                           std::vector<RankCollectiveCall>::const_iterator to) {
  RankClockInput input = rank_clock_inputs(scanner.context()).front();
  for (auto c = from; c != to; ++c)
    if (c->kernel_end_ns != 0) input.ends.push_back({c->comm_id, c->sequence, c->kernel_end_ns});
  order_ends(input.ends);
  return input;
}

void order_ends(std::vector<CollectiveEnd>& ends) {
  std::sort(ends.begin(), ends.end(), [](const CollectiveEnd& a, const CollectiveEnd& b) {
    return std::tie(a.comm_id, a.sequence, a.end_ns) < std::tie(b.comm_id, b.sequence, b.end_ns);
  });
}

std::optional<RankClockInput> scan_clock_input(const std::string& path, const EventScanOptions& options,
                                               std::string* why_not) {
  EventScanOptions so = options;
  so.join_nccl = true;      // the kernels' calls name the collective
  so.join_launches = false;  // only a kernel's end is read
  EventScanner scanner(path, so);
  if (!scanner.refused().empty()) {
    if (why_not) *why_not = scanner.refused();
    return std::nullopt;
  }
  std::vector<std::unique_ptr<CollectiveEnds>> shares;
  std::vector<EventConsumer*> consumers;
  for (size_t i = 0; i < scanner.shares(); ++i) {
    shares.push_back(std::make_unique<CollectiveEnds>());
    consumers.push_back(shares.back().get());
  }
  if (!scanner.run(consumers, why_not)) return std::nullopt;
  std::vector<RankClockInput> inputs = rank_clock_inputs(scanner.context());
  if (inputs.size() != 1) {
    if (why_not) *why_not = "not one capture";
    return std::nullopt;
  }
  RankClockInput input = std::move(inputs.front());
  for (const auto& sh : shares) input.ends.insert(input.ends.end(), sh->ends.begin(), sh->ends.end());
  order_ends(input.ends);
  return input;
}

namespace {

// --range NAME@N on several captures: JobClock::range (job_clock()).
bool find_job_range(JobClock& clock, const std::vector<std::string>& paths,
                    const std::vector<const EventScanner*>& scanners, const std::string& spec,
                    const EventScanOptions& options, std::string* why_not) {
  std::vector<NamedRange> ranges;
  std::vector<std::pair<size_t, uint32_t>> rows;  // (capture, row of its context's ranges)
  for (size_t c = 0; c < scanners.size(); ++c) {
    const Model& m = scanners[c]->context();
    for (uint32_t r = 0; r < m.ranges.size(); ++r)
      if (m.ranges.kind[r] != RangeKind::kMark) {
        ranges.push_back({m.string(m.ranges.name[r]), shifted(m.ranges.start_ns[r], clock.offsets[c])});
        rows.emplace_back(c, r);
      }
  }
  const auto [c, r] = rows[range_occurrence(ranges, spec)];  // throws as select_events() does
  const Model& m = scanners[c]->context();
  const uint64_t from = shifted(m.ranges.start_ns[r], clock.offsets[c]);
  const uint64_t to = m.ranges.end_ns[r] ? shifted(m.ranges.end_ns[r], clock.offsets[c]) : clock.last_ns;
  uint64_t end = to;
  for (size_t k = 0; k < paths.size(); ++k) {
    const std::optional<std::pair<uint64_t, uint64_t>> launched =
        launched_end(paths[k], options.load, options.threads, clock.local(k, from), clock.local(k, to), why_not);
    if (!launched) {
      if (why_not) *why_not = about_capture(paths, k, *why_not);
      return false;
    }
    end = std::max(end, shifted(launched->second, clock.offsets[k]));
  }
  clock.range = std::make_pair(from, end);
  return true;
}

}  // namespace

std::optional<std::vector<std::unique_ptr<EventScanner>>> open_scanners(const std::vector<std::string>& paths,
                                                                        const EventScanOptions& options,
                                                                        std::string* why_not) {
  std::vector<std::unique_ptr<EventScanner>> scanners;
  for (size_t c = 0; c < paths.size(); ++c) {
    scanners.push_back(std::make_unique<EventScanner>(paths[c], options));
    if (!scanners.back()->refused().empty()) {
      if (why_not) *why_not = about_capture(paths, c, scanners.back()->refused());
      return std::nullopt;
    }
  }
  return scanners;
}

std::optional<JobClock> job_clock(const std::vector<std::string>& paths, const std::vector<const EventScanner*>& scanners,
                                  const EventScanOptions& options, std::string* why_not, const EventFilter* filter) {
  JobClock job;
  job.offsets.assign(paths.size(), 0);
  if (paths.size() > 1) {
    std::vector<RankClockInput> clocks;
    for (const EventScanner* scanner : scanners) clocks.push_back(rank_clock_inputs(scanner->context()).front());
    const bool one_clock = std::all_of(clocks.begin(), clocks.end(), [&](const RankClockInput& c) {
      return !c.boot_id.empty() && c.boot_id == clocks.front().boot_id;
    });
    for (size_t c = 0; c < paths.size() && !one_clock; ++c) {
      std::string why;
      std::optional<RankClockInput> scanned = scan_clock_input(paths[c], options, &why);
      if (!scanned) {
        if (why_not) *why_not = about_capture(paths, c, why);
        return std::nullopt;
      }
      clocks[c] = std::move(*scanned);
    }
    if (!one_clock) {
      job.alignment = align_ranks(clocks);
      for (size_t c = 0; c < paths.size() && c < job.alignment.captures.size(); ++c)
        job.offsets[c] = job.alignment.captures[c].offset_ns;
    }
  }
  for (size_t c = 0; c < scanners.size(); ++c) {
    const EventScanner& scanner = *scanners[c];
    const uint64_t t = shifted(scanner.first_ns(), job.offsets[c]);
    if (t != 0 && (job.first_ns == 0 || t < job.first_ns)) job.first_ns = t;
    job.last_ns = std::max(job.last_ns, shifted(std::max(scanner.index_last_ns(), scanner.first_ns()), job.offsets[c]));
  }
  if (filter && paths.size() > 1 && !filter->range.empty() &&
      !find_job_range(job, paths, scanners, filter->range, options, why_not))
    return std::nullopt;
  return job;
}

bool select_on_job_clock(const JobClock& clock, const std::vector<std::string>& paths,
                         const std::vector<std::unique_ptr<EventScanner>>& scanners, const EventFilter& filter,
                         std::string* why_not) {
  for (size_t c = 0; c < scanners.size(); ++c) {
    const auto [first, last] = clock.local_span(c);
    std::string why;
    if (!scanners[c]->select(filter, first, last, &why, clock.local_range(c))) {
      if (why_not) *why_not = about_capture(paths, c, why);
      return false;
    }
  }
  return true;
}

}  // namespace gantt::analysis
