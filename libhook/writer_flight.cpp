// The writer's flight-recorder side (flight.h): triggers, dumps, and the end of a flight run.
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

void Writer::request_dump(Trigger trigger, const char* reason, uint64_t when_ns) {
  if (!flight_) return;
  if (reason != nullptr) {
    bool expected = false;
    if (trigger_reason_busy_.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
      strncpy(trigger_reason_, reason, sizeof trigger_reason_ - 1);
      trigger_reason_[sizeof trigger_reason_ - 1] = '\0';
    }
  }
  uint32_t none = 0;
  // One trigger at a time: a second while the first waits for the writer joins it.
  if (trigger_.compare_exchange_strong(none, static_cast<uint32_t>(trigger), std::memory_order_acq_rel)) {
    trigger_ns_.store(when_ns != 0 ? when_ns : now_ns(), std::memory_order_relaxed);
  }
  sem_post(&wake_sem_);
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
