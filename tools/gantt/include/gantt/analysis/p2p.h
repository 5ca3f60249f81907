// NCCL point-to-point transfers matched across ranks: the k-th ncclSend from rank A to rank B
// on a communicator is the k-th ncclRecv on B from A there (NCCL delivers a pair's messages
// in order). A matched transfer says when the data could move (both kernels started), when it
// had arrived (the receiving kernel ended) and so the link's real time, without the time a
// kernel spent waiting for its peer. `render --deps` draws each as an arrow across ranks;
// `stats --by comm`, the pipeline bubbles and `diagnose slow-link` read them.
#pragma once

#include <cstdint>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::analysis {

struct P2pTransfer {
  uint64_t comm_id = 0;
  int32_t nranks = 0, from = 0, to = 0;  // communicator ranks
  uint64_t bytes = 0;
  uint32_t send_call = kNone, recv_call = kNone;    // rows in Model::nccl
  uint32_t send_event = kNone, recv_event = kNone;  // their kernels, kNone when not found
  // When both kernels had started, and when the receiving one ended; 0 when a kernel is missing.
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t transfer_ns() const { return end_ns > start_ns ? end_ns - start_ns : 0; }
};

struct P2pMatch {
  std::vector<P2pTransfer> transfers;  // by start, then communicator and ranks
  uint64_t unmatched_sends = 0, unmatched_recvs = 0;  // a peer's capture missing, or cut short
};

P2pMatch match_p2p(const Model& model);

}  // namespace gantt::analysis
