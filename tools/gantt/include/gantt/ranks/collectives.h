// Collectives matched across ranks, stragglers, busy-time imbalance, collective bandwidth.
// The links the chart draws between a collective's ranks are render's (render/rank_links.h).
//
// Pure functions over plain inputs, plus the adapters that fill them from a gantt::Model.
// API stability: fields and functions are only ever added, never changed or removed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gantt {

class Model;

// One NCCL call of one rank, with the kernel it ran (0 times when no kernel was found).
struct RankCollectiveCall {
  uint16_t capture = 0;
  int32_t rank = 0;          // the communicator rank
  int32_t global_rank = 0;   // the job rank (Header.rank, else the capture index)
  uint8_t op = 0;            // v1::NcclOp
  uint64_t comm_id = 0;
  uint64_t sequence = 0;
  uint64_t count = 0;
  int32_t datatype = 0;      // ncclDataType_t
  int32_t nranks = 0;
  uint64_t kernel_start_ns = 0;  // on the aligned timeline
  uint64_t kernel_end_ns = 0;
  uint32_t event = UINT32_MAX;   // row in Model::events, when from a model
};

struct Arrival {
  uint16_t capture = 0;
  int32_t global_rank = 0;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t event = UINT32_MAX;
};

// One collective (comm id + sequence) as all its ranks ran it.
struct CollectiveInstance {
  uint64_t comm_id = 0;
  uint64_t sequence = 0;
  uint8_t op = 0;
  uint64_t count = 0;
  int32_t datatype = 0;
  int32_t nranks = 0;
  uint64_t size_bytes = 0;        // nccl-tests "size": all-gather/reduce-scatter/all-to-all count the whole buffer
  std::vector<Arrival> arrivals;  // sorted by start_ns, ties by global rank
  uint64_t first_arrival_ns = 0;
  uint64_t last_arrival_ns = 0;
  int32_t last_rank = -1;         // global rank of the last arriver
  uint64_t arrival_spread_ns = 0; // last - first arrival
  uint64_t wait_ns = 0;           // sum over ranks of (last arrival - own arrival)
  uint64_t transfer_ns = 0;       // median over ranks of (end - last arrival): the data movement
  bool complete = false;          // every one of nranks ranks was seen
};

// Groups calls by (comm id, sequence). Calls without a kernel are skipped (their host exit
// says when the work was queued, not when it ran). Sorted by first arrival.
std::vector<CollectiveInstance> match_collectives(const std::vector<RankCollectiveCall>& calls);

// nccl-tests bus-bandwidth factor: all-reduce 2(n-1)/n; all-gather, reduce-scatter and
// all-to-all (n-1)/n; broadcast, reduce 1; others 1.
double bus_factor(uint8_t op, int32_t nranks);
uint64_t collective_size_bytes(uint8_t op, uint64_t count, int32_t datatype, int32_t nranks);
const char* nccl_op_name(uint8_t op);  // "AllReduce", ...

// ---------------------------------------------------------------- stragglers and imbalance

struct RankStraggling {
  int32_t global_rank = 0;
  uint64_t collectives = 0;      // complete collectives it took part in
  uint64_t times_last = 0;       // ...where it arrived last (by more than the tie margin)
  uint64_t wait_caused_ns = 0;   // others' waiting while it was the last to arrive
  int64_t lateness_median_ns = 0;   // median of (own arrival - median arrival of the collective)
  int64_t lateness_jitter_ns = 0;   // robust spread of that lateness (1.4826 x its MAD)
};

struct StragglerReport {
  std::vector<RankStraggling> ranks;  // sorted by global rank
  uint64_t collectives = 0;           // complete collectives considered
  int32_t straggler = -1;             // global rank named the straggler, -1 = none
  double straggler_last_fraction = 0; // how often it arrived last
  uint64_t straggler_wait_caused_ns = 0;
  uint64_t total_wait_ns = 0;         // all ranks' waiting at collectives
  uint64_t collective_median_ns = 0;  // median of the collectives' transfer_ns
  std::string reason;                 // why a rank was (or was not) named, in words
};

// A rank is named only when its lateness is a fact and not the machine's noise, as `diff`
// tells a regression from run-to-run noise. On a loaded machine every rank's host thread is
// descheduled now and then; one unlucky rank came last at 21 of 30 collectives, a median
// 56 us late, in a balanced job. So the lateness must also be large against the arrival
// jitter (its own and the other ranks'), beyond a rank test against the other ranks'
// lateness, and large against what the collective itself takes after the last arrival.
// Measured on the simulator under a parallel build: the 400 us straggler was 2.7-4.6x the
// jitter, unlucky ranks of the balanced twin at most 0.5x; hence 2x.
struct StragglerOptions {
  uint64_t tie_margin_ns = 5'000;     // arrivals closer than this to the next one are a tie
  double min_last_fraction = 0.5;     // last at least this often...
  uint64_t min_lateness_ns = 20'000;  // ...and this late (median) to be named...
  double min_jitter_multiple = 2.0;   // ...and this many times the arrival jitter...
  double min_collective_fraction = 0.1;  // ...and this fraction of the collective's own time
  double alpha = 0.01;                // one-sided rank test: later than the other ranks
  uint64_t min_collectives = 3;
};

StragglerReport find_straggler(const std::vector<CollectiveInstance>& collectives, const StragglerOptions& options = {});

struct RankBusy {
  int32_t global_rank = 0;
  uint64_t busy_ns = 0;       // union of non-NCCL GPU activity on the rank's devices
  uint64_t span_ns = 0;       // first to last activity
};

struct ImbalanceReport {
  std::vector<RankBusy> ranks;  // sorted by global rank
  double mean_busy_ns = 0;
  uint64_t max_busy_ns = 0;
  int32_t busiest_rank = -1;
  double imbalance = 0;         // (max - mean) / mean: 0 = perfectly balanced
};

// Busy interval lists per rank -> report. Intervals need not be sorted or disjoint.
struct RankIntervals {
  int32_t global_rank = 0;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;  // [start, end)
};
ImbalanceReport busy_imbalance(const std::vector<RankIntervals>& ranks);
// The same from each rank's busy time (one entry per rank), as a summary keeps it.
ImbalanceReport busy_imbalance(std::vector<RankBusy> ranks);

// ---------------------------------------------------------------- stats --by collective

struct CollectiveStatsRow {
  std::string op;             // "AllReduce"
  uint64_t size_class_bytes = 0;  // power-of-two bucket: sizes in [class, 2*class)
  int32_t nranks = 0;
  uint64_t count = 0;         // collectives (not per-rank calls)
  uint64_t total_bytes = 0;   // sum of nccl-tests sizes
  uint64_t time_ns = 0;       // sum over collectives of the median per-rank kernel time
  uint64_t transfer_ns = 0;   // sum of transfer times (end - last arrival)
  uint64_t wait_ns = 0;       // sum of the ranks' waiting for the last arriver
  double algbw_gbps = 0;      // total_bytes / transfer_ns (GB/s = bytes/ns)
  double busbw_gbps = 0;      // algbw * bus_factor
};

// Sorted by op name, then size class, then nranks.
std::vector<CollectiveStatsRow> collective_stats(const std::vector<CollectiveInstance>& collectives);
// Aligned text table of the rows (deterministic).
std::string format_collective_stats(const std::vector<CollectiveStatsRow>& rows);

// ---------------------------------------------------------------- adapters over a Model

// NCCL calls of the model joined with their kernels.
std::vector<RankCollectiveCall> collective_calls(const Model& model);
// Busy intervals per rank: every non-NCCL GPU event.
std::vector<RankIntervals> rank_busy_intervals(const Model& model);
// The same per device (global_rank = the device ordinal, every capture together), for one
// process driving several devices: a rank's NCCL kernel runs from its own arrival until the
// last rank arrives and the data has moved, so counting it made the device launched first look
// busier by the time it waited (all_reduce_perf -g 2: "device 0 busier by 44%").
std::vector<RankIntervals> device_busy_intervals(const Model& model);

}  // namespace gantt
