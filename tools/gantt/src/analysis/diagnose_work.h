// What the diagnose rules about GPU work read, accumulated event by event: each device's work
// in start order (busy, compute and copy time, idle gaps, per-stream and per-kernel figures),
// the kernels' occupancy and the host's synchronize calls. A loaded model feeds its events
// (diagnose(const Model&)), a scan feeds its shares' (diagnose_scan.cpp), each share its own
// DiagnoseWork, absorbed in file order: the rules (diagnose.cpp, diagnose_host_rules.cpp)
// read only this, so each is written once.
//
// Memory grows with devices, streams, host threads, kernel names and launch shapes, and with
// the few records kept whole (synchronize calls and the idle gaps beside them, each capped),
// never with the events: medians come from DurationDigest (exact up to kExactSamples values,
// a sketch within 1% after), and the events of a share are put in start order per device
// through a bounded window. Internal to libgantt.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "gantt/analysis/busy_tracker.h"
#include "gantt/analysis/intervals.h"
#include "gantt/analysis/sketch.h"
#include "gantt/analysis/table.h"
#include "gantt/model/model.h"
#include "gantt/model/occupancy.h"
#include "diagnose_rules.h"

namespace gantt::analysis::detail {

// One GPU operation with a start and an end (stats.h is_gpu_work), as the rules read it.
struct WorkEvent {
  EventKind kind = EventKind::kKernel;
  uint16_t capture = 0;
  uint32_t device = 0, stream = 0;
  int32_t priority = 0;
  uint32_t name = 0;  // the feeder's string id of its kernel name (WorkNames resolves it)
  uint64_t start_ns = 0, end_ns = 0, queued_ns = 0, bytes = 0;
  std::array<int32_t, 3> grid{}, block{};
  uint16_t registers_per_thread = 0;
  uint64_t shared_memory_bytes = 0;
  bool graph_node = false;
  bool host_waits = false;  // a copy that held its host thread (copy_host_wait() != kNone)
  uint64_t launch_ns = 0;      // its launch call's start; 0: unknown
  uint64_t launch_thread = 0;  // that call's thread (any key unique per thread)
};

// cuda*Synchronize, cu*Synchronize: a host call that waits for the GPU.
inline bool is_sync_call(std::string_view name) { return name.find("Synchronize") != std::string_view::npos; }

// A host synchronize call with a start and an end.
struct SyncCall {
  uint64_t start_ns = 0, end_ns = 0;
  uint16_t capture = 0;
  uint32_t name = 0;
};

// The feeder's strings: a kernel's name as recorded (mangled) and as displayed; a call's name.
struct WorkNames {
  std::function<std::string(uint32_t)> raw, display;
};

// Thresholds applied while accumulating; the rules quote them in their conditions.
inline constexpr double kLowOccupancy = 0.5;     // low-occupancy: theoretical occupancy at or below this is low
inline constexpr double kSharedFraction = 0.5;   // fragmentation: other kernels ran for at least half of it
// priority-inversion: a short kernel waited when its queued->start was at least this many
// execs, and at least this long.
inline constexpr double kPrioWaitRatio = 5.0;
inline constexpr uint64_t kPrioMinWaitNs = 50'000;

// The shortest run that counts for launch-bound's repeated sequence: kept per stream.
inline constexpr size_t kRepeatWindow = 8192;  // launches examined per stream
// Launches of one kernel and shape whose stretch is checked one by one; past them, counted.
inline constexpr size_t kFragKept = 1024;
// Synchronize calls and idle gaps kept per capture and device: past them, sync-stall says so.
// Only the gaps a synchronize call read so far overlaps are kept, but for the first and the
// latest kGapWindow of a share, whose call may come later or be another share's.
inline constexpr size_t kMaxSyncs = size_t{1} << 20;
inline constexpr size_t kMaxGaps = size_t{1} << 20;
inline constexpr size_t kGapWindow = size_t{1} << 16;

struct StreamWork {
  // Kernels and NCCL kernels: stream-serialisation.
  uint64_t compute = 0, compute_ns = 0;
  Interval span{0, 0};  // first start, last end
  // Not run as CUDA graph nodes: launch-bound.
  uint64_t launches = 0;
  std::vector<uint32_t> names;            // the first kRepeatWindow, in start order
  std::map<uint32_t, uint64_t> by_name;   // every one
  // Kernels alone: priority-inversion.
  DurationDigest kernel_exec, waits;
  int32_t priority = 0;
  uint32_t first_name = kNone;
};

// Values of a digest at or above `at` (within the sketch's error once it is not exact).
uint64_t count_at_least(const DurationDigest& d, double at);

// The entry of `key` in `map`, remembered: a device's events come in runs of one stream, one
// kernel and one host thread, and a tree walk for each of them cost as much as the rest of an
// event's accounting. Entries of a std::map stay where they are.
template <class Map>
struct Memo {
  typename Map::key_type key{};
  typename Map::mapped_type* entry = nullptr;
  typename Map::mapped_type& at(Map& map, const typename Map::key_type& k) {
    if (!entry || !(key == k)) entry = &map[k], key = k;
    return *entry;
  }
};

struct LaunchLane {  // one host thread's launches onto one device, put in order by a window
  std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<>> window;
  uint64_t first = 0, last = 0;
  bool any = false;
};

struct ShapeWork {  // one kernel name and launch shape: fragmentation
  uint32_t name = 0;
  DurationDigest exec;
  std::vector<std::pair<uint64_t, bool>> kept;  // the first kFragKept: exec, shared at least half
  DurationDigest shared_exec;                   // past them, the execs shared at least half
};

struct DeviceWork {
  uint16_t capture = 0;
  uint32_t ordinal = 0;
  BusyTracker all{0}, balance{0};  // every activity; those imbalance counts (NCCL left out)
  BusyTracker::Totals totals, balance_totals;  // theirs, once complete()
  uint64_t first_ns = 0, last_ns = 0;
  std::vector<Interval> gaps;      // idle gaps, in order
  size_t gaps_judged = 0;          // those before this one were kept for a synchronize call
  bool gaps_capped = false;
  uint64_t copies = 0, copy_bytes = 0, sync_copies = 0;
  std::map<uint32_t, StreamWork> streams;
  DurationDigest compute_exec;  // not graph nodes
  uint64_t graph_nodes = 0;
  std::map<uint64_t, LaunchLane> launch_lanes;
  DurationDigest launch_intervals;
  std::map<std::tuple<uint32_t, uint64_t, uint64_t>, ShapeWork> shapes;
  // The union of busy time so far (for the gaps) and the compute events still open to overlap.
  uint64_t busy_end = 0;
  struct Open {
    uint64_t start, end, covered_from, covered_to, covered;
    ShapeWork* shape;
    uint64_t slot;  // in shape->kept, or past it
  };
  std::vector<Open> open;
  Memo<std::map<uint32_t, StreamWork>> stream_memo;
  Memo<std::map<uint64_t, LaunchLane>> lane_memo;
  Memo<std::map<std::tuple<uint32_t, uint64_t, uint64_t>, ShapeWork>> shape_memo;
  uint64_t late = 0;  // events put out of start order (past the window)
  uint64_t last_start = 0;
};

// A kernel name's launches for low-occupancy, over every device.
struct OccupancyWork {
  struct Waves {
    uint64_t blocks = 0;
    uint64_t fit = 0;  // blocks resident at once on the device; 0 when the SM count is unknown
  };
  uint64_t exec = 0, count = 0;      // launches of more than one wave, or of unknown waves
  uint64_t fits_exec = 0, fits = 0;  // launches whose grid fits the device at once
  Waves most, fitting;               // the launch with the most waves; a fitting one of low occupancy
  std::map<float, uint64_t> occ;
  std::map<OccupancyLimit, uint64_t> limits;
  uint64_t block = 0;  // the last launch of more than one wave: its threads per block, registers
  uint32_t regs = 0;

  static uint64_t waves(const Waves& v) { return v.fit ? (v.blocks + v.fit - 1) / v.fit : 0; }
  void add(uint64_t exec_ns, const Occupancy& o, const Waves& w, bool fits_at_once, uint64_t block_threads,
           uint32_t registers);
  void merge(const OccupancyWork& later);  // launches that came after these
};

class DiagnoseWork {
 public:
  // `context`: the captures (their devices give occupancy), in the feeder's capture order.
  explicit DiagnoseWork(const Model& context);
  DiagnoseWork(DiagnoseWork&&) noexcept;
  ~DiagnoseWork();

  // In any order; each device's events are put in start order through a bounded window.
  void add(const WorkEvent& e);
  void add_sync(const SyncCall& call);
  // Everything `later` (a later share of the same capture) was given, as if given here.
  void absorb(DiagnoseWork&& later);
  // After the last add and absorb: empties the windows and sums the busy time.
  void complete();

  const std::vector<std::unique_ptr<DeviceWork>>& devices() const { return devices_; }  // by (capture, device)
  const std::map<uint32_t, OccupancyWork>& occupancy() const { return occupancy_; }     // by name id
  uint64_t occupancy_total_ns() const { return occupancy_total_; }
  const std::vector<SyncCall>& syncs() const { return syncs_; }  // by start, after finish()
  // With several captures (ranks), after complete(): each capture's GPU work without NCCL's
  // kernels, its devices together, as ranks.h rank_busy_intervals() unions it loaded.
  const std::vector<BusyTracker::Totals>& rank_balance() const { return rank_totals_; }
  bool syncs_capped() const { return syncs_capped_; }
  size_t captures() const { return occupancy_by_capture_.size(); }
  // Events taken after later ones (past the window, or handed on at the end of a scan): their
  // idle gaps are filled, their overlap with other kernels (fragmentation) is not counted.
  uint64_t late() const;
  // False when shares' busy time overlapped, or busy time came before what was summed
  // (BusyTracker::exact): busy figures close to, not equal to, the loaded ones.
  bool busy_exact() const;

 private:
  // A window sorts small keys in batches; the events wait beside them (a heap of whole events
  // spent a sixth of a 1 M-event scan moving them).
  struct Pending {
    uint64_t start_ns, seq;
    uint32_t slot;
  };
  struct Window {
    std::vector<WorkEvent> events, spare;  // two buffers reused: fresh ones cost page faults
    std::vector<Pending> keys;
    DeviceWork* device = nullptr;
  };
  void release(Window& w, size_t n);  // takes the n earliest starts

  DeviceWork& device(uint16_t capture, uint32_t ordinal);
  void take(DeviceWork& d, const WorkEvent& e);  // in start order
  void close_open(DeviceWork& d, uint64_t before);
  void drain();  // the windows and the open events, handed on
  void prune_gaps(DeviceWork& d);
  bool syncs_sorted_ = true;

  std::vector<std::unique_ptr<DeviceWork>> devices_;
  std::map<std::pair<uint16_t, uint32_t>, Window> windows_;
  Window* last_window_ = nullptr;  // most events follow one of the same device
  std::vector<KernelOccupancy> occupancy_by_capture_;
  std::map<uint32_t, OccupancyWork> occupancy_;
  Memo<std::map<uint32_t, OccupancyWork>> occupancy_memo_;
  uint64_t occupancy_total_ = 0;
  std::vector<SyncCall> syncs_;
  bool syncs_capped_ = false;
  std::vector<BusyTracker> rank_balance_;  // by capture, when there are several
  std::vector<BusyTracker::Totals> rank_totals_;
  uint64_t seq_ = 0;
};

// The rules that read it (diagnose.cpp, diagnose_host_rules.cpp), in report order.
void rule_serialisation(const DiagnoseWork& w, DiagnoseReport& r);
void rule_copy_overlap(const DiagnoseWork& w, DiagnoseReport& r);
void rule_launch_bound(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r);
void rule_device_imbalance(const DiagnoseWork& w, DiagnoseReport& r);  // one capture's devices
void rule_occupancy(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r);
void rule_sync_stall(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r);
void rule_fragmentation(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r);
void rule_priority(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r);

std::string device_label(const DiagnoseWork& w, const DeviceWork& d);
// The job-wide label (table.h) stays visible beside this one in the rules of this namespace.
using analysis::device_label;
// Every rule above in report order; imbalance by `imbalance` when given (several captures'
// ranks), else over the devices.
void rules_on_work(const DiagnoseWork& w, const WorkNames& names, DiagnoseReport& r,
                   const std::function<void(DiagnoseReport&)>& imbalance);
// The rules of the records kept whole (memory, NCCL's point-to-point calls, GPU counters),
// in report order, on a model of them; throttled and stalled judge the kernels of `scanned`
// where given (a scan's), else the model's.
class ThrottleKernels;
class StallKernels;
// What a scan read for the rules of records beside `m` (a model of some records of the captures):
// the kernels that ran at the counter samples, the ranks' point-to-point traffic (the pipelines
// and the matched transfers) and the work CUDA graphs ran; null: the rules read them from `m`.
struct ScannedBeside {
  const ThrottleKernels* throttle = nullptr;
  const StallKernels* stall = nullptr;
  const std::vector<PipelineReport>* pipelines = nullptr;
  const P2pMatch* p2p = nullptr;
  // Per capture, the last start of work a CUDA graph ran (memory-idle does not judge the uses
  // before it), on the records' clock.
  const std::vector<uint64_t>* last_graph_ns = nullptr;
};
void rule_records(const Model& m, DiagnoseReport& r, const ScannedBeside& scanned = {});
// For a torch.profiler or nsys trace (`context` says which), the rules whose input only the
// hook records say what the trace lacks.
void say_what_imported_traces_lack(const Model& context, DiagnoseReport& r);

}  // namespace gantt::analysis::detail
