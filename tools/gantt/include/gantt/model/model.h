// The libgantt model: one or more captures loaded into columnar tables.
//
// Why columnar: a training step produces millions of launches; a struct of vectors costs
// ~150 bytes per GPU event with no per-event heap object, and every analysis scans only the
// columns it needs. Row i of every column of a table is the same event.
//
// Conventions (shared with the capture format):
// - Times are absolute nanoseconds in the capture's host clock domain
//   (CLOCK_MONOTONIC_RAW). GPU times have already been mapped onto that clock by the
//   capture's ClockAlignment (see align.h), which is kept in CaptureInfo so that every
//   output can say what was applied. 0 means unknown and stays 0: nothing is invented.
// - Names are ids into Model::strings (0 = ""). Kernel names are stored as recorded
//   (mangled); display_name() gives the demangled form.
// - kNone (UINT32_MAX) marks a missing link (no API call, no enclosing range, ...).
//
// API stability: fields and functions are only ever added, never changed or removed.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpuhook/capture.h>

#include "gantt/model/align.h"
#include "gantt/model/occupancy.h"

namespace gantt {

inline constexpr uint32_t kNone = UINT32_MAX;

// kHostFunc: a host function run in stream order (cudaLaunchHostFunc, cudaStreamAddCallback),
// timed by the hook on the host: it holds its stream, but it is not GPU work.
enum class EventKind : uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2, kSync = 3, kNccl = 4, kHostFunc = 5 };
const char* to_string(EventKind kind);

// Copy direction in CUPTI's words (v1::CopyKind values); kNone for non-copies.
const char* copy_kind_name(uint8_t copy_kind);  // "HtoD", "DtoH", ...

// The name of a copy, memset or synchronisation whose API call is not in the capture ("memcpy
// HtoD", "memset", ...): they are named after their calls when those are (ModelBuilder's join).
std::string unjoined_name(EventKind kind, uint8_t copy_kind);

// Derived stages of one launch. nullopt = a timestamp it needs is unknown.
// Threads in a block (or blocks in a grid) from recorded dimensions: 0 when one is not
// positive, UINT64_MAX when the product does not fit. Dimensions are untrusted int32 values:
// 65537 * 65535 overflowed int in diagnose (UBSan), and three of them overflow 64 bits.
uint64_t dim3_count(const std::array<int32_t, 3>& d);

struct Stages {
  std::optional<int64_t> launch_to_queued_ns;     // API enter -> queued
  std::optional<int64_t> queued_to_submitted_ns;
  std::optional<int64_t> submitted_to_start_ns;
  std::optional<int64_t> queued_to_start_ns;      // the seed tool's "queue" stage
  std::optional<int64_t> exec_ns;                 // start -> end
  std::optional<int64_t> total_ns;                // API enter -> end
};

// What a copy's CUPTI record says about the host thread that issued it (EventTable::copy_flags;
// analysis::copy_host_wait() decides from them and the launching call).
enum CopyFlag : uint8_t {
  kCopyAsync = 1,     // CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC (Memcpy.async)
  kCopyPageable = 2,  // one end is pageable host memory (Memcpy.src_kind or dst_kind MEMORY_PAGEABLE)
};

// GPU activities joined with the host API call that launched them: the GanttEvents.
struct EventTable {
  std::vector<EventKind> kind;
  std::vector<uint16_t> capture;       // index into Model::captures
  std::vector<uint32_t> name;          // kernel (mangled), API name for copies/memsets/syncs, NCCL entry point
  std::vector<uint32_t> device;        // device ordinal within the capture
  std::vector<uint32_t> stream;        // CUPTI stream id
  std::vector<int32_t> priority;       // stream priority when recorded, else 0
  std::vector<uint8_t> copy_kind;      // v1::CopyKind for memcpy, 0 otherwise (v1::SyncType for sync)
  std::vector<uint8_t> copy_flags;     // CopyFlag bits for memcpy, 0 otherwise
  std::vector<uint64_t> bytes;         // memcpy/memset/NCCL payload, 0 otherwise
  std::vector<uint64_t> queued_ns;     // kernels only, when latency timestamps were on
  std::vector<uint64_t> submitted_ns;
  std::vector<uint64_t> start_ns;
  std::vector<uint64_t> end_ns;
  std::vector<uint32_t> correlation_id;
  std::vector<uint32_t> api;           // row in ApiTable that launched it, or kNone
  std::vector<uint32_t> range;         // innermost enclosing range on the launching thread, or kNone
  std::vector<std::array<int32_t, 3>> grid;
  std::vector<std::array<int32_t, 3>> block;
  std::vector<uint16_t> registers_per_thread;
  std::vector<uint32_t> static_smem_bytes;
  std::vector<uint32_t> dynamic_smem_bytes;
  std::vector<float> occupancy;        // theoretical, 0..1; NaN when it cannot be computed
  std::vector<OccupancyLimit> occupancy_limit;
  // CUDA graphs (kernels, copies, memsets): the graph whose launch ran the event and its node
  // there, as CUPTI gives them (graphId, graphNodeId); 0 = not run as a graph node. One graph
  // launch is the events sharing (capture, graph_id, correlation_id): CUPTI gives every node
  // of a launch the cudaGraphLaunch call's correlation id (graphs.h).
  std::vector<uint64_t> graph_id;
  std::vector<uint64_t> graph_node_id;
  // Peer copies (PtoP, CUpti_ActivityMemcpyPtoP4): the devices the bytes left and reached; the
  // event's own device is the one that ran it. kNone for every other event.
  std::vector<uint32_t> src_device;
  std::vector<uint32_t> dst_device;

  size_t size() const { return kind.size(); }

  // Calls f(column, value a new row starts with) for every column above: the one list that
  // growing, reserving and appending go through (a column missing here fails
  // ModelColumns.EveryColumnIsListedOnce).
  template <class F>
  void for_each_column(F&& f) {
    f(kind, EventKind::kKernel), f(capture, uint16_t{0}), f(name, 0u), f(device, 0u), f(stream, 0u),
        f(priority, int32_t{0}), f(copy_kind, uint8_t{0}), f(copy_flags, uint8_t{0}), f(bytes, uint64_t{0}), f(queued_ns, uint64_t{0}),
        f(submitted_ns, uint64_t{0}), f(start_ns, uint64_t{0}), f(end_ns, uint64_t{0}), f(correlation_id, 0u),
        f(api, kNone), f(range, kNone), f(grid, std::array<int32_t, 3>{}), f(block, std::array<int32_t, 3>{}),
        f(registers_per_thread, uint16_t{0}), f(static_smem_bytes, 0u), f(dynamic_smem_bytes, 0u),
        f(occupancy, std::numeric_limits<float>::quiet_NaN()), f(occupancy_limit, OccupancyLimit::kUnknown),
        f(graph_id, uint64_t{0}), f(graph_node_id, uint64_t{0}), f(src_device, kNone), f(dst_device, kNone);
  }
};

// Host API calls (runtime, driver, NCCL entry points): the spans on the host thread lanes.
struct ApiTable {
  std::vector<uint16_t> capture;
  std::vector<uint8_t> domain;         // v1::ApiDomain
  std::vector<uint16_t> cbid;
  std::vector<uint32_t> thread;        // row in ThreadTable
  std::vector<uint32_t> name;
  std::vector<uint64_t> start_ns;
  std::vector<uint64_t> end_ns;
  std::vector<uint32_t> correlation_id;
  std::vector<int32_t> return_value;

  size_t size() const { return capture.size(); }

  // As EventTable::for_each_column.
  template <class F>
  void for_each_column(F&& f) {
    f(capture, uint16_t{0}), f(domain, uint8_t{0}), f(cbid, uint16_t{0}), f(thread, 0u), f(name, 0u),
        f(start_ns, uint64_t{0}), f(end_ns, uint64_t{0}), f(correlation_id, 0u), f(return_value, int32_t{0});
  }
};

// One row per (capture, OS thread) seen in API calls, ranges or NCCL calls.
struct ThreadTable {
  std::vector<uint16_t> capture;
  std::vector<uint64_t> thread_id;     // Linux tid
  std::vector<uint32_t> name;          // from ThreadInfo, 0 when none

  size_t size() const { return capture.size(); }
};

enum class RangeKind : uint8_t { kPushPop = 0, kStartEnd = 1, kMark = 2 };

// NVTX / gpuhook.h ranges. Push/pop ranges nest per thread (parent, depth); start/end
// ranges are depth 0 on the thread that started them; marks have start == end.
struct RangeTable {
  std::vector<uint16_t> capture;
  std::vector<RangeKind> kind;
  std::vector<uint32_t> thread;        // row in ThreadTable
  std::vector<uint32_t> name;
  std::vector<uint32_t> domain;
  std::vector<uint64_t> start_ns;
  std::vector<uint64_t> end_ns;        // 0 = never closed in the capture
  std::vector<uint32_t> parent;        // kNone at the top
  std::vector<uint16_t> depth;
  std::vector<uint32_t> color;         // ARGB the program gave (nvtxEventAttributes_t), 0 = none
  std::vector<uint32_t> category;      // NVTX category, 0 = none

  size_t size() const { return capture.size(); }
};

// NCCL calls as the hook saw them (host enter/exit plus the arguments). `event` is the
// GPU event of the NCCL kernel the call launched, when one was found (kNone otherwise).
struct NcclTable {
  std::vector<uint16_t> capture;
  std::vector<uint8_t> op;             // v1::NcclOp
  std::vector<uint32_t> name;
  std::vector<uint32_t> thread;        // row in ThreadTable
  std::vector<uint64_t> count;
  std::vector<int32_t> datatype;
  std::vector<uint64_t> bytes;
  std::vector<int32_t> reduce_op;
  std::vector<int32_t> root_or_peer;
  std::vector<uint64_t> comm_id;
  std::vector<int32_t> rank;
  std::vector<int32_t> nranks;
  std::vector<uint64_t> sequence;
  std::vector<int32_t> device;
  std::vector<uint32_t> cuda_stream_id;
  std::vector<uint64_t> start_ns;
  std::vector<uint64_t> end_ns;
  std::vector<int32_t> return_value;
  std::vector<uint32_t> event;         // the kernel it ran (for a grouped call, one its ncclGroupEnd launched)
  std::vector<uint64_t> external_id;   // the hook's CUPTI external correlation id; 0 = none (older captures)
  std::vector<uint32_t> group_depth;   // > 0 inside ncclGroupStart/End

  size_t size() const { return capture.size(); }

  // Calls f(column, value a new row starts with) for every column above, as EventTable's does
  // (ModelColumns.EveryColumnIsListedOnce).
  template <class F>
  void for_each_column(F&& f) {
    f(capture, uint16_t{0}), f(op, uint8_t{0}), f(name, 0u), f(thread, kNone), f(count, uint64_t{0}),
        f(datatype, int32_t{0}), f(bytes, uint64_t{0}), f(reduce_op, int32_t{0}), f(root_or_peer, int32_t{0}),
        f(comm_id, uint64_t{0}), f(rank, int32_t{0}), f(nranks, int32_t{0}), f(sequence, uint64_t{0}),
        f(device, int32_t{0}), f(cuda_stream_id, 0u), f(start_ns, uint64_t{0}), f(end_ns, uint64_t{0}),
        f(return_value, int32_t{0}), f(event, kNone), f(external_id, uint64_t{0}), f(group_depth, 0u);
  }
};

// Allocations and frees the hook recorded (CUPTI MEMORY2 records, GPUHOOK_API with alloc):
// what the memory counter tracks are drawn from. `bytes` of a free is the size freed (the
// allocation's, found by address when the record left it 0).
struct MemoryTable {
  std::vector<uint16_t> capture;
  std::vector<uint32_t> device;
  std::vector<uint8_t> op;             // v1::MemoryOp: alloc or free
  std::vector<uint8_t> kind;           // v1::MemoryKind
  std::vector<uint64_t> address;
  std::vector<uint64_t> bytes;
  std::vector<uint64_t> time_ns;       // 0 = unknown
  std::vector<uint32_t> api;           // row of the call that allocated or freed it, or kNone
  std::vector<uint8_t> pool;           // 1: stream-ordered (cudaMallocAsync / a memory pool)
  std::vector<uint32_t> category;      // allocations: the gpuhook_mem_tag() category (string id), 0 = none
  // Allocations, when the hook recorded which addresses calls were given (GPUHOOK_MEM_USE,
  // MemoryUse records): the first and last such record inside it while it was live (0 = none),
  // how many, and the CUPTI correlation id of the call of the last one (0 = an NCCL call).
  std::vector<uint64_t> first_use_ns;
  std::vector<uint64_t> last_use_ns;
  std::vector<uint32_t> uses;
  std::vector<uint32_t> last_use_correlation;

  size_t size() const { return capture.size(); }
};

// The GPU's own counters (MetricSample records: NVML, read by the hook's sampler), one row per
// value, on the host clock. Rows of one capture are sorted by (device, metric, time), so a
// series is one run of rows (analysis/metrics.h finds them).
struct MetricTable {
  std::vector<uint16_t> capture;
  std::vector<uint32_t> device;        // CUDA ordinal
  std::vector<uint8_t> metric;         // v1::GpuMetric
  std::vector<uint64_t> time_ns;
  std::vector<uint64_t> value;         // in the metric's unit (the enum name says which)

  size_t size() const { return capture.size(); }
  // A capture holds at most this many rows; the rest are counted in
  // CaptureInfo::metric_samples_left_out. 100 Hz x 10 counters x 8 GPUs for 2 hours.
  static constexpr size_t kMaxRowsPerCapture = size_t{1} << 26;
};

// CUPTI gives the legacy default stream (the NULL stream) id 7 in every context.
inline constexpr uint32_t kLegacyStreamId = 7;

// Streams as the program created them (CUPTI STREAM records): what decides how they order
// against each other. A capture without such records has none here; its streams are then
// taken as CUDA creates them by default (blocking).
struct StreamTable {
  std::vector<uint16_t> capture;
  std::vector<uint32_t> stream;        // CUPTI stream id
  std::vector<int32_t> priority;       // as created (lower = greater)
  std::vector<uint32_t> flags;         // CUpti_ActivityStreamFlag: 1 default (blocking), 2 non-blocking, 3 NULL

  size_t size() const { return capture.size(); }
  // CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING (cupti_activity.h).
  static constexpr uint32_t kNonBlocking = 2;
};

// cudaEventRecord calls (CUPTI CUDA_EVENT records): which stream a later
// cudaStreamWaitEvent or cudaEventSynchronize on the event waits for.
struct CudaEventTable {
  std::vector<uint16_t> capture;
  std::vector<uint32_t> event_id;
  std::vector<uint32_t> stream;        // the stream it was recorded on
  std::vector<uint32_t> device;
  std::vector<uint32_t> correlation_id;
  std::vector<uint32_t> api;           // row of the cudaEventRecord call, or kNone

  size_t size() const { return capture.size(); }
};

// cudaStreamWaitEvent calls (SYNCHRONIZATION records of type STREAM_WAIT_EVENT): from then
// on, `stream` waits for the work its event's record covered.
struct StreamWaitTable {
  std::vector<uint16_t> capture;
  std::vector<uint32_t> device;
  std::vector<uint32_t> stream;        // the waiting stream
  std::vector<uint32_t> event_id;
  std::vector<uint32_t> correlation_id;
  std::vector<uint32_t> api;           // row of the cudaStreamWaitEvent call, or kNone

  size_t size() const { return capture.size(); }
};

// Per-capture facts: what the header said, whether the file was intact, what was applied.
struct CaptureInfo {
  std::string path;
  gpuhook::v1::Header header;
  std::vector<gpuhook::v1::DeviceInfo> devices;  // as recorded, in file order
  gpuhook::Integrity integrity;
  std::optional<gpuhook::v1::Footer> footer;
  uint64_t dropped_by_source[8] = {};            // indexed by v1::DropSource
  ClockAlignment alignment;
  uint64_t first_ns = 0;                         // earliest known time of any record
  uint64_t last_ns = 0;
  uint64_t unmatched_activities = 0;             // GPU records whose correlation id had no API call
  uint64_t unbalanced_range_pops = 0;
  std::vector<std::string> device_problems;      // recorded devices unusable for occupancy, and why
  std::vector<std::string> notices;              // what happened to the recording (Notice records)
  // A flight summary's dumps (NOTICE_FLIGHT_DUMP): the trigger's time and the notice's text.
  std::vector<std::pair<uint64_t, std::string>> flight_dumps;
  uint64_t memory_uses = 0;                      // MemoryUse records read (GPUHOOK_MEM_USE was on)
  uint64_t memory_uses_ignored = 0;              // of them, past the loader's bound
  uint64_t memory_tags_ignored = 0;              // MemoryTag records past the loader's bound (2^20)
  // MetricSample records not kept: past MetricTable::kMaxRowsPerCapture, or naming a metric,
  // device or time no reader can place.
  uint64_t metric_samples_left_out = 0;

  // The DeviceInfo with this ordinal, or nullptr.
  const gpuhook::v1::DeviceInfo* device(uint32_t ordinal) const;
};

class Model {
 public:
  std::vector<CaptureInfo> captures;
  std::vector<std::string> strings{std::string()};  // id 0 = ""
  EventTable events;
  ApiTable api;
  ThreadTable threads;
  RangeTable ranges;
  NcclTable nccl;
  MemoryTable memory;
  StreamTable streams;
  CudaEventTable cuda_events;
  StreamWaitTable stream_waits;
  MetricTable metrics;

  // Demangled kernel name (the recorded one when it is not a mangled C++ name).
  std::string_view display_name(uint32_t event) const;
  std::string_view string(uint32_t id) const { return id < strings.size() ? std::string_view(strings[id]) : std::string_view(); }
  // The id of a string the captures hold (a range name asked for by name), kNone when none does.
  uint32_t find_string(std::string_view s) const;
  // The format every capture was read from when all are other tools' traces ("torch.profiler
  // (Kineto) JSON trace"), else "": what a report that finds nothing blames, a missing hook
  // setting or a format that never holds the records.
  std::string imported_format() const;
  // Host time of the API call that launched the event, or 0.
  uint64_t launch_ns(uint32_t event) const;
  // OS thread id that launched the event, or 0.
  uint64_t launch_thread_id(uint32_t event) const;
  Stages stages(uint32_t event) const;
  // "outer/inner" NVTX path of the event's launch, "" when none.
  std::string range_path(uint32_t event) const;
  // Ranges are kept in the order "outer/inner" for a range row too.
  std::string range_path_of_range(uint32_t range) const;
  // The NCCL row behind each event (kNone where none): the first call that launched it, an
  // ncclGroupEnd's row only where no call of its group took the kernel (a group's end takes the
  // first kernel it launched, which a call of the group may have taken too).
  std::vector<uint32_t> nccl_call_of_events() const;
  // Earliest and latest known time over all events, API calls and ranges; 0,0 when empty.
  uint64_t first_ns() const;
  uint64_t last_ns() const;

  // Filled by the loader: demangled[string id] = string id of the demangled name, or kNone.
  std::vector<uint32_t> demangled;
};

// Adds the records of one capture to a model. Used by load() and by tests that fabricate
// records without writing a file. String ids in records are the capture's own; StringDef
// records passed to add() define them (or call define_string()).
class ModelBuilder {
 public:
  explicit ModelBuilder(Model& model);
  ~ModelBuilder();
  ModelBuilder(const ModelBuilder&) = delete;
  ModelBuilder& operator=(const ModelBuilder&) = delete;

  // Starts a capture; returns its index in model.captures.
  uint16_t begin_capture(const std::string& path);
  void define_string(uint32_t capture_local_id, std::string_view value);
  void add(const gpuhook::v1::Record& record);
  // The same as add() of the record, for one in its plain form (CaptureReader::next(RecordView&)).
  void add(const gpuhook::RecordView& record);
  // At most this many more records will come (the capture's index says so): the event and
  // API columns reserve that much address space once instead of growing. Untouched
  // reserved pages are never resident, so this costs no memory, only the copies it saves.
  void reserve_hint(uint64_t records);
  // Exactly this many more rows of each table will come: a streamed reader's model of the
  // records it kept. Growing by a quarter at a time touches five times the final columns,
  // and on a virtual machine each first touch of a page is a fault of several microseconds:
  // the NCCL model of 100,000 collectives spent most of its 0.1-0.25 s there.
  struct Rows {
    uint64_t events = 0, api = 0, nccl = 0, external = 0;  // external: CUPTI external correlations
  };
  void reserve(const Rows& rows);
  // Joins, aligns clocks, attaches ranges, computes occupancy for the current capture.
  void end_capture(const gpuhook::Integrity& integrity);

 private:
  struct Impl;
  Impl* impl_;
};

// Records a capture may decode to per byte of its file, at most (AmplificationGuard).
inline constexpr uint64_t kDefaultMaxRecordsPerByte = 8;

struct LoadOptions {
  bool strict = false;   // strict: corruption throws; lenient: keep what was read, report it
  uint64_t from_ns = 0;  // reader hint (index window), 0,0 = everything
  uint64_t to_ns = 0;
  // 0 = no limit. A file of the same valid chunk repeated decodes to far more records than
  // any recording compresses to: a 320 KB file of duplicated chunks once decoded to 26.5 M
  // events, 6.5 GB and 43 s in `stats`.
  uint64_t max_records_per_byte = kDefaultMaxRecordsPerByte;
};

// Stops a load that decodes more records than `options` allow for this file's size, with a
// CaptureError (kOversizedLength, the chunk's byte offset) that names the override. Call
// after each record read; costs one comparison.
class AmplificationGuard {
 public:
  AmplificationGuard(const gpuhook::CaptureReader& reader, const LoadOptions& options);
  void check(const gpuhook::CaptureReader& reader) const {
    if (limit_ != 0 && reader.integrity().records > limit_) fail(reader);
  }
  // Whether a read of this many records stays within the limit.
  bool allows(uint64_t records) const { return limit_ == 0 || records <= limit_; }

 private:
  [[noreturn]] void fail(const gpuhook::CaptureReader& reader) const;
  uint64_t limit_ = 0;  // records; 0 = none
  uint64_t per_byte_ = 0;
};

// Calls builder.reserve_hint() with the record count of the reader's index, when the
// file has one. Every loader that feeds a ModelBuilder from a CaptureReader should call it
// after begin_capture(): it saves the column growth copies (most of the load's page faults).
void reserve_from_index(ModelBuilder& builder, const gpuhook::CaptureReader& reader);

// Loads each capture in order (capture index = position in `paths`); a file written by
// merge_captures() (several Header records, one per rank) becomes one capture per section,
// named "<path>#<n>". The one loader: every subcommand reads through it. Throws
// gpuhook::CaptureError when a file is not a capture or too new, or (strict) is corrupt.
Model load(const std::vector<std::string>& paths, const LoadOptions& options = {});

// One line per integrity problem of the loaded captures ("FILE: byte N: what"), for stderr.
// *corrupt is set when any capture stopped at a corrupt frame (a truncated tail alone is
// the normal result of a killed process and is only a warning).
std::vector<std::string> integrity_warnings(const Model& model, bool* corrupt);

// abi::__cxa_demangle, or the input when it is not a mangled name.
std::string demangle(std::string_view mangled);

}  // namespace gantt
