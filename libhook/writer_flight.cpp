// The writer's flight-recorder side (flight.h): triggers, dumps, and the end of a flight run.
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "clock.h"
#include "message_text.h"
#include "writer.h"

namespace gpuhook::hook {

namespace {

const char* trigger_name(Writer::Trigger t) {
  switch (t) {
    case Writer::Trigger::kSignal: return "signal";
    case Writer::Trigger::kCall: return "call";
    case Writer::Trigger::kSlow: return "slow";
    case Writer::Trigger::kCrash: return "crash";
    case Writer::Trigger::kHang: return "hang";
    default: return "?";
  }
}

}  // namespace

bool Writer::join_pending(Trigger trigger, bool reason_kept) {
  const uint32_t t = static_cast<uint32_t>(trigger);
  uint32_t seen = pending_.load(std::memory_order_acquire);
  for (;;) {
    const uint32_t want = seen == 0 ? t : (reason_kept ? seen : seen | (1u << (8 + t)));
    if (pending_.compare_exchange_weak(seen, want, std::memory_order_acq_rel)) return seen == 0;
  }
}

void Writer::request_dump(Trigger trigger, const char* reason, uint64_t when_ns) {
  if (!flight_) return;
  if (when_ns == 0) when_ns = now_ns();
  // Before the trigger waits: the window counts back from the newest record, and under load a
  // writer that got to a slow step's dump late had let the step's first 59 kernels go.
  flight_->hold(when_ns - std::min(when_ns, config_.flight_ns));
  // The reasons' buffer is in use for a copy of at most its size; a few tries outlast that unless
  // its user is preempted, and the caller (the writer thread, gpuhook_trigger) is never blocked.
  bool reason_locked = false;
  for (int tries = 0; reason != nullptr && !reason_locked && tries < 64; ++tries) {
    bool expected = false;
    reason_locked = trigger_reason_busy_.compare_exchange_strong(expected, true, std::memory_order_acq_rel);
    if (!reason_locked) sched_yield();
  }
  if (!reason_locked) {
    if (join_pending(trigger, false)) trigger_ns_.store(when_ns, std::memory_order_relaxed);
    sem_post(&wake_sem_);
    return;
  }
  const char* name = trigger_name(trigger);
  const size_t reason_bytes = strnlen(reason, sizeof trigger_reason_);
  // "; then NAME: REASON", without the "; " when the first trigger's reason is not there.
  const size_t separator_bytes = trigger_reason_bytes_ != 0 ? 2 : 0;
  const size_t joined_bytes = separator_bytes + 5 + strlen(name) + 2 + reason_bytes;
  const bool fits = trigger_reason_bytes_ + joined_bytes < sizeof trigger_reason_;
  if (join_pending(trigger, fits)) {
    trigger_ns_.store(when_ns, std::memory_order_relaxed);
    // The first reason: as much as the buffer holds.
    trigger_reason_bytes_ = std::min(reason_bytes, sizeof trigger_reason_ - 1);
    memcpy(trigger_reason_, reason, trigger_reason_bytes_);
  } else if (fits) {
    char* at = trigger_reason_ + trigger_reason_bytes_;
    at = stpcpy(stpcpy(stpcpy(at, separator_bytes != 0 ? "; then " : "then "), name), ": ");
    memcpy(at, reason, reason_bytes);
    trigger_reason_bytes_ += joined_bytes;
  }
  trigger_reason_busy_.store(false, std::memory_order_release);
  sem_post(&wake_sem_);
}

bool Writer::dump_pending() {
  if (pending_.load(std::memory_order_acquire) == 0) return false;
  bool expected = false;
  if (!trigger_reason_busy_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return false;
  const uint32_t pending = pending_.exchange(0, std::memory_order_acq_rel);
  std::string reason(trigger_reason_, trigger_reason_bytes_);
  trigger_reason_bytes_ = 0;
  const uint64_t when = trigger_ns_.load(std::memory_order_relaxed);
  const uint64_t held = flight_->held();
  trigger_reason_busy_.store(false, std::memory_order_release);
  if (pending == 0) return false;
  for (uint32_t t = 1; t <= static_cast<uint32_t>(Trigger::kHang); ++t) {
    if ((pending & (1u << (8 + t))) == 0) continue;
    reason += std::string(reason.empty() ? "" : "; ") + "also " + trigger_name(static_cast<Trigger>(t));
  }
  dump_flight(static_cast<Trigger>(pending & 0xffu), reason, when);
  if (pending_.load(std::memory_order_acquire) == 0) flight_->release(held);  // else the next dump's
  return true;
}

void Writer::note_dying(const char* why) {
  bool expected = false;
  if (why == nullptr || !dying_reason_set_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  size_t n = 0;
  for (; why[n] != '\0' && n < sizeof dying_reason_ - 1; ++n) dying_reason_[n] = why[n];
  dying_reason_[n] = '\0';
}

// The output pattern with ".flightN" before its extension: run-%p.gpuh -> run-1234.flight1.gpuh.
std::string Writer::dump_path(uint32_t sequence) const {
  std::string base = path_;
  std::string ext;
  const size_t slash = base.rfind('/');
  const size_t dot = base.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash)) {
    ext = base.substr(dot);
    base.resize(dot);
  }
  return base + ".flight" + std::to_string(sequence) + ext;
}

void Writer::dump_flight(Trigger trigger, const std::string& reason, uint64_t when_ns) {
  if (dumps_ >= config_.flight_max) {
    ++triggers_ignored_;
    return;
  }
  // What happened up to now: the rings, CUPTI's buffers (forced, as before an exec: the
  // threads' partly filled buffers too), the open chunk.
  drain_once(true, true);
  if (!open_file()) return;
  file_->flush();
  const uint32_t sequence = ++dumps_;
  std::string path = dump_path(sequence);
  WriterOptions options;
  options.zstd_level = config_.zstd_level;
  options.hurry = &hurry_;
  std::string error;
  std::unique_ptr<CaptureWriter> out = create_new_file(&path, options, true, &error);
  const std::string why = std::string(trigger_name(trigger)) + (reason.empty() ? "" : ": " + reason);
  if (!out) {
    // The error names the path already ("cannot create PATH: reason").
    dump_lines_.push_back(error.find(path) != std::string::npos ? shown(error) + " for " + why
                                                                : "cannot create " + shown(path) + " (" + error + ") for " + why);
    return;
  }
  wire::Record header = header_record_;
  auto* f = header.mutable_header();
  f->set_flight_trigger(trigger_name(trigger));
  f->set_flight_reason(reason);
  f->set_flight_time_ns(when_ns);
  f->set_flight_sequence(sequence);
  f->set_flight_duration_ns(config_.flight_ns);
  f->set_flight_max_bytes(config_.flight_bytes);
  f->set_flight_settings(config_.flight_text);
  f->set_flight_chunks_dropped(flight_->frames_dropped());
  out->write(header);
  // The context the kept chunks refer to: every string (their ids as they are), the devices,
  // the thread names.
  std::vector<std::pair<uint64_t, uint32_t>> thread_ids;
  for (const auto& [tid, name] : thread_names_) thread_ids.emplace_back(tid, file_->intern(name));
  file_->for_each_string([&](uint32_t id, std::string_view s) { out->write_string_def(id, s); });
  for (const wire::Record& d : device_records_) out->write(d);
  for (const auto& [tid, name_id] : thread_ids) {
    wire::Record t;
    t.mutable_thread()->set_thread_id(tid);
    t.mutable_thread()->set_name_id(name_id);
    out->write(t);
  }
  out->flush();
  uint64_t records = 0;
  for (const ChunkFrame& frame : flight_->frames()) {
    out->append_frame(frame);
    records += frame.records;
  }
  const bool ok = close_with_footer(*out, 0, true);
  dump_lines_.push_back(shown(path) + " (" + why + ", " + std::to_string(records) + " records" +
                        (ok ? "" : "; writing failed: " + out->last_error()) + ")");
  if (summary_file_) {  // the summary marks each dump at its trigger's time
    wire::Record n;
    n.mutable_notice()->set_kind(v1::NOTICE_FLIGHT_DUMP);
    n.mutable_notice()->set_time_ns(static_cast<int64_t>(when_ns));
    n.mutable_notice()->set_text("flight dump " + std::to_string(sequence) + ": " + path + " (" + why + ")");
    summary_file_->write(n);
  }
}

// The flight summary's copy of a range record: the same fields, its own string ids.
void Writer::summarise_range(const wire::Record& range, std::string_view name, std::string_view domain) {
  wire::Record copy = range;
  auto* g = copy.mutable_range();
  g->set_name_id(summary_file_->intern(name));
  g->set_domain_id(summary_file_->intern(domain));
  summary_file_->write(copy);
}

void Writer::finish_flight() {
  // A fatal signal or std::terminate: the moments before it are what a dump is for.
  if (dying_.load(std::memory_order_acquire) && file_) {
    // note_dying() comes before stop(hurry), which this thread saw before it got here.
    const bool named = dying_reason_set_.load(std::memory_order_acquire) && dying_reason_[0] != '\0';
    dump_flight(Trigger::kCrash, named ? std::string(dying_reason_) : "the process is dying", now_ns());
  }
  if (file_) file_->close();
  std::string line = "gpuhook: flight recorder (" + config_.flight_text + "): ";
  if (summary_file_) {
    const bool ok = close_with_footer(*summary_file_, 0, !dying_.load(std::memory_order_acquire));
    line += "the whole run's NVTX ranges in " + shown(path_) + (ok ? "" : " (writing failed: " + summary_file_->last_error() + ")") +
            "; ";
  }
  if (dump_lines_.empty()) {
    line += "no trigger fired, nothing written";
  } else {
    line += std::to_string(dumps_) + (dumps_ == 1 ? " dump: " : " dumps: ");
    for (size_t i = 0; i < dump_lines_.size(); ++i) line += (i ? "; " : "") + dump_lines_[i];
  }
  if (const uint64_t lost = drops_ring_ + drops_cupti_ + drops_incomplete_; lost != 0)
    line += "; " + std::to_string(lost) + " records lost (" + std::to_string(drops_ring_) + " ring full, " +
            std::to_string(drops_cupti_) + " by CUPTI, " + std::to_string(drops_incomplete_) + " in incomplete buffers)";
  if (triggers_ignored_ != 0)
    line += "; " + std::to_string(triggers_ignored_) + " later triggers ignored (GPUHOOK_FLIGHT_MAX=" +
            std::to_string(config_.flight_max) + ")";
  if (flight_->frames_dropped() != 0)
    line += "; " + std::to_string(flight_->frames_dropped()) + " older chunks let go (kept the last " +
            std::to_string(config_.flight_ns / 1'000'000) + " ms, at most " +
            std::to_string(config_.flight_bytes >> 20) + " MiB)";
  summary_ = line;
}

}  // namespace gpuhook::hook
