// The two reads of a streamed render (stream_render.h): per share of the chunk index, read 1
// (Scan: the window, the lanes, the counts, the widest events) and read 2 (Fold: narrow
// events folded, the drawn ones kept), and the streamed flags built from them
// (stream_flags.cpp). Internal to libgantt.
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <google/protobuf/arena.h>
#include <gpuhook/capture.h>

#include "gantt/model/record_spool.h"
#include "gantt/analysis/intervals.h"
#include "gantt/analysis/scan_select.h"
#include "gantt/analysis/stream_shares.h"
#include "gantt/render/annotate.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/model/occupancy.h"
#include "gantt/render/render.h"
#include "gantt/scan/open.h"
#include "render_builder.h"
#include "gap_union.h"
#include "stream_waits.h"

namespace gantt::streamed {

namespace v1 = gpuhook::v1;
using analysis::ChunkRange;
using analysis::kTooFar;
using detail::BusyClass;
using detail::Frame;

// A record's place in the file: its share, then its number within the share.
inline uint64_t seq_of(size_t share, uint64_t n) { return (uint64_t{share} << 40) | n; }

constexpr size_t kMaxWaiting = size_t{1} << 20;
constexpr size_t kMaxSpans = size_t{1} << 21;  // busy spans one share keeps (16 bytes each)
constexpr size_t kMaxCopies = size_t{1} << 20;  // copies one share keeps for the overlap flag (32 bytes each)
// NVTX range records kept whole: the drawn events' range paths are joined from all of them.
constexpr size_t kMaxRanges = size_t{1} << 19;
// GPU counter samples kept whole for the measured strips: they follow time, not the events.
constexpr size_t kMaxSamples = size_t{1} << 20;
// Host threads with calls in the window one share keeps the ids of (only the first
// kMaxHostLanes get lanes, but the footer counts the others).
constexpr size_t kMaxHostThreads = size_t{1} << 20;
// Correlation ids past the bits of a CorrSet, which it keeps one by one (only a hostile file has them).
constexpr size_t kMaxSparseIds = size_t{1} << 20;

// The fields of a GPU record the reads need, as ModelBuilder reads them.
struct Gpu {
  EventKind kind = EventKind::kKernel;
  uint32_t device = 0, stream = 0, corr = 0;
  uint32_t name = 0;  // a kernel's name id (the other kinds are named after their calls)
  int32_t priority = 0;
  uint64_t queued = 0, start = 0, end = 0;
};


// False for records that are not GPU events (a synchronisation that returned at once).
bool gpu_of(const gpuhook::RecordView& r, Gpu* g);

// Why a record stops the stream ("" when it does not).
std::string refusal_of(const gpuhook::RecordView& r);

// Header, devices, threads, strings, drops, notices, footer, stream records: what every
// model of the capture gets.
bool is_context(const v1::Record& r);

// Its lane per stream or per device (layout_lanes.cpp lane_key()).
LaneKey lane_of(const Gpu& g, LaneMode mode);

// select_events()' filters, as every scan applies them (analysis/scan_select.h).
using Selector = analysis::ScanSelector;

// The selection's order (select_events): by begin, events without one last, then file order.
using Order = std::tuple<bool, uint64_t, uint64_t>;
inline Order order_of(uint64_t begin, uint64_t seq) { return {begin == 0, begin, seq}; }

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
  // Wider first; of equal widths, earlier in the file first. That way round, a later event
  // as wide as the narrowest kept does not enter the heap: in a capture of a few kernels
  // repeated a million times nearly every event tied, and went through the heap.
  bool operator>(const Candidate& o) const { return width != o.width ? width > o.width : seq < o.seq; }
};

// Read 1 of one share: the window, the counts, the lanes, the widest events.
struct Scan {
  ChunkRange range;
  size_t index = 0;
  size_t keep_widest = 0;  // 2 max_individual_events + 1 (stream_render() says why)
  LaneMode lanes_by = LaneMode::kStream;
  Selector select;  // the events counted, laned and measured; the others are only seen
  analysis::NameFlags kernel_names;  // Selector::named()
  analysis::NameFlags api_names;     // the calls whose names --kernel matches
  std::vector<v1::Record> context;
  RecordSpool ranges;   // NVTX ranges: the drawn events' range paths need them all (serialized)
  RecordSpool samples;  // GPU counter samples: the measured strips draw them all (serialized)
  uint32_t headers = 0;
  std::string needs_model;
  std::exception_ptr error;
  gpuhook::Integrity integrity;
  uint64_t first_ns = 0, last_ns = 0;
  uint64_t events = 0, syncs = 0;  // those `select` keeps
  uint64_t in_capture = 0;         // every GPU event and synchronisation
  uint64_t lo = UINT64_MAX, hi = 0;
  // The widest `keep_widest` are among these (in no order): candidates are appended while
  // better than `widest_cut`, and at twice as many the widest `keep_widest` are selected and
  // the cut raised to the narrowest of them. A heap cost a push and a pop per entry, a quarter
  // of a page's read 1 where the widths vary a little around one value.
  std::vector<Candidate> widest;
  std::optional<Candidate> widest_cut;
  void prune_widest() {
    const auto nth = widest.begin() + static_cast<std::ptrdiff_t>(keep_widest - 1);
    std::nth_element(widest.begin(), nth, widest.end(), std::greater<>());
    widest_cut = *nth;
    for (auto it = nth + 1; it != widest.end(); ++it) widest_launch.erase(it->seq);
    widest.resize(keep_widest);
  }
  std::unordered_map<uint64_t, uint64_t> widest_launch;  // seq -> launch, for those read before it
  uint64_t timed = 0;                  // events with valid times (widest holds the widest of them)
  std::map<uint32_t, std::map<uint32_t, uint64_t>> streams;  // device -> stream -> operations
  std::map<LaneKey, LaneScan> lanes;
  analysis::CorrWindows calls;  // launch calls' starts
  // Host lanes: a launch call is ticked when a GPU record names its id (ModelBuilder joins an
  // event to the last call with the id; calls that share one are not streamed).
  bool host_lanes = false;
  analysis::CorrSet gpu_corrs, call_corrs;
  bool calls_share_ids = false;
  // GPU records read before their launch call: joined when it comes, or across shares at the end.
  struct Waiting {
    LaneKey lane;
    uint32_t stream;
    int32_t priority;
    uint64_t seq, begin, end;  // begin 0: the launch is its begin (no start, no queued stamp)
    bool sync;
  };
  std::unordered_multimap<uint32_t, Waiting> waiting;
  // The events without a start or queued stamp whose launch calls lie outside `select`'s window.
  std::vector<uint64_t> outside;
  // --range (filter.cpp resolve_range): the last end of the events `select` keeps whose launch
  // calls started in [launched_from, launched_to].
  uint64_t launched_from = 1, launched_to = 0, launched_end = 0;
  // Streamed annotations (AnnotateOptions::streamed): each device's activity, for its idle
  // gaps. `idle_gap_ns` as AnnotateOptions has it (-1: the default threshold).
  bool idle_gaps = false;
  int64_t idle_gap_ns = -1;
  std::map<uint32_t, GapUnion> activity;

  void see(uint64_t ns) {
    if (ns == 0) return;
    if (first_ns == 0 || ns < first_ns) first_ns = ns;
    last_ns = std::max(last_ns, ns);
  }
  uint64_t launch_of(uint32_t corr) const { return calls.get(corr); }
  bool maybe_lost(uint32_t corr) const { return calls.maybe_lost(corr); }
  // One event with its launch known (0: none): the window and its lane's first priority.
  // Those that the launch begins are counted here, those in `select`'s window.
  void place(const LaneKey& lane, uint32_t stream, int32_t priority, uint64_t seq, uint64_t begin, uint64_t end,
             uint64_t launch, bool sync) {
    const uint64_t b = begin ? begin : launch;
    if (launch >= launched_from && launch <= launched_to) launched_end = std::max(launched_end, end ? std::max(end, b) : b);
    if (begin == 0) {  // begun by its launch call: counted now that it is known (scan_event())
      if (!select.in_time(b, end)) {
        outside.push_back(seq);  // merge_scans() refuses past kMaxWaiting
        if (outside.size() > kMaxWaiting) needs_model = "too many GPU records begun by launch calls outside the window";
        return;
      }
      if (sync) {
        ++syncs;
      } else {
        ++events;
        ++lanes[lane].events;
      }
    }
    if (b) lo = std::min(lo, b);
    if (launch) lo = std::min(lo, launch);
    hi = std::max(hi, end ? std::max(end, b) : b);  // filter.cpp event_end_ns
    if (!sync) lanes[lane].by_stream[stream].see(order_of(b, seq), priority);
    if (auto it = widest_launch.find(seq); it != widest_launch.end()) it->second = launch;
  }
};

// A share's reader: its chunks, and only the strings of the others.
inline gpuhook::ReaderOptions share_reader(const LoadOptions& load, const ChunkRange& range) {
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
  const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, share_reader(load, range));
  gpuhook::CaptureReader& reader = *opened_reader;
  const AmplificationGuard guard(reader, load);
  // Kernels and API calls as plain values, other records on an arena dropped in batches
  // (stream_stats.cpp read_share says why).
  google::protobuf::Arena arena;
  gpuhook::RecordView view;
  view.record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
  for (uint64_t n = 1; reader.next(view); ++n) {
    guard.check(reader);
    if (!on(view, n, reader)) {
      stop = true;
      break;
    }
    if ((n & 4095) == 0) {
      if (stop.load(std::memory_order_relaxed)) break;
      arena.Reset();
      view.record = google::protobuf::Arena::CreateMessage<v1::Record>(&arena);
    }
  }
  return reader.integrity();
}

// Read 1 of a share.
void read_scan(const std::string& path, const LoadOptions& load, Scan& sc, std::atomic<bool>& stop);


// Pass-1 shares merged: what the chart's frame, lanes and threshold need.
struct Scanned {
  uint64_t first_ns = 0, last_ns = 0, events = 0, syncs = 0, in_capture = 0, timed = 0, lo = UINT64_MAX, hi = 0;
  uint64_t launched_end = 0;
  std::vector<Candidate> widest;  // widest first
  std::map<LaneKey, LaneScan> lanes;
  std::map<uint32_t, std::map<uint32_t, uint64_t>> streams;
  std::map<uint32_t, int32_t> stream_priority;  // ModelBuilder: the last StreamInfo per stream wins
  analysis::CorrSet gpu_corrs;                   // host lanes: the ids GPU records name
  std::unordered_set<uint64_t> outside;          // Scan::outside of every share
};

// Read 1's shares merged (the launches read before their calls joined across shares), the
// widest `keep` events kept; nothing, with *why_not, when a launch cannot be told.
std::optional<Scanned> merge_scans(std::vector<Scan>& scans, size_t keep, std::string* why_not);

// The first priority in selection order of a lane (Builder::bucket_lanes()).
int32_t lane_priority(const LaneScan& lane, const std::map<uint32_t, int32_t>& stream_priority);

// A device's busy spans of one class (analysis/intervals.h), a share keeping up to kMaxSpans.
using SpanUnion = analysis::IntervalUnion;

// Read 2 of one share: narrow events folded, the held ones (drawn one by one) kept with
// their launch calls, what the NCCL join needs, and what their waits' split needs.
struct Fold {
  ChunkRange range;
  size_t index = 0;
  const Frame* frame = nullptr;
  LaneMode lanes_by = LaneMode::kStream;
  Selector select;  // the events folded; every one is offered to the drawn kernels' waits
  analysis::NameFlags kernel_names;  // Selector::named()
  const std::unordered_set<uint64_t>* outside = nullptr;  // Scanned::outside
  // The held events' places in the file, sorted, and their launch calls' ids. A share reads
  // its records in file order, so `held_next` walks the places instead of a hash set's
  // lookups per record (with 250,000 held they cost a tenth of a page's read 2).
  const std::vector<uint64_t>* held_seq = nullptr;
  size_t held_next = 0;
  bool is_held(uint64_t seq) {
    const std::vector<uint64_t>& h = *held_seq;
    if (held_next != 0 && held_next <= h.size() && h[held_next - 1] >= seq)
      held_next = static_cast<size_t>(std::lower_bound(h.begin(), h.end(), seq) - h.begin());
    while (held_next < h.size() && h[held_next] < seq) ++held_next;
    return held_next < h.size() && h[held_next] == seq;
  }
  const analysis::CorrSet* held_corr = nullptr;
  std::map<LaneKey, ChartRest::Lane> lanes;
  std::map<std::pair<uint32_t, BusyClass>, SpanUnion> busy;
  size_t spans = 0;
  std::vector<std::pair<uint64_t, v1::Record>> held;          // (seq, record)
  // The kernels the NCCL join may pick (one an NCCL call: kept serialized), and their places in
  // the file in the same order.
  RecordSpool nccl_kernels;
  std::vector<uint64_t> nccl_kernel_seqs;
  std::map<uint32_t, std::pair<uint64_t, v1::Record>> launches;  // held events' corr -> the last call read
  RecordSpool nccl_calls, externals;  // one an NCCL call: kept serialized
  analysis::NcclKernelFilter nccl;
  detail::WaitContext waits;
  analysis::CorrWindows calls;  // launch calls' starts, while drawn kernels' waits want them
  struct Waiting {  // an operation whose launch call was not read yet
    uint32_t device, stream;
    uint64_t seq, queued, start, end;
  };
  std::unordered_multimap<uint32_t, Waiting> waiting;
  // Host lanes: the threads with calls in the window, and the calls of the first
  // kMaxHostLanes of them folded (render_builder.h fold_host_call), the bar candidates kept.
  bool host_lanes = false;
  const analysis::CorrSet* gpu_corrs = nullptr;
  struct HostThread {
    ChartRest::HostCalls calls;
    std::vector<std::pair<uint64_t, gpuhook::ApiFields>> blocking;  // (seq, call), the first kMaxHostBars
  };
  std::set<uint64_t> host_threads;
  std::map<uint64_t, HostThread> host;
  analysis::NameFlags blocking_names;  // is_blocking_call()
  // Streamed annotations: the kernels of low occupancy counted, and the first of them in
  // selection order kept (a max-heap of at most kMaxAnnotationsPerKind); for the gaps that
  // get a host label (annotate.cpp host_activity()), the launch calls of the events that
  // ended them and, per gap and thread, the call that covers most of it.
  bool annotate = false;
  std::optional<KernelOccupancy> occupancy;
  double low_occupancy = 0;
  uint64_t low_occupied = 0, low_unplaced = 0;  // unplaced: without a start or queued stamp
  std::vector<Order> low_first;
  // The copies, for the copies overlapped with compute (once the busy unions are whole), while
  // they are at most kMaxCopies.
  struct Copy {
    uint64_t start = 0, end = 0, seq = 0;
    uint32_t device = 0;
  };
  std::vector<Copy> copies;
  bool too_many_copies = false;
  struct LabelledGap {
    uint64_t begin = 0, end = 0;
    size_t index = 0;  // in gap_calls
  };
  const std::map<uint32_t, std::vector<LabelledGap>>* gaps = nullptr;  // by device, by begin (disjoint)
  const std::unordered_set<uint32_t>* gap_corrs = nullptr;
  struct Call {
    uint64_t seq = 0, thread = 0, start = 0;
  };
  std::unordered_map<uint32_t, Call> gap_launches;  // corr -> the last call with it read
  struct Cover {
    bool blocking = false;
    uint64_t cover = 0, seq = 0;
    std::string name;
    // annotate.cpp: the blocking call first, then the longest cover, then the first call.
    bool better_than(const Cover& o) const {
      return std::tie(blocking, cover) != std::tie(o.blocking, o.cover) ? std::tie(blocking, cover) > std::tie(o.blocking, o.cover)
                                                                        : seq < o.seq;
    }
  };
  std::vector<std::map<uint64_t, Cover>> gap_calls;  // per gap of `gaps`: thread -> its best call
  size_t gap_threads = 0;
  std::string needs_model;
  std::exception_ptr error;

  uint64_t launch_of(uint32_t corr) const { return calls.get(corr); }
  bool maybe_lost(uint32_t corr) const { return calls.maybe_lost(corr); }
  // waits.cpp launch_of(): the launch call's start, else queued, else start.
  void offer(const Waiting& w, uint64_t launch) {
    waits.offer_launch(w.device, w.stream, launch ? launch : w.queued ? w.queued : w.start, w.seq, w.end);
  }
};

// Read 2 of a share.
void read_fold(const std::string& path, const LoadOptions& load, Fold& fo, std::atomic<bool>& stop);

// The flags of a streamed chart (AnnotateOptions::streamed), stream_flags.cpp.

// An idle gap of a device (annotate.cpp), and the event that ended it.
struct IdleGap {
  uint32_t device = 0;
  uint64_t begin = 0, end = 0;
  GapUnion::First next;
  bool explain = false;  // it gets a host label
  size_t label = 0;      // then its place in Fold::gap_calls
};

// The idle gaps of every device, from read 1's activity unions: false if a union's tolerance
// passed the threshold (it cannot: the threshold is at least an fiftieth of the window).
bool idle_gaps(const std::vector<Scan>& scans, const Selection& sel, const AnnotateOptions& o, std::vector<IdleGap>* out);

using BusyUnions = std::map<std::pair<uint32_t, BusyClass>, SpanUnion>;

// annotate()'s flags for a streamed chart: queue delays of the held kernels; low occupancy
// and copies overlapped counted over every event, the held ones flagged while among the
// first kMaxAnnotationsPerKind in annotate()'s order; every idle gap with its host label.
// `seq_of_event`: each event of `held`'s place in the file.
Annotations streamed_annotations(const Model& held, const Selection& drawn, const AnnotateOptions& o,
                                 const std::vector<uint64_t>& seq_of_event, const std::vector<analysis::WaitSplit>& waits,
                                 const std::vector<Fold>& folds, const BusyUnions& busy, const std::vector<IdleGap>& idle);

}  // namespace gantt::streamed
