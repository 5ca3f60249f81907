#include "engine.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <optional>
#include <thread>

#include "../cpu_relax.h"
#include "../sim_bridge.h"
#include "config.h"
#include "device_activity.h"
#include "graph.h"
#include "paused_clock.h"
#include "records.h"

namespace gpuhook::sim {

namespace {
// The last stretch of a wait is spun: a sleep overshoots by the timer slack (50 us by default)
// and by the scheduler's wake-up, which on a loaded VM is far more than a kernel lasts.
constexpr uint64_t kSpinNs = 200000;

// Sleeps of the simulator's own threads end when asked (the slack is per thread).
void tighten_timer_slack() {
  thread_local bool done = false;
  if (!done) {
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    done = true;
  }
}

// The simulator's own threads (stream workers running host twins, the mover) stand for the GPU,
// which takes no host CPU: on a machine with fewer cores than threads they must not hold the
// program's host threads off a core. Seen without it on 2 cores: multi_gpu's launch thread waited
// 1.5 ms for a core inside a launch while both devices' workers computed their host twins, in a
// third of the recordings, and its GPU timeline moved by as much. A few steps of niceness make
// the scheduler prefer the host thread whenever it wakes, and still give the workers the cores
// the host leaves (they do real work the host may wait for).
constexpr int kSimThreadNice = 5;
void yield_to_host_threads() {
  // With the paused clock a worker late on its plan costs the program nothing while the
  // program waits (the clock stands, paused_clock.h): the simulator's threads then take only the
  // cores the program leaves (SCHED_IDLE). At 15 steps of niceness instead, beside two busy
  // loops, sync_loop's recordings stretched and its prediction was off by 30-40% (at 5 steps,
  // by 240-390%).
  if (clock_pauses()) {
    sched_param none{};
    if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) == 0) return;
  }
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  if (errno == 0) setpriority(PRIO_PROCESS, static_cast<id_t>(tid), std::min(nice + kSimThreadNice, 19));
}
}  // namespace

namespace {
// The stream whose worker the calling thread is (none on the program's threads).
thread_local const Stream* t_worker_of = nullptr;
// One of the simulator's other threads (the mover, CUPTI's buffer thread: gpuhook_sim_own_thread).
thread_local bool t_simulator_thread = false;

// A program thread's waits for the simulator's own work stop the clock (GPUHOOK_SIM_PAUSE_CLOCK).
// The simulator's threads never touch it: they run at SCHED_IDLE, and one held off a core for
// milliseconds beside a busy neighbour while it stopped or restarted the clock kept the
// program's threads waiting to do the same (paused_clock.cpp's writer lock) with the clock
// running, or kept the clock stopped while the program computed.
bool program_thread_pauses() { return t_worker_of == nullptr && !t_simulator_thread && clock_pauses(); }

// The clock stands while held where the calling thread is one of the program's: it waits for,
// or does, the simulator's own work. Taken and let go again by a wait that does work of its own
// between its looks.
class ProgramHold {
 public:
  ProgramHold() = default;
  ~ProgramHold() { release(); }
  ProgramHold(const ProgramHold&) = delete;
  ProgramHold& operator=(const ProgramHold&) = delete;
  void hold() {
    if (on_ || !program_thread_pauses()) return;
    pause_clock();
    on_ = true;
  }
  void release() {
    if (!on_) return;
    resume_clock();
    on_ = false;
  }

 private:
  bool on_ = false;
};

// A ProgramHold held for its lifetime.
class ProgramWait : public ProgramHold {
 public:
  ProgramWait() { hold(); }
};
}  // namespace

void sleep_until_ns(uint64_t t_ns) {
  for (;;) {
    const uint64_t now = gpuhook_sim_now_ns();
    if (now >= t_ns) return;
    const uint64_t left = t_ns - now;
    // A planned time minutes ahead means the clock changed under us (a CUPTI client that
    // registered its timestamp callback after work had started, against the CUPTI contract):
    // say so once and go on rather than hang the program.
    if (left > 60ull * 1000000000ull) {
      static std::atomic<bool> said{false};
      if (!said.exchange(true)) {
        std::fprintf(stderr, "gpuhook-sim: the CUPTI clock changed while work was in flight; "
                             "timestamps before and after the change do not compare\n");
      }
      return;
    }
    if (left <= kSpinNs) {
      // A program thread spins (as a CUDA runtime's spin-wait synchronisation does): a
      // sched_yield() beside a busy neighbour gave the core away for its whole time slice, and
      // a host meant to return at a planned end returned 1-4 ms after it. The simulator's
      // threads give the core to whoever needs it.
      if (t_worker_of == nullptr) cpu_relax();
      else sched_yield();
      continue;
    }
    const uint64_t nap = left - kSpinNs;
    timespec ts{static_cast<time_t>(nap / 1000000000ull), static_cast<long>(nap % 1000000000ull)};
    nanosleep(&ts, nullptr);
  }
}

Engine& Engine::instance() {
  // Never destroyed: stream workers and atexit flushes outlive static destructors.
  static Engine* engine = new Engine();
  return *engine;
}

namespace {
thread_local int t_device = 0;
}  // namespace

int current_device() { return t_device; }
void set_current_device(int device) { t_device = device; }

Engine::Engine() {
  {
    std::lock_guard<EngineMutex> lock(mu_);
    legacy_locked(0);  // device 0's legacy stream runs from the start, as before any device existed
  }
  // Four, as programs create their streams in a burst (one per pipeline stage, a few copy
  // streams): one spare left the second of four creations starting a thread itself.
  for (int i = 0; i < 4; ++i) std::thread([this] { spare_main(); }).detach();
  // A fork child has none of the parent's threads: no spare waits there.
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] {
    pthread_atfork(nullptr, nullptr, [] {
      Engine& e = instance();
      new (&e.spare_mu_) std::mutex();
      new (&e.spare_cv_) std::condition_variable();
      e.handed_.clear();
      e.spares_waiting_ = 0;
    });
  });
}

int Engine::device_count() const { return std::clamp(config().devices, 1, kMaxDevices); }

Stream* Engine::legacy_locked(int device) {
  Device& d = devices_[device];
  if (d.legacy == nullptr) {
    d.legacy = new Stream();
    // The id CUPTI gives the legacy default stream; stream ids are per context, so each
    // device's legacy stream has it (a lane is keyed by device and stream).
    d.legacy->id = 7;
    d.legacy->device = device;
    d.legacy->legacy = true;
    streams_.push_back(d.legacy);
    start_worker(d.legacy);
  }
  return d.legacy;
}

void Engine::start_worker(Stream* s) {
  {
    std::lock_guard<std::mutex> lock(spare_mu_);
    if (spares_waiting_ > 0) {
      --spares_waiting_;
      handed_.push_back(s);
      spare_cv_.notify_one();
      return;
    }
  }
  std::thread([this, s] { worker_main(s); }).detach();
}

void Engine::spare_main() {
  Stream* s = nullptr;
  {
    std::unique_lock<std::mutex> lock(spare_mu_);
    ++spares_waiting_;
    spare_cv_.wait(lock, [&] { return !handed_.empty(); });
    s = handed_.front();
    handed_.pop_front();
  }
  std::thread([this] { spare_main(); }).detach();
  worker_main(s);
}

Stream* Engine::legacy_stream(int device) {
  std::lock_guard<EngineMutex> lock(mu_);
  return legacy_locked(device);
}

Stream* Engine::create_stream(unsigned flags, int priority, bool hidden) {
  auto* s = new Stream();
  s->device = current_device();
  s->blocking = !hidden && (flags & cudaStreamNonBlocking) == 0;
  s->priority = std::clamp(priority, -5, 0);
  {
    std::lock_guard<EngineMutex> lock(mu_);
    s->id = hidden ? 0 : next_stream_id_++;
    streams_.push_back(s);
  }
  start_worker(s);
  return s;
}

void Engine::destroy_stream(Stream* s) {
  // Like cudaStreamDestroy: returns at once; the worker finishes queued work, then stops.
  {
    std::lock_guard<EngineMutex> lock(mu_);
    s->destroyed = true;
  }
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kStop;
  enqueue(s, std::move(op));
}

bool Engine::per_thread_handle(cudaStream_t handle) const { return handle == cudaStreamPerThread; }

Stream* Engine::resolve(cudaStream_t handle) {
  const int device = current_device();
  if (handle == nullptr || handle == cudaStreamLegacy) return legacy_stream(device);
  if (handle == cudaStreamPerThread) {
    // The per-thread default stream is a blocking stream of its own (it synchronises with the
    // legacy default stream, not with other threads' work), one per device the thread uses.
    thread_local Stream* per_thread[kMaxDevices] = {};
    if (per_thread[device] == nullptr) per_thread[device] = create_stream(cudaStreamDefault, 0);
    return per_thread[device];
  }
  std::lock_guard<EngineMutex> lock(mu_);
  for (Stream* s : streams_) {
    if (reinterpret_cast<cudaStream_t>(s) == handle) return s->dead || s->destroyed ? nullptr : s;
  }
  return nullptr;
}

uint64_t Engine::next_seq() {
  std::lock_guard<EngineMutex> lock(mu_);
  return ++seq_;
}

CompletionPtr Engine::enqueue(Stream* s, std::unique_ptr<Op> op) {
  // Captured, not run: the work runs when the graph is launched (and only then has records).
  if (s->capture != nullptr && op->kind != OpKind::kStop) return capture_op(*s, std::move(op));
  // CUPTI places a GPU record in the launching thread's buffer at launch, not at completion.
  op->record_slot = reserve_op_record(*op);
  std::unique_lock<EngineMutex> lock(mu_);
  if (op->seq == 0) op->seq = ++seq_;
  // Legacy default stream semantics: its work waits for all earlier work on blocking streams,
  // and later work on blocking streams waits for it; within one device only: "The legacy
  // default stream is an implicit stream which synchronizes with all other streams in the same
  // CUcontext except for non-blocking streams" (CUDA Runtime API, "Stream synchronization
  // behavior").
  Stream* legacy = devices_[s->device].legacy;
  // A done dependency still counts: its planned end may lie ahead of this op's submission.
  if (s->legacy) {
    for (Stream* other : streams_) {
      if (other != s && other->device == s->device && other->blocking && !other->dead && other->last) {
        op->deps.push_back(other->last);
      }
    }
  } else if (s->blocking && legacy != nullptr && legacy->last) {
    op->deps.push_back(legacy->last);
  }
  // The queue holds what the GPU has not finished: waiting work, and done work whose planned
  // end is still ahead (the host then waits for that end itself, not for a worker's wake-up).
  while (s->queue.size() + s->finishing.size() >= config().queue_depth) {
    if (s->finishing.empty()) {
      block_host(lock, space_cv_);
      continue;
    }
    const uint64_t end = s->finishing.front().end_ns;
    lock.unlock();
    sleep_until_ns(end);
    complete_due(s);
    lock.lock();
  }
  CompletionPtr c = op->done;
  c->stream = s;
  s->last = c;
  s->queue.push_back(std::move(op));
  s->work_cv.notify_one();
  resource_cv_.notify_all();  // a waiter may have to let this one go first
  return c;
}

void Engine::wait(const CompletionPtr& c) {
  if (!c) return;
  tighten_timer_slack();
  std::unique_lock<EngineMutex> lock(mu_);
  // A host about to block runs the work it waits for itself when the stream's worker has not
  // taken it yet (a synchronous copy, a launch then a synchronise): two thread wake-ups that a
  // GPU does not have would otherwise delay the host's return.
  //
  // Blocked in the runtime, the clock stands from one look to the next (block_host moves it on
  // to planned times only). Stopped and restarted around each look instead, it ran between
  // them: beside a second build, where this thread waited milliseconds for the simulator's
  // threads to get a core, 13,806 looks leaked 4.5 ms into one synchronise. Work it runs itself
  // stops the clock on its own terms (execute): an NCCL twin there waits for its peer's rank,
  // whose worker may wait for the clock.
  ProgramHold blocked;
  while (!c->done) {
    if (c->stream != nullptr && front_runnable(*c->stream)) {
      blocked.release();
      run_front(lock, c->stream);
      continue;
    }
    blocked.hold();
    block_host(lock, done_cv_);
  }
  blocked.release();
  const uint64_t end = c->end_ns;
  lock.unlock();
  // The host returns when the GPU finishes on the plan, however late the worker ran (with the
  // paused clock, at once: the clock moves to the end).
  if (clock_pauses()) {
    const uint64_t now = gpuhook_sim_now_ns();
    if (end > now) advance_clock(static_cast<int64_t>(end - now));
  }
  sleep_until_ns(end);
  complete_due();
}

namespace {
uint64_t duration_at(const Op& op, uint64_t start) {
  if (op.kind == OpKind::kKernel) return clock_scaled_ns(op.duration_ns, start);  // a capped clock
  return op.duration_ns;
}

// How often a blocked host looks again whether to pause the clock (GPUHOOK_SIM_PAUSE_CLOCK):
// what it found may change with the clock, which wakes no one.
constexpr std::chrono::nanoseconds kLookAgainNs{20000};
}  // namespace

// Work a GPU would have finished by now that this machine has not, and that needs nothing but
// a core to get as far as its placing: its real work runs (or waits for a core) past the
// earliest end its plan can have. A stream is looked at up to its first operation being placed
// (placing may wait for the clock), its first host work (it starts at a planned time), and its
// first operation waiting for another's real work: a stopped clock never holds up what it
// waits for.
bool Engine::behind_plan_locked() const {
  const uint64_t now = gpuhook_sim_now_ns();
  for (const Stream* s : streams_) {
    uint64_t prev_end = s->prev_end_ns;
    for (const auto& queued : s->queue) {
      const Op& op = *queued;
      if (op.taken) {
        if (op.done->planned) {
          // Placed after its real work (a twin that asked for its start is planned only once it
          // returns): what is left is its thread's marking it done, which needs only a core.
          // Beside a second build a SCHED_IDLE worker waited 30 ms for one there, and a host
          // polling with cudaStreamQuery saw the clock run all that time.
          prev_end = std::max(prev_end, op.done->end_ns);
          if (prev_end <= now) return true;
          continue;
        }
        const auto w = std::find_if(working_.begin(), working_.end(), [&](const Working& x) { return x.op == &op; });
        if (w == working_.end()) break;  // being placed
        prev_end = w->earliest_end_ns;
      } else {
        if (op.kind == OpKind::kHost || op.kind == OpKind::kStop) break;
        if (!std::all_of(op.deps.begin(), op.deps.end(), [](const CompletionPtr& d) { return d->done; })) break;
        uint64_t ready = std::max(op.submitted_ns, prev_end);
        for (const auto& d : op.deps) ready = std::max(ready, d->end_ns);
        prev_end = op.kind == OpKind::kMarker ? ready : ready + duration_at(op, ready);
      }
      if (prev_end <= now) return true;
    }
  }
  return false;
}

void Engine::block_host(std::unique_lock<EngineMutex>& lock, std::condition_variable_any& cv) {
  if (!clock_pauses()) {
    cv.wait(lock);
    return;
  }

  // The host waits for this machine's work, or for work that waits for a planned time: the
  // program sees neither this machine's time nor its scheduling. (A waiter whose time has come
  // and that has not run yet waits for a core, not for the clock: beside a busy neighbour the
  // simulator's threads wait long for one.)
  if (waits_for_clock_locked() && !behind_plan_locked()) {
    // Only planned times move the work on and none of it is late: the clock goes to the
    // earliest of them at once, and the threads waiting for it look again.
    const uint64_t now = gpuhook_sim_now_ns();
    const auto next = clock_targets_.upper_bound(now);
    if (next != clock_targets_.end()) advance_clock(static_cast<int64_t>(*next - now));
    clock_waiters_changed();
  }
  ClockPause pause;
  cv.wait_for(lock, kLookAgainNs);
}

bool Engine::waits_for_clock_locked() const {
  return !clock_targets_.empty() && *clock_targets_.rbegin() > gpuhook_sim_now_ns();
}

void Engine::clock_waiters_changed() {
  done_cv_.notify_all();
  space_cv_.notify_all();
  resource_cv_.notify_all();
}

void Engine::sleep_until_clock(uint64_t t_ns) {
  if (!clock_pauses() || gpuhook_sim_now_ns() >= t_ns) {
    sleep_until_ns(t_ns);
    return;
  }
  std::multiset<uint64_t>::iterator target;
  {
    std::lock_guard<EngineMutex> lock(mu_);
    target = clock_targets_.insert(t_ns);
    clock_waiters_changed();
  }
  sleep_until_ns(t_ns);
  std::lock_guard<EngineMutex> lock(mu_);
  clock_targets_.erase(target);
  clock_waiters_changed();
}

bool Engine::done(const CompletionPtr& c) {
  if (!c) return true;
  {
    std::unique_lock<EngineMutex> lock(mu_);
    // A host that polls (cudaStreamQuery, cudaEventQuery) waits as one that blocks does: with
    // GPUHOOK_SIM_PAUSE_CLOCK it gets its answer once this machine has caught up with the plan.
    if (clock_pauses() && !c->done && behind_plan_locked()) {
      ClockPause pause;
      while (!c->done && behind_plan_locked()) done_cv_.wait_for(lock, kLookAgainNs);
    }
    if (!c->done || gpuhook_sim_now_ns() < c->end_ns) return false;
  }
  complete_due();
  return true;
}

uint64_t Engine::end_ns(const CompletionPtr& c) {
  std::lock_guard<EngineMutex> lock(mu_);
  return c ? c->end_ns : 0;
}

CompletionPtr Engine::last_of(Stream* s) {
  std::lock_guard<EngineMutex> lock(mu_);
  return s->last;
}

void Engine::synchronize_device(int device) {
  std::vector<CompletionPtr> pending;
  {
    std::lock_guard<EngineMutex> lock(mu_);
    for (Stream* s : streams_) {
      if (s->last && (device < 0 || s->device == device)) pending.push_back(s->last);
    }
  }
  for (const auto& c : pending) wait(c);
}

namespace {
constexpr size_t kProfileMax = 1024;
constexpr double kRoomEpsilon = 1e-9;

double share_of(const Op& op) { return op.kind == OpKind::kKernel ? op.share : 1.0; }
}  // namespace

// Each device has its own SMs and copy engines: work on two devices runs side by side.
Engine::Resource* Engine::resource_of(const Stream& s, const Op& op) {
  Device& d = devices_[s.device];
  if (op.kind == OpKind::kKernel) return &d.sms;
  if (op.kind == OpKind::kMemcpy) return &d.copy_engines[static_cast<int>(op.engine)];
  return nullptr;
}

// Valid once op's dependencies are done and it is its stream's front operation.
uint64_t Engine::ready_ns(const Stream& s, const Op& op) const {
  uint64_t ready = std::max(op.submitted_ns, s.prev_end_ns);
  for (const auto& d : op.deps) ready = std::max(ready, d->end_ns);
  return ready;
}

// The earliest t >= ready such that over [t, t + duration) the planned work leaves `share` of
// the resource free. Candidates are `ready` and the planned ends after it.
uint64_t Engine::fit_start(const Resource& r, const Op& op, double share, uint64_t ready) {
  std::vector<Interval> live;  // only what ends after ready can be in the way
  for (const Interval& iv : r.planned) {
    if (iv.end > ready) live.push_back(iv);
  }
  std::vector<uint64_t> candidates{ready};
  for (const Interval& iv : live) candidates.push_back(iv.end);
  std::sort(candidates.begin(), candidates.end());
  for (const uint64_t t : candidates) {
    const uint64_t end = t + std::max<uint64_t>(duration_at(op, t), 1);
    // The load is highest at t or where a planned interval begins inside [t, end).
    bool fits = true;
    auto load_at = [&](uint64_t x) {
      double load = 0;
      for (const Interval& iv : live) {
        if (iv.start <= x && x < iv.end) load += iv.share;
      }
      return load;
    };
    if (load_at(t) + share > 1.0 + kRoomEpsilon) fits = false;
    for (size_t i = 0; fits && i < live.size(); ++i) {
      const Interval& iv = live[i];
      if (iv.start > t && iv.start < end && load_at(iv.start) + share > 1.0 + kRoomEpsilon) fits = false;
    }
    if (fits) return t;
  }
  return candidates.back();  // unreachable: after the last planned end the resource is free
}

// Work that is ready on another stream of the same resource, whether or not its worker has
// reached this point: the device sees submitted work, not our threads' scheduling, so it goes
// by (planned start, priority, issue order) among everything that could start. A stream's
// candidate is its first operation on this resource not yet placed; the work before it gives
// its ready time, exactly when all of it is placed, else a lower bound (work on another
// resource or host work still to be placed ends no earlier than it could start). Where only a
// bound is known and it does not rule the candidate out, the caller waits for that stream.
// Only work whose dependencies are all placed counts, so no wait can close a cycle: each one
// waits for a candidate that could start strictly earlier.
bool Engine::competitor_first(const Resource& r, const Stream* self, const Op& op,
                              uint64_t start) const {
  constexpr int kLookAhead = 64;
  auto planned = [](const CompletionPtr& c) { return c->done || c->planned; };
  for (Stream* s : streams_) {
    if (s == self) continue;
    uint64_t prev_end = s->prev_end_ns;
    bool exact = true;
    int looked = 0;
    for (const auto& queued : s->queue) {
      if (++looked > kLookAhead) break;
      const Op& other = *queued;
      if (other.kind == OpKind::kStop) break;
      if (other.started) {
        // Placed; a twin still running may end later than planned.
        exact = exact && planned(other.done);
        prev_end = std::max(prev_end, other.done->end_ns);
        continue;
      }
      // A dependency not placed yet may be this very op (a graph's join, an event): waiting
      // for it would never end, so such a stream offers no candidate now.
      if (!std::all_of(other.deps.begin(), other.deps.end(), planned)) break;
      uint64_t ready = std::max(other.submitted_ns, prev_end);
      for (const auto& d : other.deps) ready = std::max(ready, d->end_ns);
      const Resource* needs = const_cast<Engine*>(this)->resource_of(*s, other);
      if (needs == &r) {
        const uint64_t t = exact ? fit_start(r, other, share_of(other), ready) : ready;
        const bool better = s->priority < self->priority || (s->priority == self->priority && other.seq < op.seq);
        if (t < start || (t == start && better)) return true;
        break;
      }
      // Work before the candidate: a marker or memset starts when ready; host work and work on
      // another resource end no earlier than ready plus their own time.
      if (needs != nullptr || other.kind == OpKind::kHost) exact = false;
      prev_end = ready + (other.kind == OpKind::kMarker || other.kind == OpKind::kHost ? 0 : other.duration_ns);
    }
  }
  return false;
}

// A start is final once no known competitor comes first and no work yet to be submitted could:
// what the host submits from now on is submitted at least submit_ns from now.
uint64_t Engine::commit(std::unique_lock<EngineMutex>& lock, Stream* s, Op& op, uint64_t ready) {
  Resource* r = resource_of(*s, op);
  if (r == nullptr) {
    op.started = true;
    return ready;
  }
  const double share = share_of(op);
  uint64_t start = ready;
  // Waiting for the clock: a paused clock (block_host) runs meanwhile, up to the horizon.
  bool on_clock = false;
  std::multiset<uint64_t>::iterator target;
  auto off_clock = [&] {
    if (!on_clock) return;
    on_clock = false;
    clock_targets_.erase(target);
    clock_waiters_changed();
  };
  // A host placing work it ran itself is blocked: the clock stands until the work is placed (as
  // in Engine::wait, not only while it looks).
  const ProgramWait placing;
  for (;;) {
    start = fit_start(*r, op, share, ready);
    if (competitor_first(*r, s, op, start)) {
      off_clock();
      if (t_worker_of != nullptr) {
        resource_cv_.wait(lock);
      } else if (clock_pauses() && start <= gpuhook_sim_now_ns() + config().submit_ns) {
        // A host running the work itself (Engine::wait) waits for work that could start before
        // this, which starts no later than now: what it waits for is its real work, never the
        // clock. The clock stands meanwhile (beside a busy neighbour that work's thread waited
        // milliseconds for a core).
        ClockPause pause;
        resource_cv_.wait_for(lock, kLookAgainNs);
      } else {
        block_host(lock, resource_cv_);  // blocked like a host that waits for the work
      }
      continue;
    }
    const uint64_t now = gpuhook_sim_now_ns();
    const uint64_t horizon = start > config().submit_ns ? start - config().submit_ns : 0;
    if (now < horizon && program_thread_pauses()) {
      // A host placing work it runs itself is blocked: the clock moves to the horizon.
      advance_clock(static_cast<int64_t>(horizon - now));
      continue;
    }
    if (now < horizon) {
      if (clock_pauses() && (!on_clock || *target != horizon)) {
        off_clock();
        on_clock = true;
        target = clock_targets_.insert(horizon);
        clock_waiters_changed();
      }
      resource_cv_.wait_for(lock, std::chrono::nanoseconds(horizon - now));
      continue;
    }
    break;
  }
  off_clock();
  const uint64_t end = start + duration_at(op, start);
  // Forget what no placement can meet any more: work waiting in a queue is ready no earlier
  // than its stream's last end, work yet to be submitted no earlier than now.
  uint64_t earliest_ready = gpuhook_sim_now_ns();
  for (const Stream* other : streams_) {
    if (!other->queue.empty()) earliest_ready = std::min(earliest_ready, other->prev_end_ns);
  }
  auto& planned = r->planned;
  planned.erase(std::remove_if(planned.begin(), planned.end(),
                               [&](const Interval& iv) { return iv.end < earliest_ready; }),
                planned.end());
  if (planned.size() >= kProfileMax) {
    std::sort(planned.begin(), planned.end(), [](const Interval& a, const Interval& b) { return a.end > b.end; });
    planned.resize(kProfileMax - 1);
  }
  planned.push_back({op.seq, start, end, share});
  op.started = true;
  resource_cv_.notify_all();  // competitors that waited for this one go on
  return start;
}

// A kernel that ended later than planned (a collective waiting for its last rank).
void Engine::extend(Resource& r, uint64_t seq, uint64_t end_ns) {
  for (Interval& iv : r.planned) {
    if (iv.seq == seq) iv.end = std::max(iv.end, end_ns);
  }
}

namespace {
// Set by gpuhook_sim_kernel_end_at() from the host twin running on this stream's worker.
thread_local uint64_t t_reported_end_ns = 0;
// Where the host work running on this worker starts on the timeline (host_work_start_ns).
thread_local uint64_t t_host_start_ns = 0;
}  // namespace

namespace {
// What the simulated NVML reads back (device_activity.h): the planned interval of each kernel,
// copy and memset on its stream's device.
void note_planned(int device, const Op& op, uint64_t start_ns, uint64_t end_ns) {
  switch (op.kind) {
    case OpKind::kKernel: note_busy(device, BusyKind::kKernel, start_ns, end_ns, op.share, 0, op.load); break;
    case OpKind::kMemset: note_busy(device, BusyKind::kMemset, start_ns, end_ns, 0, op.bytes); break;
    case OpKind::kMemcpy: {
      BusyKind k = BusyKind::kCopyOnDevice;
      if (op.engine == CopyEngine::kHostToDevice) k = BusyKind::kCopyToDevice;
      else if (op.engine == CopyEngine::kDeviceToHost) k = BusyKind::kCopyFromDevice;
      note_busy(device, k, start_ns, end_ns, 0, op.bytes);
      break;
    }
    default: break;
  }
}
}  // namespace

namespace {
// The op planned on the calling worker, for a host twin that asks for its start
// (gpuhook_sim_kernel_start_ns) before the worker has placed it.
thread_local std::function<uint64_t()>* t_plan = nullptr;
}  // namespace

// Runs op on its stream's worker (lock held on entry and on return). The real work comes
// first and the planning after, unless a host twin asks for its start: the plan does not
// depend on when the work ran, and the host then need not wait for work that a real GPU would
// have done in the planned time.
void Engine::execute(std::unique_lock<EngineMutex>& lock, Stream* s, Op& op) {
  const uint64_t ready = ready_ns(*s, op);
  uint64_t start = ready;
  uint64_t end = ready;
  Resource* resource = resource_of(*s, op);
  // A host that runs the work itself (Engine::wait) is blocked in its API call: with
  // GPUHOOK_SIM_PAUSE_CLOCK the clock stands while it does this machine's part. Placing the work
  // may wait for the clock: the pause ends first.
  // Its real work is tracked until it is placed (behind_plan_locked).
  std::optional<ClockPause> host_runs_it;
  bool working = false;
  if (op.kind != OpKind::kHost && clock_pauses()) {
    if (t_worker_of != s) host_runs_it.emplace();
    working_.push_back({&op, ready + duration_at(op, ready)});
    working = true;
  }
  auto placing = [&] {  // mu_ held
    host_runs_it.reset();
    if (!working) return;
    working = false;
    const auto it = std::find_if(working_.begin(), working_.end(), [&](const Working& w) { return w.op == &op; });
    if (it != working_.end()) working_.erase(it);
  };
  lock.unlock();
  if (op.kind == OpKind::kHost) {
    // Host work runs at its place on the timeline, and the stream waits for it.
    sleep_until_clock(ready);
    t_reported_end_ns = 0;
    t_host_start_ns = ready;
    if (op.host_work) op.host_work();
    t_host_start_ns = 0;
    if (!op.bookkeeping) end = std::max(end, gpuhook_sim_now_ns());
    // Bookkeeping that stands for GPU work of another process (a wait on an IPC event) ends
    // when that work ends on its plan, not when this thread noticed.
    end = std::max(end, t_reported_end_ns);
    lock.lock();
    op.started = true;
  } else {
    bool planned = false;
    std::function<uint64_t()> plan = [&] {
      if (!planned) {
        lock.lock();
        placing();
        start = commit(lock, s, op, ready);
        end = op.kind == OpKind::kMarker ? start : start + duration_at(op, start);
        // Final unless a twin asked (it may report a later end when it returns).
        op.done->end_ns = end;
        op.done->planned = t_plan == nullptr;
        lock.unlock();
        note_planned(s->device, op, start, end);
        planned = true;
      }
      return start;
    };
    // Device memory is host memory, so copies and memsets are real, and a kernel with a
    // registered host twin computes its result on this worker thread, after the moves it may
    // read.
    t_reported_end_ns = 0;
    if (deferrable(op)) {
      plan();
      defer(op);
    } else {
      switch (op.kind) {
        case OpKind::kKernel:
          if (op.kernel != nullptr && op.kernel->twin != nullptr) {
            std::vector<void*> args(op.arg_offsets.size());
            for (size_t i = 0; i < args.size(); ++i) args[i] = op.arg_bytes.data() + op.arg_offsets[i];
            settle();
            t_plan = &plan;
            op.kernel->twin(args.data(), op.grid, op.block);
            t_plan = nullptr;
          }
          break;
        case OpKind::kMemcpy:
          if (op.bytes != 0) {
            settle();
            std::memmove(op.dst, op.src, op.bytes);
          }
          break;
        case OpKind::kMemset:
          if (op.bytes != 0) {
            settle();
            std::memset(op.dst, op.value, op.bytes);
          }
          break;
        default: break;
      }
    }
    plan();
    // A twin that waits for other processes (a simulated NCCL collective ends when the last
    // rank arrives) knows the real end only after it ran; it reports it here.
    if (op.kind == OpKind::kKernel && t_reported_end_ns > end) {
      note_busy(s->device, BusyKind::kKernel, end, t_reported_end_ns, op.share, 0, op.load);
      end = t_reported_end_ns;
      lock.lock();
      if (resource != nullptr) extend(*resource, op.seq, end);
      lock.unlock();
    }
    lock.lock();
  }
  s->prev_end_ns = end;
  op.done->end_ns = end;
  op.done->planned = true;
  op.done->done = true;
  // It leaves the queue (the caller pops it) for the records that wait for the clock.
  s->finishing.push_back({std::move(s->queue.front()), start, end});
}

// Called without mu_. records_mu_ is held while the records are written, so that when it
// returns every record due when it was called is complete, whichever thread wrote it.
void Engine::complete_due(Stream* only) {
  // CUPTI completes records on its own threads; here a program thread that waited writes them
  // itself (and the client's buffer callbacks run on it): with GPUHOOK_SIM_PAUSE_CLOCK that
  // time is not the program's.
  const ProgramWait not_the_programs;
  std::lock_guard<EngineMutex> records(records_mu_);
  std::vector<std::pair<Stream*, Stream::Finished>> due;
  {
    std::lock_guard<EngineMutex> lock(mu_);
    const uint64_t now = gpuhook_sim_now_ns();
    auto collect = [&](Stream* s) {
      while (!s->finishing.empty() && s->finishing.front().end_ns <= now) {
        due.emplace_back(s, std::move(s->finishing.front()));
        s->finishing.pop_front();
      }
    };
    if (only != nullptr) {
      collect(only);
    } else {
      for (Stream* s : streams_) collect(s);
    }
  }
  for (auto& [s, f] : due) emit_op_record(*s, *f.op, f.start_ns, f.end_ns);
  if (!due.empty()) space_cv_.notify_all();
}

namespace {
// Below this a move costs less than handing it to another thread and waking it.
constexpr size_t kDeferMinBytes = size_t{1} << 20;
// Deferred moves queued at most; past it the stream doing the next one waits, so a program that
// copies faster than this machine moves bytes is held back by the bytes, never by memory.
constexpr size_t kMaxMoves = 64;

bool device_only(uint8_t kind) {
  return kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE || kind == CUPTI_ACTIVITY_MEMORY_KIND_ARRAY ||
         kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC;
}
}  // namespace

bool Engine::deferrable(const Op& op) {
  if (op.bytes < kDeferMinBytes) return false;
  if (op.kind == OpKind::kMemset) return device_only(op.dst_kind);
  return op.kind == OpKind::kMemcpy && device_only(op.dst_kind) && device_only(op.src_kind);
}

void Engine::defer(const Op& op) {
  // A program thread waiting for the mover waits for this machine (pausing_mutex.h).
  const ProgramWait not_the_programs;
  std::unique_lock<std::mutex> lock(move_mu_);
  if (!mover_started_) {
    std::thread([this] { mover_main(); }).detach();
    mover_started_ = true;
  }
  move_cv_.wait(lock, [&] { return moving_ < kMaxMoves; });
  moves_.push_back({op.kind, op.dst, op.src, op.bytes, op.value});
  ++moving_;
  move_cv_.notify_all();
}

void Engine::settle() {
  const ProgramWait not_the_programs;
  std::unique_lock<std::mutex> lock(move_mu_);
  move_cv_.wait(lock, [&] { return moving_ == 0; });
}

void Engine::mover_main() {
  pthread_setname_np(pthread_self(), "sim_mover");
  t_simulator_thread = true;
  yield_to_host_threads();
  std::unique_lock<std::mutex> lock(move_mu_);
  for (;;) {
    move_cv_.wait(lock, [&] { return !moves_.empty(); });
    const Move m = moves_.front();
    moves_.pop_front();
    lock.unlock();
    if (m.kind == OpKind::kMemset) {
      std::memset(m.dst, m.value, m.bytes);
    } else {
      std::memmove(m.dst, m.src, m.bytes);
    }
    lock.lock();
    --moving_;
    move_cv_.notify_all();
  }
}

void Engine::worker_main(Stream* s) {
  t_worker_of = s;
  pthread_setname_np(pthread_self(), s->legacy ? (s->device == 0 ? "sim_stream_0" : "sim_stream_0_dev") : "sim_stream");
  tighten_timer_slack();
  yield_to_host_threads();
  std::unique_lock<EngineMutex> lock(mu_);
  // Waits for `ready`, meanwhile completing this stream's records as their ends come.
  auto wait_on = [&](std::condition_variable_any& cv, auto ready) {
    for (;;) {
      lock.unlock();
      complete_due(s);
      lock.lock();
      if (ready()) return;
      if (s->finishing.empty()) {
        cv.wait(lock);
      } else {
        const uint64_t next = s->finishing.front().end_ns;
        const uint64_t now = gpuhook_sim_now_ns();
        if (next > now) cv.wait_for(lock, std::chrono::nanoseconds(next - now));
      }
    }
  };
  for (;;) {
    wait_on(s->work_cv, [&] { return !s->queue.empty() && !s->queue.front()->taken; });
    Op& op = *s->queue.front();
    if (op.kind == OpKind::kStop) {
      // Finish the records of what ran, then stop.
      while (!s->finishing.empty()) {
        const uint64_t end = s->finishing.back().end_ns;
        lock.unlock();
        sleep_until_clock(end);
        complete_due(s);
        lock.lock();
      }
      s->dead = true;
      op.done->end_ns = s->prev_end_ns;
      op.done->done = true;
      s->queue.pop_front();
      done_cv_.notify_all();
      space_cv_.notify_all();
      return;
    }
    // A waiting host may take it meanwhile (Engine::wait): then look again.
    wait_on(done_cv_, [&] {
      return s->queue.empty() || s->queue.front().get() != &op || op.taken ||
             std::all_of(op.deps.begin(), op.deps.end(), [](const auto& d) { return d->done; });
    });
    run_front(lock, s);
  }
}

bool Engine::front_runnable(const Stream& s) const {
  if (s.queue.empty()) return false;
  const Op& op = *s.queue.front();
  if (op.taken || op.kind == OpKind::kStop) return false;
  if (!std::all_of(op.deps.begin(), op.deps.end(), [](const auto& d) { return d->done; })) return false;
  // Host work runs on the stream's worker, a runtime thread, never on a waiting host: it may
  // take locks the waiting thread holds.
  return op.kind != OpKind::kHost || t_worker_of == &s;
}

bool Engine::run_front(std::unique_lock<EngineMutex>& lock, Stream* s) {
  if (!front_runnable(*s)) return false;
  Op& op = *s->queue.front();
  op.taken = true;
  execute(lock, s, op);
  s->queue.pop_front();
  done_cv_.notify_all();
  resource_cv_.notify_all();  // finished work may make another stream's work ready
  space_cv_.notify_all();
  s->work_cv.notify_one();    // the next one, if a host ran this one
  return true;
}

uint64_t host_work_start_ns() { return t_host_start_ns; }

void host_work_ends_at(uint64_t end_ns) { t_reported_end_ns = std::max(t_reported_end_ns, end_ns); }

}  // namespace gpuhook::sim

// The kernel running on the calling worker thread ends no earlier than end_ns (CUPTI clock).
// Used by the simulated NCCL, whose collectives end when every rank has arrived.
extern "C" __attribute__((visibility("default"))) void gpuhook_sim_kernel_end_at(uint64_t end_ns) {
  gpuhook::sim::t_reported_end_ns = end_ns;
}

// When the kernel running on the calling worker thread started on the simulated timeline
// (CUPTI clock), 0 outside a host twin. The simulated NCCL takes its arrival from it: a
// worker woken late by the OS must not look like a late rank.
extern "C" __attribute__((visibility("default"))) uint64_t gpuhook_sim_kernel_start_ns() {
  return gpuhook::sim::t_plan != nullptr ? (*gpuhook::sim::t_plan)() : 0;
}

// The calling thread is the simulator's own (CUPTI's buffer thread): its waits never stop the
// clock (program_thread_pauses).
extern "C" __attribute__((visibility("default"))) void gpuhook_sim_own_thread() { gpuhook::sim::t_simulator_thread = true; }

// A program thread is about to wait for one of the simulator's locks (begin 1) or has it
// (begin 0, only after a 1 that returned 1): with GPUHOOK_SIM_PAUSE_CLOCK the clock stands
// meanwhile (pausing_mutex.h). Simulator threads do not stop it.
extern "C" __attribute__((visibility("default"))) int gpuhook_sim_program_wait(int begin) {
  if (begin == 0) {
    gpuhook::sim::resume_clock();
    return 0;
  }
  if (!gpuhook::sim::program_thread_pauses()) return 0;
  gpuhook::sim::pause_clock();
  return 1;
}
