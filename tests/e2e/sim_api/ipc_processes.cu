// cudaIpc* across processes, as simpleIPC uses them: the parent allocates device memory and an
// interprocess event and hands their handles to children it starts with fork + exec (the
// handles travel through a pipe). A writer child fills the memory behind earlier work that
// lasts until the parent says go, and records the event; a reader child, started after that
// record, finds the event not ready, waits on it, adds 1 and records it again, and only then
// does the parent let the writer go; the parent waits on the event and reads the memory back. Each
// number checked is one the reader and the parent could only see through shared memory ordered
// by the shared event. Bad handles too: freed memory, a destroyed event, memory and an event
// of a process that has exited, garbage, double open, close twice; and a record whose process
// exits before its work is over does not hang the waiter.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "check.h"
#include "common.h"

namespace {

constexpr int kCount = 1 << 16;

__global__ void fill(int* v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = i * 7;
}
static void fill_host(dim3, dim3, int* v, int n) {
  for (int i = 0; i < n; ++i) v[i] = i * 7;
}
HOST_TWIN(fill, fill_host);

__global__ void add_one(int* v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] += 1;
}
static void add_one_host(dim3, dim3, int* v, int n) {
  for (int i = 0; i < n; ++i) v[i] += 1;
}
HOST_TWIN(add_one, add_one_host);

// Stream work that lasts until a byte arrives on the pipe.
void wait_for_go(void* fd) {
  char go = 0;
  if (read(static_cast<int>(reinterpret_cast<intptr_t>(fd)), &go, 1) != 1) std::exit(3);
}
void sleep_ms(void* ms) { std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(ms))); }

// What the parent hands each child, and what comes back.
struct Handles {
  cudaIpcMemHandle_t memory;
  cudaIpcEventHandle_t event;
  cudaIpcMemHandle_t freed;          // memory the parent freed after exporting it
  cudaIpcEventHandle_t destroyed;    // an event the parent destroyed after exporting it
  cudaIpcEventHandle_t abandoned;    // recorded by the "abandon" child, which then exits
};
struct Report {
  cudaIpcMemHandle_t memory;  // the writer's own allocation, opened after the writer exited
  cudaIpcEventHandle_t event;
};

void write_all(int fd, const void* p, size_t n) {
  const auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = write(fd, c, n);
    if (w <= 0) std::exit(3);
    c += w;
    n -= static_cast<size_t>(w);
  }
}
void read_all(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = read(fd, c, n);
    if (r <= 0) std::exit(3);
    c += r;
    n -= static_cast<size_t>(r);
  }
}

// A child: this program again, its role in argv[1], reading from `in` and writing to `out`.
struct Child {
  pid_t pid;
  int to;    // parent -> child
  int from;  // child -> parent
};
Child spawn(const char* self, const char* role) {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) std::exit(3);
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    const std::string in = std::to_string(down[0]), out = std::to_string(up[1]);
    execl(self, self, role, in.c_str(), out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(down[0]);
  close(up[1]);
  return {pid, down[1], up[0]};
}
int finish(const Child& c) {
  close(c.to);
  close(c.from);
  int status = 0;
  waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int writer(int in, int out) {
  Handles h;
  read_all(in, &h, sizeof h);
  int* v = nullptr;
  CHECK_OK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&v), h.memory, cudaIpcMemLazyEnablePeerAccess));
  cudaEvent_t e;
  CHECK_OK(cudaIpcOpenEventHandle(&e, h.event));
  cudaStream_t s;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Earlier work holds the stream until the reader has queried and waited on the event.
  CHECK_OK(cudaLaunchHostFunc(s, wait_for_go, reinterpret_cast<void*>(intptr_t{in})));
  fill<<<kCount / 256, 256, 0, s>>>(v, kCount);
  CHECK_OK(cudaGetLastError());
  CHECK_OK(cudaEventRecord(e, s));
  // Memory and an event of this process, for the parent to open after this process exits.
  Report r;
  int* mine = nullptr;
  CHECK_OK(cudaMalloc(&mine, 4096));
  CHECK_OK(cudaIpcGetMemHandle(&r.memory, mine));
  cudaEvent_t own;
  CHECK_OK(cudaEventCreateWithFlags(&own, cudaEventInterprocess | cudaEventDisableTiming));
  CHECK_OK(cudaIpcGetEventHandle(&r.event, own));
  write_all(out, &r, sizeof r);  // "recorded": the parent starts the reader now
  CHECK_OK(cudaStreamSynchronize(s));
  CHECK_OK(cudaIpcCloseMemHandle(v));
  CHECK_OK(cudaEventDestroy(e));
  CHECK_OK(cudaStreamDestroy(s));
  return 0;
}

int reader(int in, int out) {
  Handles h;
  read_all(in, &h, sizeof h);
  int* v = nullptr;
  CHECK_OK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&v), h.memory, cudaIpcMemLazyEnablePeerAccess));
  // "If the memory handle has already been opened by the current context, the reference count
  // on the handle is incremented by 1 and the existing device pointer is returned."
  int* again = nullptr;
  CHECK_OK(cudaIpcOpenMemHandle(reinterpret_cast<void**>(&again), h.memory, cudaIpcMemLazyEnablePeerAccess));
  EXPECT_TRUE(again == v);
  cudaEvent_t e;
  CHECK_OK(cudaIpcOpenEventHandle(&e, h.event));
  // The writer's record is made and its work not over (it waits for the parent's go).
  EXPECT_TRUE(cudaEventQuery(e) == cudaErrorNotReady);
  cudaStream_t s;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_OK(cudaStreamWaitEvent(s, e, 0));
  add_one<<<kCount / 256, 256, 0, s>>>(v, kCount);
  CHECK_OK(cudaGetLastError());
  CHECK_OK(cudaEventRecord(e, s));
  int* back = nullptr;  // pinned: an async copy to pageable memory would block this thread
  CHECK_OK(cudaMallocHost(&back, kCount * sizeof(int)));
  CHECK_OK(cudaMemcpyAsync(back, v, kCount * sizeof(int), cudaMemcpyDeviceToHost, s));
  const char queued = 1;
  write_all(out, &queued, 1);  // the parent now lets the writer go
  CHECK_OK(cudaStreamSynchronize(s));
  for (int i = 0; i < kCount; ++i) {
    if (back[i] != i * 7 + 1) {
      std::fprintf(stderr, "reader: element %d is %d, expected %d\n", i, back[i], i * 7 + 1);
      return 1;
    }
  }
  EXPECT_TRUE(cudaEventQuery(e) == cudaSuccess);
  CHECK_OK(cudaFreeHost(back));

  // Freed memory and a destroyed event: refused, not mapped.
  void* p = nullptr;
  EXPECT_TRUE(cudaIpcOpenMemHandle(&p, h.freed, cudaIpcMemLazyEnablePeerAccess) == cudaErrorInvalidResourceHandle);
  cudaEvent_t gone;
  EXPECT_TRUE(cudaIpcOpenEventHandle(&gone, h.destroyed) == cudaErrorInvalidResourceHandle);
  cudaIpcMemHandle_t garbage;
  std::memset(&garbage, 0x5a, sizeof garbage);
  EXPECT_TRUE(cudaIpcOpenMemHandle(&p, garbage, cudaIpcMemLazyEnablePeerAccess) == cudaErrorInvalidValue);
  // Opened twice: closed twice; a third close finds nothing open.
  CHECK_OK(cudaIpcCloseMemHandle(again));
  CHECK_OK(cudaIpcCloseMemHandle(v));
  EXPECT_TRUE(cudaIpcCloseMemHandle(v) == cudaErrorInvalidValue);
  CHECK_OK(cudaEventDestroy(e));
  CHECK_OK(cudaStreamDestroy(s));
  return 0;
}

// Records the event behind 10 s of work and exits at once: the work never ends.
int abandon(int in, int out) {
  Handles h;
  read_all(in, &h, sizeof h);
  cudaEvent_t e;
  CHECK_OK(cudaIpcOpenEventHandle(&e, h.abandoned));
  cudaStream_t s;
  CHECK_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK_OK(cudaLaunchHostFunc(s, sleep_ms, reinterpret_cast<void*>(intptr_t{10000})));
  CHECK_OK(cudaEventRecord(e, s));
  const char done = 1;
  write_all(out, &done, 1);
  _exit(0);
}

int parent(const char* self) {
  int* v = nullptr;
  CHECK_OK(cudaMalloc(&v, kCount * sizeof(int)));
  CHECK_OK(cudaMemset(v, 0, kCount * sizeof(int)));
  cudaEvent_t e, destroyed, abandoned;
  CHECK_OK(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming));
  CHECK_OK(cudaEventCreateWithFlags(&destroyed, cudaEventInterprocess | cudaEventDisableTiming));
  CHECK_OK(cudaEventCreateWithFlags(&abandoned, cudaEventInterprocess | cudaEventDisableTiming));
  Handles h;
  CHECK_OK(cudaIpcGetMemHandle(&h.memory, v));
  CHECK_OK(cudaIpcGetEventHandle(&h.event, e));
  CHECK_OK(cudaIpcGetEventHandle(&h.destroyed, destroyed));
  CHECK_OK(cudaIpcGetEventHandle(&h.abandoned, abandoned));
  CHECK_OK(cudaEventDestroy(destroyed));
  int* tmp = nullptr;
  CHECK_OK(cudaMalloc(&tmp, 4096));
  CHECK_OK(cudaIpcGetMemHandle(&h.freed, tmp));
  CHECK_OK(cudaFree(tmp));

  const Child w = spawn(self, "writer");
  write_all(w.to, &h, sizeof h);
  Report r;
  read_all(w.from, &r, sizeof r);
  const Child rd = spawn(self, "reader");
  write_all(rd.to, &h, sizeof h);
  char queued = 0;
  read_all(rd.from, &queued, 1);
  write_all(w.to, &queued, 1);  // go
  EXPECT_TRUE(finish(rd) == 0);
  EXPECT_TRUE(finish(w) == 0);

  // The latest record of e is the reader's: the parent waits for it, then sees its bytes.
  CHECK_OK(cudaEventSynchronize(e));
  EXPECT_TRUE(cudaEventQuery(e) == cudaSuccess);
  static int back[kCount];
  CHECK_OK(cudaMemcpy(back, v, sizeof back, cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) EXPECT_TRUE(back[i] == i * 7 + 1);

  // The writer has exited: its memory and its event are gone with it.
  void* p = nullptr;
  EXPECT_TRUE(cudaIpcOpenMemHandle(&p, r.memory, cudaIpcMemLazyEnablePeerAccess) == cudaErrorMapBufferObjectFailed);
  cudaEvent_t dead;
  EXPECT_TRUE(cudaIpcOpenEventHandle(&dead, r.event) == cudaErrorMapBufferObjectFailed);

  // A record whose process exited with its work pending: the wait ends (well before the 10 s).
  const Child a = spawn(self, "abandon");
  write_all(a.to, &h, sizeof h);
  char done = 0;
  read_all(a.from, &done, 1);
  EXPECT_TRUE(finish(a) == 0);
  EXPECT_TRUE(cudaEventQuery(abandoned) == cudaSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK_OK(cudaEventSynchronize(abandoned));
  EXPECT_TRUE(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));

  CHECK_OK(cudaEventDestroy(e));
  CHECK_OK(cudaEventDestroy(abandoned));
  CHECK_OK(cudaFree(v));
  std::printf("OK\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4) {
    const int in = std::atoi(argv[2]), out = std::atoi(argv[3]);
    if (std::strcmp(argv[1], "writer") == 0) return writer(in, out);
    if (std::strcmp(argv[1], "reader") == 0) return reader(in, out);
    if (std::strcmp(argv[1], "abandon") == 0) return abandon(in, out);
    return 2;
  }
  return parent(argv[0]);
}
