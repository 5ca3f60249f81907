// render of one capture, streamed (stream_render.h). What the reads compute mirrors the
// loaded path step by step: select_events() (the fitted window, first launch to last end),
// Builder::bucket_lanes() (the lanes, their priority, the width threshold), draw_gpu_lane()
// (narrow events into coverage) and device_busy() (the busy unions); the record fields are
// read as ModelBuilder reads them.
#include "gantt/stream_render.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <google/protobuf/arena.h>
#include <gpuhook/capture.h>

#include "gantt/analysis/stream_stats.h"
#include "../analysis/stream_shares.h"
#include "../model_builder_impl.h"
#include "render_builder.h"
#include "stream_waits.h"

namespace gantt {
namespace {

namespace v1 = gpuhook::v1;
using analysis::ChunkRange;
using analysis::CorrWindow;
using builder::kHookExternalKind;
using builder::t;
using detail::BusyClass;
using detail::Frame;

// A record's place in the file: its share, then its number within the share.
uint64_t seq_of(size_t share, uint64_t n) { return (uint64_t{share} << 40) | n; }

constexpr size_t kMaxWaiting = size_t{1} << 20;
constexpr size_t kMaxSpans = size_t{1} << 21;  // busy spans one share keeps (16 bytes each)

// The fields of a GPU record the reads need, as ModelBuilder reads them.
struct Gpu {
  EventKind kind = EventKind::kKernel;
  uint32_t device = 0, stream = 0, corr = 0;
  int32_t priority = 0;
  uint64_t queued = 0, start = 0, end = 0;
};

// False for records that are not GPU events (a synchronisation that returned at once).
bool gpu_of(const v1::Record& r, Gpu* g) {
  switch (r.kind_case()) {
    case v1::Record::kKernel: {
      const auto& k = r.kernel();
      *g = {EventKind::kKernel, k.device(), k.stream(), k.correlation_id(), k.stream_priority(),
            t(k.has_queued_ns(), k.queued_ns()), t(k.has_start_ns(), k.start_ns()), t(k.has_end_ns(), k.end_ns())};
      return true;
    }
    case v1::Record::kMemcpy: {
      const auto& k = r.memcpy();
      *g = {EventKind::kMemcpy, k.device(), k.stream(), k.correlation_id(), 0, 0, t(k.has_start_ns(), k.start_ns()),
            t(k.has_end_ns(), k.end_ns())};
      return true;
    }
    case v1::Record::kMemset: {
      const auto& k = r.memset();
      *g = {EventKind::kMemset, k.device(), k.stream(), k.correlation_id(), 0, 0, t(k.has_start_ns(), k.start_ns()),
            t(k.has_end_ns(), k.end_ns())};
      return true;
    }
    case v1::Record::kSync: {
      const auto& k = r.sync();
      if (k.return_value() != 0) return false;
      *g = {EventKind::kSync, k.device(), k.stream(), k.correlation_id(), 0, 0, t(k.has_start_ns(), k.start_ns()),
            t(k.has_end_ns(), k.end_ns())};
      return true;
    }
    default: return false;
  }
}

// Why a record stops the stream ("" when it does not).
std::string refusal_of(const v1::Record& r) {
  switch (r.kind_case()) {
    case v1::Record::kRange: return "NVTX ranges (host lanes and the drawn events' range paths)";
    case v1::Record::kSync:
      return r.sync().type() == v1::SYNC_STREAM_WAIT_EVENT ? "stream waits on CUDA events (dependencies)" : "";
    case v1::Record::kCudaEvent: return "CUDA event records (dependencies)";
    case v1::Record::kHostFunction: return "host functions on streams";
    case v1::Record::kMemory:
    case v1::Record::kMemoryTag:
    case v1::Record::kMemoryUse: return "memory records";
    case v1::Record::kMetricSample: return "GPU counter samples (the measured strips)";
    case v1::Record::kKernel: return r.kernel().graph_id() ? "CUDA graph launches (brackets need all their nodes)" : "";
    case v1::Record::kMemcpy: return r.memcpy().graph_id() ? "CUDA graph launches (brackets need all their nodes)" : "";
    case v1::Record::kMemset: return r.memset().graph_id() ? "CUDA graph launches (brackets need all their nodes)" : "";
    case v1::Record::kNccl:
      return r.nccl().has_start_ns() && r.nccl().start_ns() > 0 && r.nccl().external_id() == 0
                 ? "NCCL calls recorded without external ids (joined to their launches on the whole capture)"
                 : "";
    default: return "";
  }
}

bool is_context(const v1::Record& r) {
  switch (r.kind_case()) {
    case v1::Record::kHeader:
    case v1::Record::kDevice:
    case v1::Record::kThread:
    case v1::Record::kStringDef:
    case v1::Record::kDrops:
    case v1::Record::kNotice:
    case v1::Record::kFooter:
    case v1::Record::kStream: return true;
    default: return false;
  }
}

LaneKey lane_of(const Gpu& g, LaneMode mode) {
  LaneKey k;
  k.device = g.device;
  if (mode == LaneMode::kStream) k.group = g.stream;
  return k;
}

// The selection's order (select_events): by begin, events without one last, then file order.
using Order = std::tuple<bool, uint64_t, uint64_t>;
Order order_of(uint64_t begin, uint64_t seq) { return {begin == 0, begin, seq}; }

// The first event of a lane in that order with a priority recorded on it, and the first
// without one (which takes its stream's priority from the stream records, if any).
struct FirstPriority {
  std::optional<std::pair<Order, int32_t>> recorded;
  std::optional<Order> unrecorded;
  void see(Order o, int32_t priority) {
    if (priority != 0) {
      if (!recorded || o < recorded->first) recorded = {o, priority};
    } else if (!unrecorded || o < *unrecorded) {
      unrecorded = o;
    }
  }
  void merge(const FirstPriority& other) {
    if (other.recorded) see(other.recorded->first, other.recorded->second);
    if (other.unrecorded) see(*other.unrecorded, 0);
  }
};

struct LaneScan {
  uint64_t events = 0;
  std::map<uint32_t, FirstPriority> by_stream;
};

// One of the widest events: what deciding whether it is drawn one by one, and splitting its
// wait, needs.
struct Candidate {
  uint64_t width = 0, seq = 0;
  Gpu gpu;
  uint64_t launch = 0;  // its launch call's start, 0: none (or not read yet: Scan::widest_launch)
  bool operator>(const Candidate& o) const { return std::tie(width, seq) > std::tie(o.width, o.seq); }
};

// Read 1 of one share: the window, the counts, the lanes, the widest events.
struct Scan {
  ChunkRange range;
  size_t index = 0;
  size_t keep_widest = 0;  // max_individual_events + 1
  LaneMode lanes_by = LaneMode::kStream;
  std::vector<v1::Record> context;
  uint32_t headers = 0;
  std::string needs_model;
  std::exception_ptr error;
  gpuhook::Integrity integrity;
  uint64_t first_ns = 0, last_ns = 0;
  uint64_t events = 0, syncs = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  std::vector<Candidate> widest;  // min-heap by (width, seq): the widest `keep_widest`
  std::unordered_map<uint64_t, uint64_t> widest_launch;  // seq -> launch, for those read before it
  uint64_t timed = 0;                  // events with valid times (widest holds the widest of them)
  std::map<uint32_t, std::map<uint32_t, uint64_t>> streams;  // device -> stream -> operations
  std::map<LaneKey, LaneScan> lanes;
  CorrWindow recent{true}, earliest{false};
  // GPU records read before their launch call: joined when it comes, or across shares at the end.
  struct Waiting {
    LaneKey lane;
    uint32_t stream;
    int32_t priority;
    uint64_t seq, begin, end;  // begin 0: the launch is its begin (no start, no queued stamp)
    bool sync;
  };
  std::unordered_multimap<uint32_t, Waiting> waiting;

  void see(uint64_t ns) {
    if (ns == 0) return;
    if (first_ns == 0 || ns < first_ns) first_ns = ns;
    last_ns = std::max(last_ns, ns);
  }
  uint64_t launch_of(uint32_t corr) const {
    const uint64_t l = recent.get(corr);
    return l != 0 ? l : earliest.get(corr);
  }
  // One event with its launch known (0: none): the window and its lane's first priority.
  void place(const LaneKey& lane, uint32_t stream, int32_t priority, uint64_t seq, uint64_t begin, uint64_t end,
             uint64_t launch, bool sync) {
    const uint64_t b = begin ? begin : launch;
    if (b) lo = std::min(lo, b);
    if (launch) lo = std::min(lo, launch);
    hi = std::max(hi, end ? std::max(end, b) : b);  // filter.cpp event_end_ns
    if (!sync) lanes[lane].by_stream[stream].see(order_of(b, seq), priority);
    if (auto it = widest_launch.find(seq); it != widest_launch.end()) it->second = launch;
  }
};

void scan_event(Scan& sc, const Gpu& g, uint64_t seq) {
  sc.see(g.queued);
  sc.see(g.start);
  sc.see(g.end);
  const bool sync = g.kind == EventKind::kSync;
  const LaneKey lane = lane_of(g, sc.lanes_by);
  if (sync) {
    ++sc.syncs;
  } else {
    ++sc.events;
    ++sc.lanes[lane].events;
    if (g.start && g.end >= g.start) {
      ++sc.timed;
      ++sc.streams[g.device][g.stream];
      const Candidate c{g.end - g.start, seq, g, g.corr ? sc.launch_of(g.corr) : 0};
      if (sc.widest.size() < sc.keep_widest || c > sc.widest.front()) {
        if (sc.widest.size() == sc.keep_widest) {
          std::pop_heap(sc.widest.begin(), sc.widest.end(), std::greater<>());
          sc.widest_launch.erase(sc.widest.back().seq);
          sc.widest.pop_back();
        }
        sc.widest.push_back(c);
        std::push_heap(sc.widest.begin(), sc.widest.end(), std::greater<>());
        if (g.corr && c.launch == 0) sc.widest_launch.emplace(seq, 0);
      }
    }
  }
  const uint64_t begin = g.start ? g.start : g.queued;
  const uint64_t launch = g.corr ? sc.launch_of(g.corr) : 0;
  if (g.corr && launch == 0) {
    if (sc.waiting.size() >= kMaxWaiting) {
      sc.needs_model = "too many GPU records read before their launch calls";
      return;
    }
    sc.waiting.emplace(g.corr, Scan::Waiting{lane, g.stream, g.priority, seq, begin, g.end, sync});
    return;
  }
  sc.place(lane, g.stream, g.priority, seq, begin, g.end, launch, sync);
}

void scan_api(Scan& sc, const v1::ApiCall& a) {
  const uint64_t s = t(a.has_start_ns(), a.start_ns()), e = t(a.has_end_ns(), a.end_ns());
  sc.see(s);
  sc.see(e);
  if (a.correlation_id() == 0 || a.domain() == v1::API_DOMAIN_NCCL || s == 0) return;
  sc.recent.set(a.correlation_id(), s);
  sc.earliest.set(a.correlation_id(), s);
  if (sc.waiting.empty()) return;
  const auto [from, to] = sc.waiting.equal_range(a.correlation_id());
  for (auto it = from; it != to; ++it) {
    const Scan::Waiting& w = it->second;
    sc.place(w.lane, w.stream, w.priority, w.seq, w.begin, w.end, s, w.sync);
  }
  sc.waiting.erase(from, to);
}

// A share's reader: its chunks, and only the strings of the others.
gpuhook::ReaderOptions share_reader(const LoadOptions& load, const ChunkRange& range) {
  gpuhook::ReaderOptions ro;
  ro.strict = load.strict;
  ro.first_chunk = range.first_chunk;
  ro.end_chunk = range.end_chunk;
  ro.outside_strings_only = true;
  return ro;
}

// Each record of the share's chunks to `on`; stops when `on` returns false or `stop` is set.
template <class F>
gpuhook::Integrity read_range(const std::string& path, const LoadOptions& load, const ChunkRange& range,
                              std::atomic<bool>& stop, F&& on) {
  gpuhook::CaptureReader reader(path, share_reader(load, range));
  const AmplificationGuard guard(reader, load);
  // Records on an arena, dropped in batches (stream_stats.cpp read_share says why).
  google::protobuf::Arena arena;
  v1::Record* record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
  for (uint64_t n = 1; reader.next(*record); ++n) {
    guard.check(reader);
    if (!on(*record, n, reader)) {
      stop = true;
      break;
    }
    if ((n & 4095) == 0) {
      if (stop.load(std::memory_order_relaxed)) break;
      arena.Reset();
      record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
    }
  }
  return reader.integrity();
}

// `work` on every share, the first on this thread; the first exception is kept per share.
template <class S, class F>
void run_shares(std::vector<S>& shares, F&& work) {
  const auto run = [&](S& sh) {
    try {
      work(sh);
    } catch (...) {
      sh.error = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < shares.size(); ++i) threads.emplace_back(run, std::ref(shares[i]));
  run(shares.front());
  for (std::thread& th : threads) th.join();
}

void read_scan(const std::string& path, const LoadOptions& load, Scan& sc, std::atomic<bool>& stop) {
  sc.integrity = read_range(path, load, sc.range, stop, [&](const v1::Record& r, uint64_t n, const gpuhook::CaptureReader&) {
    if (std::string why = refusal_of(r); !why.empty()) {
      sc.needs_model = std::move(why);
      return false;
    }
    Gpu g;
    if (gpu_of(r, &g)) {
      scan_event(sc, g, seq_of(sc.index, n));
    } else if (r.kind_case() == v1::Record::kApi) {
      scan_api(sc, r.api());
    } else if (r.kind_case() == v1::Record::kNccl) {
      const auto& c = r.nccl();
      sc.see(t(c.has_start_ns(), c.start_ns()));
      sc.see(t(c.has_end_ns(), c.end_ns()));
    } else if (r.kind_case() == v1::Record::kHeader) {
      ++sc.headers;
      sc.see(r.header().start_monotonic_raw_ns());
      sc.context.push_back(r);
    } else if (is_context(r)) {
      sc.context.push_back(r);
    }
    return sc.needs_model.empty();
  });
}

// The union of a device's busy spans of one class, as the loaded chart merges them: spans
// that overlap or touch are one. Kept as disjoint spans by start.
class SpanUnion {
 public:
  void add(uint64_t b, uint64_t e) {
    if (!spans_.empty()) {  // most records come in start order: at or after the last span
      auto last = std::prev(spans_.end());
      if (b >= last->first) {
        if (b <= last->second) last->second = std::max(last->second, e);
        else spans_.emplace_hint(spans_.end(), b, e);
        return;
      }
    }
    auto it = spans_.upper_bound(e);  // the first span starting after e: the ones before may touch
    while (it != spans_.begin()) {
      auto prev = std::prev(it);
      if (prev->second < b) break;
      b = std::min(b, prev->first);
      e = std::max(e, prev->second);
      it = spans_.erase(prev);
    }
    spans_.emplace_hint(it, b, e);
  }
  void absorb(const SpanUnion& other) {
    for (const auto& [b, e] : other.spans_) add(b, e);
  }
  size_t size() const { return spans_.size(); }
  const std::map<uint64_t, uint64_t>& spans() const { return spans_; }

 private:
  std::map<uint64_t, uint64_t> spans_;
};

// Read 2 of one share: narrow events folded, the held ones (drawn one by one) kept with
// their launch calls, what the NCCL join needs, and what their waits' split needs.
struct Fold {
  ChunkRange range;
  size_t index = 0;
  const Frame* frame = nullptr;
  LaneMode lanes_by = LaneMode::kStream;
  const std::unordered_set<uint64_t>* held_seq = nullptr;
  const std::unordered_set<uint32_t>* held_corr = nullptr;
  std::map<LaneKey, ChartRest::Lane> lanes;
  std::map<std::pair<uint32_t, BusyClass>, SpanUnion> busy;
  size_t spans = 0;
  std::vector<std::pair<uint64_t, v1::Record>> held;          // (seq, record)
  std::vector<std::pair<uint64_t, v1::Record>> nccl_kernels;  // the kernels the NCCL join may pick
  std::map<uint32_t, std::pair<uint64_t, v1::Record>> launches;  // held events' corr -> the last call read
  std::vector<v1::Record> nccl_calls, externals;
  std::unordered_set<uint32_t> nccl_corr;
  std::vector<int8_t> nccl_named;  // per string id: -1 unknown, 0 no, 1 yes
  detail::WaitContext waits;
  CorrWindow recent{true}, earliest{false};
  struct Waiting {  // an operation whose launch call was not read yet
    uint32_t device, stream;
    uint64_t seq, queued, start, end;
  };
  std::unordered_multimap<uint32_t, Waiting> waiting;
  std::string needs_model;
  std::exception_ptr error;

  uint64_t launch_of(uint32_t corr) const {
    const uint64_t l = recent.get(corr);
    return l != 0 ? l : earliest.get(corr);
  }
  // waits.cpp launch_of(): the launch call's start, else queued, else start.
  void offer(const Waiting& w, uint64_t launch) {
    waits.offer_launch(w.device, w.stream, launch ? launch : w.queued ? w.queued : w.start, w.seq, w.end);
  }
};

// Records a share reads before it needs an external id of its own to keep kernels named
// nccl*: the first kernels of a share may belong to calls the share before it read.
constexpr uint64_t kNcclLeadIn = uint64_t{1} << 16;

// stream_stats.cpp maybe_nccl: the kernels the NCCL join may pick.
bool maybe_nccl(Fold& fo, const gpuhook::CaptureReader& reader, const v1::Kernel& k, uint64_t n) {
  if (fo.nccl_corr.empty() && n > kNcclLeadIn) return false;
  if (fo.nccl_corr.count(k.correlation_id()) != 0) return true;
  const uint32_t id = k.name_id();
  if (id >= (1u << 24)) return false;
  if (id >= fo.nccl_named.size()) fo.nccl_named.resize(id + 1, -1);
  if (fo.nccl_named[id] < 0) {
    std::string name(reader.string(id));
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    fo.nccl_named[id] = name.find("nccl") != std::string::npos ? 1 : 0;
  }
  return fo.nccl_named[id] == 1;
}

void fold_event(Fold& fo, const v1::Record& r, const Gpu& g, uint64_t seq, bool nccl) {
  if (g.kind == EventKind::kSync) return;
  const Frame& f = *fo.frame;
  const uint64_t b = g.start, en = g.end;
  const bool held = fo.held_seq->count(seq) != 0;
  if (held) fo.held.emplace_back(seq, r);
  else if (nccl) fo.nccl_kernels.emplace_back(seq, r);
  if (!b || en < b) return;
  if (fo.waits.wants_stream(g.device, g.stream)) {
    const Fold::Waiting w{g.device, g.stream, seq, g.queued, b, en};
    const uint64_t launch = g.corr ? fo.launch_of(g.corr) : 0;
    if (g.corr && launch == 0) {
      if (fo.waiting.size() >= kMaxWaiting) {
        fo.needs_model = "too many GPU records read before their launch calls";
        return;
      }
      fo.waiting.emplace(g.corr, w);
    } else {
      fo.offer(w, launch);
    }
  }
  if (g.kind == EventKind::kKernel) fo.waits.offer_start(g.device, g.stream, g.priority, seq, b, en);
  fo.busy[{g.device, g.kind == EventKind::kKernel ? BusyClass::kCompute : BusyClass::kCopy}].add(b, en);
  if (++fo.spans > kMaxSpans) {
    fo.spans = 0;
    for (const auto& [key, u] : fo.busy) fo.spans += u.size();
    if (fo.spans > kMaxSpans) {
      fo.needs_model = "more separate busy spans than a streamed chart keeps";
      return;
    }
  }
  if (held) return;
  auto [lane, fresh] = fo.lanes.try_emplace(lane_of(g, fo.lanes_by));
  if (fresh) lane->second.exec = lane->second.wait = Coverage(f.columns());
  detail::fold_narrow(f, lane->second.exec, lane->second.wait, g.queued, b, f.x(b), f.x(en));
  ++lane->second.aggregated;
}

void fold_api(Fold& fo, const v1::Record& r, uint64_t seq) {
  const auto& a = r.api();
  const uint32_t corr = a.correlation_id();
  if (corr == 0 || a.domain() == v1::API_DOMAIN_NCCL) return;
  if (fo.held_corr->count(corr)) fo.launches[corr] = {seq, r};
  const uint64_t s = t(a.has_start_ns(), a.start_ns());
  if (s == 0 || !fo.waits.wants_any()) return;
  fo.recent.set(corr, s);
  fo.earliest.set(corr, s);
  if (fo.waiting.empty()) return;
  const auto [from, to] = fo.waiting.equal_range(corr);
  for (auto it = from; it != to; ++it) fo.offer(it->second, s);
  fo.waiting.erase(from, to);
}

void read_fold(const std::string& path, const LoadOptions& load, Fold& fo, std::atomic<bool>& stop) {
  read_range(path, load, fo.range, stop, [&](const v1::Record& r, uint64_t n, const gpuhook::CaptureReader& reader) {
    Gpu g;
    if (gpu_of(r, &g)) {
      const bool nccl = r.kind_case() == v1::Record::kKernel && maybe_nccl(fo, reader, r.kernel(), n);
      fold_event(fo, r, g, seq_of(fo.index, n), nccl);
    } else if (r.kind_case() == v1::Record::kApi) {
      fold_api(fo, r, seq_of(fo.index, n));
    } else if (r.kind_case() == v1::Record::kNccl) {
      fo.nccl_calls.push_back(r);
    } else if (r.kind_case() == v1::Record::kExternalCorrelation) {
      const auto& x = r.external_correlation();
      if (x.kind() == kHookExternalKind && x.external_id() != 0 && x.correlation_id() != 0) {
        fo.nccl_corr.insert(x.correlation_id());
        fo.externals.push_back(r);
      }
    }
    return fo.needs_model.empty();
  });
}

// select_events()'s fitted window from the first launch or begin to the last end.
Selection fitted_selection(uint64_t first_ns, uint64_t last_ns, uint64_t events, uint64_t lo, uint64_t hi) {
  Selection sel;
  const uint64_t t0 = first_ns;
  const uint64_t from = t0, to = std::max(last_ns, t0);
  sel.origin_ns = t0;
  sel.window_start_ns = from;
  sel.window_end_ns = to;
  if (events != 0 && lo != UINT64_MAX && hi >= lo) {
    const uint64_t pad = std::max<uint64_t>((hi - lo) / 50, 1000);
    sel.window_start_ns = std::max(from, lo > pad ? lo - pad : 0);
    sel.window_end_ns = std::min(to, hi + pad);
    if (sel.window_end_ns < sel.window_start_ns) sel.window_end_ns = sel.window_start_ns;
    sel.window_fitted = true;
  }
  return sel;
}

// The launch of a record read before it: in another share's window, or none when no share
// had to let its id go. False when it cannot be told.
bool launch_across(const std::vector<Scan>& scans, size_t self, uint32_t corr, uint64_t* launch) {
  *launch = 0;
  for (size_t j = scans.size(); j-- > 0 && *launch == 0;)
    if (j != self) *launch = scans[j].launch_of(corr);
  if (*launch != 0) return true;
  return std::none_of(scans.begin(), scans.end(), [&](const Scan& s) {
    return s.recent.maybe_lost(corr) || s.earliest.maybe_lost(corr);
  });
}

constexpr const char* kTooFar = "GPU records written too far from their launch calls to join them in a stream";

// Pass-1 shares merged: what the chart's frame, lanes and threshold need.
struct Scanned {
  uint64_t first_ns = 0, last_ns = 0, events = 0, syncs = 0, timed = 0, lo = UINT64_MAX, hi = 0;
  std::vector<Candidate> widest;  // widest first
  std::map<LaneKey, LaneScan> lanes;
  std::map<uint32_t, std::map<uint32_t, uint64_t>> streams;
  std::map<uint32_t, int32_t> stream_priority;  // ModelBuilder: the last StreamInfo per stream wins
};

std::optional<Scanned> merge_scans(std::vector<Scan>& scans, size_t keep, std::string* why_not) {
  // Records read before their launch: the launch may be in another share.
  for (size_t i = 0; i < scans.size(); ++i) {
    for (const auto& [corr, w] : scans[i].waiting) {
      uint64_t launch = 0;
      if (!launch_across(scans, i, corr, &launch)) {
        *why_not = kTooFar;
        return std::nullopt;
      }
      scans[i].place(w.lane, w.stream, w.priority, w.seq, w.begin, w.end, launch, w.sync);
    }
    scans[i].waiting.clear();
  }
  Scanned m;
  for (Scan& sc : scans) {
    if (sc.first_ns) m.first_ns = m.first_ns ? std::min(m.first_ns, sc.first_ns) : sc.first_ns;
    m.last_ns = std::max(m.last_ns, sc.last_ns);
    m.events += sc.events;
    m.syncs += sc.syncs;
    m.timed += sc.timed;
    m.lo = std::min(m.lo, sc.lo);
    m.hi = std::max(m.hi, sc.hi);
    for (Candidate& c : sc.widest) {
      if (auto it = sc.widest_launch.find(c.seq); it != sc.widest_launch.end()) c.launch = it->second;
      m.widest.push_back(c);
    }
    for (auto& [key, lane] : sc.lanes) {
      LaneScan& all = m.lanes[key];
      all.events += lane.events;
      for (const auto& [stream, first] : lane.by_stream) all.by_stream[stream].merge(first);
    }
    for (const auto& [device, streams] : sc.streams)
      for (const auto& [stream, n] : streams) m.streams[device][stream] += n;
    for (const v1::Record& r : sc.context)
      if (r.kind_case() == v1::Record::kStream && m.stream_priority.size() < (1u << 20))
        m.stream_priority[r.stream().stream()] = r.stream().priority();
  }
  std::sort(m.widest.begin(), m.widest.end(), std::greater<>());
  m.widest.resize(std::min(m.widest.size(), keep));
  return m;
}

// The first priority in selection order of each lane (Builder::bucket_lanes()).
int32_t lane_priority(const LaneScan& lane, const std::map<uint32_t, int32_t>& stream_priority) {
  std::optional<std::pair<Order, int32_t>> first;
  for (const auto& [stream, fp] : lane.by_stream) {
    if (fp.recorded && (!first || fp.recorded->first < first->first)) first = fp.recorded;
    auto table = stream_priority.find(stream);
    if (fp.unrecorded && table != stream_priority.end() && table->second != 0 && (!first || *fp.unrecorded < first->first))
      first = std::make_pair(*fp.unrecorded, table->second);
  }
  return first ? first->second : 0;
}

}  // namespace

std::string stream_render_refusal(const RenderOptions& o) {
  if (o.lanes != LaneMode::kStream && o.lanes != LaneMode::kDevice) return "lanes per thread or rank";
  if (o.annotate.enabled) return "annotations (queue-delay causes, overlaps, the host call behind a gap)";
  if (o.host_lanes) return "host thread lanes";
  if (o.memory_strip) return "--memory-strip";
  if (o.deps) return "--deps";
  return {};
}

std::optional<StreamedChart> stream_render(const std::string& path, const StreamRenderOptions& o, std::string* why_not) {
  std::string why;
  const auto refuse = [&](std::string reason) -> std::optional<StreamedChart> {
    if (why_not) *why_not = std::move(reason);
    return std::nullopt;
  };
  if (std::string no = stream_render_refusal(o.render); !no.empty()) return refuse(std::move(no));
  const unsigned jobs = o.jobs != 0 ? o.jobs : analysis::default_stream_jobs();
  std::optional<v1::ChunkIndex> index;
  {
    gpuhook::CaptureReader probe(path, gpuhook::ReaderOptions{o.load.strict, 0, 0});
    index = probe.index();
  }
  const std::vector<ChunkRange> ranges = analysis::plan_chunk_ranges(index, jobs);
  const size_t k = o.render.max_individual_events;
  // The widest 2k + 1: the threshold needs the (k + 1)-th; those drawn one by one are among
  // them unless float rounding at the threshold lets more through (then the model is loaded).
  const size_t keep = 2 * k + 1;

  // Read 1: the window, the lanes, the counts, the widest events.
  std::vector<Scan> scans(ranges.size());
  for (size_t i = 0; i < scans.size(); ++i) {
    scans[i].range = ranges[i];
    scans[i].index = i;
    scans[i].keep_widest = keep;
    scans[i].lanes_by = o.render.lanes;
  }
  std::atomic<bool> stop{false};
  run_shares(scans, [&](Scan& sc) { read_scan(path, o.load, sc, stop); });
  uint32_t headers = 0;
  for (Scan& sc : scans) {
    if (sc.error) std::rethrow_exception(sc.error);
    if ((headers += sc.headers) > 1) return refuse("a merged file (several ranks, put on one clock when loaded)");
    if (!sc.needs_model.empty()) return refuse(sc.needs_model);
    if (sc.integrity.error) return refuse("a damaged capture (read up to the damage when loaded)");
  }
  std::optional<Scanned> scanned = merge_scans(scans, keep, &why);
  if (!scanned) return refuse(why);
  const Scanned& sd = *scanned;

  StreamedChart out;
  out.threads = static_cast<unsigned>(scans.size());
  gpuhook::Integrity integrity = scans.front().integrity;
  integrity.truncated = scans.back().integrity.truncated;
  integrity.truncated_at = scans.back().integrity.truncated_at;
  integrity.truncated_bytes = scans.back().integrity.truncated_bytes;
  {
    ModelBuilder builder(out.context);
    builder.begin_capture(path);
    for (const Scan& sc : scans)
      for (const v1::Record& r : sc.context) builder.add(r);
    builder.end_capture(integrity);
  }
  if (out.context.captures.empty()) return refuse("no header");
  out.context.captures.front().first_ns = sd.first_ns;
  out.context.captures.front().last_ns = sd.last_ns;
  out.warnings = integrity_warnings(out.context, &out.corrupt);

  const Selection sel = fitted_selection(sd.first_ns, sd.last_ns, sd.events + sd.syncs, sd.lo, sd.hi);
  const Frame f = detail::make_frame(out.context, sel, sel.window_start_ns, sel.window_end_ns,
                                     detail::begin_view("", o.render).width);

  // Builder::bucket_lanes(): the threshold from the widths' histogram, which needs only the
  // widest k + 1 (any other is no wider than those).
  ChartRest rest;
  rest.events = sd.events;
  rest.syncs = sd.syncs;
  {
    WidthHistogram h;
    const size_t n = std::min(sd.widest.size(), k + 1);
    h.add(0.0, sd.events - n);
    for (size_t i = 0; i < n; ++i) h.add(static_cast<double>(sd.widest[i].width) * f.px_per_ns);
    rest.threshold_px = h.threshold(k);
  }
  for (const auto& [key, lane] : sd.lanes) {
    ChartRest::Lane& r = rest.lanes[key];
    r.events = lane.events;
    r.exec = r.wait = Coverage(f.columns());
    r.priority = lane_priority(lane, sd.stream_priority);
  }
  // The events drawn one by one: Builder::draw_gpu_lane()'s test on their float x.
  std::unordered_set<uint64_t> held_seq;
  std::unordered_set<uint32_t> held_corr;
  std::vector<detail::WaitKernel> split;
  size_t barrier_queries = 0;
  std::set<uint32_t> non_blocking;  // streams created non-blocking (ModelBuilder: the last record says)
  for (const Scan& sc : scans)
    for (const v1::Record& r : sc.context)
      if (r.kind_case() == v1::Record::kStream && (r.stream().flags() & 0xFFFF) == StreamTable::kNonBlocking)
        non_blocking.insert(r.stream().stream());
      else if (r.kind_case() == v1::Record::kStream)
        non_blocking.erase(r.stream().stream());
  for (const Candidate& c : sd.widest) {
    if (!(f.x(c.gpu.end) - f.x(c.gpu.start) >= rest.threshold_px)) continue;
    held_seq.insert(c.seq);
    if (c.gpu.corr) held_corr.insert(c.gpu.corr);
    const Gpu& g = c.gpu;
    if (g.kind == EventKind::kKernel && g.queued && g.start > g.queued) {
      detail::WaitKernel w{g.device, g.stream, g.priority, c.seq, c.launch ? c.launch : g.queued, g.queued, g.start, g.end, {}};
      // waits.cpp: the legacy stream waits for the blocking streams' work, and they for its.
      const auto blocking = [&](uint32_t stream) { return stream != kLegacyStreamId && !non_blocking.count(stream); };
      for (const auto& [other, ops] : sd.streams.at(g.device))
        if (other != g.stream && ((g.stream == kLegacyStreamId && blocking(other)) || (blocking(g.stream) && other == kLegacyStreamId)))
          w.barrier_streams.push_back(other);
      barrier_queries += w.barrier_streams.size();
      split.push_back(std::move(w));
    }
  }
  if (barrier_queries > (size_t{1} << 20)) return refuse("too many streams beside the legacy default stream");
  if (sd.timed > sd.widest.size() && !sd.widest.empty()) {
    // An event outside the widest is no wider than the narrowest of them; float rounding of
    // x moves a width by far less than 0.01 px.
    if (static_cast<double>(sd.widest.back().width) * f.px_per_ns + 0.01 >= rest.threshold_px)
      return refuse("more events near the width drawn one by one than a streamed chart keeps");
  }

  // Read 2: the narrow events folded, the held ones kept.
  std::vector<Fold> folds(ranges.size());
  const detail::WaitContext waits(split);
  for (size_t i = 0; i < folds.size(); ++i) {
    folds[i].range = ranges[i];
    folds[i].index = i;
    folds[i].frame = &f;
    folds[i].lanes_by = o.render.lanes;
    folds[i].held_seq = &held_seq;
    folds[i].held_corr = &held_corr;
    folds[i].waits = waits;
  }
  stop = false;
  run_shares(folds, [&](Fold& fo) { read_fold(path, o.load, fo, stop); });
  for (const Fold& fo : folds) {
    if (fo.error) std::rethrow_exception(fo.error);
    if (!fo.needs_model.empty()) return refuse(fo.needs_model);
  }
  std::map<std::pair<uint32_t, BusyClass>, SpanUnion> busy;
  std::vector<std::pair<uint64_t, const v1::Record*>> records;
  std::map<uint32_t, std::pair<uint64_t, const v1::Record*>> launches;
  detail::WaitContext wait_context = waits;
  for (size_t i = 0; i < folds.size(); ++i) {
    Fold& fo = folds[i];
    for (auto& [key, lane] : fo.lanes) {
      ChartRest::Lane& r = rest.lanes[key];
      r.exec.merge(lane.exec);
      r.wait.merge(lane.wait);
      r.aggregated += lane.aggregated;
    }
    for (const auto& [key, spans] : fo.busy) busy[key].absorb(spans);
    for (const auto& [seq, r] : fo.held) records.emplace_back(seq, &r);
    for (const auto& [seq, r] : fo.nccl_kernels) records.emplace_back(seq, &r);
    for (const auto& [corr, l] : fo.launches) launches[corr] = {l.first, &l.second};  // later shares: later in the file
    // Operations read before their launch: it may be in another share.
    for (const auto& [corr, w] : fo.waiting) {
      uint64_t launch = 0;
      for (size_t j = folds.size(); j-- > 0 && launch == 0;)
        if (j != i) launch = folds[j].launch_of(corr);
      if (launch == 0 && std::any_of(folds.begin(), folds.end(), [&](const Fold& x) {
            return x.recent.maybe_lost(corr) || x.earliest.maybe_lost(corr);
          }))
        return refuse(kTooFar);
      fo.offer(w, launch);
    }
    wait_context.absorb(fo.waits);
  }
  for (const auto& [key, spans] : busy) {
    ChartRest::Device& d = rest.devices[{0, key.first}];
    if (d.compute.columns() == 0) d.compute = d.copy = Coverage(f.columns());
    const bool compute = key.second == BusyClass::kCompute;
    for (const auto& [b, e] : spans.spans())
      detail::add_busy(f, compute ? d.compute : d.copy, compute ? d.compute_ns : d.copy_ns, b, e);
  }

  // The model of the held events and what they need: the context, the NCCL join's records,
  // their launch calls, in file order.
  Model held_model;
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  {
    std::vector<std::pair<uint64_t, const v1::Record*>> calls;
    for (const auto& [corr, l] : launches) calls.push_back(l);
    std::sort(calls.begin(), calls.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    ModelBuilder builder(held_model);
    builder.begin_capture(path);
    for (const Scan& sc : scans)
      for (const v1::Record& r : sc.context) builder.add(r);
    for (const Fold& fo : folds)
      for (const v1::Record& r : fo.externals) builder.add(r);
    for (const Fold& fo : folds)
      for (const v1::Record& r : fo.nccl_calls) builder.add(r);
    for (const auto& [seq, r] : calls) builder.add(*r);
    for (const auto& [seq, r] : records) builder.add(*r);
    builder.end_capture(integrity);
  }
  held_model.captures.front().first_ns = sd.first_ns;
  held_model.captures.front().last_ns = sd.last_ns;
  Selection drawn = sel;
  const std::map<uint64_t, analysis::WaitSplit> splits = wait_context.splits(sd.stream_priority);
  std::vector<analysis::WaitSplit>& held_waits = rest.waits;
  const EventTable& ev = held_model.events;
  for (uint32_t e = 0; e < ev.size() && e < records.size(); ++e) {
    if (!held_seq.count(records[e].first)) continue;
    drawn.events.push_back(e);
    // wait_causes() splits the waits of kernels (not of NCCL's, which the join names).
    if (ev.kind[e] != EventKind::kKernel) continue;
    if (auto it = splits.find(records[e].first); it != splits.end()) {
      held_waits.push_back(it->second);
      held_waits.back().event = e;
    }
  }
  std::stable_sort(drawn.events.begin(), drawn.events.end(),
                   [&](uint32_t a, uint32_t b) { return ev.start_ns[a] < ev.start_ns[b]; });
  out.scene = build_scene(held_model, drawn, o.render, rest, &out.stats);
  const CaptureInfo& capture = out.context.captures.front();
  if (sd.events != 0 && capture.alignment.method == AlignMethod::kNone)
    out.warnings.push_back(capture.path + ": " + describe(capture.alignment));
  return out;
}

}  // namespace gantt
