// A plain C++ program for the hook's end-to-end tests: NVTX ranges, gpuhook.h annotations and
// NCCL calls (against whatever libnccl.so.2 it is run with), in the situations the hook must
// survive. Its stdout and exit code must be identical with and without the hook.
//   hook_app MODE [N]
#include <dlfcn.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvtx3.hpp>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include <vector_types.h>

#include "gpuhook/gpuhook.h"

namespace {

nvtxEventAttributes_t ascii_attr(const char* name, uint32_t argb = 0, uint32_t category = 0) {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = name;
  attr.category = category;
  if (argb != 0) {
    attr.colorType = NVTX_COLOR_ARGB;
    attr.color = argb;
  }
  return attr;
}

struct named_domain {
  static constexpr char const* name{"app-named"};
};

// nvtx3::scoped_range pushes and pops through nvtxDomainRangePushEx/Pop with the null handle
// of the global domain (nvtx3.hpp:2120, 2178, 2187), which is the domain of the core calls
// (nvToolsExt.h:1545); a named domain keeps a stack of its own (nvToolsExt.h:1564). Twelve
// ranges per iteration; the levels NVTX returns go to stderr as "levels: ..." (without a tool
// NVTX answers -2 to every push and pop, so they cannot be compared on stdout).
void nvtx_domain_iterations(int n) {
  nvtxDomainHandle_t other = nvtxDomainCreateA("app-other");
  std::string levels;
  auto level = [&](int v) { levels += std::to_string(v) + " "; };
  for (int i = 0; i < n; ++i) {
    levels.clear();
    nvtx3::scoped_range step{nvtx3::event_attributes{"step", nvtx3::argb{0xff, 0x20, 0x40, 0x60}, nvtx3::category{7}}};
    nvtx3::scoped_range_in<named_domain> named{"named"};
    nvtxEventAttributes_t a = ascii_attr("null-push");
    level(nvtxDomainRangePushEx(nullptr, &a));
    level(nvtxRangePop());  // a core pop ends the null-domain push
    level(nvtxRangePushA("core-push"));
    level(nvtxDomainRangePop(nullptr));  // a null-domain pop ends the core push
    nvtxEventAttributes_t d = ascii_attr("domain-outer", 0xff00ff00, 3);
    nvtxDomainHandle_t app = nvtx3::domain::get<named_domain>();
    level(nvtxDomainRangePushEx(app, &d));
    level(nvtxRangePushA("core-inner"));
    level(nvtxDomainRangePop(app));  // ends domain-outer while core-inner is still open
    level(nvtxRangePop());
    level(nvtxDomainRangePop(other));  // nothing pushed in that domain
  }
  level(nvtxRangePop());  // all popped: nothing left in the global domain
  level(nvtxDomainRangePop(nullptr));
  std::fprintf(stderr, "levels: %s\n", levels.c_str());
  nvtxDomainDestroy(other);
}

// A deterministic name of `bytes` bytes: "abc...xyz0123456789" repeated.
std::string pattern_name(size_t bytes) {
  static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string s(bytes, ' ');
  for (size_t i = 0; i < bytes; ++i) s[i] = kAlphabet[i % (sizeof(kAlphabet) - 1)];
  return s;
}

// Names past the record's inline bytes, past the limit, and wide ones, in the "C" locale the
// program starts in (no setlocale): every range is pushed and popped once.
void nvtx_names() {
  std::string long_name = pattern_name(300);
  nvtxRangePushA(long_name.c_str());
  nvtxRangePop();
  std::string huge = pattern_name(100 * 1024);
  nvtxRangePushA(huge.c_str());
  nvtxRangePop();
  nvtxRangePushW(L"schritt-\u00fc-\u6b65");
  nvtxRangePop();
  nvtxDomainHandle_t wide_domain = nvtxDomainCreateW(L"dom\u00e4ne-\u57df");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = L"\u6b65-wide-in-domain-\U0001F680";
  nvtxDomainRangePushEx(wide_domain, &a);
  nvtxDomainRangePop(wide_domain);
  std::string long_registered = pattern_name(200);
  nvtxStringHandle_t reg = nvtxDomainRegisterStringA(wide_domain, long_registered.c_str());
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = reg;
  nvtxDomainMarkEx(wide_domain, &a);
  nvtxDomainDestroy(wide_domain);
}

long rss_kib() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// Libraries that create a domain per object (a communicator, a stream wrapper) and destroy it
// with the object: the hook's memory must not grow with the number of cycles.
void domain_cycle(int i) {
  char name[32];
  std::snprintf(name, sizeof(name), "churn-%d", i % 8);
  nvtxDomainHandle_t d = nvtxDomainCreateA(name);
  nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "churn-mark");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = s;
  nvtxDomainMarkEx(d, &a);
  nvtxDomainRangePushEx(d, &a);
  nvtxDomainRangePop(d);
  nvtxDomainDestroy(d);
}

// Two rounds of n cycles after a warm-up. The first round also grows what is bounded but
// large (the writer's chunk buffer, up to 4 MiB, and zstd's tables: about 10 MiB measured);
// the second shows what each cycle costs.
void nvtx_domain_churn(int n) {
  for (int i = 0; i < 1000; ++i) domain_cycle(i);  // rings, writer tables, malloc arenas
  long start = rss_kib();
  for (int i = 0; i < n; ++i) domain_cycle(i);
  long middle = rss_kib();
  for (int i = 0; i < n; ++i) domain_cycle(i);
  long end = rss_kib();
  std::fprintf(stderr, "domain churn: 2 x %d cycles, rss %ld -> %ld -> %ld KiB, growth %ld KiB then %ld KiB\n", n,
               start, middle, end, middle - start, end - middle);
}

void nvtx_iterations(int n) {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("app-domain");
  nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "registered-range");
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA("outer");
    nvtxRangePushA("inner");
    nvtxMarkA("mark");
    nvtxRangePop();
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = registered;
    nvtxDomainRangePushEx(domain, &attr);
    nvtxDomainRangePop(domain);
    nvtxRangeId_t id = nvtxRangeStartA("async");
    nvtxRangeEnd(id);
    gpuhook_range_push("annotated");
    gpuhook_range_pop();
    nvtxRangePop();
  }
}

// One rank's NCCL calls; returns what the app checks itself (so the hook cannot change it).
int nccl_calls(int n, int rank = 1) {
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, 16, id, rank) != ncclSuccess) return 1;
  float buf[16] = {};
  for (int i = 0; i < n; ++i) {
    ncclAllReduce(buf, buf, 16, ncclFloat32, ncclSum, comm, nullptr);
    ncclGroupStart();
    ncclSend(buf, 8, ncclInt64, 2, comm, nullptr);
    ncclRecv(buf, 8, ncclInt64, 0, comm, nullptr);
    ncclGroupEnd();
  }
  ncclBroadcast(buf, buf, 4, ncclFloat16, 0, comm, nullptr);
  ncclComm_t sub = nullptr;
  ncclCommSplit(comm, 0, 1, &sub, nullptr);
  ncclAllGather(buf, buf, 2, ncclFloat64, sub, nullptr);
  ncclCommDestroy(sub);
  // The real function's return value and errno must come back unchanged.
  errno = 0;
  ncclResult_t rc = ncclAllReduce(buf, buf, 0, ncclFloat32, ncclSum, comm, nullptr);
  std::printf("nccl count0 rc=%d errno=%d\n", static_cast<int>(rc), errno);
  ncclCommDestroy(comm);
  return 0;
}

int threads_mode(int n) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([n, t] {
      nvtx_iterations(n);
      nccl_calls(n / 10 + 1, t);  // one rank per thread, as ncclCommInitRank per GPU
    });
  }
  for (auto& th : threads) th.join();
  return 0;
}

int fork_mode(int n) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) {  // in flight while the main thread forks
      nvtx_iterations(1);
      usleep(200);
    }
  });
  nvtx_iterations(n);
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    std::fprintf(stderr, "child pid %d\n", static_cast<int>(getpid()));
    nvtx_iterations(n);
    std::printf("child done\n");
    std::fflush(stdout);
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  stop.store(true);
  busy.join();
  std::printf("parent done, child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

void exit_from_handler(int) { std::exit(5); }

// A few kernels through whichever libcudart.so.13 the loader finds (the simulator's in the
// tests), registered by hand as nvcc's generated code would: the program needs no nvcc.
// Returns the number launched, -1 when CUDA is not there.
int launch_kernels(int n) {
  void* rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (rt == nullptr) return -1;
  using Register = void (*)(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*, int*);
  using Launch = int (*)(const void*, dim3, dim3, void**, size_t, void*);
  using Sync = int (*)(void*);
  auto register_function = reinterpret_cast<Register>(dlsym(rt, "__cudaRegisterFunction"));
  auto launch = reinterpret_cast<Launch>(dlsym(rt, "cudaLaunchKernel"));
  auto stream_sync = reinterpret_cast<Sync>(dlsym(rt, "cudaStreamSynchronize"));
  if (register_function == nullptr || launch == nullptr || stream_sync == nullptr) return -1;
  static const char stub = 0;  // the "host stub": only its address is used
  static char device_name[] = "crash_test_kernel";
  register_function(nullptr, &stub, device_name, device_name, -1, nullptr, nullptr, nullptr, nullptr, nullptr);
  int launched = 0;
  for (int i = 0; i < n; ++i) launched += launch(&stub, dim3(4), dim3(128), nullptr, 0, nullptr) == 0 ? 1 : 0;
  stream_sync(nullptr);
  return launched;
}

// A real fault of the given kind (no raise()): the kernel reports it with its own si_code.
// UBSan would stop the program at the division or the store itself, before the fault.
[[noreturn]] __attribute__((no_sanitize("undefined"))) void fault(const std::string& kind) {
  if (kind == "fpe") {
    // Both operands volatile: GCC turns 1 / x into a compare, with no division to trap.
    volatile int one = 1, zero = 0;
    volatile int x = one / zero;
    (void)x;
  } else {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  }
  std::abort();  // not reached
}

sigjmp_buf g_recover;

// True when the fault's handler jumped back here.
bool iterations_then_fault(int n) {
  if (sigsetjmp(g_recover, 1) != 0) return true;
  nvtx_iterations(n);
  fault("segv");
}


// CUDA through whichever libcudart.so.13 the loader finds (the simulator's in the tests):
// memsets launched on one thread while the main thread forks.
int cuda_fork_mode(int n) {
  void* rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (rt == nullptr) {
    std::printf("no libcudart.so.13\n");
    return 3;
  }
  using Malloc = int (*)(void**, size_t);
  using MemsetAsync = int (*)(void*, int, size_t, void*);
  using Sync = int (*)(void*);
  auto cuda_malloc = reinterpret_cast<Malloc>(dlsym(rt, "cudaMalloc"));
  auto memset_async = reinterpret_cast<MemsetAsync>(dlsym(rt, "cudaMemsetAsync"));
  auto stream_sync = reinterpret_cast<Sync>(dlsym(rt, "cudaStreamSynchronize"));
  void* buf = nullptr;
  if (cuda_malloc == nullptr || memset_async == nullptr || stream_sync == nullptr || cuda_malloc(&buf, 1 << 20) != 0) {
    std::printf("cuda unavailable\n");
    return 3;
  }
  std::atomic<int> launched{0};
  std::thread launcher([&] {
    for (int i = 0; i < n; ++i) {
      memset_async(buf, i & 0xff, 1 << 20, nullptr);  // in flight while the main thread forks
      launched.fetch_add(1);
      if (i % 16 == 15) stream_sync(nullptr);
    }
    stream_sync(nullptr);
  });
  while (launched.load() < n / 2) std::this_thread::yield();
  std::fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    nvtx_iterations(2);  // the child does no CUDA: a forked CUDA context is not usable
    std::exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  launcher.join();
  std::printf("cuda_fork done, child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

// A daemon's start: close every descriptor it did not open, then open a file of its own and
// write to it while recording. The file must hold its data and nothing else.
int closefds_mode(int n) {
  nvtx_iterations(n);
  usleep(300'000);  // the capture exists and has been written to
  bool closed = false;
#ifdef SYS_close_range
  closed = syscall(SYS_close_range, 3u, ~0u, 0u) == 0;
#endif
  if (!closed) {
    for (int fd = 3; fd < 65536; ++fd) close(fd);
  }
  const char* path = "app-own.txt";
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    std::printf("cannot open own file\n");
    return 3;
  }
  std::string expected;
  for (int round = 0; round < 3; ++round) {
    std::string line = "own data " + std::to_string(round) + "\n";
    expected += line;
    if (write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 4;
    nvtx_iterations(n);
    usleep(250'000);  // a flush period or two while the file is open
  }
  close(fd);
  std::string got;
  if (FILE* f = std::fopen(path, "rb")) {
    char buf[4096];
    size_t k;
    while ((k = std::fread(buf, 1, sizeof buf, f)) > 0) got.append(buf, k);
    std::fclose(f);
  }
  std::printf("own file intact: %d (%zu bytes)\n", got == expected ? 1 : 0, got == expected ? got.size() : 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "nvtx";
  int n = argc > 2 ? std::atoi(argv[2]) : 10;
  if (mode == "nvtx") {
    nvtxNameOsThreadA(static_cast<uint32_t>(gettid()), "main-thread");
    nvtx_iterations(n);
    std::printf("nvtx done %d\n", n);
    return 7;
  }
  if (mode == "nvtx_domains") {
    nvtx_domain_iterations(n);
    std::printf("nvtx_domains done %d\n", n);
    return 0;
  }
  if (mode == "nvtx_names") {
    nvtx_names();
    std::printf("nvtx_names done\n");
    return 0;
  }
  if (mode == "nvtx_domain_churn") {
    nvtx_domain_churn(n);
    std::printf("nvtx_domain_churn done %d\n", n);
    return 0;
  }
  if (mode == "nccl") {
    int rc = nccl_calls(n);
    std::printf("nccl done %d\n", n);
    return rc;
  }
  if (mode == "threads") {
    threads_mode(n);
    std::printf("threads done\n");
    return 0;
  }
  if (mode == "fork") return fork_mode(n);
  if (mode == "cuda_fork") return cuda_fork_mode(n);
  if (mode == "inject") {
    // Does what the CUDA driver does at initialisation when CUDA_INJECTION64_PATH is set.
    using Init = int (*)();
    auto init = reinterpret_cast<Init>(dlsym(RTLD_DEFAULT, "InitializeInjection"));
    if (init != nullptr) init();
    nvtx_iterations(n);
    std::printf("inject done\n");
    return 0;
  }
  if (mode == "exec") {
    // The same pid runs a new image; under LD_PRELOAD the hook loads again and writes its own
    // file. The pause lets the first image's records reach the disk before exec drops them.
    nvtx_iterations(n);
    std::printf("before exec\n");
    std::fflush(stdout);
    usleep(300'000);
    std::string count = std::to_string(n);
    execl("/proc/self/exe", argv[0], "nvtx", count.c_str(), static_cast<char*>(nullptr));
    return 9;
  }
  if (mode == "range_api") {
    nvtx_iterations(n);
    gpuhook_capture_start();
    nvtx_iterations(n);
    gpuhook_capture_stop();
    nvtx_iterations(n);
    std::printf("range_api done\n");
    return 0;
  }
  if (mode == "sigkill") {
    nvtx_iterations(n);
    std::printf("about to be killed\n");
    std::fflush(stdout);
    usleep(400'000);  // several flush periods: everything above is on disk
    raise(SIGKILL);
    return 0;
  }
  if (mode == "sigexit") {
    signal(SIGTERM, exit_from_handler);
    nvtx_iterations(n);
    std::printf("exiting from a handler\n");
    std::fflush(stdout);
    raise(SIGTERM);
    return 0;
  }
  if (mode == "ignored") {
    // Started with SIGTERM ignored: it must still be ignored, here and in an exec'd program.
    struct sigaction current{};
    sigaction(SIGTERM, nullptr, &current);
    std::printf("SIGTERM ignored: %d\n", current.sa_handler == SIG_IGN ? 1 : 0);
    raise(SIGTERM);
    std::printf("still running\n");
    return 0;
  }
  if (mode == "sigterm") {
    nvtx_iterations(n);
    std::printf("dying of SIGTERM\n");
    std::fflush(stdout);
    raise(SIGTERM);
    return 0;
  }
  if (mode == "sigabrt") {
    nvtx_iterations(n);
    std::printf("aborting\n");
    std::fflush(stdout);
    std::abort();
  }
  if (mode == "sigabrt_handled") {
    // A handler of the app's own that returns: abort() then kills without exit handlers.
    signal(SIGABRT, [](int) {
      const char text[] = "app saw SIGABRT\n";
      ssize_t ignored = write(STDERR_FILENO, text, sizeof text - 1);
      (void)ignored;
    });
    nvtx_iterations(n);
    std::printf("aborting\n");
    std::fflush(stdout);
    std::abort();
  }
  if (mode == "terminate") {
    // What an NCCL watchdog thread does when it gives up: an exception nobody catches.
    nvtx_iterations(n);
    std::printf("terminating\n");
    std::fflush(stdout);
    std::terminate();
  }
  if (mode == "exec_flush") {
    // exec at once, within the flush period: the records above must reach this image's file.
    nvtx_iterations(n);
    std::printf("before exec\n");
    std::fflush(stdout);
    std::string count = std::to_string(n);
    execl("/proc/self/exe", argv[0], "nvtx", count.c_str(), static_cast<char*>(nullptr));
    return 9;
  }
  if (mode == "exec_fail") {
    // An exec that fails returns with its errno, and the program records on.
    nvtx_iterations(n);
    errno = 0;
    int rc = execl("/nonexistent/program", "program", static_cast<char*>(nullptr));
    std::printf("exec failed: rc=%d errno=%d\n", rc, errno);
    nvtx_iterations(n);
    return 0;
  }
  if (mode == "segv" || mode == "fpe") {
    // Faults early (well within the first flush period), after N kernels and N iterations.
    const int launched = launch_kernels(n);
    nvtx_iterations(n);
    std::printf("%d kernels launched, faulting (%s)\n", launched, mode.c_str());
    std::fflush(stdout);
    fault(mode);
  }
  if (mode == "segv_handled") {
    // The app's own SIGSEGV handler was there first (the hook comes in through
    // NVTX_INJECTION64_PATH, later): it says so, puts the default back and returns, and the
    // fault, run again, kills.
    signal(SIGSEGV, [](int) {
      const char text[] = "app saw SIGSEGV\n";
      ssize_t ignored = write(STDERR_FILENO, text, sizeof text - 1);
      (void)ignored;
      signal(SIGSEGV, SIG_DFL);
    });
    nvtx_iterations(n);
    std::printf("faulting\n");
    std::fflush(stdout);
    fault("segv");
  }
  if (mode == "segv_recovered") {
    // A handler installed after the hook's that recovers from each fault (as runtimes that use
    // faults on purpose do): the program runs on and exits normally.
    struct sigaction sa{};
    sa.sa_handler = [](int) { siglongjmp(g_recover, 1); };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    int recovered = 0;
    for (int i = 0; i < 3; ++i) recovered += iterations_then_fault(n) ? 1 : 0;
    std::printf("recovered from %d faults\n", recovered);
    return 0;
  }
  if (mode == "exec_chain") {
    // N more images of this program, each doing an iteration of ranges: exec_chain 3 runs 4.
    nvtx_iterations(1);
    std::printf("image %d\n", n);
    std::fflush(stdout);
    if (n == 0) return 0;
    std::string count = std::to_string(n - 1);
    execl("/proc/self/exe", argv[0], "exec_chain", count.c_str(), static_cast<char*>(nullptr));
    return 9;
  }
  if (mode == "closefds") return closefds_mode(n);
  if (mode == "sigterm_big") {
    // Many records, then SIGTERM: the exit must not wait for a slow writer without bound.
    for (int i = 0; i < n; ++i) {
      char name[48];
      std::snprintf(name, sizeof(name), "range-%d-with-a-longer-name", i);
      nvtxRangePushA(name);
      nvtxRangePop();
    }
    std::printf("dying of SIGTERM after %d\n", n);
    std::fflush(stdout);
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    std::fprintf(stderr, "raise at %lld\n", static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
    raise(SIGTERM);
    return 0;
  }
  if (mode == "big") {
    // Enough records to pass a small RLIMIT_FSIZE and to overflow small rings.
    for (int i = 0; i < n; ++i) {
      char name[48];
      std::snprintf(name, sizeof(name), "range-%d-with-a-longer-name", i);
      nvtxRangePushA(name);
      nvtxRangePop();
    }
    std::printf("big done %d\n", n);
    return 0;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
