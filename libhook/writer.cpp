#include "writer.h"

#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <signal.h>
#include <time.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <exception>

#include <gpuhook/record_times.h>
#include <gpuhook/version.h>

#include "clock.h"
#include "device_info.h"
#include "message_text.h"
#include "nvtx_range_window.h"
#include "pcie_link.h"
#include "recorder.h"

namespace gpuhook::hook {
namespace {

// Each kind by its field name in capture.proto, as `info` and `dump --kind` name it, so the
// exit line and `info` of the file count alike. Every kind the writer counts has one: a lump
// of "context" hid 40 external correlations of a 376-record capture.
const char* kind_label(int kind) {
  switch (kind) {
    case wire::Record::kHeader: return "header";
    case wire::Record::kDevice: return "device";
    case wire::Record::kStringDef: return "string_def";
    case wire::Record::kClockSync: return "clock_sync";
    case wire::Record::kApi: return "api";
    case wire::Record::kKernel: return "kernel";
    case wire::Record::kMemcpy: return "memcpy";
    case wire::Record::kMemset: return "memset";
    case wire::Record::kSync: return "sync";
    case wire::Record::kNccl: return "nccl";
    case wire::Record::kRange: return "range";
    case wire::Record::kMemory: return "memory";
    case wire::Record::kOverhead: return "overhead";
    case wire::Record::kDrops: return "drops";
    case wire::Record::kFooter: return "footer";
    case wire::Record::kThread: return "thread";
    case wire::Record::kExternalCorrelation: return "external_correlation";
    case wire::Record::kNotice: return "notice";
    case wire::Record::kStream: return "stream";
    case wire::Record::kCudaEvent: return "cuda_event";
    case wire::Record::kHostFunction: return "host_function";
    case wire::Record::kMemoryTag: return "memory_tag";
    case wire::Record::kMemoryUse: return "memory_use";
    case wire::Record::kMetricSample: return "metric_sample";
    case wire::Record::kKernelSectors: return "kernel_sectors";
    default: return nullptr;
  }
}

// CaptureWriter::create's error names the path already ("cannot create PATH: reason"); the
// line put the path before it again. Once now, shown as a message shows outside text.
std::string create_failure(const std::string& path, const std::string& error) {
  const std::string prefix = "cannot create " + path + ": ";
  const bool named = error.compare(0, prefix.size(), prefix) == 0;
  return "cannot create " + shown(path) + ": " + (named ? error.substr(prefix.size()) : error);
}

void sleep_ms(uint32_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1'000'000L};
  nanosleep(&ts, nullptr);
}

}  // namespace

Writer::Writer(const Config& config, ProcessFacts facts)
    : config_(config), facts_(std::move(facts)), slow_(config.slow_name, config.slow_factor) {
  if (config_.flight_ns != 0) flight_ = std::make_unique<FlightBuffer>(config_.flight_ns, config_.flight_bytes);
  sem_init(&wake_sem_, 0, 0);
  sem_init(&done_sem_, 0, 0);
  if (config_.range.kind == RangeKind::kTime) {
    uint64_t open = facts_.start_monotonic_raw_ns + config_.range.delay_ns;
    set_window(open, config_.range.duration_ns == 0 ? UINT64_MAX : open + config_.range.duration_ns);
  } else if (config_.range.kind != RangeKind::kAll) {
    set_window(0, UINT64_MAX);  // closed until the range opens it
  } else {
    set_window(1, UINT64_MAX);
  }
}

Writer::~Writer() {
  sem_destroy(&wake_sem_);
  sem_destroy(&done_sem_);
}

void Writer::set_window(uint64_t open_ns, uint64_t close_ns) {
  Window& w = windows_[(windows_started_.load(std::memory_order_acquire) - 1) % kWindows];
  w.close_ns.store(close_ns, std::memory_order_relaxed);
  w.open_ns.store(open_ns, std::memory_order_release);
}

// Opens are never concurrent (a window opens when no drawn occurrence is in flight, and the
// next only after the one that opened it ended), so windows_started_ needs no read-modify-write.
void Writer::open_window(uint64_t number, uint64_t open_ns) {
  Window& w = windows_[number % kWindows];
  w.close_ns.store(UINT64_MAX, std::memory_order_relaxed);
  w.open_ns.store(open_ns, std::memory_order_release);
  if (number + 1 > windows_started_.load(std::memory_order_relaxed))
    windows_started_.store(number + 1, std::memory_order_release);
  if (number + 1 > windows_published_.load(std::memory_order_relaxed))
    windows_published_.store(number + 1, std::memory_order_release);
}

void Writer::close_window(uint64_t number, uint64_t close_ns) {
  if (number + kWindows < windows_started_.load(std::memory_order_acquire)) return;  // its slot holds a newer one
  windows_[number % kWindows].close_ns.store(close_ns, std::memory_order_release);
}

void Writer::set_cupti_version(const std::string& v) {
  std::lock_guard<std::mutex> lock(facts_mutex_);
  cupti_version_ = v;
}

void Writer::set_note(const std::string& note) {
  std::lock_guard<std::mutex> lock(facts_mutex_);
  note_ = note;
}

bool Writer::start(std::string* why) {
  sigset_t all, old;
  sigfillset(&all);
  // The thread inherits this mask: app signals (and our own SIGXFSZ) never land on it.
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&thread_, nullptr, &Writer::thread_main, this);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    *why = std::string("cannot start the writer thread: ") + std::strerror(rc);
    return false;
  }
  pthread_detach(thread_);
  thread_started_ = true;
  recorder().writer_alive.store(true, std::memory_order_release);
  return true;
}

void* Writer::thread_main(void* self) {
  pthread_setname_np(pthread_self(), "gpuhook-writer");
  auto* w = static_cast<Writer*>(self);
  try {
    w->loop();
  } catch (const std::exception& e) {
    w->abandon(e.what());
  } catch (...) {
    w->abandon("unknown exception");
  }
  return nullptr;
}

// An exception escaping a thread would terminate the app: recording stops instead, the file
// keeps what was flushed, and the app is told once.
void Writer::abandon(const char* why) {
  recorder().enabled.store(false, std::memory_order_release);
  recorder().writer_alive.store(false, std::memory_order_release);
  std::string line = std::string("gpuhook: the writer stopped (") + why + "); recording ends here\n";
  fputs(line.c_str(), stderr);
  finished_.store(true);
  sem_post(&done_sem_);
}

void Writer::wake() { sem_post(&wake_sem_); }

bool Writer::on_writer_thread() const { return thread_started_ && pthread_equal(pthread_self(), thread_) != 0; }

bool Writer::stop(uint32_t timeout_ms, bool hurry) {
  if (hurry) dying_.store(true, std::memory_order_release);
  if (!thread_started_) return true;
  if (on_writer_thread()) return false;
  if (hurry) {
    // A quarter of the time is kept for what follows the last record: footer, index, close.
    discard_after_ns_.store(now_ns() + uint64_t{timeout_ms} * 750'000u, std::memory_order_release);
    hurry_.store(true, std::memory_order_release);
  }
  stop_requested_.store(true, std::memory_order_release);
  sem_post(&wake_sem_);
  // By the clock, not by counting sleeps: on a loaded machine 10,000 sleeps of 1 ms took 15 s.
  const uint64_t deadline_ns = now_ns() + uint64_t{timeout_ms} * 1'000'000u;
  for (;;) {
    if (sem_trywait(&done_sem_) == 0) {
      sem_post(&done_sem_);  // a second stop() returns at once
      return true;
    }
    if (now_ns() > deadline_ns) return false;
    sleep_ms(1);
  }
}

bool Writer::flush_now(uint32_t timeout_ms) {
  if (!thread_started_ || on_writer_thread() || finished_.load(std::memory_order_acquire)) return true;
  hurry_.store(true, std::memory_order_release);
  const uint32_t ticket = flush_requests_.fetch_add(1, std::memory_order_acq_rel) + 1;
  sem_post(&wake_sem_);
  // 100 us steps: an exec waits for this, and the flush itself takes about a millisecond.
  const uint64_t deadline_ns = now_ns() + uint64_t{timeout_ms} * 1'000'000u;
  for (;;) {
    if (static_cast<int32_t>(flushes_done_.load(std::memory_order_acquire) - ticket) >= 0 ||
        finished_.load(std::memory_order_acquire)) {
      return true;
    }
    if (now_ns() > deadline_ns) return false;
    timespec pause{0, 100'000};
    nanosleep(&pause, nullptr);
  }
}

void Writer::loop() {
  uint64_t last_gpu_flush_ns = now_ns();
  const uint64_t period_ns = uint64_t{config_.flush_ms} * 1'000'000u;
  while (!stop_requested_.load(std::memory_order_acquire)) {
    timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    // Wake often enough that rings of 8k records do not fill under bursts.
    deadline.tv_nsec += 10'000'000;
    if (deadline.tv_nsec >= 1'000'000'000) {
      deadline.tv_sec += 1;
      deadline.tv_nsec -= 1'000'000'000;
    }
    sem_timedwait(&wake_sem_, &deadline);
    uint64_t now = now_ns();
    bool flush_gpu = now - last_gpu_flush_ns >= period_ns;
    if (flush_gpu) last_gpu_flush_ns = now;
    // flush_now(): everything recorded so far goes to disk, CUPTI's incomplete buffers too
    // (the image is about to be replaced or killed).
    const uint32_t requested = flush_requests_.load(std::memory_order_acquire);
    const bool forced = requested != flushes_done_.load(std::memory_order_relaxed);
    drain_once(flush_gpu || forced, forced);
    if (file_ && (flush_gpu || forced)) {
      write_drops(false);
      file_->flush();
      report_write_failure();
    }
    if (forced) {
      hurry_.store(false, std::memory_order_release);  // finish() sets it again for stop(hurry)
      flushes_done_.store(requested, std::memory_order_release);
    }
    // GPUHOOK_HANG: a synchronize that has waited that long for queued work; each wait fires once.
    if (flight_ && config_.hang_ns != 0) {
      if (GpuSource* gpu = gpu_.load(std::memory_order_acquire)) {
        std::string what;
        const uint64_t since = gpu->blocked_since_ns(&what);
        if (since != 0 && since != hang_reported_since_ && now - std::min(now, since) > config_.hang_ns) {
          hang_reported_since_ = since;
          char line[200];
          std::snprintf(line, sizeof line, " has waited %.0f ms for the GPU (GPUHOOK_HANG)",
                        static_cast<double>(now - since) / 1e6);
          request_dump(Trigger::kHang, (what + line).c_str(), now);
        }
      }
    }
    if (flight_) dump_pending();
  }
  finish();
  recorder().writer_alive.store(false, std::memory_order_release);
  sem_post(&done_sem_);
}

void Writer::drain_once(bool flush_gpu, bool final) {
  if (flight_) {
    const uint64_t now = now_ns();
    flight_oldest_ns_ = now - std::min(now, config_.flight_ns);
    if (summary_file_) summary_file_->maybe_flush(now);
  }
  for (Ring* ring = recorder().rings.first(); ring != nullptr; ring = ring->next) {
    ring->drain([this](const HostRecord& r) { write_host(r); });
    drops_ring_ += ring->take_dropped();
  }
  if (GpuSource* gpu = gpu_.load(std::memory_order_acquire)) {
    gpu->poll(*this, flush_gpu || final, final);
    drops_cupti_ += gpu->take_cupti_dropped();
    drops_no_buffer_ += gpu->take_no_buffer_dropped();
    drops_incomplete_ += gpu->take_incomplete();
  }
  if (file_) file_->maybe_flush(now_ns());
}

void Writer::finish() {
  if (finished_.exchange(true)) return;
  if (uint64_t limit = discard_after_ns_.load(std::memory_order_acquire); limit != 0) {
    hurry_.store(true, std::memory_order_release);
    discarding_ = now_ns() > limit;
  }
  drain_once(true, true);
  if (flight_) {
    finish_flight();
    return;
  }
  if (!file_) return;
  write_drops(true);
  if (not_written_at_exit_ != 0) {
    wire::Record rec;
    rec.mutable_drops()->set_source(v1::DROP_EXIT_BOUND);
    rec.mutable_drops()->set_count(not_written_at_exit_);
    rec.mutable_drops()->set_time_ns(static_cast<int64_t>(now_ns()));
    file_->write(rec);
  }
  // A capture range that never opened: the file holds no events, and says why.
  const std::string never_opened = window_never_opened();
  if (!never_opened.empty()) {
    wire::Record rec;
    auto* n = rec.mutable_notice();
    n->set_kind(v1::NOTICE_RANGE_NEVER_OPENED);
    n->set_time_ns(static_cast<int64_t>(now_ns()));
    n->set_text(never_opened);
    file_->write(rec);
  }
  // A sampled range: which share of the run the file holds.
  if (config_.range.kind == RangeKind::kNvtx && config_.range.sampled() && never_opened.empty()) {
    wire::Record rec;
    auto* n = rec.mutable_notice();
    n->set_kind(v1::NOTICE_RANGE_SAMPLED);
    n->set_time_ns(static_cast<int64_t>(now_ns()));
    n->set_text("capture range " + quoted(config_.range.text) + ": " + std::to_string(window_recorded()) + " of " +
                std::to_string(window_occurrences()) + " occurrences of '" + config_.range.nvtx_name + "' recorded" +
                (config_.range.probability != 0 ? " (GPUHOOK_SEED=" + std::to_string(config_.seed) + ")" : ""));
    file_->write(rec);
  }
  // Records lost, each cause once: refused buffer requests are no records (CUPTI counts the
  // records they cost in its own drops) and records with an invalid time were kept.
  const uint64_t dropped = drops_ring_ + drops_cupti_ + drops_incomplete_ + not_written_at_exit_ + file_->records_lost();
  bool ok = close_with_footer(*file_, dropped, !dying_.load(std::memory_order_acquire));
  report_write_failure();
  const WriterStats& st = file_->stats();
  std::string line = "gpuhook: " + shown(path_) + ": " + std::to_string(st.records) + " records (";
  bool first = true;
  uint64_t named = 0;
  for (int k = 0; k < 32; ++k) {
    const char* label = kind_label(k);
    if (label == nullptr || st.records_by_kind[k] == 0) continue;
    line += (first ? "" : ", ") + std::to_string(st.records_by_kind[k]) + " " + label;
    named += st.records_by_kind[k];
    first = false;
  }
  // A kind newer than this table, so the counts still add up to the total.
  if (st.records > named) line += (first ? "" : ", ") + std::to_string(st.records - named) + " other";
  line += "), " + std::to_string(st.bytes_written) + " bytes, dropped " + std::to_string(dropped);
  if (dropped != 0) {
    std::string causes;
    auto cause = [&causes](uint64_t n, const char* what) {
      if (n != 0) causes += (causes.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    };
    cause(drops_ring_, "ring full");
    cause(drops_cupti_, "by CUPTI");
    cause(drops_incomplete_, "in incomplete CUPTI buffers (at least)");
    cause(not_written_at_exit_, "past the exit bound");
    cause(file_->records_lost(), "not written");
    line += " (" + causes + ")";
  }
  // The writer thread's own CPU time: the hook's cost that runs beside the app, not in it.
  timespec cpu{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  line += ", writer CPU " + std::to_string(cpu.tv_sec * 1000 + cpu.tv_nsec / 1'000'000) + " ms";
  if (!never_opened.empty()) line += "; " + never_opened;
  if (drops_no_buffer_ != 0) {
    line += "; CUPTI found all " + std::to_string(config_.buffers) + " buffers in use " +
            std::to_string(drops_no_buffer_) + " times (raise GPUHOOK_BUFFERS)";
  }
  if (invalid_times_ != 0) line += " (" + std::to_string(invalid_times_) + " with invalid times, kept)";
  if (const uint64_t before = records_before_windows_.load(std::memory_order_relaxed); before != 0)
    line += "; " + std::to_string(before) + (before == 1 ? " record" : " records") + " older than the last " +
            std::to_string(kWindows) +
            " capture windows left out (the writer fell that far behind: their windows were no longer held)";
  if (not_written_at_exit_ != 0) {
    // The count is among the causes above; this says which setting bounded it.
    line += "; the exit bound (GPUHOOK_EXIT_MS=" + std::to_string(config_.exit_ms) + ") ended the writing";
  }
  if (!ok || file_->records_lost() != 0) {
    line += "; write failed: " + file_->last_error() + ", " + std::to_string(file_->records_lost()) +
            " records lost";
  }
  if (GpuSource* gpu = gpu_.load(std::memory_order_acquire)) {
    const std::string note = gpu->final_note();
    if (!note.empty()) line += "; " + note;
  }
  summary_ = line;
}

bool Writer::in_window(const wire::Record& record) const { return in_window(placing_time_ns(record)); }

// `time_ns`: the record's time that places it inside or outside the window; 0 = none.
bool Writer::in_window(uint64_t time_ns) const {
  if (config_.range.kind == RangeKind::kAll) return true;
  // Read before the windows are: a window published after this still counts as unpublished
  // below (read after them, a window published between the two reads was judged by neither).
  const uint64_t published = windows_published_.load(std::memory_order_acquire);
  bool before_ring = false;
  if (in_published_window(time_ns, &before_ring)) return true;
  if (!config_.range.sampled()) return outside(before_ring);
  // A push claims a sampled range's window (nvtx_window_push) before it publishes it here
  // (open_window): a record of another thread's occurrence, pushed in between, can reach this
  // thread first and be judged outside every window (a range record lost uncounted, seen once
  // under ASan). A record outside the published windows while one is claimed waits for the
  // windows claimed now to be published, a few instructions away, then is judged again: on the
  // writer's thread, never the program's, and only such a record (waiting on every record for
  // whatever was claimed meanwhile let the writer fall a thousand windows behind and lose a
  // quarter of the ranges); a pusher preempted past the bound leaves it judged as before.
  const uint64_t claimed = windows_claimed();
  if (published >= claimed) return outside(before_ring);
  const uint64_t deadline = now_ns() + kWindowPublishWaitNs;
  while (windows_published_.load(std::memory_order_acquire) < claimed && now_ns() < deadline) sched_yield();
  before_ring = false;
  return in_published_window(time_ns, &before_ring) || outside(before_ring);
}

// A record judged outside every window held. One older than all of them may have been inside a
// window the ring no longer holds (the writer that far behind): counted, for the exit line.
bool Writer::outside(bool before_ring) const {
  if (before_ring) records_before_windows_.fetch_add(1, std::memory_order_relaxed);
  return false;
}

bool Writer::in_published_window(uint64_t time_ns, bool* before_ring) const {
  const uint64_t started = windows_started_.load(std::memory_order_acquire);
  const uint64_t first_open = windows_[0].open_ns.load(std::memory_order_acquire);
  if (time_ns == 0) return first_open != 0 || started > 1;  // untimed records follow the windows' existence
  // Newest first: windows follow each other in time, so once one closed before time_ns, every
  // older one did too.
  for (uint64_t k = started; k > 0 && started - k < kWindows; --k) {
    const Window& w = windows_[(k - 1) % kWindows];
    const uint64_t open = w.open_ns.load(std::memory_order_acquire);
    if (open == 0) return false;
    if (time_ns > w.close_ns.load(std::memory_order_relaxed)) return false;
    if (time_ns >= open) return true;
  }
  // Before every window the ring holds: the windows before those are no longer known.
  if (before_ring && started > kWindows) *before_ring = true;
  return false;
}

bool Writer::create_file() {
  if (open_failed_) return false;
  path_ = expand_output(config_.output_pattern, facts_.host, static_cast<int>(facts_.pid), config_.rank);
  WriterOptions options;
  options.zstd_level = config_.zstd_level;
  options.hurry = &hurry_;
  options.flush_interval_ns = uint64_t{config_.flush_ms} * 1'000'000u;
  options.sink = flight_.get();
  std::string error;
  file_ = flight_ ? CaptureWriter::in_memory(options, &error) : create_new_file(&path_, options, suffixes(), &error);
  if (!file_) {
    open_failed_ = true;
    // The one line about it; the records that would have gone there are counted nowhere else.
    std::string line = "gpuhook: " + create_failure(path_, error) + "; nothing recorded\n";
    fputs(line.c_str(), stderr);
    return false;
  }
  file_opened_.store(true, std::memory_order_release);
  uint64_t features = features_.load(std::memory_order_relaxed);
  // A simulated device says so in its name; a real one gives no reason to call it.
  if (gpu_.load(std::memory_order_acquire) != nullptr) {
    if (auto d = query_device(0); d && is_simulator_device_name(d->name())) {
      features |= v1::FEATURE_SIMULATOR;
    }
  }
  wire::Record rec;
  auto* h = rec.mutable_header();
  h->set_format_version(kFormatVersion);
  h->set_tool_version("gpuhook " GPUHOOK_VERSION);
  h->set_host_name(facts_.host);
  h->set_boot_id(facts_.boot_id);
  h->set_pid(facts_.pid);
  h->set_ppid(facts_.ppid);
  if (config_.rank) h->set_rank(*config_.rank);
  if (config_.local_rank) h->set_local_rank(*config_.local_rank);
  if (config_.world_size) h->set_world_size(*config_.world_size);
  if (!config_.job_id.empty()) h->set_job_id(config_.job_id);
  for (const auto& arg : facts_.command_line) h->add_command_line(arg);
  h->set_start_monotonic_raw_ns(facts_.start_monotonic_raw_ns);
  h->set_start_realtime_ns(facts_.start_realtime_ns);
  h->set_clock_domain("CLOCK_MONOTONIC_RAW");
  h->set_features(features);
  h->set_capture_range(config_.range.text);
  h->set_api_set(config_.api_text);
  {
    std::lock_guard<std::mutex> lock(facts_mutex_);
    h->set_cupti_version(cupti_version_);
    h->set_note(note_);
  }
  if (flight_) {
    header_record_ = rec;  // each dump starts with it; the kept chunks never hold it
    if (config_.flight_summary) {
      // The output file: the whole run's NVTX ranges and a notice per dump.
      options.sink = nullptr;
      summary_file_ = create_new_file(&path_, options, suffixes(), &error);
      if (!summary_file_) {
        fputs(("gpuhook: " + create_failure(path_, error) + "; no flight summary\n").c_str(), stderr);
      } else {
        wire::Record summary_header = rec;
        summary_header.mutable_header()->set_note("flight recorder summary (GPUHOOK_FLIGHT_SUMMARY): the NVTX ranges of "
                                                  "the whole run; the dumps hold the detail");
        summary_header.mutable_header()->set_flight_settings(config_.flight_text);
        summary_file_->write(summary_header);
        summary_file_->flush();
      }
    }
  } else {
    file_->write(rec);
    // The header gets a frame of its own: whatever happens later, the file says whose it is.
    file_->flush();
  }
  for (const auto& [tid, name] : pending_thread_names_) write_thread_name(tid, name);
  pending_thread_names_.clear();
  return true;
}

void Writer::write_thread_name(uint64_t thread_id, std::string_view name) {
  if (flight_) {
    if (thread_names_.size() < 4096 || thread_names_.count(thread_id)) thread_names_[thread_id] = std::string(name);
    if (summary_file_) {
      wire::Record rec;
      rec.mutable_thread()->set_thread_id(thread_id);
      rec.mutable_thread()->set_name_id(summary_file_->intern(name));
      summary_file_->write(rec);
    }
    return;
  }
  wire::Record rec;
  auto* t = rec.mutable_thread();
  t->set_thread_id(thread_id);
  t->set_name_id(file_->intern(name));
  file_->write(rec);
}

uint32_t Writer::intern(std::string_view s) {
  if (!file_) return 0;
  // Kernel names repeat and CUPTI hands the same pointer for the same function; a pointer
  // hit is confirmed by comparing the text, so a reused pointer can never misname a kernel.
  NameCacheEntry& e = name_cache_[(reinterpret_cast<uintptr_t>(s.data()) >> 4) % kNameCacheSlots];
  if (e.pointer == s.data() && e.text == s) return e.id;
  e.pointer = s.data();
  e.text.assign(s.data(), s.size());
  e.id = file_->intern(s);
  return e.id;
}

void Writer::emit(wire::Record& record) {
  if (record.has_device()) {
    // CUPTI's DEVICE record: written once per device, whether it or the attribute query came
    // first; outside any window, as the context every later record needs.
    if (!devices_written_.insert(record.device().ordinal()).second || !open_file()) return;
    add_pcie_link(config_, *record.mutable_device());
    if (flight_) device_records_.push_back(record);
    else file_->write(record);
    return;
  }
  write_in_window(record, placing_time_ns(record));
}
void Writer::emit(const KernelFields& kernel) { write_in_window(kernel, static_cast<uint64_t>(kernel.start_ns)); }
void Writer::emit(const ApiFields& api) { write_in_window(api, static_cast<uint64_t>(api.start_ns)); }

// `time_ns` places the record inside or outside the capture window (gpuhook::placing_time_ns's rule).
template <class Record>
void Writer::write_in_window(const Record& record, uint64_t time_ns) {
  if (!in_window(time_ns) || out_of_time()) return;
  // The flight recorder: CUPTI hands a busy thread's buffer over only when it is full, so a
  // kernel record may come long after it ran; one older than the flight window could never
  // be in a dump and is not kept.
  if (time_ns != 0 && time_ns < flight_oldest_ns_) return;
  if (!open_file()) return;
  file_->write(record);
  after_emit();
}

void Writer::after_emit() {
  // Reading the clock per record was 11% of the writer's time; every 256 records still
  // bounds a chunk well under its 4 MiB limit between checks.
  if ((++emitted_ & 255) == 0) {
    const uint64_t now = now_ns();
    const uint64_t limit = discard_after_ns_.load(std::memory_order_relaxed);
    if (limit != 0 && now > limit) discarding_ = true;
    file_->maybe_flush(now);
    report_write_failure();
  }
}

bool Writer::out_of_time() {
  if (!discarding_) return false;
  ++not_written_at_exit_;
  return true;
}

void Writer::report_write_failure() {
  if (write_failure_reported_ || !file_ || file_->last_error().empty()) return;
  write_failure_reported_ = true;
  // Said once, now; the app runs on and the records that no longer fit are counted as lost.
  std::string line = "gpuhook: writing " + shown(path_) + " failed: " + file_->last_error() +
                     "; the capture ends here, later records are counted as lost\n";
  fputs(line.c_str(), stderr);
}

void Writer::device_seen(uint32_t device) {
  if (device == last_device_) return;  // nearly every record repeats the last device
  last_device_ = device;
  if (!devices_seen_.insert(device).second || devices_written_.count(device) != 0) return;
  if (!open_file()) return;
  if (auto d = query_device(device)) {
    devices_written_.insert(device);
    wire::Record rec;
    *rec.mutable_device() = *d;
    add_pcie_link(config_, *rec.mutable_device());
    if (flight_) device_records_.push_back(rec);
    else file_->write(rec);
  }
}

// A name that exists is never overwritten. It is this run's own when the name is per process
// (%p: an exec'd program keeps its pid, and the image before the exec wrote it) or when the
// hook already ran in an earlier image or an ancestor of this process (a fixed name, or %r:
// every image and process of the run shares it). Otherwise it is somebody else's: refused.
bool Writer::suffixes() const {
  return config_.output_pattern.find("%p") != std::string::npos || config_.in_hooked_run;
}

std::string Writer::suffixed_path(const std::string& path, uint32_t n) {
  const size_t slash = path.rfind('/');
  const size_t name = slash == std::string::npos ? 0 : slash + 1;
  const size_t dot = path.rfind('.');
  // A name's first character is no extension's dot (".gpuh" alone is a name).
  if (dot == std::string::npos || dot <= name) return path + "." + std::to_string(n);
  return path.substr(0, dot) + "." + std::to_string(n) + path.substr(dot);
}

std::unique_ptr<CaptureWriter> Writer::create_new_file(std::string* path, const WriterOptions& options, bool suffixes,
                                                      std::string* error) {
  std::unique_ptr<CaptureWriter> file = CaptureWriter::create(*path, options, error);
  struct stat existing;
  if (file || !suffixes || lstat(path->c_str(), &existing) != 0) return file;
  // An exec chain or a job's processes, one file each: each try is one open(2) that fails.
  for (uint32_t n = 1; n <= kMaxSuffix && !file; ++n) {
    const std::string candidate = suffixed_path(*path, n);
    file = CaptureWriter::create(candidate, options, error);
    if (file) *path = candidate;
    else if (lstat(candidate.c_str(), &existing) != 0) break;  // not taken: failed for another reason
  }
  return file;
}

bool Writer::close_with_footer(CaptureWriter& file, uint64_t dropped, bool clean) {
  wire::Record footer;
  auto* f = footer.mutable_footer();
  f->set_end_monotonic_raw_ns(now_ns());
  f->set_end_realtime_ns(realtime_ns());
  f->set_records(file.stats().records);
  f->set_dropped(dropped);
  f->set_clean(clean);
  file.write(footer);
  return file.close();
}

void Writer::write_drops(bool final) {
  (void)final;
  uint64_t now = now_ns();
  auto one = [&](v1::DropSource source, uint64_t total, uint64_t* written) {
    if (total == *written) return;
    wire::Record rec;
    auto* d = rec.mutable_drops();
    d->set_source(source);
    d->set_count(total - *written);  // counts since the last Drops record of that source
    d->set_time_ns(static_cast<int64_t>(now));
    file_->write(rec);
    *written = total;
  };
  one(v1::DROP_RING_FULL, drops_ring_, &drops_ring_written_);
  one(v1::DROP_CUPTI, drops_cupti_, &drops_cupti_written_);
  one(v1::DROP_NO_BUFFER, drops_no_buffer_, &drops_no_buffer_written_);
  one(v1::DROP_INVALID_TIME, invalid_times_, &drops_invalid_written_);
  one(v1::DROP_INCOMPLETE, drops_incomplete_, &drops_incomplete_written_);
}

}  // namespace gpuhook::hook
