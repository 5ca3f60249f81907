// Rank x rank traffic per communicator (analysis/comm.h).
#include "gantt/analysis/comm.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "gantt/analysis/p2p.h"
#include "gantt/analysis/table.h"
#include "gantt/model/json.h"
#include "gantt/ranks/collectives.h"

namespace gantt::analysis {

namespace {

namespace v1 = gpuhook::v1;

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

std::string gbps_text(double v) { return v > 0 ? fixed(v, 2) : "-"; }

}  // namespace

double CommMatrix::p2p_gbps(int32_t from, int32_t to) const {
  const size_t i = at(from, to);
  return p2p_ns[i] ? static_cast<double>(p2p_bytes[i]) / static_cast<double>(p2p_ns[i]) : 0;
}

std::vector<CommMatrix> comm_matrices(const Model& m, std::vector<std::string>* notes) {
  std::map<uint64_t, CommMatrix> by_comm;
  std::set<uint64_t> too_large;  // noted once each, not once per send or collective
  auto matrix = [&](uint64_t comm, int32_t nranks) -> CommMatrix* {
    if (nranks < 2) return nullptr;
    if (nranks > kMaxMatrixRanks) {
      if (notes && too_large.insert(comm).second)
        notes->push_back("communicator " + hex(comm) + ": " + std::to_string(nranks) + " ranks, more than the " +
                         std::to_string(kMaxMatrixRanks) + " a matrix is drawn for");
      return nullptr;
    }
    auto [it, added] = by_comm.try_emplace(comm);
    CommMatrix& c = it->second;
    if (added) {
      c.comm_id = comm;
      c.nranks = nranks;
      const size_t cells = static_cast<size_t>(nranks) * static_cast<size_t>(nranks);
      for (auto* v : {&c.p2p_bytes, &c.p2p_ns, &c.ring_bytes, &c.ring_ns}) v->assign(cells, 0);
    }
    return c.nranks == nranks ? &c : nullptr;  // a hostile file giving one id two sizes: the first wins
  };
  const NcclTable& n = m.nccl;
  // A send matched with its receive is timed from when both ends had started to when the data
  // had arrived: the link's time, not the time one kernel waited for the other.
  std::map<uint32_t, uint64_t> matched_ns;
  for (const P2pTransfer& t : match_p2p(m).transfers)
    if (t.transfer_ns()) matched_ns[t.send_call] = t.transfer_ns();
  for (uint32_t i = 0; i < n.size(); ++i) {
    if (n.op[i] != v1::NCCL_SEND) continue;
    CommMatrix* c = matrix(n.comm_id[i], n.nranks[i]);
    const int32_t from = n.rank[i], to = n.root_or_peer[i];
    if (!c || from < 0 || to < 0 || from >= c->nranks || to >= c->nranks || from == to) continue;
    const size_t cell = c->at(from, to);
    c->p2p_bytes[cell] += n.bytes[i];
    ++c->sends;
    const uint32_t e = n.event[i];
    if (auto t = matched_ns.find(i); t != matched_ns.end())
      c->p2p_ns[cell] += t->second;
    else if (e < m.events.size() && m.events.end_ns[e] > m.events.start_ns[e] && m.events.start_ns[e])
      c->p2p_ns[cell] += m.events.end_ns[e] - m.events.start_ns[e];
  }
  for (const CollectiveInstance& ci : match_collectives(collective_calls(m))) {
    if (!ci.complete) continue;
    CommMatrix* c = matrix(ci.comm_id, ci.nranks);
    if (!c) continue;
    const uint64_t per_link =
        static_cast<uint64_t>(bus_factor(ci.op, ci.nranks) * static_cast<double>(ci.size_bytes));
    for (int32_t r = 0; r < c->nranks; ++r) {
      const size_t cell = c->at(r, (r + 1) % c->nranks);
      c->ring_bytes[cell] += per_link;
      c->ring_ns[cell] += ci.transfer_ns;
    }
    ++c->collectives;
  }
  std::vector<CommMatrix> out;
  for (auto& [id, c] : by_comm) {
    std::vector<double> bw;
    for (int32_t f = 0; f < c.nranks; ++f)
      for (int32_t t = 0; t < c.nranks; ++t)
        if (const double g = c.p2p_gbps(f, t); g > 0) bw.push_back(g);
    if (bw.size() >= kSlowPairMinPairs) {
      std::vector<double> sorted = bw;
      std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
      const double median = sorted[sorted.size() / 2];
      for (int32_t f = 0; f < c.nranks; ++f)
        for (int32_t t = 0; t < c.nranks; ++t)
          if (const double g = c.p2p_gbps(f, t); g > 0 && g < kSlowPairShare * median) c.slow.push_back({f, t, g, median});
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string format_comm_stats(const std::vector<CommMatrix>& ms, const std::vector<std::string>& notes,
                              const std::string& format) {
  if (format == "json") {
    std::string o = "{\"communicators\":[";
    for (size_t k = 0; k < ms.size(); ++k) {
      const CommMatrix& c = ms[k];
      auto array = [&](const std::vector<uint64_t>& v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
        return s + "]";
      };
      o += (k ? "," : "") + std::string("{\"comm_id\":") + json::quoted(hex(c.comm_id)) + ",\"nranks\":" +
           std::to_string(c.nranks) + ",\"sends\":" + std::to_string(c.sends) + ",\"collectives\":" +
           std::to_string(c.collectives) + ",\"p2p_bytes\":" + array(c.p2p_bytes) + ",\"p2p_ns\":" + array(c.p2p_ns) +
           ",\"ring_model_bytes\":" + array(c.ring_bytes) + ",\"ring_model_ns\":" + array(c.ring_ns) + ",\"slow_pairs\":[";
      for (size_t i = 0; i < c.slow.size(); ++i) {
        std::string g, med;
        json::append_number(g, c.slow[i].gbps, 3);
        json::append_number(med, c.slow[i].median_gbps, 3);
        o += (i ? "," : "") + std::string("{\"from\":") + std::to_string(c.slow[i].from) + ",\"to\":" +
             std::to_string(c.slow[i].to) + ",\"gbps\":" + g + ",\"median_gbps\":" + med + "}";
      }
      o += "]}";
    }
    return o + "]}\n";
  }
  if (format == "csv") {
    // One table for a spreadsheet or a script: no prose, and a header only when there is no traffic.
    Table t;
    t.header = {"comm_id", "from", "to", "p2p_bytes", "p2p_us", "p2p_GB/s", "ring_model_bytes", "ring_model_us", "slow_pair"};
    for (const CommMatrix& c : ms)
      for (int32_t f = 0; f < c.nranks; ++f)
        for (int32_t to = 0; to < c.nranks; ++to) {
          const size_t i = c.at(f, to);
          if (!c.p2p_bytes[i] && !c.ring_bytes[i]) continue;
          const bool slow = std::any_of(c.slow.begin(), c.slow.end(),
                                        [&](const CommMatrix::SlowPair& s) { return s.from == f && s.to == to; });
          t.rows.push_back({hex(c.comm_id), std::to_string(f), std::to_string(to), std::to_string(c.p2p_bytes[i]),
                            us(static_cast<int64_t>(c.p2p_ns[i])),
                            // unknown is empty, not "-", which to_csv would guard as a formula
                            c.p2p_gbps(f, to) > 0 ? fixed(c.p2p_gbps(f, to), 2) : std::string(),
                            std::to_string(c.ring_bytes[i]), us(static_cast<int64_t>(c.ring_ns[i])), slow ? "yes" : "no"});
        }
    return to_csv(t);
  }
  const bool md = format == "md";
  // Lines of prose; in Markdown each its own paragraph (a line right after a table is a row).
  const auto line = [md](const std::string& s) { return md ? markdown_text(s, true) + "\n\n" : s + "\n"; };
  std::string out;
  for (const std::string& n : notes) out += line(n);
  for (const CommMatrix& c : ms) {
    out += line("communicator " + hex(c.comm_id) + ", " + std::to_string(c.nranks) + " ranks: " + std::to_string(c.sends) +
                " sends, " + std::to_string(c.collectives) + " collectives");
    Table t;
    t.header = {"from", "to", "p2p_bytes", "p2p_us", "p2p_GB/s", "ring_model_bytes", "ring_model_us"};
    t.right = {true, true, true, true, true, true, true};
    for (int32_t f = 0; f < c.nranks; ++f)
      for (int32_t to = 0; to < c.nranks; ++to) {
        const size_t i = c.at(f, to);
        if (!c.p2p_bytes[i] && !c.ring_bytes[i]) continue;
        t.rows.push_back({std::to_string(f), std::to_string(to), bytes_text(c.p2p_bytes[i]), us(static_cast<int64_t>(c.p2p_ns[i])),
                          gbps_text(c.p2p_gbps(f, to)), bytes_text(c.ring_bytes[i]), us(static_cast<int64_t>(c.ring_ns[i]))});
      }
    out += md ? to_markdown(t) + "\n" : to_text(t);
    for (const CommMatrix::SlowPair& s : c.slow)
      out += line("slow pair: rank " + std::to_string(s.from) + " -> rank " + std::to_string(s.to) + " at " +
                  gbps_text(s.gbps) + " GB/s, the median pair " + gbps_text(s.median_gbps) + " GB/s");
    if (!md) out += "\n";
  }
  if (ms.empty()) out += line("no NCCL point-to-point or matched collective traffic in the capture(s)");
  return out + line("(p2p: exact, the bytes of each ncclSend, timed from when its kernel and the matching receive's had "
                    "both started to when the receive ended (the send's kernel alone when the receiver's capture is "
                    "missing); ring model: each rank sends bus factor x size to the next for every collective, a model "
                    "of NCCL's ring, not a measurement)");
}

std::string format_collective_stats(const std::vector<CollectiveStatsRow>& rows, const std::string& format) {
  if (format == "json") {
    std::string o = "{\"collectives\":[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const CollectiveStatsRow& r = rows[i];
      o += (i ? "," : "") + std::string("{\"op\":") + json::quoted(r.op) + ",\"size_class_bytes\":" +
           std::to_string(r.size_class_bytes) + ",\"ranks\":" + std::to_string(r.nranks) + ",\"count\":" +
           std::to_string(r.count) + ",\"total_bytes\":" + std::to_string(r.total_bytes) + ",\"time_ns\":" +
           std::to_string(r.time_ns) + ",\"transfer_ns\":" + std::to_string(r.transfer_ns) + ",\"wait_ns\":" +
           std::to_string(r.wait_ns) + ",\"algbw_gbps\":";
      json::append_number(o, r.algbw_gbps, 3);
      o += ",\"busbw_gbps\":";
      json::append_number(o, r.busbw_gbps, 3);
      o += "}";
    }
    return o + "]}\n";
  }
  if (format == "csv" || format == "md") {
    if (rows.empty() && format == "md") return "no NCCL collectives with kernels in the capture(s)\n";
    Table t;
    t.header = {"collective", "size_class_bytes", "ranks", "count", "total_bytes", "time_us", "transfer_us", "wait_us",
                "algbw_GB/s", "busbw_GB/s"};
    t.right = {false, true, true, true, true, true, true, true, true, true};
    for (const CollectiveStatsRow& r : rows)
      t.rows.push_back({r.op, std::to_string(r.size_class_bytes), std::to_string(r.nranks), std::to_string(r.count),
                        std::to_string(r.total_bytes), us(static_cast<int64_t>(r.time_ns)),
                        us(static_cast<int64_t>(r.transfer_ns)), us(static_cast<int64_t>(r.wait_ns)),
                        fixed(r.algbw_gbps, 2), fixed(r.busbw_gbps, 2)});
    return format == "csv" ? to_csv(t) : to_markdown(t);
  }
  if (rows.empty()) return "no NCCL collectives with kernels in the capture(s)\n";
  return ::gantt::format_collective_stats(rows);
}

}  // namespace gantt::analysis
