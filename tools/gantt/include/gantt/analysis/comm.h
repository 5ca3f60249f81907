// Who sent how much to whom: per NCCL communicator, rank x rank matrices of point-to-point
// traffic (exact: the bytes of each ncclSend, timed as its matched transfer, analysis/p2p.h,
// or by its kernel when the receiver was not captured) and of collective
// traffic under the ring model (each rank sends bus_factor x size to the next, as nccl-tests'
// bus bandwidth assumes: a model, labelled so), the achieved bandwidth of each pair, and the
// pairs well below the others. `stats --by comm` prints them; `render --view comm` draws them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gantt/model/model.h"
#include "gantt/ranks/collectives.h"

namespace gantt::analysis {

// Communicators larger than this are summarised, not drawn as a matrix: nranks comes from
// the file, and n x n cells must stay bounded.
inline constexpr int32_t kMaxMatrixRanks = 1024;
inline constexpr double kSlowPairShare = 0.5;  // of the median pair bandwidth
inline constexpr size_t kSlowPairMinPairs = 3;

struct CommMatrix {
  uint64_t comm_id = 0;
  int32_t nranks = 0;
  std::vector<uint64_t> p2p_bytes, p2p_ns;    // [from * nranks + to]
  std::vector<uint64_t> ring_bytes, ring_ns;  // collectives, ring model
  uint64_t sends = 0, collectives = 0;
  struct SlowPair {
    int32_t from = 0, to = 0;
    double gbps = 0, median_gbps = 0;
  };
  std::vector<SlowPair> slow;
  size_t at(int32_t from, int32_t to) const { return static_cast<size_t>(from) * static_cast<size_t>(nranks) + static_cast<size_t>(to); }
  // Achieved point-to-point bandwidth from -> to in GB/s (bytes per ns), 0 when unknown.
  double p2p_gbps(int32_t from, int32_t to) const;
};

std::vector<CommMatrix> comm_matrices(const Model& model, std::vector<std::string>* notes = nullptr);
// text and md: a table per communicator between lines of prose; csv: one table, every
// communicator's pairs, a header row alone when there is no traffic; json: the matrices.
std::string format_comm_stats(const std::vector<CommMatrix>& matrices, const std::vector<std::string>& notes,
                              const std::string& format);

// `stats --by collective` in any format ("text", "md", "json", "csv"): the rows of
// gantt::collective_stats(). With none, text and md say so; csv is its header row and json
// an empty "collectives" array, so that a script reads an empty table, not a sentence.
std::string format_collective_stats(const std::vector<CollectiveStatsRow>& rows, const std::string& format);

}  // namespace gantt::analysis
