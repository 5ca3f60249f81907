// `gantt-cli record [options] -- CMD ARGS...`: runs a program under libgpuhook.so.
//
// The child inherits our environment plus LD_PRELOAD and the GPUHOOK_* variables the flags
// set; its exit status becomes ours (128+N when a signal N killed it), so `record` can wrap
// a command in scripts and CI without changing what they see.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <gpuhook/capture.h>
#include <gpuhook/settings.h>

#include "commands.h"
#include "gantt/scan/open.h"

namespace gantt_cli {
namespace {

struct RecordOptions {
  std::string output;  // GPUHOOK_OUTPUT pattern
  std::string api;
  std::string range;
  std::string on_full;
  std::string nvml_hz;  // GPUHOOK_NVML_HZ, "" = the hook's default
  std::string metrics;     // GPUHOOK_METRICS, "" = no PM sampling
  std::string metrics_hz;  // GPUHOOK_METRICS_HZ, "" = the hook's default
  bool no_nvtx = false;
  bool no_nccl = false;
  bool no_cuda = false;
  bool mem_use = false;
  bool sectors = false;
  bool quiet = false;
  std::string render;  // draw the capture here when the command ends
  std::vector<std::string> command;
};

volatile sig_atomic_t g_child_pid = 0;

// Forward only signals sent to us by another process (kill, a job scheduler, timeout(1)).
// A Ctrl-C at the terminal already reached the child through the process group; sending it
// a second SIGINT would turn one graceful stop into two (many programs abort on the second).
void forward_signal(int sig, siginfo_t* info, void*) {
  const pid_t child = g_child_pid;
  if (child > 0 && info != nullptr && info->si_code <= 0) kill(child, sig);
}

std::string exe_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

bool is_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// GPUHOOK_LIB wins; otherwise the installed layout (bin/ next to lib/), then the build tree
// (build/tools/gantt-cli/gantt-cli next to build/libhook/libgpuhook.so).
std::string find_hook_library(std::string* tried) {
  if (const char* lib = std::getenv("GPUHOOK_LIB"); lib != nullptr && *lib != '\0') {
    *tried = lib;
    return is_file(lib) ? std::filesystem::absolute(lib).string() : std::string();
  }
  const std::string dir = exe_dir();
  const std::vector<std::string> candidates = {
      dir + "/" GPUHOOK_LIBDIR_FROM_BINDIR "/libgpuhook.so", dir + "/../lib/libgpuhook.so", dir + "/../lib64/libgpuhook.so",
      dir + "/../../libhook/libgpuhook.so", dir + "/libgpuhook.so",
  };
  for (const auto& c : candidates) {
    if (!tried->empty()) *tried += ", ";
    *tried += c;
    if (is_file(c)) return std::filesystem::weakly_canonical(c).string();
  }
  return {};
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// The capture's name is the hook's to choose (%p is the pid of whichever process records);
// we find it by listing files in the pattern's directory that match the pattern with the
// fields it can expand unknown, and that appeared while the command ran.
struct PatternMatcher {
  std::filesystem::path dir;
  std::string file_pattern;

  static PatternMatcher from(const std::string& pattern) {
    std::filesystem::path p(pattern.empty() ? gpuhook::settings::kDefaultOutputPattern : pattern);
    PatternMatcher m;
    m.dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
    m.file_pattern = p.filename().string();
    return m;
  }

  // %h = our host, %p/%r = any run of characters, %% = '%'. Or the same with the hook's suffix
  // for a name that existed (libhook/writer.cpp, suffixed_path): every later image of an exec
  // chain, every process after the first that shares the name, writes NAME.N.EXT.
  bool matches(const std::string& name, const std::string& host) const {
    return match(file_pattern, 0, name, 0, host) || match(file_pattern, 0, without_suffix(name), 0, host);
  }

  // run.3.gpuh -> run.gpuh, run.3 -> run; "" when the name has no such suffix.
  static std::string without_suffix(const std::string& name) {
    size_t ext = name.rfind('.');
    if (ext == std::string::npos) return {};
    auto digits_before = [&name](size_t end) {  // start of the ".N" that ends at `end`, or npos
      size_t k = end;
      while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') --k;
      return k < end && k > 1 && name[k - 1] == '.' ? k - 1 : std::string::npos;
    };
    if (const size_t dot = digits_before(name.size()); dot != std::string::npos) return name.substr(0, dot);
    if (ext == 0) return {};
    if (const size_t dot = digits_before(ext); dot != std::string::npos) return name.substr(0, dot) + name.substr(ext);
    return {};
  }

 private:
  static bool match(const std::string& pat, size_t pi, const std::string& s, size_t si, const std::string& host) {
    while (pi < pat.size()) {
      if (pat[pi] == '%' && pi + 1 < pat.size()) {
        const char f = pat[pi + 1];
        if (f == 'h') {
          if (s.compare(si, host.size(), host) != 0) return false;
          si += host.size();
          pi += 2;
          continue;
        }
        if (f == 'p' || f == 'r') {
          for (size_t k = si + 1; k <= s.size(); ++k)
            if (match(pat, pi + 2, s, k, host)) return true;
          return false;
        }
        if (f == '%') {
          if (si >= s.size() || s[si] != '%') return false;
          ++si;
          pi += 2;
          continue;
        }
      }
      if (si >= s.size() || s[si] != pat[pi]) return false;
      ++si;
      ++pi;
    }
    return si == s.size();
  }
};

std::vector<std::string> new_captures(const PatternMatcher& m, const std::string& host,
                                      std::filesystem::file_time_type since) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(m.dir, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    if (!m.matches(entry.path().filename().string(), host)) continue;
    if (entry.last_write_time(ec) < since) continue;
    out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The hook's notice when the capture range never opened ("" when it did, or none was asked
// for). Reading stops at the first event: a capture that recorded something is not read through.
std::string range_never_opened(const std::string& path) {
  try {
    const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, gpuhook::ReaderOptions{false, 0, 0});
    gpuhook::CaptureReader& reader = *opened_reader;
    gpuhook::v1::Record r;
    while (reader.next(r)) {
      switch (r.kind_case()) {
        case gpuhook::v1::Record::kNotice:
          if (r.notice().kind() == gpuhook::v1::NOTICE_RANGE_NEVER_OPENED) return r.notice().text();
          break;
        case gpuhook::v1::Record::kApi: case gpuhook::v1::Record::kKernel: case gpuhook::v1::Record::kMemcpy:
        case gpuhook::v1::Record::kRange: case gpuhook::v1::Record::kNccl:
          return {};
        default:
          break;
      }
    }
  } catch (const gpuhook::CaptureError&) {
  }
  return {};
}

void set_env(const char* name, const std::string& value) {
  if (!value.empty()) setenv(name, value.c_str(), 1);
}

// The command's exit code as a shell reports it; `started` is false when exec failed;
// `signal` (when given) is the signal that killed it, or 0.
int run_child(const std::vector<std::string>& command, bool* started, int* signal = nullptr) {
  *started = false;
  if (signal != nullptr) *signal = 0;
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // The exec error travels back over a close-on-exec pipe: EOF means exec succeeded.
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    std::cerr << "gantt-cli: record: pipe: " << std::strerror(errno) << "\n";
    return kExitError;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::cerr << "gantt-cli: record: fork: " << std::strerror(errno) << "\n";
    return kExitError;
  }
  if (pid == 0) {
    close(err_pipe[0]);
    execvp(argv[0], argv.data());
    const int e = errno;
    (void)!write(err_pipe[1], &e, sizeof e);
    _exit(127);
  }
  close(err_pipe[1]);
  g_child_pid = pid;
  int exec_errno = 0;
  ssize_t n;
  do n = read(err_pipe[0], &exec_errno, sizeof exec_errno);
  while (n < 0 && errno == EINTR);
  close(err_pipe[0]);

  int status = 0;
  pid_t r;
  do r = waitpid(pid, &status, 0);
  while (r < 0 && errno == EINTR);
  g_child_pid = 0;
  if (n == static_cast<ssize_t>(sizeof exec_errno)) {
    // As a shell does: 127 not found, 126 found but not runnable.
    std::cerr << "gantt-cli: record: cannot run '" << command[0] << "': " << std::strerror(exec_errno) << "\n";
    return exec_errno == ENOENT ? 127 : 126;
  }
  *started = true;
  if (r < 0) return kExitError;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    if (signal != nullptr) *signal = WTERMSIG(status);
    return 128 + WTERMSIG(status);
  }
  return kExitError;
}

int record(const RecordOptions& o) {
  if (o.command.empty()) {
    std::cerr << "gantt-cli: record: no command given (usage: gantt-cli record [options] -- CMD ARGS...)\n";
    return kExitError;
  }
  // The hook would ignore a setting it cannot parse, with one line, and record everything:
  // refuse it here instead, before the program runs (the same grammar, gpuhook/settings.h).
  if (!o.range.empty() && !gpuhook::settings::parse_range(o.range)) {
    std::cerr << "gantt-cli: record: --range '" << o.range
              << "' is not a range: all | cudaProfilerApi | nvtx:NAME[%N|~P][@FIRST[-LAST]] | time:DELAY[+DURATION|-END], "
                 "durations with a unit (2s, 500ms, 20us, 100ns); the program was not started\n";
    return kExitError;
  }
  if (!o.api.empty() && !gpuhook::settings::parse_api(o.api)) {
    std::cerr << "gantt-cli: record: --api '" << o.api
              << "' is not a list of launch, sync, memcpy, alloc (or all, none); the program was not started\n";
    return kExitError;
  }
  if (std::string unknown; !o.metrics.empty() && !gpuhook::settings::parse_metrics(o.metrics, &unknown)) {
    std::cerr << "gantt-cli: record: --metrics '" << o.metrics << "': unknown metric \"" << unknown
              << "\"; valid: " << gpuhook::settings::pm_metric_names_text() << " (or all); the program was not started\n";
    return kExitError;
  }
  // Where the captures go must be writable, and a fixed name must not exist yet (the hook never
  // overwrites a capture): both found out now, not after a long run that recorded nothing.
  {
    const char* env_pattern = std::getenv(gpuhook::env::kOutput);
    const std::string pattern = !o.output.empty()                     ? o.output
                                : env_pattern && *env_pattern != '\0' ? std::string(env_pattern)
                                                                      : std::string(gpuhook::settings::kDefaultOutputPattern);
    const PatternMatcher where = PatternMatcher::from(pattern);
    std::error_code ec;
    if (!std::filesystem::is_directory(where.dir, ec)) {
      std::cerr << "gantt-cli: record: the capture directory " << where.dir.string()
                << " does not exist (output pattern " << pattern << "); the program was not started\n";
      return kExitError;
    }
    if (access(where.dir.c_str(), W_OK | X_OK) != 0) {
      std::cerr << "gantt-cli: record: cannot write captures in " << where.dir.string() << ": " << std::strerror(errno)
                << "; the program was not started\n";
      return kExitError;
    }
    if (gpuhook::settings::fixed_output(pattern)) {
      const std::string path = gpuhook::settings::expand_output(pattern, host_name(), 0, std::nullopt);
      if (std::filesystem::exists(path, ec)) {
        std::cerr << "gantt-cli: record: " << path
                  << " exists and the hook never overwrites a capture: remove it, or put %p in the pattern; the program "
                     "was not started\n";
        return kExitError;
      }
    }
  }
  std::string tried;
  const std::string lib = find_hook_library(&tried);
  if (lib.empty()) {
    std::cerr << "gantt-cli: record: libgpuhook.so not found (looked at: " << tried
              << "); set GPUHOOK_LIB to its path\n";
    return kExitError;
  }
  // Prepend, keeping whatever the user already preloads.
  std::string preload = lib;
  const char* old_preload_env = std::getenv("LD_PRELOAD");
  const std::optional<std::string> old_preload =
      old_preload_env ? std::optional<std::string>(old_preload_env) : std::nullopt;
  if (old_preload && !old_preload->empty()) preload += ":" + *old_preload;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  set_env(gpuhook::env::kOutput, o.output);
  set_env(gpuhook::env::kApi, o.api);
  set_env(gpuhook::env::kRange, o.range);
  set_env(gpuhook::env::kOnFull, o.on_full);
  set_env(gpuhook::env::kNvmlHz, o.nvml_hz);
  set_env(gpuhook::env::kMetrics, o.metrics);
  set_env(gpuhook::env::kMetricsHz, o.metrics_hz);
  if (o.no_nvtx) setenv(gpuhook::env::kNvtx, "0", 1);
  if (o.no_nccl) setenv(gpuhook::env::kNccl, "0", 1);
  if (o.no_cuda) setenv(gpuhook::env::kCuda, "0", 1);
  if (o.quiet) setenv(gpuhook::env::kQuiet, "1", 1);
  if (o.mem_use) setenv(gpuhook::env::kMemUse, "1", 1);
  if (o.sectors) setenv(gpuhook::env::kSectors, "1", 1);

  const char* pattern_env = std::getenv(gpuhook::env::kOutput);
  const PatternMatcher matcher = PatternMatcher::from(pattern_env ? pattern_env : "");
  const std::string host = host_name();
  // File times have coarse granularity on some filesystems: allow one second of slack.
  const auto since = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(1);

  struct sigaction sa {};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {}, old_term {}, old_hup {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  bool started = false;
  int killed_by = 0;
  const int code = run_child(o.command, &started, &killed_by);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  if (!started) return code;

  const auto files = new_captures(matcher, host, since);
  // The program's own failure passes through; a run that succeeded and recorded nothing exits
  // kExitNothingRecorded, so a script does not go on to analyse an empty capture.
  const auto nothing = [&code] { return code == 0 ? kExitNothingRecorded : code; };
  if (files.empty()) {
    // The hook writes at exit: a command that died of a signal, or left by _exit() (which
    // skips exit handlers), never reached that point, whatever it used.
    std::cerr << "gantt-cli: record: no capture written (pattern " << matcher.file_pattern << " in "
              << matcher.dir.string() << "); ";
    if (killed_by != 0) {
      const char* abbrev = sigabbrev_np(killed_by);
      std::cerr << "the command was killed by signal " << killed_by << " (SIG" << (abbrev ? abbrev : "?")
                << ") before the hook could write what it recorded\n";
    } else {
      std::cerr << "the command exited with status " << code
                << ": either it used no CUDA, NCCL or NVTX, or it left through _exit() or a crash handler, "
                   "which skip the hook's flush at exit\n";
    }
  }
  for (const auto& f : files) std::cerr << "gantt-cli: record: capture " << f << "\n";
  if (files.empty()) return nothing();
  // A capture range that never opened: the hook says why in a notice (the names it saw).
  // The hook's exit line already says it unless it was quiet: then this line does.
  const char* quiet_env = std::getenv(gpuhook::env::kQuiet);
  const bool hook_quiet = o.quiet || (quiet_env != nullptr && std::string(quiet_env) == "1");
  size_t never_opened = 0;
  for (const auto& f : files) {
    const std::string why = range_never_opened(f);
    if (why.empty()) continue;
    ++never_opened;
    if (hook_quiet) std::cerr << "gantt-cli: record: " << f << ": " << why << "\n";
    else std::cerr << "gantt-cli: record: " << f << ": nothing recorded: the capture range never opened (the hook's line above says why)\n";
  }
  if (never_opened == files.size()) {
    if (!o.render.empty()) std::cerr << "gantt-cli: record: nothing to draw\n";
    return nothing();
  }

  if (!o.render.empty() && !files.empty()) {
    // The renderer must not run under the hook: it would record itself, and both carry the
    // capture schema, which protobuf refuses to register twice in one process.
    if (old_preload) setenv("LD_PRELOAD", old_preload->c_str(), 1);
    else unsetenv("LD_PRELOAD");
    // Drawing is the render subcommand's job: run it on the first capture, in a child so a
    // bad capture cannot take the recorded command's exit code away.
    const std::string self = exe_dir() + "/gantt-cli";
    bool render_started = false;
    const int rc = run_child({self, "render", files.front(), "-o", o.render}, &render_started);
    if (rc != 0) std::cerr << "gantt-cli: record: render to " << o.render << " failed (exit " << rc << ")\n";
    else std::cerr << "gantt-cli: record: chart " << o.render << "\n";
  }
  return code;
}

}  // namespace

void register_record(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<RecordOptions>();
  CLI::App* sub = app.add_subcommand(
      "record",
      "Run a command under libgpuhook.so and say where the capture went.\n"
      "The exit code is the command's own (128+N if signal N killed it; 127/126 if it\n"
      "could not be started; 2 for a usage error, or an output that cannot be written, found\n"
      "before the command starts; 3 when the command succeeded but nothing was recorded: no\n"
      "capture written, or the capture range never opened, with the reason and the NVTX range\n"
      "names that were pushed). SIGINT/SIGTERM/SIGHUP sent to gantt-cli\n"
      "are forwarded to the command. libgpuhook.so is found through GPUHOOK_LIB, else\n"
      "../lib/ next to gantt-cli, else the build tree.\n"
      "\n"
      "Example:\n"
      "  gantt-cli record -o train-%p.gpuh --range 'nvtx:train_step@10-20' --render train.png -- python train.py\n");
  sub->add_option("-o,--output", opts->output, "capture file pattern (%h host, %p pid, %r rank) [GPUHOOK_OUTPUT]");
  sub->add_option("--api", opts->api, "API records: launch,sync,memcpy,alloc | all | none [GPUHOOK_API]");
  sub->add_option("--range", opts->range,
                  "what to capture: all | cudaProfilerApi | nvtx:NAME[@A-B] | time:D[-E]; nvtx:NAME%N every Nth occurrence, "
                  "nvtx:NAME~P each with probability P (GPUHOOK_SEED) [GPUHOOK_RANGE]");
  sub->add_option("--on-full", opts->on_full, "drop | block when a buffer is full [GPUHOOK_ON_FULL]")
      ->check(CLI::IsMember({"drop", "block"}));
  sub->add_option("--nvml-hz", opts->nvml_hz,
                  "GPU counters (NVML: utilisation, clocks, power, ...) read per second, 0 = none (default 100) "
                  "[GPUHOOK_NVML_HZ]")
      ->check(CLI::Range(0, 1000));
  sub->add_option("--metrics", opts->metrics,
                  "hardware counters CUPTI PM sampling reads (needs profiling permission; NVML stays on): " +
                      gpuhook::settings::pm_metric_names_text() + " or all [GPUHOOK_METRICS]");
  sub->add_option("--metrics-hz", opts->metrics_hz,
                  "PM samples per second (default " + std::to_string(gpuhook::settings::kDefaultMetricsHz) +
                      ") [GPUHOOK_METRICS_HZ]")
      ->check(CLI::Range(1, static_cast<int>(gpuhook::settings::kMaxMetricsHz)));
  sub->add_flag("--no-nvtx", opts->no_nvtx, "do not record NVTX ranges");
  sub->add_flag("--no-nccl", opts->no_nccl, "do not interpose NCCL");
  sub->add_flag("--no-cuda", opts->no_cuda, "do not trace CUDA through CUPTI");
  sub->add_flag("--mem-use", opts->mem_use,
                "record which allocations each launch, copy and memset is given, for diagnose memory-idle "
                "(one CUPTI callback per call) [GPUHOOK_MEM_USE]");
  sub->add_flag("--sectors", opts->sectors,
                "count the 32-byte sectors each kernel's global loads and stores touch, and the fewest they "
                "need, for whatif coalesce (the kernels run slower, patched to count: a run of its own) "
                "[GPUHOOK_SECTORS]");
  sub->add_flag("-q,--quiet", opts->quiet, "no exit summary line from the hook");
  sub->add_option("--render", opts->render, "draw the capture to this file (.png/.svg/.pdf) afterwards");
  // After "--" everything belongs to the command, even "-o" or "--help"; an unknown flag
  // before it is a usage error rather than silently part of the command.
  sub->add_option("command", opts->command, "the command and its arguments, after --")->required();
  sub->callback([opts, &exit_code] { exit_code = record(*opts); });
}

}  // namespace gantt_cli
