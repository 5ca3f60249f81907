// Point-to-point transfers matched across ranks (analysis/p2p.h).
#include "gantt/analysis/p2p.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace gantt::analysis {

namespace {

namespace v1 = gpuhook::v1;

bool kernel_times(const Model& m, uint32_t e) {
  return e < m.events.size() && m.events.start_ns[e] != 0 && m.events.end_ns[e] >= m.events.start_ns[e];
}

}  // namespace

P2pMatch match_p2p(const Model& m) {
  const NcclTable& n = m.nccl;
  // (comm, sender, receiver) -> the calls on each side, in call order.
  using Key = std::tuple<uint64_t, int32_t, int32_t>;
  std::map<Key, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> pairs;
  for (uint32_t i = 0; i < n.size(); ++i) {
    const bool send = n.op[i] == v1::NCCL_SEND, recv = n.op[i] == v1::NCCL_RECV;
    if (!send && !recv) continue;
    const int32_t me = n.rank[i], peer = n.root_or_peer[i];
    if (me < 0 || peer < 0 || me == peer || me >= n.nranks[i] || peer >= n.nranks[i]) continue;
    auto& sides = pairs[send ? Key{n.comm_id[i], me, peer} : Key{n.comm_id[i], peer, me}];
    (send ? sides.first : sides.second).push_back(i);
  }
  P2pMatch out;
  auto by_call_start = [&](uint32_t a, uint32_t b) {
    return std::tie(n.capture[a], n.start_ns[a], a) < std::tie(n.capture[b], n.start_ns[b], b);
  };
  for (auto& [key, sides] : pairs) {
    auto& [sends, recvs] = sides;
    std::stable_sort(sends.begin(), sends.end(), by_call_start);
    std::stable_sort(recvs.begin(), recvs.end(), by_call_start);
    const size_t k = std::min(sends.size(), recvs.size());
    out.unmatched_sends += sends.size() - k;
    out.unmatched_recvs += recvs.size() - k;
    for (size_t j = 0; j < k; ++j) {
      P2pTransfer t;
      t.comm_id = std::get<0>(key);
      t.from = std::get<1>(key);
      t.to = std::get<2>(key);
      t.send_call = sends[j];
      t.recv_call = recvs[j];
      t.nranks = n.nranks[t.send_call];
      t.bytes = n.bytes[t.send_call];
      if (kernel_times(m, n.event[t.send_call])) t.send_event = n.event[t.send_call];
      if (kernel_times(m, n.event[t.recv_call])) t.recv_event = n.event[t.recv_call];
      if (t.send_event != kNone && t.recv_event != kNone) {
        t.start_ns = std::max(m.events.start_ns[t.send_event], m.events.start_ns[t.recv_event]);
        t.end_ns = std::max(t.start_ns, m.events.end_ns[t.recv_event]);
      }
      out.transfers.push_back(t);
    }
  }
  std::stable_sort(out.transfers.begin(), out.transfers.end(), [](const P2pTransfer& a, const P2pTransfer& b) {
    return std::tie(a.start_ns, a.comm_id, a.from, a.to) < std::tie(b.start_ns, b.comm_id, b.from, b.to);
  });
  return out;
}

}  // namespace gantt::analysis
