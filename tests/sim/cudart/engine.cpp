#include "engine.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "../sim_bridge.h"
#include "config.h"
#include "device_activity.h"
#include "graph.h"
#include "records.h"

namespace gpuhook::sim {

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
    timespec ts{static_cast<time_t>(left / 1000000000ull), static_cast<long>(left % 1000000000ull)};
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
  std::lock_guard<std::mutex> lock(mu_);
  legacy_locked(0);  // device 0's legacy stream runs from the start, as before any device existed
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
  std::thread([this, s] { worker_main(s); }).detach();
}

Stream* Engine::legacy_stream(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  return legacy_locked(device);
}

Stream* Engine::create_stream(unsigned flags, int priority, bool hidden) {
  auto* s = new Stream();
  s->device = current_device();
  s->blocking = !hidden && (flags & cudaStreamNonBlocking) == 0;
  s->priority = std::clamp(priority, -5, 0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->id = hidden ? 0 : next_stream_id_++;
    streams_.push_back(s);
  }
  start_worker(s);
  return s;
}

void Engine::destroy_stream(Stream* s) {
  // Like cudaStreamDestroy: returns at once; the worker finishes queued work, then stops.
  {
    std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
  for (Stream* s : streams_) {
    if (reinterpret_cast<cudaStream_t>(s) == handle) return s->dead || s->destroyed ? nullptr : s;
  }
  return nullptr;
}

uint64_t Engine::next_seq() {
  std::lock_guard<std::mutex> lock(mu_);
  return ++seq_;
}

CompletionPtr Engine::enqueue(Stream* s, std::unique_ptr<Op> op) {
  // Captured, not run: the work runs when the graph is launched (and only then has records).
  if (s->capture != nullptr && op->kind != OpKind::kStop) return capture_op(*s, std::move(op));
  // CUPTI places a GPU record in the launching thread's buffer at launch, not at completion.
  op->record_slot = reserve_op_record(*op);
  std::unique_lock<std::mutex> lock(mu_);
  if (op->seq == 0) op->seq = ++seq_;
  // Legacy default stream semantics: its work waits for all earlier work on blocking streams,
  // and later work on blocking streams waits for it; within one device only: "The legacy
  // default stream is an implicit stream which synchronizes with all other streams in the same
  // CUcontext except for non-blocking streams" (CUDA Runtime API, "Stream synchronization
  // behavior").
  Stream* legacy = devices_[s->device].legacy;
  if (s->legacy) {
    for (Stream* other : streams_) {
      if (other != s && other->device == s->device && other->blocking && !other->dead && other->last &&
          !other->last->done) {
        op->deps.push_back(other->last);
      }
    }
  } else if (s->blocking && legacy != nullptr && legacy->last && !legacy->last->done) {
    op->deps.push_back(legacy->last);
  }
  space_cv_.wait(lock, [&] { return s->queue.size() < config().queue_depth; });
  CompletionPtr c = op->done;
  s->last = c;
  s->queue.push_back(std::move(op));
  s->work_cv.notify_one();
  resource_cv_.notify_all();  // a waiter may have to let this one go first
  return c;
}

void Engine::wait(const CompletionPtr& c) {
  if (!c) return;
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return c->done; });
}

bool Engine::done(const CompletionPtr& c) {
  if (!c) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return c->done;
}

uint64_t Engine::end_ns(const CompletionPtr& c) {
  std::lock_guard<std::mutex> lock(mu_);
  return c ? c->end_ns : 0;
}

CompletionPtr Engine::last_of(Stream* s) {
  std::lock_guard<std::mutex> lock(mu_);
  return s->last;
}

void Engine::synchronize_device(int device) {
  std::vector<CompletionPtr> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Stream* s : streams_) {
      if (s->last && (device < 0 || s->device == device)) pending.push_back(s->last);
    }
  }
  for (const auto& c : pending) wait(c);
}

// The planned start: the earliest time >= ready at which the shares released by finished
// work (planned ends, newest first) leave room next to the work still running.
uint64_t Engine::fit_start(const Resource& r, double share, uint64_t ready_ns) {
  std::vector<std::pair<uint64_t, double>> rel(r.released.begin(), r.released.end());
  std::sort(rel.begin(), rel.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  uint64_t start = ready_ns;
  double overlapping = 0;
  for (const auto& [end, s] : rel) {
    if (end <= ready_ns) break;
    if (r.used + share + overlapping + s <= 1.0 + 1e-9) {
      overlapping += s;
      continue;
    }
    start = std::max(start, end);
    break;
  }
  return start;
}

uint64_t Engine::acquire(std::unique_lock<std::mutex>& lock, Resource& r, double share,
                         int priority, uint64_t seq, uint64_t ready_ns) {
  r.waiters.push_back({priority, seq, ready_ns, share});
  uint64_t start = ready_ns;
  // The device gives room to whatever could start earliest in planned time; at a tie (several
  // waiting for the same release) the higher priority (lower value, as in
  // cudaStreamCreateWithPriority), then the earlier issued. Worker threads reach this point in
  // any order, so the decision looks at every competitor, not only the ones already waiting.
  auto may_start = [&] {
    if (r.used + share > 1.0 + 1e-9) return false;
    start = fit_start(r, share, ready_ns);
    for (const Waiter& w : r.waiters) {
      if (w.seq == seq || r.used + w.share > 1.0 + 1e-9) continue;
      const uint64_t t = fit_start(r, w.share, w.ready_ns);
      const bool better = w.priority < priority || (w.priority == priority && w.seq < seq);
      if (t < start || (t == start && better)) return false;
    }
    return !earlier_op_pending(r, priority, seq, start);
  };
  resource_cv_.wait(lock, may_start);
  r.waiters.erase(std::find_if(r.waiters.begin(), r.waiters.end(),
                               [&](const Waiter& w) { return w.seq == seq; }));
  r.used += share;
  resource_cv_.notify_all();  // the next in line may fit too
  return start;
}

// Each device has its own SMs and copy engines: work on two devices runs side by side.
Engine::Resource* Engine::resource_of(const Stream& s, const Op& op) {
  Device& d = devices_[s.device];
  if (op.kind == OpKind::kKernel) return &d.sms;
  if (op.kind == OpKind::kMemcpy) return &d.copy_engines[static_cast<int>(op.engine)];
  return nullptr;
}

// Work that is ready on another stream but whose worker thread has not reached the resource
// yet still counts: the device sees submitted work, not our threads' scheduling, so it goes
// by (planned start, priority, issue order) among everything that could start.
bool Engine::earlier_op_pending(const Resource& r, int priority, uint64_t seq,
                                uint64_t start_ns) const {
  for (Stream* s : streams_) {
    if (s->queue.empty()) continue;
    const Op& op = *s->queue.front();
    if (op.started || op.seq == seq) continue;
    if (const_cast<Engine*>(this)->resource_of(*s, op) != &r) continue;
    const double share = op.kind == OpKind::kKernel ? op.share : 1.0;
    if (r.used + share > 1.0 + 1e-9) continue;
    uint64_t ready = std::max(op.submitted_ns, s->prev_end_ns);
    bool deps_done = true;
    for (const auto& d : op.deps) {
      deps_done = deps_done && d->done;
      ready = std::max(ready, d->end_ns);
    }
    if (!deps_done) continue;
    const uint64_t t = fit_start(r, share, ready);
    const bool better = s->priority < priority || (s->priority == priority && op.seq < seq);
    if (t < start_ns || (t == start_ns && better)) return true;
  }
  return false;
}

void Engine::release(Resource& r, double share, uint64_t end_ns) {
  r.used = std::max(0.0, r.used - share);
  r.released.emplace_back(end_ns, share);
  if (r.released.size() > 256) r.released.pop_front();
  resource_cv_.notify_all();
}

namespace {
// Set by gpuhook_sim_kernel_end_at() from the host twin running on this stream's worker.
thread_local uint64_t t_reported_end_ns = 0;
// The simulated start of the kernel whose host twin runs on this worker, for
// gpuhook_sim_kernel_start_ns(): the worker itself may run it later than that on a busy machine.
thread_local uint64_t t_kernel_start_ns = 0;
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

void Engine::execute(std::unique_lock<std::mutex>& lock, Stream* s, Op& op) {
  uint64_t ready = std::max(op.submitted_ns, s->prev_end_ns);
  for (const auto& d : op.deps) ready = std::max(ready, d->end_ns);
  uint64_t start = ready;
  uint64_t end = ready;
  Resource* resource = resource_of(*s, op);
  const double share = op.kind == OpKind::kKernel ? op.share : 1.0;
  if (resource != nullptr) start = acquire(lock, *resource, share, s->priority, op.seq, ready);
  op.started = true;
  if (op.kind == OpKind::kKernel) {
    end = start + clock_scaled_ns(op.duration_ns, start);  // a power-capped clock runs it longer
  } else if (op.kind == OpKind::kMemcpy || op.kind == OpKind::kMemset) {
    end = start + op.duration_ns;
  }
  lock.unlock();
  note_planned(s->device, op, start, end);
  // The work itself: device memory is host memory, so copies and memsets are real, and a
  // kernel with a registered host twin computes its result on this worker thread.
  t_reported_end_ns = 0;
  t_kernel_start_ns = start;
  switch (op.kind) {
    case OpKind::kKernel:
      if (op.kernel != nullptr && op.kernel->twin != nullptr) {
        std::vector<void*> args(op.arg_offsets.size());
        for (size_t i = 0; i < args.size(); ++i) args[i] = op.arg_bytes.data() + op.arg_offsets[i];
        op.kernel->twin(args.data(), op.grid, op.block);
      }
      break;
    case OpKind::kMemcpy:
      if (op.bytes != 0) std::memmove(op.dst, op.src, op.bytes);
      break;
    case OpKind::kMemset:
      if (op.bytes != 0) std::memset(op.dst, op.value, op.bytes);
      break;
    case OpKind::kHost:
      // The stream waits for the host work: later work starts after it returned.
      if (op.host_work) op.host_work();
      if (!op.bookkeeping) end = std::max(end, gpuhook_sim_now_ns());
      break;
    default: break;
  }
  // A twin that waits for other processes (a simulated NCCL collective ends when the last
  // rank arrives) knows the real end only after it ran; it reports it here.
  if (op.kind == OpKind::kKernel && t_reported_end_ns > end) {
    note_busy(s->device, BusyKind::kKernel, end, t_reported_end_ns, op.share, 0, op.load);
    end = t_reported_end_ns;
  }
  sleep_until_ns(end);
  emit_op_record(*s, op, start, end);
  lock.lock();
  if (resource != nullptr) release(*resource, share, end);
  s->prev_end_ns = end;
  op.done->end_ns = end;
  op.done->done = true;
}

void Engine::worker_main(Stream* s) {
  pthread_setname_np(pthread_self(), s->legacy ? (s->device == 0 ? "sim_stream_0" : "sim_stream_0_dev") : "sim_stream");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    s->work_cv.wait(lock, [&] { return !s->queue.empty(); });
    Op& op = *s->queue.front();
    if (op.kind == OpKind::kStop) {
      s->dead = true;
      op.done->end_ns = s->prev_end_ns;
      op.done->done = true;
      s->queue.pop_front();
      done_cv_.notify_all();
      space_cv_.notify_all();
      return;
    }
    done_cv_.wait(lock, [&] {
      return std::all_of(op.deps.begin(), op.deps.end(), [](const auto& d) { return d->done; });
    });
    execute(lock, s, op);
    s->queue.pop_front();
    done_cv_.notify_all();
    resource_cv_.notify_all();  // finished work may make another stream's work ready
    space_cv_.notify_all();
  }
}

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
  return gpuhook::sim::t_kernel_start_ns;
}
