// Clock alignment across the captures of one job.
//
// Why alignment needs the collectives: two captures from one boot share CLOCK_MONOTONIC_RAW
// and need no shift, but captures from different hosts only share CLOCK_REALTIME, which
// NTP keeps within milliseconds at best. A collective (communicator id + sequence number)
// ends at nearly the same instant on every rank, so the end times of many collectives pin
// the per-host offsets down to the spread of those ends (microseconds).
//
// Pure functions over plain inputs, plus the adapters that fill them from a gantt::Model.
// API stability: fields and functions are only ever added, never changed or removed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gantt {

class Model;

// The end of one collective kernel as one capture saw it, in that capture's clock.
struct CollectiveEnd {
  uint64_t comm_id = 0;
  uint64_t sequence = 0;
  uint64_t end_ns = 0;
};

// What one capture offers for alignment (from its Header and its NCCL kernels).
struct RankClockInput {
  std::string host;
  std::string boot_id;                  // "" = unknown: never assumed shared
  uint64_t start_monotonic_raw_ns = 0;  // the clock pair read together at start
  uint64_t start_realtime_ns = 0;       // 0 = no anchor
  std::vector<CollectiveEnd> ends;
};

enum class RankAlignMethod : uint8_t {
  kReference = 0,        // capture 0's clock: the timeline everything is mapped onto
  kSameBoot = 1,         // same boot id as an aligned capture: same clock, no shift
  kCollectives = 2,      // REALTIME anchor refined by collective end times
  kRealtimeAnchor = 3,   // too few shared collectives: REALTIME anchors only (NTP-grade)
  kUnaligned = 4,        // no anchor and no shared collectives: left as recorded
};
const char* to_string(RankAlignMethod method);

struct RankAlignOptions {
  uint32_t min_shared_collectives = 3;  // below this, a host keeps its REALTIME anchor
  double outlier_mads = 5.0;            // drop ends this many (scaled) MADs from the median
  uint64_t outlier_floor_ns = 2'000;    // ...but never tighter than this
};

struct CaptureOffset {
  int64_t offset_ns = 0;          // add to the capture's times to land on the reference clock
  RankAlignMethod method = RankAlignMethod::kReference;
  int64_t anchor_offset_ns = 0;   // what the REALTIME anchors alone said
  uint32_t group = 0;             // captures with the same boot id share a group
  uint64_t collectives_used = 0;  // shared collectives behind the estimate (after rejection)
  uint64_t outliers = 0;          // rejected as outliers
  double residual_ns = 0;         // median |end - consensus| of this capture's collectives after alignment
};

struct RankAlignment {
  std::vector<CaptureOffset> captures;  // one per input, in input order
  uint64_t matched_collectives = 0;     // collectives seen by at least two clock groups
  double residual_median_ns = 0;        // median over collectives of the spread of their aligned ends
  double residual_p95_ns = 0;
  double residual_max_ns = 0;
};

RankAlignment align_ranks(const std::vector<RankClockInput>& inputs, const RankAlignOptions& options = {});

// One line per capture for `info` and the chart footer, e.g.
// "capture 2 (host b): +5.000123 ms, REALTIME anchor refined by 96 collectives, residual 1.2 us".
std::vector<std::string> describe(const RankAlignment& alignment, const std::vector<RankClockInput>& inputs);
// A one-line summary, e.g. "ranks aligned: 2 clock groups, 96 collectives, residual 1.2 us median".
std::string summarize(const RankAlignment& alignment);

// Alignment inputs of each capture of `model` (boot id, host, anchors, NCCL kernel ends).
std::vector<RankClockInput> rank_clock_inputs(const Model& model);
// Shifts every time of every capture by its offset (events, API calls, ranges, NCCL calls,
// allocations and their uses, counter samples, flight dumps, capture first/last). Times of 0
// (unknown) stay 0.
void apply_rank_alignment(Model& model, const RankAlignment& alignment);
// The job rank of a capture: Header.rank when recorded, else the capture index.
int32_t global_rank(const Model& model, uint16_t capture);

}  // namespace gantt
