// The one writer thread: drains the per-thread rings and the CUPTI buffers, turns them into
// capture records and hands them to CaptureWriter. It alone touches the file, so a write that
// hits RLIMIT_FSIZE raises SIGXFSZ on this thread, where every signal is blocked: the write
// fails with EFBIG and the app's own disposition of SIGXFSZ is never consulted.
#pragma once

#include <semaphore.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <gpuhook/capture.h>
#include "config.h"
#include "flight.h"
#include "gpu_source.h"
#include "host_record.h"

namespace gpuhook::hook {

// What the header says about the process; filled once at start.
struct ProcessFacts {
  std::string host;
  std::string boot_id;
  uint32_t pid = 0;
  uint32_t ppid = 0;
  std::vector<std::string> command_line;
  uint64_t start_monotonic_raw_ns = 0;  // includes the test clock offset
  uint64_t start_realtime_ns = 0;
};

class Writer final : private RecordSink {
 public:
  Writer(const Config& config, ProcessFacts facts);
  ~Writer() override;

  // Starts the thread with every signal blocked. False (and a reason) if it cannot.
  bool start(std::string* why);
  // Asks the thread to drain everything, close the file and exit; waits up to timeout_ms.
  // Safe from a signal handler (sem_post / sem_trywait / nanosleep only). `hurry` (a dying
  // process): chunks are compressed at level 1, and records still unwritten after 3/4 of the
  // time are counted as lost instead of written, so the file still closes cleanly in time.
  // False at once on the writer thread itself (an abort there): it cannot wait for itself.
  // A hurried stop is a signal or terminate path: the footer says the close was not clean.
  bool stop(uint32_t timeout_ms, bool hurry = false);
  // Writes out everything recorded so far (rings, CUPTI buffers, the open chunk) and waits up
  // to timeout_ms; recording goes on. Before exec, and for a signal the app handles that may
  // still kill it. Safe from a signal handler and in a fork child. False when not done in time.
  bool flush_now(uint32_t timeout_ms);
  // What the process is dying of ("SIGSEGV"), for the flight recorder's crash dump; the first
  // call's text is kept. Async-signal-safe: copies into a fixed buffer, before stop(hurry).
  void note_dying(const char* why);
  // The calling thread is the writer's (an abort or terminate there cannot wait for it).
  bool on_writer_thread() const;
  // Wakes the thread early (a ring filled up in block mode, a buffer completed).
  void wake();

  void set_gpu_source(GpuSource* source) { gpu_.store(source, std::memory_order_release); }
  // Header facts that are known only later (CUPTI version, why GPU tracing is off).
  void set_cupti_version(const std::string& v);
  void set_note(const std::string& note);
  void add_features(uint64_t bits) { features_.fetch_or(bits, std::memory_order_relaxed); }

  // The window of the capture range; records outside it are not written.
  // The latest window becomes [open_ns, close_ns] (the only one, for most ranges).
  void set_window(uint64_t open_ns, uint64_t close_ns);
  // A sampled range: window `number` (0, 1, ... in the order they open; nvtx_range_window.cpp
  // numbers them) opens, and later closes. Each call names its window: the close of one and
  // the open of the next come from different threads, in either order.
  void open_window(uint64_t number, uint64_t open_ns);
  void close_window(uint64_t number, uint64_t close_ns);

  // The flight recorder (GPUHOOK_FLIGHT): asks the writer thread to write what it keeps as a
  // capture of its own. Async-signal-safe for kSignal (no reason is copied). A trigger that
  // comes while another waits for the writer joins that dump: the dump's reason goes on with
  // "; then TRIGGER: REASON", or "; also TRIGGER" for one without a reason or whose reason found
  // the buffer in use or full (it is never waited for).
  enum class Trigger : uint32_t { kNone = 0, kSignal = 1, kCall = 2, kSlow = 3, kCrash = 4, kHang = 5 };
  // `when_ns`: the moment it is about (a slow occurrence's end), 0 = now.
  void request_dump(Trigger trigger, const char* reason = nullptr, uint64_t when_ns = 0);
  bool flight() const { return flight_ != nullptr; }
  // The writer thread's side, public for tests: writes the dump that waits, with the triggers
  // that joined it. False when none waits, or a reason is being copied in (the next wake-up).
  bool dump_pending();

  // The exit summary line, "" when nothing was written.
  const std::string& summary() const { return summary_; }
  bool file_opened() const { return file_opened_.load(std::memory_order_acquire); }

  // The loop body, public for tests: drain rings and GPU buffers once.
  void drain_once(bool flush_gpu, bool final);
  // Runs the end of the thread (final drain, drops, footer, close) on the calling thread.
  void finish();

 private:
  static void* thread_main(void* self);
  void abandon(const char* why);
  void loop();
  uint32_t intern(std::string_view s) override;
  void emit(wire::Record& record) override;
  void emit(const KernelFields& kernel) override;
  void emit(const ApiFields& api) override;
  template <class Record>
  void write_in_window(const Record& record, uint64_t time_ns);
  void after_emit();
  // True (and the record counted) once stop(hurry)'s time for writing is over.
  bool out_of_time();
  void device_seen(uint32_t device) override;
  void invalid_time() override { invalid_times_++; }
  // Creates the file (header first) unless it exists or could not be created.
  bool open_file() { return file_ != nullptr || create_file(); }
  bool create_file();
  void write_host(const HostRecord& r);
  void write_memory_uses(const HostRecord& r);
  void write_thread_name(uint64_t thread_id, std::string_view name);
  uint32_t intern_pointer(const void* key, const char* s);
  uint32_t intern_function(const void* function);
  void write_drops(bool final);
  // Creates *path, never over an existing file; when it exists and `suffixes`, the first free
  // of NAME.1.EXT .. NAME.<kMaxSuffix>.EXT instead (*path then names it). nullptr and *error
  // when none.
  static constexpr uint32_t kMaxSuffix = 9999;
  static std::unique_ptr<CaptureWriter> create_new_file(std::string* path, const WriterOptions& options, bool suffixes,
                                                        std::string* error);
  // run.gpuh -> run.N.gpuh; a name without an extension gets ".N" at its end.
  static std::string suffixed_path(const std::string& path, uint32_t n);
  // Whether an existing capture name is this run's own, to be suffixed, not refused.
  bool suffixes() const;
  // Ends a capture: the footer (end times, the records written, those lost), then close().
  static bool close_with_footer(CaptureWriter& file, uint64_t dropped, bool clean);
  // The flight recorder's side: a dump now, and the end of a flight run.
  void dump_flight(Trigger trigger, const std::string& reason, uint64_t when_ns);
  void finish_flight();
  std::string dump_path(uint32_t sequence) const;
  bool in_window(const wire::Record& record) const;
  bool in_window(uint64_t time_ns) const;
  // in_window() of the windows opened so far; *before_ring (where given) set when `time_ns` is
  // older than every window the ring holds while it has let older ones go.
  bool in_published_window(uint64_t time_ns, bool* before_ring = nullptr) const;
  bool outside(bool before_ring) const;
  void report_write_failure();

  const Config& config_;
  ProcessFacts facts_;
  std::unique_ptr<CaptureWriter> file_;
  std::string path_;
  bool open_failed_ = false;
  bool write_failure_reported_ = false;
  std::atomic<bool> file_opened_{false};
  std::atomic<GpuSource*> gpu_{nullptr};
  std::atomic<uint64_t> features_{0};
  // The capture windows, oldest first: one for most ranges, one per stretch of drawn
  // occurrences for a sampled one (nvtx:NAME%N, ~P; occurrences in flight together on several
  // threads share one). A ring of the latest kWindows; a record placed before all of them (GPU
  // records arrive late, but not that late) is left out, and counted for the exit line
  // (records_before_windows_). open 0 = not open yet.
  static constexpr uint32_t kWindows = 1024;
  // How long in_window() waits for a claimed window to be published (a pusher preempted
  // between the two): a scheduler tick or five on a loaded machine.
  static constexpr uint64_t kWindowPublishWaitNs = 20'000'000;
  struct Window {
    std::atomic<uint64_t> open_ns{0};
    std::atomic<uint64_t> close_ns{UINT64_MAX};
  };
  Window windows_[kWindows];
  std::atomic<uint64_t> windows_started_{1};  // slot 0 is the first window
  std::atomic<uint64_t> windows_published_{0};  // open_window() calls done: windows 0 .. this - 1
  mutable std::atomic<uint64_t> records_before_windows_{0};  // judged outside, older than every window held
  std::string cupti_version_;
  std::string note_;
  mutable std::mutex facts_mutex_;  // guards cupti_version_, note_ (set from other threads)

  std::unordered_map<const void*, uint32_t> pointer_ids_;
  struct NameCacheEntry {
    const char* pointer = nullptr;
    std::string text;
    uint32_t id = 0;
  };
  static constexpr size_t kNameCacheSlots = 256;
  NameCacheEntry name_cache_[kNameCacheSlots];
  uint32_t last_device_ = UINT32_MAX;
  std::vector<std::pair<uint64_t, std::string>> pending_thread_names_;
  // A name longer than one record, being joined: its head record, the text so far and the
  // continuation records still to come (host_record.h).
  HostRecord long_name_head_{};
  std::string long_name_;
  uint32_t long_name_more_ = 0;
  uint64_t emitted_ = 0;
  std::unordered_set<uint32_t> devices_seen_;
  std::unordered_set<uint32_t> devices_written_;  // a DeviceInfo is in the file
  uint64_t invalid_times_ = 0;
  uint64_t drops_ring_ = 0, drops_cupti_ = 0, drops_no_buffer_ = 0, drops_incomplete_ = 0;
  uint64_t drops_incomplete_written_ = 0;
  // What earlier Drops records already reported, so each one carries the increase.
  uint64_t drops_ring_written_ = 0, drops_cupti_written_ = 0, drops_no_buffer_written_ = 0;
  uint64_t drops_invalid_written_ = 0;
  std::string summary_;
  // stop(hurry) and flush_now(): CaptureWriter compresses at level 1 while this is set.
  std::atomic<bool> hurry_{false};
  // stop(hurry): past this time (monotonic raw ns) records are counted, not written.
  std::atomic<uint64_t> discard_after_ns_{0};
  // stop(hurry) was asked for: the process is dying of a signal or std::terminate, so the
  // footer's `clean` is false. flush_now() leaves it alone: the process may run on.
  std::atomic<bool> dying_{false};
  std::atomic<bool> dying_reason_set_{false};
  char dying_reason_[32] = {};
  bool discarding_ = false;
  uint64_t not_written_at_exit_ = 0;

  // The flight recorder: file_ writes into flight_; what a dump needs besides the kept chunks
  // (the header, devices, thread names) is kept here, never in the chunks.
  std::unique_ptr<FlightBuffer> flight_;
  // GPUHOOK_FLIGHT_SUMMARY: the output file holds the whole run's NVTX ranges (and a notice per
  // dump), a few bytes per step, with its own string ids.
  std::unique_ptr<CaptureWriter> summary_file_;
  void summarise_range(const wire::Record& range, std::string_view name, std::string_view domain);
  uint64_t flight_oldest_ns_ = 0;              // records placed before this are not kept (0 = all)
  SlowDetector slow_;
  wire::Record header_record_;
  std::vector<wire::Record> device_records_;
  std::unordered_map<uint64_t, std::string> thread_names_;  // at most 4096
  // The dump waiting for the writer thread: its first Trigger in the low byte, and bit 8 + T for
  // each Trigger T that joined it without its reason in trigger_reason_. One word, so a signal
  // handler joins with a compare-exchange and the writer takes all with one exchange.
  std::atomic<uint32_t> pending_{0};
  std::atomic<uint64_t> trigger_ns_{0};
  // Held while a reason is copied in or the writer takes them, never waited for. A reason-bearing
  // trigger joins pending_ while it holds it, so the writer takes each reason with its trigger.
  std::atomic<bool> trigger_reason_busy_{false};
  char trigger_reason_[512] = {};
  size_t trigger_reason_bytes_ = 0;
  // Joins `trigger` to pending_; true when it is the first. Async-signal-safe.
  bool join_pending(Trigger trigger, bool reason_kept);
  uint32_t dumps_ = 0;
  uint64_t hang_reported_since_ = 0;           // the wait GPUHOOK_HANG already fired for
  uint32_t triggers_ignored_ = 0;              // past GPUHOOK_FLIGHT_MAX
  std::vector<std::string> dump_lines_;        // "path (trigger: reason)" per dump
  std::atomic<uint32_t> flush_requests_{0};
  std::atomic<uint32_t> flushes_done_{0};

  pthread_t thread_{};
  bool thread_started_ = false;
  sem_t wake_sem_;
  sem_t done_sem_;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> finished_{false};
};

}  // namespace gpuhook::hook
