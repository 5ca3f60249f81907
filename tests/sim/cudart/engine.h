// The simulated GPU: one worker thread per stream runs that stream's operations in order;
// kernels share the SMs by the fraction of the device their grid fills, copies queue for
// the copy engine of their direction. The GPU's timeline is planned, not measured: an
// operation's start is the latest of its "submitted" time, the previous operation's end on its
// stream, its dependencies' ends and the first moment its resource has room for it for its
// whole duration, decided among competitors in planned-time order (then priority, then issue
// order). Nothing of the machine's scheduling enters it: the same submissions give the same
// timeline whatever the load. The real work (a kernel's host twin, a copy's bytes) runs as
// soon as the worker reaches it, and the host, where an API blocks, waits until the planned
// end itself, so what it observes is consistent with the records.
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "../pausing_mutex.h"

#include "device_activity.h"

namespace gpuhook::sim {

using HostTwinFn = void (*)(void** args, dim3 grid, dim3 block);

struct KernelInfo {
  std::string name;  // the mangled device name, as CUPTI reports it
  const void* stub = nullptr;
  HostTwinFn twin = nullptr;
  std::vector<size_t> arg_sizes;
};

struct Stream;
struct Completion {
  // Guarded by Engine's mutex. Planned and its real work done; the GPU finishes it at end_ns,
  // which may still be ahead of the clock (Engine::done and Engine::wait say when it is over).
  bool done = false;
  // Guarded by Engine's mutex. end_ns is final: set when the work is placed on the timeline,
  // which may be before its real work ran (a twin reporting a later end is final after it).
  bool planned = false;
  uint64_t end_ns = 0;  // planned end on the CUPTI clock
  Stream* stream = nullptr;  // where it was enqueued (a host waiting for it may run it there)
};
using CompletionPtr = std::shared_ptr<Completion>;

// kHost: host work in stream order (cudaLaunchHostFunc, cudaStreamAddCallback, the free of
// cudaFreeAsync), run on the stream's worker thread, a runtime thread as in CUDA.
enum class OpKind { kKernel, kMemcpy, kMemset, kMarker, kHost, kStop };
enum class CopyEngine { kHostToDevice = 0, kDeviceToHost = 1, kDeviceToDevice = 2, kNone = 3 };

struct Op {
  OpKind kind = OpKind::kMarker;
  uint64_t seq = 0;  // issue order, breaks priority ties
  uint32_t correlation_id = 0;
  uint64_t queued_ns = 0;
  uint64_t submitted_ns = 0;
  std::vector<CompletionPtr> deps;
  CompletionPtr done = std::make_shared<Completion>();
  // kernel
  const KernelInfo* kernel = nullptr;
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  size_t dynamic_smem_bytes = 0;
  int registers_per_thread = 0;
  std::vector<unsigned char> arg_bytes;
  std::vector<size_t> arg_offsets;
  double share = 0;  // fraction of the device's block slots the grid occupies
  KernelLoad load;   // what it does with them (cost file keys), for the simulated PM sampling
  // kernel, copy, memset
  uint64_t duration_ns = 0;
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
  int value = 0;
  uint8_t copy_kind = 0;  // CUpti_ActivityMemcpyKind
  uint8_t src_kind = 0;   // CUpti_ActivityMemoryKind
  uint8_t dst_kind = 0;
  CopyEngine engine = CopyEngine::kNone;
  bool async = true;
  bool started = false;  // guarded by Engine's mutex: its place on the timeline is decided
  bool taken = false;    // guarded by Engine's mutex: a thread (worker or waiting host) runs it
  uint64_t record_slot = 0;  // its CUPTI record's room in the launching thread's buffer
  std::function<void()> host_work;  // kHost
  bool bookkeeping = false;         // kHost: the simulator's own, no time on the stream's timeline
  uint32_t graph_id = 0;     // launched as a node of a graph (CUpti_ActivityKernel10.graphId)
  uint64_t graph_node_id = 0;
  uint32_t record_stream_id = 0;  // non-zero: the streamId its record reports (graph nodes)
  uint8_t launch_type = 0;   // CUpti_ActivityLaunchType: REGULAR, or COOPERATIVE_SINGLE_DEVICE
  // Peer copies (copy_kind PTOP): the devices owning the source and the destination memory.
  int src_device = 0;
  int dst_device = 0;
};

// The engine's mutexes: a program thread waits for one with the clock stopped (pausing_mutex.h).
using EngineMutex = PausingMutex;

struct Capture;  // a stream capture sequence (graph.h)

struct Stream {
  uint32_t id = 0;
  int device = 0;  // the device current when it was created; its work runs there
  int priority = 0;
  bool legacy = false;
  bool blocking = true;  // synchronises with the legacy default stream
  bool dead = false;       // its worker has exited
  bool destroyed = false;  // cudaStreamDestroy was called: the handle is no longer valid
  std::deque<std::unique_ptr<Op>> queue;  // the front one is executing
  Capture* capture = nullptr;  // being captured: work becomes graph nodes, not queued
  CompletionPtr last;
  uint64_t prev_end_ns = 0;
  std::condition_variable_any work_cv;  // with Engine's mutex
  // Done operations whose planned end is still ahead of the clock: their CUPTI records are
  // completed when the clock reaches it (ends in order: a stream's work does not overlap).
  struct Finished {
    std::unique_ptr<Op> op;
    uint64_t start_ns;
    uint64_t end_ns;
  };
  std::deque<Finished> finishing;
};

struct GraphNode;
struct EventImpl {
  CompletionPtr completion;
  int device = 0;  // the device current when it was created
  unsigned flags = 0;
  uint32_t id = 0;
  // Last recorded in a capturing stream: that capture's id and the nodes a wait on it depends on.
  unsigned long long capture_id = 0;
  std::vector<GraphNode*> captured_nodes;
};

// The calling host thread's current device (cudaSetDevice/cudaGetDevice), 0 until it sets one.
int current_device();
void set_current_device(int device);
// The primary context of a device, as CUPTI numbers contexts (1, 2, ... in creation order;
// the simulator creates them in ordinal order).
inline uint32_t context_id_of(int device) { return static_cast<uint32_t>(device) + 1; }

class Engine {
 public:
  static Engine& instance();

  // GPUHOOK_SIM_DEVICES, 1 by default.
  int device_count() const;
  bool valid_device(int device) const { return device >= 0 && device < device_count(); }
  Stream* legacy_stream(int device);
  // On the calling thread's current device.
  // hidden: a graph launch's internal branch stream; it takes no stream id (its work reports
  // the launch stream's) and never synchronises with the legacy stream itself.
  Stream* create_stream(unsigned flags, int priority, bool hidden = false);
  void destroy_stream(Stream* s);
  // nullptr for an unknown handle. 0 and cudaStreamLegacy are the current device's legacy
  // default stream; cudaStreamPerThread is this thread's default stream on the current device.
  Stream* resolve(cudaStream_t handle);
  bool per_thread_handle(cudaStream_t handle) const;

  // Blocks while the stream's queue is full (the bounded launch queue).
  CompletionPtr enqueue(Stream* s, std::unique_ptr<Op> op);
  // Returns when the work is over on the simulated timeline: at its planned end, not when a
  // worker thread happens to wake.
  void wait(const CompletionPtr& c);
  // The work is over: planned, done, and its planned end reached.
  bool done(const CompletionPtr& c);
  uint64_t end_ns(const CompletionPtr& c);
  CompletionPtr last_of(Stream* s);
  // Waits for the work of every stream of `device`; a negative device: of every device.
  void synchronize_device(int device);
  uint64_t next_seq();
  // Returns once every deferred move (below) has written its bytes: memory is about to be
  // given back, or work is about to read it.
  void settle();

 private:
  Engine();
  // One planned occupation of a resource: [start, end) holding `share` of it.
  struct Interval {
    uint64_t seq;
    uint64_t start;
    uint64_t end;
    double share;
  };
  // A resource's planned profile: what the timeline already holds on it.
  struct Resource {
    std::vector<Interval> planned;
  };
  // One GPU: its own SMs, copy engines and legacy default stream.
  struct Device {
    Resource sms;
    Resource copy_engines[4];  // indexed by CopyEngine; kNone is host-to-host
    Stream* legacy = nullptr;
  };
  static constexpr int kMaxDevices = 16;
  Stream* legacy_locked(int device);
  // Gives `s` a worker thread: a parked spare if one waits, else a new thread. A spare that
  // takes a stream starts the next spare itself, so creating a stream costs the API call a
  // wake-up, not a thread creation that a busy machine stretched to 1-2.5 ms a stream (on the
  // program's timeline: the twin of default_stream creates four).
  void start_worker(Stream* s);
  void spare_main();
  void worker_main(Stream* s);
  Resource* resource_of(const Stream& s, const Op& op);
  uint64_t ready_ns(const Stream& s, const Op& op) const;
  // The earliest start >= ready at which `op` fits on `r` for its whole duration.
  static uint64_t fit_start(const Resource& r, const Op& op, double share, uint64_t ready);
  // Decides op's start on its resource once no competitor comes first (see engine.cpp).
  uint64_t commit(std::unique_lock<EngineMutex>& lock, Stream* s, Op& op, uint64_t ready);
  bool competitor_first(const Resource& r, const Stream* s, const Op& op, uint64_t start) const;
  void extend(Resource& r, uint64_t seq, uint64_t end_ns);
  void execute(std::unique_lock<EngineMutex>& lock, Stream* s, Op& op);
  // One wait of a blocked host thread on `cv` (mu_ held through `lock`). With
  // GPUHOOK_SIM_PAUSE_CLOCK the clock may stand meanwhile (paused_clock.h, engine.cpp).
  void block_host(std::unique_lock<EngineMutex>& lock, std::condition_variable_any& cv);
  bool behind_plan_locked() const;
  // A simulator thread's wait for the clock to reach t_ns, kept in clock_targets_ (mu_ not
  // held): a paused clock runs meanwhile.
  void sleep_until_clock(uint64_t t_ns);
  void clock_waiters_changed();  // mu_ held: blocked hosts look again
  bool waits_for_clock_locked() const;  // a simulator thread waits for a time still ahead
  // Runs the stream's front operation on the calling thread, if no thread has taken it and
  // its dependencies are done; false otherwise.
  bool run_front(std::unique_lock<EngineMutex>& lock, Stream* s);
  // Whether run_front would run the stream's front operation on the calling thread (mu_ held).
  bool front_runnable(const Stream& s) const;
  // Completes the CUPTI records of work whose planned end the clock has reached (of every
  // stream, or of one).
  void complete_due(Stream* only = nullptr);
  // Copies and memsets that touch device memory only. The host can see their bytes only
  // through later work (a copy back, a kernel) or by freeing the memory, so they are done on
  // the mover thread after their place on the timeline is final: a host that waits for them
  // returns at their planned end, as on a GPU, not when this machine has moved the bytes
  // (p2pBandwidthLatencyTest waited 500 ms per synchronise for 2 ms of planned copies).
  static bool deferrable(const Op& op);
  void defer(const Op& op);
  void mover_main();

  EngineMutex records_mu_;  // taken before mu_, never while holding it
  EngineMutex mu_;
  std::condition_variable_any done_cv_;
  std::condition_variable_any space_cv_;
  std::condition_variable_any resource_cv_;
  std::vector<Stream*> streams_;  // every stream ever created; dead ones stay (handles may linger)
  Device devices_[kMaxDevices];    // legacy streams start on first use
  uint32_t next_stream_id_ = 13;
  uint64_t seq_ = 0;
  // With GPUHOOK_SIM_PAUSE_CLOCK: simulator threads waiting for the clock to reach a planned
  // time, and the kernels, copies and memsets whose real work runs now with the earliest their
  // planned ends can be (ready plus duration).
  std::multiset<uint64_t> clock_targets_;
  struct Working {
    const Op* op;
    uint64_t earliest_end_ns;
  };
  std::vector<Working> working_;

  // The deferred moves, in the order their places were decided (a copy that reads what an
  // earlier one wrote comes after it), and how many are queued or being done.
  struct Move {
    OpKind kind;
    void* dst;
    const void* src;
    size_t bytes;
    int value;
  };
  std::mutex move_mu_;  // a leaf: nothing else is taken while holding it
  std::condition_variable move_cv_;
  std::deque<Move> moves_;
  size_t moving_ = 0;
  bool mover_started_ = false;

  std::mutex spare_mu_;  // a leaf
  std::condition_variable spare_cv_;
  std::deque<Stream*> handed_;  // streams given to the spares, not taken yet
  int spares_waiting_ = 0;      // spares parked on spare_cv_ with no stream handed to them
};

// Called from an op's host work on its stream's worker: the op ends no earlier than end_ns on
// the timeline (a wait for another process's work, rt_ipc.cpp), though it took no time here.
void host_work_ends_at(uint64_t end_ns);
// Where the op whose host work the calling worker runs starts on the timeline (its planned
// time, a little before the clock now); 0 outside host work. A graph memory node's record
// takes it as its timestamp.
uint64_t host_work_start_ns();

// Sleeps until the CUPTI clock reads at least t_ns, to within a few microseconds (it spins
// through the last stretch, which a plain sleep would overshoot by the timer slack).
void sleep_until_ns(uint64_t t_ns);

// The stream a per-thread entry point (cudaXxx_ptsz) works on: 0 there names the calling
// thread's default stream, not the legacy one.
inline cudaStream_t per_thread(cudaStream_t stream) { return stream == nullptr ? cudaStreamPerThread : stream; }

}  // namespace gpuhook::sim
