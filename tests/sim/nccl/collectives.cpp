// The collectives themselves. Every collective is the same loop over chunks of at most
// kStageBytesPerRank per rank: each contributing rank copies its chunk into its staging
// area, all meet at a barrier, each rank builds its output from the staging areas (always
// reducing in rank order 0..n-1, so every rank gets the same bits), all meet again so the
// staging can be reused. The first barrier also exchanges arrival times: the kernel ends
// at max(arrival) + modelled transfer time on every rank, which is what a late rank does
// to the others on real hardware.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "comm.h"
#include "reduce.h"

namespace simnccl {

namespace {

struct Shape {
  size_t blocks = 1;            // input blocks per rank (n for reduce-scatter/all-to-all/scatter)
  bool root_only_input = false; // only the root contributes (broadcast, scatter)
  bool root_only_output = false;  // only the root receives (reduce, gather)
};

Shape shape_of(Kind kind, int nranks) {
  size_t n = static_cast<size_t>(nranks);
  switch (kind) {
    case Kind::kReduceScatter: case Kind::kAlltoAll: return {n, false, false};
    case Kind::kScatter: return {n, true, false};
    case Kind::kBroadcast: return {1, true, false};
    case Kind::kReduce: case Kind::kGather: return {1, false, true};
    default: return {1, false, false};
  }
}

double env_double(const char* name, double fallback) {
  const char* s = getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  double v = strtod(s, &end);
  return (end && *end == 0 && v > 0) ? v : fallback;
}

// GPUHOOK_SIM_NCCL_SLOW_LINK=A-B:GBPS[,C-D:GBPS...]: point-to-point traffic between ranks A
// and B (both directions) moves at GBPS instead of the bus bandwidth, as over a degraded
// NVLink or a PCIe fallback. Malformed entries are ignored with one line on stderr.
struct SlowLink {
  int a = 0, b = 0;
  double bytes_per_ns = 0;
};

std::vector<SlowLink> slow_links() {
  std::vector<SlowLink> out;
  const char* spec = getenv("GPUHOOK_SIM_NCCL_SLOW_LINK");
  if (!spec) return out;
  std::string s(spec);
  size_t at = 0;
  while (at < s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(at, comma - at);
    SlowLink l;
    char tail = 0;
    if (sscanf(item.c_str(), "%d-%d:%lf%c", &l.a, &l.b, &l.bytes_per_ns, &tail) == 3 && l.a >= 0 && l.b >= 0 &&
        l.bytes_per_ns > 0)
      out.push_back(l);
    else
      fprintf(stderr, "simnccl: GPUHOOK_SIM_NCCL_SLOW_LINK: ignored \"%s\" (want A-B:GBPS)\n", item.c_str());
    at = comma + 1;
  }
  return out;
}

double link_bytes_per_ns(int me, int peer, double fallback) {
  static const std::vector<SlowLink> links = slow_links();
  for (const SlowLink& l : links)
    if ((l.a == me && l.b == peer) || (l.a == peer && l.b == me)) return l.bytes_per_ns;  // GB/s = bytes/ns
  return fallback;
}

void ring(SharedHeader* h, int rank) {
  h->doorbell[rank].fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(h->doorbell[rank]);
}

ncclResult_t execute_collective(const Op& op, uint64_t start_ns) {
  ncclComm* comm = op.comm;
  Segment* seg = comm->segment;
  SharedHeader* h = seg->header();
  const int n = comm->nranks, me = comm->rank;
  const size_t es = dtype_bytes(op.dtype);
  const Shape shape = shape_of(op.kind, n);
  const size_t chunk_elems = kStageBytesPerRank / (shape.blocks * es);
  const auto* in = static_cast<const unsigned char*>(op.send);
  auto* out = static_cast<unsigned char*>(op.recv);

  uint64_t max_arrival = 0;
  size_t i0 = 0;
  bool first = true;
  do {
    const size_t c = op.count - i0 < chunk_elems ? op.count - i0 : chunk_elems;
    const size_t cb = c * es;
    if (!shape.root_only_input || me == op.root) {
      for (size_t b = 0; b < shape.blocks; ++b) memcpy(seg->stage(me) + b * cb, in + (b * op.count + i0) * es, cb);
      // PreMulSum: "pre-multiplies input values by a given scalar locally before reducing them
      // with peer values via summation" (nccl.h); a device scalar is read now, while it runs.
      if (op.premul) {
        const void* scalar = op.premul_device_scalar != nullptr ? op.premul_device_scalar : op.premul_value;
        if (!scale_by(seg->stage(me), shape.blocks * c, op.dtype, scalar)) return ncclInvalidArgument;
      }
    }
    if (first) h->arrival_ns[me] = start_ns;
    if (!barrier_wait(h->coll, n, h->aborted)) return ncclRemoteError;
    if (first) {
      for (int r = 0; r < n; ++r) max_arrival = h->arrival_ns[r] > max_arrival ? h->arrival_ns[r] : max_arrival;
      first = false;
    }
    const bool receives = !shape.root_only_output || me == op.root;
    if (receives && cb > 0) {
      unsigned char* dst = out + i0 * es;
      switch (op.kind) {
        case Kind::kAllReduce: case Kind::kReduce: case Kind::kReduceScatter: {
          size_t off = op.kind == Kind::kReduceScatter ? static_cast<size_t>(me) * cb : 0;
          memcpy(dst, seg->stage(0) + off, cb);
          for (int r = 1; r < n; ++r)
            if (!reduce_into(dst, seg->stage(r) + off, c, op.dtype, op.redop)) return ncclInvalidArgument;
          if (op.redop == ncclAvg) finish_average(dst, c, op.dtype, n);
          break;
        }
        case Kind::kBroadcast: memcpy(dst, seg->stage(op.root), cb); break;
        case Kind::kScatter: memcpy(dst, seg->stage(op.root) + static_cast<size_t>(me) * cb, cb); break;
        case Kind::kAllGather: case Kind::kGather:
          for (int r = 0; r < n; ++r) memcpy(out + (static_cast<size_t>(r) * op.count + i0) * es, seg->stage(r), cb);
          break;
        case Kind::kAlltoAll:
          for (int r = 0; r < n; ++r)
            memcpy(out + (static_cast<size_t>(r) * op.count + i0) * es, seg->stage(r) + static_cast<size_t>(me) * cb, cb);
          break;
        case Kind::kSendRecv: break;
      }
    }
    if (!barrier_wait(h->coll, n, h->aborted)) return ncclRemoteError;
    // Everyone has mapped the segment once the first collective completed.
    seg->unlink_name();
    i0 += c;
  } while (i0 < op.count);
  end_at(max_arrival + model_ns(op));
  return ncclSuccess;
}

ncclResult_t execute_sendrecv(const Op& op, uint64_t start_ns) {
  ncclComm* comm = op.comm;
  Segment* seg = comm->segment;
  SharedHeader* h = seg->header();
  const int me = comm->rank;
  std::vector<size_t> done(op.p2p.size(), 0);
  // The transfer begins when both ends have started: a receive that waited for its sender
  // ends the modelled time after the sender began, not after itself.
  uint64_t arrival = start_ns;
  const uint64_t deadline = monotonic_raw_ns() + timeout_ns();
  for (;;) {
    uint32_t bell = h->doorbell[me].load(std::memory_order_acquire);
    bool all_done = true, progressed = false;
    for (size_t k = 0; k < op.p2p.size(); ++k) {
      const P2p& p = op.p2p[k];
      if (done[k] >= p.bytes) continue;
      all_done = false;
      if (p.send) {
        Mailbox& m = h->mailbox[me][p.peer];
        if (m.written.load(std::memory_order_acquire) != m.consumed.load(std::memory_order_acquire)) continue;
        size_t c = p.bytes - done[k] < kMailboxBytes ? p.bytes - done[k] : kMailboxBytes;
        memcpy(seg->mailbox_buffer(me, p.peer), static_cast<const unsigned char*>(p.buffer) + done[k], c);
        m.bytes = c;
        m.sender_start_ns = start_ns;
        // A chunk after the first goes in only once the receiver took the one before: the
        // receiver has arrived (rendezvous). The first goes in eagerly, as NCCL's buffers allow.
        if (done[k] > 0 && m.receiver_start_ns > arrival) arrival = m.receiver_start_ns;
        m.written.fetch_add(1, std::memory_order_acq_rel);
        done[k] += c;
        ring(h, p.peer);
      } else {
        Mailbox& m = h->mailbox[p.peer][me];
        if (m.written.load(std::memory_order_acquire) == m.consumed.load(std::memory_order_acquire)) continue;
        size_t c = m.bytes;
        if (c > p.bytes - done[k]) c = p.bytes - done[k];  // a larger send than recv: truncate
        memcpy(static_cast<unsigned char*>(p.buffer) + done[k], seg->mailbox_buffer(p.peer, me), c);
        if (m.sender_start_ns > arrival) arrival = m.sender_start_ns;  // the data left no earlier
        m.receiver_start_ns = start_ns;
        m.consumed.fetch_add(1, std::memory_order_acq_rel);
        done[k] += c;
        ring(h, p.peer);
      }
      progressed = true;
    }
    if (all_done) break;
    if (progressed) continue;
    if (h->aborted.load()) return ncclRemoteError;
    if (monotonic_raw_ns() > deadline) {
      fprintf(stderr, "simnccl: send/recv peer did not answer within the timeout\n");
      return ncclRemoteError;
    }
    futex_wait(h->doorbell[me], bell, 50'000'000);
  }
  end_at(arrival + model_ns(op));
  return ncclSuccess;
}

}  // namespace

uint64_t model_ns(const Op& op) {
  // Bus bandwidth and latency of the modelled interconnect; NCCL's bus-bandwidth factors
  // turn them into a time per collective (nccl-tests PERFORMANCE.md).
  static const double busbw_bytes_per_ns = env_double("GPUHOOK_SIM_NCCL_BUSBW_GBPS", 50.0);
  static const double latency_ns = env_double("GPUHOOK_SIM_NCCL_LATENCY_US", 8.0) * 1000.0;
  const double n = op.comm->nranks;
  const double es = static_cast<double>(dtype_bytes(op.dtype));
  double bytes = 0, factor = 1;
  switch (op.kind) {
    case Kind::kAllReduce: bytes = static_cast<double>(op.count) * es; factor = 2 * (n - 1) / n; break;
    case Kind::kBroadcast: case Kind::kReduce: bytes = static_cast<double>(op.count) * es; break;
    case Kind::kAllGather: case Kind::kReduceScatter: case Kind::kAlltoAll: case Kind::kGather: case Kind::kScatter:
      bytes = static_cast<double>(op.count) * es * n; factor = (n - 1) / n; break;
    case Kind::kSendRecv: {
      // Point-to-point bytes cross the link between this rank and each peer, at that link's
      // bandwidth: a slow link (GPUHOOK_SIM_NCCL_SLOW_LINK) slows only the pairs across it.
      double ns = latency_ns;
      for (const P2p& p : op.p2p) ns += static_cast<double>(p.bytes) / link_bytes_per_ns(op.comm->rank, p.peer, busbw_bytes_per_ns);
      return static_cast<uint64_t>(ns);
    }
  }
  return static_cast<uint64_t>(latency_ns + bytes * factor / busbw_bytes_per_ns);
}

std::string kernel_name(const Op& op) {
  auto redop = [&]() -> std::string {
    if (op.premul) return "PreMulSum";
    switch (op.redop) {
      case ncclProd: return "Prod";
      case ncclMax: case ncclMin: return "MinMax";
      case ncclAvg: return op.dtype == ncclFloat16 || op.dtype == ncclFloat32 || op.dtype == ncclFloat64 ||
                                   op.dtype == ncclBfloat16 ? "PreMulSum" : "SumPostDiv";
      default: return "Sum";
    }
  };
  // Real NCCL picks LL for small messages, LL128 for medium and SIMPLE for large ones.
  size_t bytes = op.count * dtype_bytes(op.dtype);
  const char* proto = bytes <= (64u << 10) ? "LL" : bytes <= (4u << 20) ? "LL128" : "SIMPLE";
  std::string base;
  switch (op.kind) {
    case Kind::kAllReduce: base = "AllReduce_" + redop() + "_" + dtype_suffix(op.dtype) + "_RING_" + proto; break;
    case Kind::kReduce: base = "Reduce_" + redop() + "_" + dtype_suffix(op.dtype) + "_RING_" + proto; break;
    case Kind::kReduceScatter: base = "ReduceScatter_" + redop() + "_" + dtype_suffix(op.dtype) + "_RING_" + proto; break;
    case Kind::kAllGather: base = std::string("AllGather_RING_") + proto; break;
    case Kind::kBroadcast: base = std::string("Broadcast_RING_") + proto; break;
    // NCCL runs all-to-all, gather, scatter and grouped send/recv as point-to-point work.
    default: base = "SendRecv"; break;
  }
  std::string name = "ncclDevKernel_" + base;
  return "_Z" + std::to_string(name.size()) + name + "24ncclDevKernelArgsStorageILm4096EE";
}

ncclResult_t execute(const Op& op) {
  const uint64_t start_ns = kernel_start_raw();
  ncclResult_t r = op.kind == Kind::kSendRecv ? execute_sendrecv(op, start_ns) : execute_collective(op, start_ns);
  if (r != ncclSuccess) {
    int expected = ncclSuccess;
    op.comm->async_error.compare_exchange_strong(expected, r);
  }
  return r;
}

}  // namespace simnccl
