// What if: re-time a capture as if the program had been changed, without changing it.
//
// A capture holds every operation's stream, duration and launching call, the host's calls
// and the time between them, and what each synchronising call waited for. From that,
// build_graph() makes a dependency graph (whatif_graph.cpp), apply_changes() rewrites it
// the way a fix would change the program (whatif_changes.cpp), replay() times it again
// (whatif_replay.cpp), and write_prediction() writes the result as a capture whose header
// says it is predicted (whatif_write.cpp): render, stats and diff read it like any other.
//
// The model, in the words of the CUDA programming guide:
// - a host thread runs its calls in order; the time between two calls is the host's own
//   work and is kept as measured (a fixed cost);
// - a call that launches work returns after its own cost; the work is ready when it was
//   ready after the call in the capture (the measured launch latency);
// - a call that waits (a synchronising call, a copy to or from pageable memory, cudaMemcpy)
//   returns when what it waits for has ended, plus the time it took to return in the capture;
// - operations of one stream run in order; the legacy default stream waits for every
//   blocking stream of its device and they wait for it; an event wait orders two streams;
// - kernels run side by side while their shares of the SMs fit (blocks / resident blocks);
//   copies of one direction share one copy engine;
// - a collective ends when its last rank has arrived plus its transfer time (as measured:
//   the earliest end after the last arrival); a send and its receive (ncclSend, ncclRecv) meet
//   the same way, each kernel ending once every peer it sends to or receives from has started.
// What the model cannot see (data dependencies between kernels, memory contention between
// kernels that share the device) it does not invent: it keeps the order the capture shows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "gantt/model/model.h"

namespace gantt::whatif {

// --change, spelled as the user types it.
struct Change {
  enum class Kind {
    kPinCopies, kAsyncCopies, kRemoveSyncs, kStreams, kGraphs, kScale, kBalanceRanks, kPriority, kOverlapCopies,
    kBlockSize, kFuse, kCheckpoint, kFreeIdle, kPipeline, kCoalesce
  };
  Kind kind = Kind::kPinCopies;
  std::string text;          // as typed, for the header and the report
  std::string name;          // remove-syncs=NAME: only calls of this name; scale, priority, checkpoint, coalesce: the regex
  double factor = 1;         // scale
  uint32_t streams = 0;      // streams=N
  uint32_t threads = 0;      // block-size=REGEX:N (0: the block size of the most resident threads)
  uint32_t launches = 0;     // fuse=REGEX:N, launches a fused kernel takes at most (0: the whole run)
  uint32_t every = 0;        // checkpoint=REGEX:K, one allocation kept in K (0: the square root of a run)
  uint32_t micro_batches = 0;  // pipeline=1f1b:M, micro-batches a step (0: as recorded)
};
// Throws std::invalid_argument with a message that lists the accepted spellings.
Change parse_change(const std::string& text);
// One line per change, for --help.
const char* change_help();

// What the changes need that a capture may not say.
// Records a capture may decode to per byte of its file, for the replay (0 = no limit): it holds
// each record (serialised) and its graph, about 315 bytes a record (500 when a 633 KB capture
// the loaders' 8 a byte let through took 2.32 GB and 28 s). Real captures hold 0.1 (gpuhook_synth's) to 0.6
// (ranks_gen_job's regular ones) a byte.
inline constexpr uint64_t kMaxRecordsPerByte = 1;

struct Options {
  double pinned_gbps = 0;       // pin-copies: 0 = measure it from the pinned copies of the capture
  double graph_launch_us = 0;   // graphs: 0 = the capture's cudaGraphLaunch calls, else one launch call
  uint64_t max_records_per_byte = kMaxRecordsPerByte;
  // coalesce: captures recorded with GPUHOOK_SECTORS=1 whose KernelSectors records give the
  // kernels' sector counts (empty = the inputs' own). Counting patches the kernels, so their
  // times come from a run without it.
  std::vector<std::string> sectors_from;
};

// The global-memory sectors of one kernel name, summed over the captures' KernelSectors.
struct SectorCount {
  uint64_t sectors = 0;        // touched by its loads and stores
  uint64_t ideal_sectors = 0;  // the fewest the same accesses need
};
// KernelSectors records longer than this many names in a file are refused: a capture writes one
// a kernel name and device.
inline constexpr size_t kMaxSectorNames = size_t{1} << 20;

// pin-copies without a pinned copy to measure nor --pinned-gbps: the pinned bandwidth from the
// device's PCIe link (DeviceInfo's pcie_link_max_*, else the current link).
// The link's data rate in GB/s: the transfer rate per lane after its line encoding (gen1-2
// 8b/10b at 2.5 and 5 GT/s, gen3-5 128b/130b at 8, 16, 32 GT/s, gen6 64 GT/s in 256-byte FLITs
// of which 242 carry TLP and DLLP bytes) times the lanes; 0 for an unknown generation or width.
double pcie_raw_gbps(uint32_t generation, uint32_t width);
// The share of that rate a large pinned cudaMemcpy reaches: packet headers and flow control
// cost PCIe about a tenth at 256-byte payloads, and CUDA's bandwidthTest with pinned memory is
// commonly reported at about 12-13 GB/s on gen3 x16 (of 15.75) and 25-26 on gen4 x16 (of 31.5),
// near 80%. A figure to be replaced by a measured pinned copy (or --pinned-gbps) where one exists.
inline constexpr double kPinnedShareOfPcie = 0.8;

// ---- the graph ---------------------------------------------------------------------------

enum class OpKind : uint8_t { kKernel, kCopy, kMemset, kCollective, kHostFunc, kOther };

// A kernel's or a call's name, held once in its graph's names (Graph::name()): millions of ops
// share a few names, and a string each took 32 bytes and, past 15 characters, an allocation.
class Name {
 public:
  Name() = default;
  const std::string& str() const { return text_ ? *text_ : empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: a name reads as its text

 private:
  friend struct Graph;
  explicit Name(const std::string* text) : text_(text) {}
  static const std::string& empty() {
    static const std::string none;
    return none;
  }
  const std::string* text_ = nullptr;
};

struct HostCall {
  uint32_t thread = kNone;    // index into Graph::threads
  uint64_t orig_start_ns = 0, orig_end_ns = 0;
  int64_t gap_ns = 0;         // host work before it, since the previous call of its thread returned
  int64_t cost_ns = 0;        // its own time when it waits for nothing
  int64_t post_wait_ns = 0;   // from the end of what it waits for to its return
  std::vector<uint32_t> waits;  // ops it returns after (any that end later hold it)
  bool removed = false;       // remove-syncs took it out
  bool launches_only = false; // it only hands work over (graphs may fold it)
  Name name;                  // function name, for remove-syncs=NAME and the report
  // Replay result.
  uint64_t start_ns = 0, end_ns = 0;
};

struct GpuOp {
  OpKind kind = OpKind::kOther;
  uint16_t capture = 0;
  uint32_t lane = kNone;      // index into Graph::lanes (after the changes)
  uint32_t orig_lane = kNone; // before them
  uint32_t call = kNone;      // the host call that launched it, kNone = none seen
  uint64_t order = 0;         // launch order within its capture (its call's, then its own)
  int64_t ready_offset_ns = 0;  // from its call's start to when it could start
  int64_t duration_ns = 0;
  double sm_share = 0;        // of its device's SMs while it runs (kernels), 0 = none held
  int8_t engine = -1;         // copy engine (kEngine*), -1 = none
  uint64_t bytes = 0;
  uint8_t copy_kind = 0;      // v1::CopyKind
  bool pageable = false;      // a copy to or from pageable host memory
  bool host_waits = false;    // its call returned only when it ended (analysis::copy_host_wait)
  bool call_waits = false;    // ...because the call is synchronous (cudaMemcpy), whatever the memory
  std::vector<uint32_t> after;  // ops it starts after besides its lane (events, legacy stream)
  uint64_t collective = 0;    // ops of one collective share this key (0 = none)
  int64_t transfer_ns = 0;    // collectives: from the last arrival to the end
  Name name;                  // kernel name (scale=REGEX), API name otherwise
  uint64_t orig_start_ns = 0, orig_end_ns = 0;
  // Replay result.
  uint64_t start_ns = 0, end_ns = 0;
};

inline constexpr int8_t kEngineHtoD = 0, kEngineDtoH = 1, kEngineDtoD = 2, kEngines = 3;

struct Lane {
  uint16_t capture = 0;
  uint32_t device = 0;
  uint32_t stream = 0;        // CUPTI stream id (a new one for lanes the changes add)
  bool legacy = false;        // the legacy default stream (CUPTI id 7)
  bool blocking = true;       // synchronises with the legacy default stream
  int32_t priority = 0;       // greater runs first when two compete for room
  bool added = false;         // made by a change
};

struct Thread {
  uint16_t capture = 0;
  uint64_t thread_id = 0;
  uint64_t first_ns = 0;      // when its first call started in the capture: its origin
  std::vector<uint32_t> calls;  // in order
};

struct Graph {
  // `text` held among the graph's names (a copy of the graph shares them).
  Name name(std::string_view text) {
    if (!names_) names_ = std::make_shared<std::unordered_set<std::string>>();
    return Name(&*names_->emplace(text).first);
  }
  std::vector<Thread> threads;
  std::vector<HostCall> calls;
  std::vector<GpuOp> ops;
  std::vector<Lane> lanes;
  // Number of ranks each collective key needs before it can end (nranks); a key whose ranks
  // are not all in the graph keeps its measured duration instead.
  std::vector<std::pair<uint64_t, uint32_t>> collective_ranks;
  // Point-to-point transfers between ranks in the graph: (the op that sends, the op that
  // receives). An op with transfers ends when each of its peers has started, plus its transfer
  // (as measured: from its last peer's arrival to its end); a transfer to a rank not in the
  // graph leaves its op its measured duration.
  std::vector<std::pair<uint32_t, uint32_t>> p2p;
  std::vector<std::string> notes;  // what the build and the changes decided, for the report

 private:
  std::shared_ptr<std::unordered_set<std::string>> names_;  // nodes: their addresses stay
};

// ---- replay ------------------------------------------------------------------------------

// Times every call and op of the graph (start_ns/end_ns). Throws std::runtime_error when the
// graph cannot be replayed (a wait on an op that is never ready: a cycle).
void replay(Graph& graph);

// Span of the replayed graph per capture: earliest start to latest end of its calls and ops.
struct Span {
  uint64_t first_ns = 0, last_ns = 0;
  uint64_t ns() const { return last_ns > first_ns ? last_ns - first_ns : 0; }
};
Span original_span(const Graph& graph, uint16_t capture);
Span replayed_span(const Graph& graph, uint16_t capture);
// All captures' spans at once (index = capture).
std::vector<Span> original_spans(const Graph& graph);
std::vector<Span> replayed_spans(const Graph& graph);

// ---- from a capture and back -------------------------------------------------------------

struct Prediction {
  struct Section {
    std::string name;            // the input (and section) it came from
    Span measured;               // as recorded
    Span unchanged;              // replayed without the changes: how well the model fits
    Span predicted;
  };
  std::vector<Section> sections;
  std::vector<std::string> notes;     // one line each: what a change did, what it assumed
  std::vector<std::string> warnings;  // "FILE: byte N: what" for inputs read only in part
  uint64_t records_written = 0;
};

// Reads `inputs` (captures, or merged captures: one section per rank), applies `changes`,
// replays, and writes `output` (never overwritten). One input section = one output section,
// so a multi-rank prediction is a merged capture. Throws gpuhook::CaptureError for an
// unreadable input, std::invalid_argument for a change the captures cannot support,
// std::runtime_error for an output that cannot be written.
Prediction predict(const std::vector<std::string>& inputs, const std::vector<Change>& changes,
                   const Options& options, const std::string& output);

}  // namespace gantt::whatif
