// CUDA IPC handles, across processes as simpleIPC uses them. Device memory from cudaMalloc lives
// in a memfd mapped MAP_SHARED (device_arena.h): a memory handle names the exporter's pid, its
// memfd (as /proc/<pid>/fd/<fd>), a nonce telling that memfd from a later one under a reused pid,
// and the allocation's entry in the exporter's table of exports; opening it maps those bytes.
// An event handle names the event's entry in the same memfd, where records, completions and
// their planned ends are kept for every process (ArenaEvent). Within the exporting process a
// handle opens to the exporter's own memory (same address) or event (same event).
//
// What a handle the simulator cannot honour gets, where cuda_runtime_api.h lists the codes but
// not the case (each with one line on stderr naming the handle's process):
//   - its process has exited (or /proc refuses): cudaErrorMapBufferObjectFailed, "the buffer
//     object could not be mapped" (driver_types.h);
//   - the allocation was freed (cudaFree) or the event destroyed by its process:
//     cudaErrorInvalidResourceHandle;
//   - bytes that are no handle of this simulator: cudaErrorInvalidValue.
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "../sim_bridge.h"
#include "allocations.h"
#include "config.h"
#include "device_arena.h"
#include "engine.h"
#include "ipc.h"
#include "records.h"

using namespace gpuhook::sim;

namespace {

constexpr char kMemMagic[8] = {'g', 'p', 'u', 'h', 'i', 'p', 'c', 'm'};
constexpr char kEventMagic[8] = {'g', 'p', 'u', 'h', 'i', 'p', 'c', 'e'};

// What a handle's 64 reserved bytes hold.
struct Payload {
  char magic[8];
  int64_t pid;
  uint64_t nonce;
  int32_t fd;
  uint32_t index;  // in the exporter's exports or events table
  uint32_t generation;
  int32_t device;
  uint64_t offset;   // memory: the allocation's offset in the memfd
  uint64_t bytes;    // memory: its size
  uint64_t address;  // the exporter's own pointer (its allocation, or its EventImpl)
};
static_assert(sizeof(Payload) <= CUDA_IPC_HANDLE_SIZE, "an IPC handle holds 64 bytes");

template <class Handle>
void encode(Handle* h, const Payload& p) {
  std::memset(h->reserved, 0, sizeof h->reserved);
  std::memcpy(h->reserved, &p, sizeof p);
}

template <class Handle>
bool decode(const Handle& h, const char (&magic)[8], Payload* p) {
  std::memcpy(p, h.reserved, sizeof *p);
  return std::memcmp(p->magic, magic, sizeof magic) == 0 && p->pid > 0 && p->fd >= 0;
}

bool same_process(const Payload& p) {
  const ArenaHeader* own = arena_header();
  return p.pid == static_cast<int64_t>(getpid()) && own != nullptr && own->nonce == p.nonce;
}

void say(const char* call, const Payload& p, const char* why, const char* code) {
  std::fprintf(stderr, "gpuhook-sim: %s: the handle from process %lld: %s: %s\n", call,
               static_cast<long long>(p.pid), why, code);
}

// The exporter's arena, or the error to return (with its line said).
const RemoteArena* exporter(const char* call, const Payload& p, cudaError_t* err) {
  const RemoteArena* r = remote_arena(static_cast<pid_t>(p.pid), p.fd, p.nonce);
  if (r == nullptr) {
    say(call, p, errno == EACCES ? "its device memory cannot be reached (/proc refuses)"
                                  : "that process has exited, or holds no such device memory",
        "cudaErrorMapBufferObjectFailed");
    *err = cudaErrorMapBufferObjectFailed;
  }
  return r;
}

// Memory opened from another process: one mapping per handle, counted ("If the memory handle
// has already been opened by the current context, the reference count on the handle is
// incremented by 1 and the existing device pointer is returned", cuda_runtime_api.h).
struct Opened {
  void* ptr = nullptr;
  void* map = nullptr;
  size_t map_bytes = 0;
  int refs = 0;
};
using HandleKey = std::tuple<int64_t, uint64_t, uint32_t, uint32_t>;  // pid, nonce, index, generation
std::mutex g_open_mu;
std::map<HandleKey, Opened>& opened_remote() {
  static auto* m = new std::map<HandleKey, Opened>();
  return *m;
}
std::map<const void*, int>& opened_own() {  // same-process opens: address -> times open
  static auto* m = new std::map<const void*, int>();
  return *m;
}

// An interprocess event in this process: the shared state it names, and the number of the
// latest record this process made of it (the event's own completion answers for that one).
struct Binding {
  ArenaEvent* shared = nullptr;
  uint32_t generation = 0;
  bool owner = false;  // made here (cudaEventCreate), not opened
  pid_t exporter = 0;
  uint64_t last_local = 0;
};
std::mutex g_event_mu;
std::map<const EventImpl*, Binding>& bindings() {
  static auto* m = new std::map<const EventImpl*, Binding>();
  return *m;
}
// Which event entries of this process's arena are taken.
std::mutex g_slot_mu;

bool alive(pid_t pid) { return pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH; }

// Waits until the shared event has completed record `seq`, or until that can no longer happen
// (the event was destroyed by its exporter, or the process that recorded it is gone: said once,
// and the wait ends as if done). Returns the planned end of the work waited for.
uint64_t wait_completed(ArenaEvent* e, uint32_t generation, uint64_t seq) {
  for (;;) {
    const uint32_t wake = e->wake.load(std::memory_order_acquire);
    if (e->completed.load(std::memory_order_acquire) >= seq) return e->completed_end_ns.load();
    if (e->generation.load() != generation) return 0;
    const pid_t recorder = e->recorder_pid.load();
    if (!alive(recorder)) {
      static std::atomic<bool> said{false};
      if (!said.exchange(true)) {
        std::fprintf(stderr, "gpuhook-sim: an IPC event's record was made by process %d, which exited before "
                             "its work was over; the wait ends\n", static_cast<int>(recorder));
      }
      return 0;
    }
    // A futex on the shared page: any process's completion wakes it (not FUTEX_PRIVATE). The
    // timeout is for the checks above, which no wake-up announces.
    timespec timeout{0, 20 * 1000 * 1000};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&e->wake), FUTEX_WAIT, wake, &timeout, nullptr, 0);
  }
}

void publish(ArenaEvent* e, uint64_t seq, uint64_t end_ns) {
  uint64_t had = e->completed.load();
  // Records complete in order on one stream; across streams a later record may finish first,
  // and then an earlier one adds nothing.
  while (had < seq) {
    e->completed_end_ns.store(end_ns);
    if (e->completed.compare_exchange_weak(had, seq)) break;
  }
  e->wake.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&e->wake), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

// The binding of e when its latest record was made in another process (and is numbered *seq).
bool remote_latest(const EventImpl* e, Binding* out, uint64_t* seq) {
  std::lock_guard<std::mutex> lock(g_event_mu);
  auto it = bindings().find(e);
  if (it == bindings().end()) return false;
  const uint64_t latest = it->second.shared->recorded.load(std::memory_order_acquire);
  if (latest == it->second.last_local) return false;
  *out = it->second;
  *seq = latest;
  return true;
}

void enqueue_bookkeeping(const ApiScope& api, Stream* s, std::function<void()> work) {
  auto op = std::make_unique<Op>();
  op->kind = OpKind::kHost;
  op->bookkeeping = true;
  op->correlation_id = api.correlation_id();
  op->queued_ns = gpuhook_sim_now_ns();
  op->submitted_ns = op->queued_ns;
  op->host_work = std::move(work);
  Engine::instance().enqueue(s, std::move(op));
}

}  // namespace

namespace gpuhook::sim {

void ipc_event_created(EventImpl* e) {
  ArenaHeader* h = arena_header();
  if (h == nullptr) return;  // then cudaIpcGetEventHandle refuses it
  std::lock_guard<std::mutex> slot_lock(g_slot_mu);
  for (uint32_t i = 0; i < kArenaEvents; ++i) {
    ArenaEvent& a = h->events[i];
    const uint32_t g = a.generation.load();
    if ((g & 1u) != 0) continue;
    a.recorded.store(0);
    a.completed.store(0);
    a.completed_end_ns.store(0);
    a.recorder_pid.store(0);
    a.device = e->device;
    a.generation.store(g + 1);
    std::lock_guard<std::mutex> lock(g_event_mu);
    bindings()[e] = Binding{&a, g + 1, true, getpid(), 0};
    return;
  }
}

void ipc_event_destroyed(EventImpl* e) {
  std::lock_guard<std::mutex> lock(g_event_mu);
  auto it = bindings().find(e);
  if (it == bindings().end()) return;
  if (it->second.owner) {
    ArenaEvent* a = it->second.shared;
    a->generation.fetch_add(1);  // even: free; a waiter in another process stops waiting
    a->wake.fetch_add(1);
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(&a->wake), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
  }
  bindings().erase(it);
}

void ipc_event_recorded(const ApiScope& api, EventImpl* e, Stream* s, const CompletionPtr& marker) {
  Binding b;
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    auto it = bindings().find(e);
    if (it == bindings().end() || it->second.shared->generation.load() != it->second.generation) return;
    b = it->second;
    seq = b.shared->recorded.fetch_add(1) + 1;
    b.shared->recorder_pid.store(getpid());
    it->second.last_local = seq;
  }
  ArenaEvent* shared = b.shared;
  enqueue_bookkeeping(api, s, [shared, seq, marker] { publish(shared, seq, Engine::instance().end_ns(marker)); });
}

bool ipc_event_wait(const ApiScope& api, EventImpl* e, Stream* s) {
  Binding b;
  uint64_t seq = 0;
  if (!remote_latest(e, &b, &seq)) return false;
  // The wait is on the record made before this call, as for a local event; the stream's next
  // work starts when that work ended on its process's plan.
  ArenaEvent* shared = b.shared;
  const uint32_t generation = b.generation;
  enqueue_bookkeeping(api, s, [shared, generation, seq] { host_work_ends_at(wait_completed(shared, generation, seq)); });
  return true;
}

bool ipc_event_query(EventImpl* e, bool* ready) {
  Binding b;
  uint64_t seq = 0;
  if (!remote_latest(e, &b, &seq)) return false;
  *ready = b.shared->completed.load(std::memory_order_acquire) >= seq &&
           gpuhook_sim_now_ns() >= b.shared->completed_end_ns.load();
  // Destroyed by its exporter, or recorded by a process that exited mid-work: nothing left to
  // wait for (a wait would end too, wait_completed).
  if (b.shared->generation.load() != b.generation || !alive(b.shared->recorder_pid.load())) *ready = true;
  return true;
}

bool ipc_event_synchronize(EventImpl* e) {
  Binding b;
  uint64_t seq = 0;
  if (!remote_latest(e, &b, &seq)) return false;
  sleep_until_ns(wait_completed(b.shared, b.generation, seq));
  return true;
}

}  // namespace gpuhook::sim

extern "C" {

// "Takes a pointer to the base of an existing device memory allocation created with cudaMalloc"
// (cuda_runtime_api.h). A pointer inside one names that allocation, whose base an opener gets.
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* dev_ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetMemHandle_v4010, "cudaIpcGetMemHandle");
  if (handle == nullptr || dev_ptr == nullptr) return api.ret(cudaErrorInvalidValue);
  void* base = nullptr;
  size_t bytes = 0;
  int device = 0;
  bool pooled = false;
  if (!find_allocation(dev_ptr, &base, &bytes, &device, &pooled) || pooled) return api.ret(cudaErrorInvalidValue);
  const ArenaHeader* h = arena_header();
  uint64_t offset = 0;
  if (h == nullptr || !arena_offset(base, &offset)) {
    std::fprintf(stderr, "gpuhook-sim: cudaIpcGetMemHandle: this allocation is private memory (no memfd arena, "
                         "or the arena is full): cudaErrorNotSupported\n");
    return api.ret(cudaErrorNotSupported);
  }
  Payload p{};
  std::memcpy(p.magic, kMemMagic, sizeof kMemMagic);
  p.pid = getpid();
  p.nonce = h->nonce;
  p.fd = arena_fd();
  p.device = device;
  p.offset = offset;
  p.bytes = bytes;
  p.address = reinterpret_cast<uint64_t>(base);
  if (!arena_export(offset, bytes, device, &p.index, &p.generation)) return api.ret(cudaErrorMemoryAllocation);
  encode(handle, p);
  return api.ret(cudaSuccess);
}

cudaError_t cudaIpcOpenMemHandle(void** dev_ptr, cudaIpcMemHandle_t handle, unsigned int flags) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenMemHandle_v4010, "cudaIpcOpenMemHandle");
  // "flags: Flags for this operation. Must be specified as cudaIpcMemLazyEnablePeerAccess".
  if (dev_ptr == nullptr || flags != cudaIpcMemLazyEnablePeerAccess) return api.ret(cudaErrorInvalidValue);
  Payload p;
  if (!decode(handle, kMemMagic, &p) || p.index >= kArenaExports || p.bytes == 0) return api.ret(cudaErrorInvalidValue);
  if (same_process(p)) {
    const ArenaHeader* own = arena_header();
    if (own->exports[p.index].generation.load() != p.generation) return api.ret(cudaErrorInvalidResourceHandle);
    void* address = reinterpret_cast<void*>(p.address);
    std::lock_guard<std::mutex> lock(g_open_mu);
    ++opened_own()[address];
    *dev_ptr = address;
    return api.ret(cudaSuccess);
  }
  std::lock_guard<std::mutex> lock(g_open_mu);
  const HandleKey key{p.pid, p.nonce, p.index, p.generation};
  cudaError_t err = cudaSuccess;
  const RemoteArena* r = exporter("cudaIpcOpenMemHandle", p, &err);
  if (r == nullptr) return api.ret(err);
  const ArenaExport& x = r->header->exports[p.index];
  if (x.generation.load() != p.generation || x.offset != p.offset || x.bytes != p.bytes) {
    say("cudaIpcOpenMemHandle", p, "the allocation was freed", "cudaErrorInvalidResourceHandle");
    return api.ret(cudaErrorInvalidResourceHandle);
  }
  if (auto it = opened_remote().find(key); it != opened_remote().end()) {
    ++it->second.refs;
    *dev_ptr = it->second.ptr;
    return api.ret(cudaSuccess);
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t first = p.offset & ~(page - 1);
  const uint64_t map_bytes = ((p.offset + p.bytes + page - 1) & ~(page - 1)) - first;
  void* map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, static_cast<off_t>(first));
  if (map == MAP_FAILED) {
    say("cudaIpcOpenMemHandle", p, std::strerror(errno), "cudaErrorMapBufferObjectFailed");
    return api.ret(cudaErrorMapBufferObjectFailed);
  }
  void* ptr = static_cast<char*>(map) + (p.offset - first);
  // Device memory here too (copies and kernels take it), on the exporter's device when this
  // process has it; the allocation table does not free it (cudaIpcCloseMemHandle unmaps it).
  const int device = Engine::instance().valid_device(p.device) ? p.device : current_device();
  if (!track(ptr, p.bytes, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, device)) {
    munmap(map, map_bytes);
    return api.ret(cudaErrorMapBufferObjectFailed);
  }
  opened_remote()[key] = Opened{ptr, map, map_bytes, 1};
  *dev_ptr = ptr;
  return api.ret(cudaSuccess);
}

cudaError_t cudaIpcCloseMemHandle(void* dev_ptr) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcCloseMemHandle_v4010, "cudaIpcCloseMemHandle");
  std::lock_guard<std::mutex> lock(g_open_mu);
  if (auto it = opened_own().find(dev_ptr); it != opened_own().end()) {
    if (--it->second == 0) opened_own().erase(it);
    return api.ret(cudaSuccess);
  }
  for (auto it = opened_remote().begin(); it != opened_remote().end(); ++it) {
    if (it->second.ptr != dev_ptr) continue;
    if (--it->second.refs == 0) {
      // Work queued on it may still read or write it: wait for it, as cudaFree does.
      Engine::instance().synchronize_device(-1);
      size_t bytes = 0;
      release(dev_ptr, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, &bytes);
      munmap(it->second.map, it->second.map_bytes);
      opened_remote().erase(it);
    }
    return api.ret(cudaSuccess);
  }
  return api.ret(cudaErrorInvalidValue);
}

// "The event must have been created with the cudaEventInterprocess and cudaEventDisableTiming
// flags set" (cuda_runtime_api.h).
cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t* handle, cudaEvent_t event) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcGetEventHandle_v4010, "cudaIpcGetEventHandle");
  if (handle == nullptr || event == nullptr) return api.ret(cudaErrorInvalidValue);
  auto* e = reinterpret_cast<EventImpl*>(event);
  const unsigned needed = cudaEventInterprocess | cudaEventDisableTiming;
  if ((e->flags & needed) != needed) return api.ret(cudaErrorInvalidResourceHandle);
  Binding b;
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    auto it = bindings().find(e);
    if (it == bindings().end()) {
      std::fprintf(stderr, "gpuhook-sim: cudaIpcGetEventHandle: no room for the event's shared state "
                           "(no memfd arena, or %u interprocess events exist): cudaErrorMemoryAllocation\n",
                   kArenaEvents);
      return api.ret(cudaErrorMemoryAllocation);
    }
    b = it->second;
  }
  // An opened event is exported again as its exporter's.
  const ArenaHeader* own = arena_header();
  if (!b.owner || own == nullptr) return api.ret(cudaErrorInvalidResourceHandle);
  Payload p{};
  std::memcpy(p.magic, kEventMagic, sizeof kEventMagic);
  p.pid = getpid();
  p.nonce = own->nonce;
  p.fd = arena_fd();
  p.index = static_cast<uint32_t>(b.shared - own->events);
  p.generation = b.generation;
  p.device = e->device;
  p.address = reinterpret_cast<uint64_t>(e);
  encode(handle, p);
  return api.ret(cudaSuccess);
}

// "This function returns a cudaEvent_t that behaves like a locally created event with the
// cudaEventDisableTiming flag specified" (cuda_runtime_api.h): on the current device. Within
// the exporting process the opened event is the exporter's own: records, waits and queries on
// either are the same, and destroying one destroys it.
cudaError_t cudaIpcOpenEventHandle(cudaEvent_t* event, cudaIpcEventHandle_t handle) {
  ApiScope api(CUPTI_RUNTIME_TRACE_CBID_cudaIpcOpenEventHandle_v4010, "cudaIpcOpenEventHandle");
  if (event == nullptr) return api.ret(cudaErrorInvalidValue);
  Payload p;
  if (!decode(handle, kEventMagic, &p) || p.index >= kArenaEvents) return api.ret(cudaErrorInvalidValue);
  if (same_process(p)) {
    if (arena_header()->events[p.index].generation.load() != p.generation) {
      return api.ret(cudaErrorInvalidResourceHandle);
    }
    *event = reinterpret_cast<cudaEvent_t>(p.address);
    return api.ret(cudaSuccess);
  }
  cudaError_t err = cudaSuccess;
  const RemoteArena* r = exporter("cudaIpcOpenEventHandle", p, &err);
  if (r == nullptr) return api.ret(err);
  ArenaEvent* shared = &r->header->events[p.index];
  if (shared->generation.load() != p.generation) {
    say("cudaIpcOpenEventHandle", p, "the event was destroyed", "cudaErrorInvalidResourceHandle");
    return api.ret(cudaErrorInvalidResourceHandle);
  }
  EventImpl* impl = new_event(cudaEventInterprocess | cudaEventDisableTiming);
  {
    std::lock_guard<std::mutex> lock(g_event_mu);
    bindings()[impl] = Binding{shared, p.generation, false, static_cast<pid_t>(p.pid), 0};
  }
  *event = reinterpret_cast<cudaEvent_t>(impl);
  return api.ret(cudaSuccess);
}

}  // extern "C"
