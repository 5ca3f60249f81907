// The hook's one entry file: three doors into one idempotent start.
//   - the LD_PRELOAD constructor (every process the library is preloaded into),
//   - InitializeInjection(), called by the CUDA driver for CUDA_INJECTION64_PATH,
//   - InitializeInjectionNvtx2(), called by NVTX for NVTX_INJECTION64_PATH.
// Plus the process lifecycle: exit, SIGINT/SIGTERM/SIGABRT, std::terminate, fork, exec.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>

#include <gpuhook/v1/capture.pb.h>
#include "clock.h"
#include "config.h"
#include "cupti_tracer.h"
#include "env_names.h"
#include "nvml_sampler.h"
#include "pm_sampler.h"
#include "nvtx_range_window.h"
#include "recorder.h"
#include "visibility.h"
#include "writer.h"

extern "C" void gpuhook_api_mark(const char* name);  // the symbol preloaded() looks for

namespace gpuhook::hook {

extern std::atomic<bool> g_nccl_enabled;
extern std::atomic<bool> g_host_func_enabled;
int resolve_nccl();
int resolve_exec();
int install_nvtx(NvtxGetExportTableFunc_t get_export_table);
void annotate_range(v1::RangeType type, const char* name);
void annotate_memory(const void* ptr, const char* category);

namespace {

enum State : int { kIdle = 0, kStarting = 1, kRunning = 2, kStopped = 3 };
std::atomic<int> g_state{kIdle};
const Config* g_config = nullptr;
std::atomic<Writer*> g_writer{nullptr};
std::atomic<NvmlSampler*> g_nvml{nullptr};  // GPUHOOK_NVML_HZ; started with CUDA
std::atomic<NvmlSampler*> g_nvml_stopped{nullptr};  // the stopped sampler (stop_nvml)
std::atomic<PmSampler*> g_pm{nullptr};  // GPUHOOK_METRICS; started with CUPTI
std::atomic<PmSampler*> g_pm_stopped{nullptr};
Writer* g_parent_writer = nullptr;  // in a fork child: the parent's, never used again
std::atomic<bool> g_cuda_started{false};
// The process the running writer belongs to: a vfork child shares this memory but not the pid.
std::atomic<pid_t> g_pid{0};
// A fatal signal or std::terminate came: the exit that follows is bounded by exit_ms.
std::atomic<bool> g_dying{false};
struct sigaction g_previous[NSIG];
// SIGABRT: abort(), what NCCL's watchdog and failed assertions end in. The faults: a crash in
// the first flush period otherwise left no capture at all (issue 44).
const int kFlushSignals[] = {SIGINT, SIGTERM, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
// stop_all's progress, for a second thread that faults while another finishes the file.
enum StopProgress : int { kNotStopping = 0, kStopping = 1, kStopDone = 2 };
std::atomic<int> g_stop_progress{kNotStopping};
std::terminate_handler g_previous_terminate = nullptr;

void say(const std::string& line) {
  std::string text = "gpuhook: " + line + "\n";
  ssize_t ignored = write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

// The signal-path variant of say(): a fixed buffer, write(2), no allocation. Texts and numbers
// are concatenated in order, a number as decimal; the line is written when the temporary ends:
//   RawLine() << "text " << n;
class RawLine {
 public:
  RawLine() = default;
  RawLine(const RawLine&) = delete;
  RawLine& operator=(const RawLine&) = delete;
  ~RawLine() {
    buf_[used_++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, buf_, used_);
    (void)ignored;
  }
  RawLine& operator<<(const char* text) {
    while (*text != '\0' && used_ < sizeof(buf_) - 1) buf_[used_++] = *text++;
    return *this;
  }
  RawLine& operator<<(uint64_t n) {
    char digits[24];
    size_t k = 0;
    do {
      digits[k++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n != 0);
    while (k != 0 && used_ < sizeof(buf_) - 1) buf_[used_++] = digits[--k];
    return *this;
  }

 private:
  char buf_[256] = "gpuhook: ";
  size_t used_ = 9;
};

// Records still in the rings: what a writer that ran out of time leaves unwritten.
uint64_t records_in_rings() {
  uint64_t n = 0;
  for (Ring* ring = recorder().rings.first(); ring != nullptr; ring = ring->next) n += ring->pending();
  return n;
}

void wake_writer() {
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->wake();
}

void set_window(uint64_t open_ns, uint64_t close_ns) {
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->set_window(open_ns, close_ns);
}
void open_window(uint64_t number, uint64_t open_ns) {
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->open_window(number, open_ns);
}
void close_window(uint64_t number, uint64_t close_ns) {
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->close_window(number, close_ns);
}

std::string read_first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

ProcessFacts gather_facts(const Config& c) {
  ProcessFacts f;
  if (!c.test_host.empty()) {
    f.host = c.test_host;
  } else {
    char host[HOST_NAME_MAX + 1] = {};
    gethostname(host, sizeof(host) - 1);
    f.host = host;
  }
  f.boot_id = c.test_boot_id.empty() ? read_first_line("/proc/sys/kernel/random/boot_id") : c.test_boot_id;
  f.pid = static_cast<uint32_t>(getpid());
  f.ppid = static_cast<uint32_t>(getppid());
  std::ifstream cmd("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(cmd, arg, '\0')) f.command_line.push_back(arg);
  // The pair read together; the offset moves the monotonic side only, so REALTIME anchors
  // of the alignment tests stay true.
  f.start_monotonic_raw_ns = now_ns();
  f.start_realtime_ns = realtime_ns();
  return f;
}

std::string self_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&say), &info) == 0 || info.dli_fname == nullptr) return {};
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) == nullptr) return info.dli_fname;
  return resolved;
}

// Preloaded (or linked by the program) means: the program's global symbol lookup finds this
// copy. Looking for "gpuhook" in LD_PRELOAD missed a renamed copy, which then recorded nothing
// and said nothing. The CUDA driver's dlopen of CUDA_INJECTION64_PATH is not
// in that lookup: RTLD_LOCAL never, RTLD_GLOBAL only after the constructors ran.
bool preloaded() {
  void* program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
  if (program == nullptr) return false;
  void* found = dlsym(program, "gpuhook_api_mark");
  dlclose(program);
  // Compared by the object that holds it: a program that takes the function's address may
  // make its own PLT slot the function's address everywhere.
  Dl_info theirs{}, mine{};
  return found != nullptr && dladdr(found, &theirs) != 0 && dladdr(reinterpret_cast<void*>(&say), &mine) != 0 &&
         theirs.dli_fbase == mine.dli_fbase;
}

// Stops the NVML sampler once (the exit handler and stop_all both ask). Nothing here
// allocates: it runs in signal handlers too. Bounded by exit_ms (GPUHOOK_EXIT_MS, 1 s), as the
// PM sampler: it stops at once when its thread runs, but on a loaded machine that thread may
// not run for over 100 ms (the bound this had), and the app's stderr got a second line.
void stop_nvml() {
  NvmlSampler* s = g_nvml.exchange(nullptr, std::memory_order_acq_rel);
  if (s == nullptr) return;
  // Kept, not deleted (no free in a signal handler, and a sampler that did not stop may still
  // run): held here for the process's life, LeakSanitizer sees it as reachable.
  g_nvml_stopped.store(s, std::memory_order_release);
  if (!s->stop(g_config->exit_ms)) RawLine() << "the NVML sampler did not stop within " << uint64_t{g_config->exit_ms} << " ms";
}

// As stop_nvml, for the PM sampler: its last decode and the hardware's stop and disable take a
// few ms on the simulator, unmeasured on a GPU; bounded by exit_ms (GPUHOOK_EXIT_MS, 1 s) so
// that its samples reach the writer before it stops, and a wedged driver cannot hang the exit.
void stop_pm() {
  PmSampler* s = g_pm.exchange(nullptr, std::memory_order_acq_rel);
  if (s == nullptr) return;
  g_pm_stopped.store(s, std::memory_order_release);
  if (!s->stop(g_config->exit_ms)) RawLine() << "the PM sampler did not stop within " << uint64_t{g_config->exit_ms} << " ms";
}

// Ends recording and finishes the file. Runs in signal handlers: nothing here allocates.
//   timeout_ms: a normal exit waits up to 10 s (a CUPTI wedged by a dying CUDA must not turn
//   into a hung exit); a dying process (signal, terminate) only exit_ms, and hurries
//   (Writer::stop): 3-6 s of SIGTERM delay were measured at zstd level 19.
void stop_all_unguarded(bool dying);
void stop_all(bool dying) {
  int expected = kRunning;
  if (!g_state.compare_exchange_strong(expected, kStopped)) return;
  g_stop_progress.store(kStopping, std::memory_order_release);
  stop_all_unguarded(dying);
  g_stop_progress.store(kStopDone, std::memory_order_release);
}

void stop_all_unguarded(bool dying) {
  // The sampler first, so that it is out of NVML before the process tears libraries down; a
  // read takes microseconds (20 ms for PCIe), so 100 ms is ample and bounds a wedged driver.
  stop_nvml();
  stop_pm();
  recorder().enabled.store(false, std::memory_order_release);
  Writer* w = g_writer.load(std::memory_order_acquire);
  if (w == nullptr) return;
  const uint32_t timeout_ms = dying ? g_config->exit_ms : 10'000;
  if (!w->stop(timeout_ms, dying)) {
    if (w->on_writer_thread()) {
      RawLine() << "the writer thread itself is ending the process; the capture ends at its last flush";
    } else {
      RawLine() << "the writer did not finish within " << uint64_t{timeout_ms} << " ms; at least "
                << records_in_rings() << " records not written, the capture ends at its last flush";
    }
    return;
  }
  if (!g_config->quiet && w->file_opened() && !w->summary().empty()) {
    // write(2) only: this can run inside a signal handler.
    const std::string& line = w->summary();
    ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
    ignored = write(STDERR_FILENO, "\n", 1);
    (void)ignored;
  }
}

void on_exit_handler() { stop_all(g_dying.load(std::memory_order_acquire)); }

bool is_fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGABRT: return "SIGABRT";
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "a signal";
  }
}

// Returning from the handler runs the faulting instruction again, which faults again, now with
// the program's own disposition: the kernel's siginfo and the faulting context are the
// program's own, in the exit status and in a core dump. Only for a fault the kernel raised at
// an instruction (si_code > 0); one sent by kill/raise (si_code <= 0) or a machine check
// reported after the fact would not recur, and is raised again instead.
bool fault_recurs(int sig, const siginfo_t* info) {
  if (!is_fault(sig) || info == nullptr || info->si_code <= 0) return false;
#ifdef BUS_MCEERR_AO
  if (sig == SIGBUS && info->si_code == BUS_MCEERR_AO) return false;
#endif
  return true;
}

// The process dies of `sig` once this returns: finish the file (the flight recorder writes its
// crash dump) within exit_ms. Only async-signal-safe calls on this thread: sem_post, sem_trywait,
// nanosleep, clock_gettime, write (stop_all, Writer::stop). The writing itself is the writer
// thread's: it drains the lock-free rings, has CUPTI flush its buffers, compresses and writes
// the last chunks, the footer and the index. That thread holds none of this thread's locks, but
// it may need one: malloc's, when the fault corrupted the heap or hit inside malloc, or CUPTI's,
// when it hit inside CUDA. Then the wait ends at exit_ms and the capture ends at its last flush
// (every chunk flushed until then is on disk, whole: readable, without footer or index). A
// file the writer has not created yet (no record reached it) stays uncreated. A fault on the
// writer thread itself, where every signal is blocked, kills at once (the kernel's rule for a
// blocked fault): the file then also ends at its last flush.
void finish_before_dying(int sig) {
  // A vfork child shares this memory: the writer is its parent's, to be left alone.
  if (getpid() != g_pid.load(std::memory_order_relaxed)) return;
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->note_dying(signal_name(sig));
  stop_all(true);
  // Another thread is finishing the file (it faulted first, or the program is exiting): dying
  // now would cut its work short. Bounded as its own wait is.
  if (g_stop_progress.load(std::memory_order_acquire) != kStopping || g_config == nullptr) return;
  const uint64_t deadline_ns = now_ns() + (uint64_t{g_config->exit_ms} + 100) * 1'000'000u;
  while (g_stop_progress.load(std::memory_order_acquire) == kStopping && now_ns() < deadline_ns) {
    timespec pause{0, 1'000'000};
    nanosleep(&pause, nullptr);
  }
}

void on_signal(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_handler == SIG_IGN) {
    errno = saved_errno;
    return;
  }
  // A fault the app's own handler may repair (a runtime that faults on purpose) is no sign of
  // an end: its exit stays a normal one.
  if (!is_fault(sig) || (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_DFL))
    g_dying.store(true, std::memory_order_release);
  if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_DFL) {
    // The process is about to die of this signal: finish the file, then die the same way.
    finish_before_dying(sig);
    sigaction(sig, &prev, nullptr);
    if (!fault_recurs(sig, info)) raise(sig);  // pending until this handler returns
    errno = saved_errno;
    return;
  }
  Writer* w = g_writer.load(std::memory_order_acquire);
  if ((sig == SIGABRT || is_fault(sig)) && w != nullptr && g_state.load(std::memory_order_acquire) == kRunning &&
      getpid() == g_pid.load(std::memory_order_relaxed)) {
    // abort() kills the process once the app's handler returns, with no exit handlers, and so
    // does a fault its handler does not repair (most crash handlers print and die): what was
    // recorded goes to disk now, recording goes on in case the handler does not return, or
    // repairs the fault (a runtime that faults on purpose pays a flush, about a millisecond,
    // per fault).
    if (!w->flush_now(g_config->exit_ms)) {
      RawLine() << "the writer did not flush within " << uint64_t{g_config->exit_ms} << " ms of " << signal_name(sig);
    }
  } else if (w != nullptr) {
    // The app handles it and may run on: flush soon, keep recording.
    w->wake();
  }
  if (prev.sa_flags & SA_SIGINFO) prev.sa_sigaction(sig, info, context);
  else prev.sa_handler(sig);
  errno = saved_errno;
}

void install_signal_handlers() {
  for (int sig : kFlushSignals) {
    struct sigaction current{};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    // An ignored signal stays ignored, and untouched: a handler would be reset to default
    // across exec where SIG_IGN is inherited (nohup, background jobs).
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
    g_previous[sig] = current;
    struct sigaction ours{};
    ours.sa_sigaction = &on_signal;
    ours.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    if (is_fault(sig)) {
      // On the program's alternate stack when it set one for this thread (a stack overflow
      // can be reported only there; without one the kernel kills, hook or not). A second
      // fault inside the handler kills at once instead of entering it again.
      ours.sa_flags |= SA_ONSTACK;
      for (int f : kFlushSignals)
        if (is_fault(f)) sigaddset(&ours.sa_mask, f);
    }
    sigaction(sig, &ours, nullptr);
  }
}

// GPUHOOK_FLIGHT_SIGNAL (SIGUSR2 by default): the flight recorder writes what it keeps. Only
// set when the flight recorder is on (the user asked for it); a handler the program had is
// called after, its SIG_IGN or default (which would end the process) is not.
struct sigaction g_previous_flight{};

void on_flight_signal(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->request_dump(Writer::Trigger::kSignal);
  if (g_previous_flight.sa_flags & SA_SIGINFO) g_previous_flight.sa_sigaction(sig, info, context);
  else if (g_previous_flight.sa_handler != SIG_DFL && g_previous_flight.sa_handler != SIG_IGN) g_previous_flight.sa_handler(sig);
  errno = saved_errno;
}

void install_flight_signal(int sig) {
  if (sig <= 0 || sig >= NSIG) return;
  if (sigaction(sig, nullptr, &g_previous_flight) != 0) return;
  struct sigaction ours{};
  ours.sa_sigaction = &on_flight_signal;
  ours.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  sigaction(sig, &ours, nullptr);
}

// std::terminate (an exception nobody caught, e.g. on a watchdog thread): finish the file, then
// the previous handler, which normally prints and aborts.
[[noreturn]] void on_terminate() {
  g_dying.store(true, std::memory_order_release);
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->note_dying("std::terminate");
  stop_all(true);
  if (g_previous_terminate != nullptr) g_previous_terminate();
  std::abort();
}

void on_fork_child() {
  if (g_state.load() != kRunning) return;
  g_pid.store(getpid(), std::memory_order_relaxed);
  // The parent's writer thread does not exist here and its Writer belongs to the parent's
  // file: leave it untouched (leaked) and start this process's own.
  reset_rings_after_fork();
  // The parent's writer has no thread here: stopping it at exit would wait for nothing. It
  // stays reachable (not freed: its state may be mid-operation from the parent's thread).
  g_parent_writer = g_writer.exchange(nullptr, std::memory_order_acq_rel);
  // Nor does the parent's NVML sampler: the child samples nothing (it cannot use CUDA either).
  g_nvml.store(nullptr, std::memory_order_release);
  g_pm.store(nullptr, std::memory_order_release);
  recorder().writer_alive.store(false, std::memory_order_release);
  Writer* w = nullptr;
  try {
    w = new Writer(*g_config, gather_facts(*g_config));
  } catch (...) {
    recorder().enabled.store(false);
    say("cannot start recording in the child (out of memory?); this child records nothing");
    return;
  }
  w->add_features((g_config->nccl ? v1::FEATURE_NCCL : 0) | (g_config->nvtx ? v1::FEATURE_NVTX : 0));
  std::string why;
  if (!w->start(&why)) {
    recorder().enabled.store(false);
    say(why + "; this child records nothing");
  }
  g_writer.store(w, std::memory_order_release);
  window_after_fork();
}

void start_unguarded();

// Every door goes through here. An exception (allocation failure) must not reach the app's
// constructor or the CUDA driver: the hook then stays off and says so once.
void start_once() {
  int expected = kIdle;
  if (!g_state.compare_exchange_strong(expected, kStarting)) {
    while (g_state.load(std::memory_order_acquire) == kStarting) sched_yield();
    return;
  }
  try {
    start_unguarded();
  } catch (...) {
    say("could not start (out of memory?); nothing recorded");
    recorder().enabled.store(false);
    g_state.store(kStopped);
  }
}

void start_unguarded() {
  std::vector<std::string> problems;
  auto* config = new Config(parse_config([](const char* n) { return std::getenv(n); }, &problems));
  for (const std::string& p : problems) say(p);
  g_config = config;
  g_clock_offset_ns = config->test_clock_offset_ns;
  recorder().config = config;

  if (preloaded()) {
    // Point CUDA and NVTX back at this library so they call the other two doors, but only
    // where nobody chose another tool.
    std::string self = self_path();
    if (!self.empty()) {
      if (config->cuda) setenv(env::kCudaInjection, self.c_str(), 0);
      if (config->nvtx) setenv(env::kNvtxInjection, self.c_str(), 0);
    }
    // Later images of this process (exec) and the processes it starts take a free suffix where
    // the capture name exists (env_names.h). Set here, in the constructor, where the program
    // has no other thread yet to read the environment while it changes.
    setenv(env_internal::kRunPid, std::to_string(getpid()).c_str(), 0);
  }
  auto* writer = new Writer(*config, gather_facts(*config));
  writer->add_features((config->nccl ? v1::FEATURE_NCCL : 0) | (config->nvtx ? v1::FEATURE_NVTX : 0));
  std::string why;
  if (!writer->start(&why)) {
    say(why + "; nothing recorded");
    g_state.store(kStopped);
    return;
  }
  g_writer.store(writer, std::memory_order_release);
  window_configure(&config->range, &set_window, &open_window, &close_window, config->seed);
  recorder().wake_writer.store(&wake_writer, std::memory_order_release);
  if (config->nccl) {
    resolve_nccl();
    g_nccl_enabled.store(true, std::memory_order_release);
  }
  resolve_exec();
  if (config->cuda) g_host_func_enabled.store(true, std::memory_order_release);
  recorder().enabled.store(true, std::memory_order_release);
  std::atexit(&on_exit_handler);
  pthread_atfork(nullptr, nullptr, &on_fork_child);
  install_signal_handlers();
  if (config->flight_ns != 0) install_flight_signal(config->flight_signal);
  g_previous_terminate = std::set_terminate(&on_terminate);
  g_pid.store(getpid(), std::memory_order_relaxed);
  g_state.store(kRunning, std::memory_order_release);
}

__attribute__((constructor)) void on_load() { start_once(); }

}  // namespace

// exec_hooks.cpp, before the real exec: the image that recorded is about to vanish without
// exit handlers, so what it recorded goes to disk first. Bounded by exit_ms;
// errno is the caller's business (exec_hooks.cpp keeps it). If exec fails, recording goes on.
void flush_before_exec() {
  if (g_state.load(std::memory_order_acquire) != kRunning) return;
  // A vfork child shares this memory and runs no fork handler: it must touch nothing of ours.
  if (getpid() != g_pid.load(std::memory_order_relaxed)) return;
  Writer* w = g_writer.load(std::memory_order_acquire);
  if (w == nullptr) return;
  if (!w->flush_now(g_config->exit_ms)) {
    RawLine() << "the writer did not flush within " << uint64_t{g_config->exit_ms}
              << " ms before exec; records since its last flush are lost";
  }
}
}  // namespace gpuhook::hook

using namespace gpuhook::hook;
namespace v1 = gpuhook::v1;

namespace {
CuptiTracer* initialize_cuda();
}  // namespace

extern "C" GPUHOOK_EXPORT int InitializeInjection(void) {
  start_once();
  if (g_state.load() != kRunning || !g_config->cuda || g_cuda_started.exchange(true)) return 1;
  CuptiTracer* tracer = nullptr;
  try {
    tracer = initialize_cuda();
  } catch (...) {
    say("CUPTI set-up failed (out of memory?); GPU tracing off");
  }
  // NVML needs no profiling permission: it samples whether CUPTI came up or not.
  const int saved_errno = errno;
  try {
    std::string why;
    NvmlSampler* sampler = NvmlSampler::start(*g_config, &why);
    if (sampler != nullptr) {
      g_nvml.store(sampler, std::memory_order_release);
      // Exit runs handlers and static destructors in reverse order: registered now, the stop
      // runs before the destructors of everything constructed so far (NVML's own state, the
      // CUDA library's), which the sampler must not call into once they are gone.
      std::atexit(&stop_nvml);
    } else if (!why.empty()) {
      say(why);
    }
  } catch (...) {
    say("NVML set-up failed (out of memory?); no GPU metrics");
  }
  // PM sampling goes through the CUPTI the tracer loaded; without it, it cannot run.
  if (g_config->pm_metrics != 0) {
    const bool nvml = g_nvml.load(std::memory_order_acquire) != nullptr;
    try {
      std::string why;
      PmSampler* pm = tracer != nullptr ? PmSampler::start(*g_config, tracer->api(), nvml, &why) : nullptr;
      if (tracer == nullptr) why = PmSampler::refusal_text("CUPTI is not in use", nvml);
      if (pm != nullptr) {
        g_pm.store(pm, std::memory_order_release);
        std::atexit(&stop_pm);
      } else if (!why.empty()) {
        say(why);
      }
    } catch (...) {
      say(PmSampler::refusal_text("out of memory", nvml));
    }
  }
  errno = saved_errno;
  return 1;
}

namespace {
CuptiTracer* initialize_cuda() {
  Writer* w = g_writer.load(std::memory_order_acquire);
  std::string why;
  CuptiTracer* tracer = CuptiTracer::start(*g_config, &why);
  if (tracer == nullptr) {
    say(why);
    w->set_note(why);
    return nullptr;
  }
  w->set_cupti_version(tracer->version());
  w->set_note(tracer->notes());
  w->add_features(v1::FEATURE_HOST_CLOCK_CALLBACK | (tracer->latency_timestamps() ? v1::FEATURE_LATENCY_TIMESTAMPS : 0) |
                  (tracer->simulated() ? v1::FEATURE_SIMULATOR : 0) |
                  (tracer->system_thread_ids() ? v1::FEATURE_SYSTEM_THREAD_IDS : 0));
  w->set_gpu_source(tracer);
  // Registered during CUDA's initialisation, so it runs before the runtime's own exit
  // teardown: the last buffers are flushed while CUDA can still deliver them.
  std::atexit(&on_exit_handler);
  return tracer;
}
}  // namespace

extern "C" GPUHOOK_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  start_once();
  if (g_state.load() != kRunning || !g_config->nvtx) return 0;
  return install_nvtx(get_export_table);
}

extern "C" GPUHOOK_EXPORT void gpuhook_api_range_push(const char* name) {
  if (g_state.load(std::memory_order_relaxed) == kRunning) annotate_range(v1::RANGE_PUSH, name);
}
extern "C" GPUHOOK_EXPORT void gpuhook_api_range_pop(void) {
  if (g_state.load(std::memory_order_relaxed) == kRunning) annotate_range(v1::RANGE_POP, nullptr);
}
extern "C" GPUHOOK_EXPORT void gpuhook_api_mark(const char* name) {
  if (g_state.load(std::memory_order_relaxed) == kRunning) annotate_range(v1::RANGE_MARK, name);
}
extern "C" GPUHOOK_EXPORT void gpuhook_api_mem_tag(const void* ptr, const char* category) {
  if (g_state.load(std::memory_order_relaxed) == kRunning) annotate_memory(ptr, category);
}
extern "C" GPUHOOK_EXPORT void gpuhook_api_trigger(const char* reason) {
  if (g_state.load(std::memory_order_relaxed) != kRunning) return;
  if (Writer* w = g_writer.load(std::memory_order_acquire)) w->request_dump(Writer::Trigger::kCall, reason ? reason : "");
}
extern "C" GPUHOOK_EXPORT void gpuhook_api_capture_start(void) { profiler_window_start(); }
extern "C" GPUHOOK_EXPORT void gpuhook_api_capture_stop(void) { profiler_window_stop(); }
