// Reading capture files into the model: the only place libgantt touches the reader, and the
// one loader every subcommand goes through. A merged file (several Header records, one per
// rank) becomes one capture per section. Reading is pipelined: one thread decompresses and
// parses records while the caller's thread builds the model. Measured on the 64 x
// 100,000-event benchmark, reading is ~40% of loading, so the two overlap on a second core;
// memory stays bounded (a few batches of records in flight).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <google/protobuf/arena.h>
#include <gpuhook/capture.h>

#include "gantt/model/model.h"
#include "gantt/scan/trace_import.h"
#include "gantt/scan/open.h"

namespace gantt {

namespace v1 = gpuhook::v1;

void reserve_from_index(ModelBuilder& builder, const gpuhook::CaptureReader& reader) {
  if (const auto& index = reader.index()) {
    uint64_t records = 0;
    for (const auto& chunk : index->chunk()) records += std::min<uint64_t>(chunk.records(), 1ull << 32);
    builder.reserve_hint(records);
  }
}

// The floor lets a small file hold what a small file honestly can: 256 Ki records is ~25 MB of
// model. Above it, recorded captures stay far below the limit: gpuhook_synth's realistic
// kernel and API records compress to 0.11 records per byte (8.8 bytes each, measured),
// the fixtures to 0.02; duplicated chunks reach 80 to 800.
constexpr uint64_t kAmplificationFloorRecords = 1u << 18;

AmplificationGuard::AmplificationGuard(const gpuhook::CaptureReader& reader, const LoadOptions& options)
    : per_byte_(options.max_records_per_byte) {
  if (per_byte_ == 0) return;
  const uint64_t bytes = reader.integrity().file_bytes;
  limit_ = bytes > UINT64_MAX / per_byte_ ? UINT64_MAX : std::max(bytes * per_byte_, kAmplificationFloorRecords);
}

void AmplificationGuard::fail(const gpuhook::CaptureReader& reader) const {
  throw gpuhook::CaptureError(
      gpuhook::CaptureErrorKind::kOversizedLength, reader.path(), reader.chunk_offset(),
      "decodes to more than " + std::to_string(limit_) + " records from " +
          std::to_string(reader.integrity().file_bytes) + " bytes (over " + std::to_string(per_byte_) +
          " per byte of file): repeated chunks, not a recording; --max-records-per-byte 0 reads it anyway");
}

namespace {

constexpr size_t kBatchRecords = 4096;
constexpr size_t kBatchesInFlight = 4;

struct Batch {
  // Kernels and API calls in their plain form (CaptureReader::next(RecordView&)); other kinds
  // on an arena dropped when the batch is recycled: a record message reused for another kind
  // frees and allocates its oneof's message, which cost a quarter of the parse time.
  google::protobuf::Arena arena;
  std::vector<gpuhook::RecordView> records;
  size_t count = 0;
  size_t file = 0;
  bool end_of_file = false;
  gpuhook::Integrity integrity;  // as the reader saw it at the end of this batch
};

// A bounded hand-off between the reading thread and the building thread, with a free list
// so record messages are reused.
class Pipe {
 public:
  std::unique_ptr<Batch> take_free() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !free_.empty() || allocated_ < kBatchesInFlight || aborted_; });
    if (aborted_) return nullptr;
    if (free_.empty()) {
      ++allocated_;
      return std::make_unique<Batch>();
    }
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void push(std::unique_ptr<Batch> b) {
    std::lock_guard<std::mutex> lock(mu_);
    full_.push_back(std::move(b));
    cv_.notify_all();
  }
  std::unique_ptr<Batch> pop() {  // nullptr at the end
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !full_.empty() || closed_; });
    if (full_.empty()) return nullptr;
    auto b = std::move(full_.front());
    full_.pop_front();
    return b;
  }
  void recycle(std::unique_ptr<Batch> b) {
    std::lock_guard<std::mutex> lock(mu_);
    b->count = 0;
    b->end_of_file = false;
    b->records.clear();
    b->arena.Reset();
    free_.push_back(std::move(b));
    cv_.notify_all();
  }
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  void abort() {  // the builder failed: let the reader stop
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Batch>> full_;
  std::vector<std::unique_ptr<Batch>> free_;
  size_t allocated_ = 0;
  bool closed_ = false;
  bool aborted_ = false;
};

void read_all(const std::vector<std::string>& paths, const LoadOptions& options, Pipe& pipe) {
  gpuhook::ReaderOptions ro;
  ro.strict = options.strict;
  ro.from_ns = options.from_ns;
  ro.to_ns = options.to_ns;
  for (size_t f = 0; f < paths.size(); ++f) {
    const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(paths[f], ro);
    gpuhook::CaptureReader& reader = *opened_reader;
    const AmplificationGuard guard(reader, options);
    std::unique_ptr<Batch> b = pipe.take_free();
    if (!b) return;
    b->file = f;
    for (;;) {
      if (b->records.size() <= b->count) {
        b->records.emplace_back();
        b->records.back().record = google::protobuf::Arena::CreateMessage<v1::Record>(&b->arena);
      }
      if (!reader.next(b->records[b->count])) break;
      guard.check(reader);
      if (++b->count == kBatchRecords) {
        b->integrity = reader.integrity();
        pipe.push(std::move(b));
        if (!(b = pipe.take_free())) return;
        b->file = f;
      }
    }
    b->integrity = reader.integrity();
    b->end_of_file = true;
    pipe.push(std::move(b));
  }
}

}  // namespace

// What the files' indexes promise in all. Reserving once for the whole job matters: a
// reservation per capture (size + n each time) reallocates and copies every column once per
// capture, which made 64 captures cost twice the CPU of reading them.
static uint64_t indexed_records(const std::vector<std::string>& paths) {
  uint64_t total = 0;
  for (const std::string& path : paths) {
    try {
      const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, gpuhook::ReaderOptions{false, 0, 0});
      gpuhook::CaptureReader& reader = *opened_reader;
      if (const auto& index = reader.index())
        for (const auto& chunk : index->chunk()) total += std::min<uint64_t>(chunk.records(), 1ull << 32);
    } catch (const gpuhook::CaptureError&) {
      // Reported in order by the reading thread.
    }
  }
  return total;
}

Model load(const std::vector<std::string>& paths, const LoadOptions& options) {
  Model model;
  ModelBuilder builder(model);
  const uint64_t total_records = indexed_records(paths);
  Pipe pipe;
  std::exception_ptr read_error;
  std::thread reader([&] {
    try {
      read_all(paths, options, pipe);
    } catch (...) {
      read_error = std::current_exception();
    }
    pipe.close();
  });
  try {
    size_t file = SIZE_MAX;
    bool seen_header = false;
    int section = 0;
    // String ids are file-wide: a new section learns every string defined so far. A map,
    // not a vector indexed by id: ids come from an untrusted file.
    std::unordered_map<uint32_t, std::string> strings;
    while (std::unique_ptr<Batch> b = pipe.pop()) {
      if (b->file != file) {
        file = b->file;
        builder.begin_capture(paths[file]);
        if (file == 0 && total_records) builder.reserve_hint(total_records);
        seen_header = false;
        section = 0;
        strings.clear();
      }
      for (size_t i = 0; i < b->count; ++i) {
        const gpuhook::RecordView& view = b->records[i];
        const v1::Record& record = *view.record;  // kinds other than Kernel and ApiCall
        if (view.kind == v1::Record::kStringDef) {
          strings[record.string_def().id()] = record.string_def().value();
        } else if (view.kind == v1::Record::kHeader) {
          if (seen_header) {
            // A merged file: the next rank's section starts here.
            builder.end_capture(b->integrity);
            builder.begin_capture(paths[file] + "#" + std::to_string(++section));
            for (const auto& [id, value] : strings) builder.define_string(id, value);
          }
          seen_header = true;
        }
        builder.add(view);
      }
      if (b->end_of_file) builder.end_capture(b->integrity);
      pipe.recycle(std::move(b));
    }
  } catch (...) {
    pipe.abort();
    reader.join();
    throw;
  }
  reader.join();
  if (read_error) std::rethrow_exception(read_error);
  return model;
}

}  // namespace gantt

namespace gantt {

std::vector<std::string> integrity_warnings(const Model& model, bool* corrupt) {
  std::vector<std::string> lines;
  if (corrupt) *corrupt = false;
  for (const CaptureInfo& c : model.captures) {
    const gpuhook::Integrity& in = c.integrity;
    if (in.truncated)
      lines.push_back(c.path + ": byte " + std::to_string(in.truncated_at) + ": truncated tail (" +
                      std::to_string(in.truncated_bytes) + " bytes unreadable); showing what was flushed before it");
    // Set at open, so every reader of the file, and every subcommand, says it alike. (A
    // mismatch found only by scanning, in.index_mismatch, is info's to say: a reader of a
    // share of the chunks does not see it, and the index's counts changed no figure.)
    if (!in.index_problem.empty()) lines.push_back(c.path + ": " + in.index_problem);
    if (in.error) {
      lines.push_back(c.path + ": byte " + std::to_string(in.error->offset()) + ": " + in.error->what() +
                      "; showing what was read before it");
      if (corrupt) *corrupt = true;
    }
    uint64_t dropped = 0;
    for (uint32_t s = 0; s < 8; ++s) {
      if (gpuhook::is_loss(static_cast<gpuhook::v1::DropSource>(s))) dropped += c.dropped_by_source[s];
    }
    if (dropped) lines.push_back(c.path + ": " + std::to_string(dropped) + " records were dropped while recording");
    // An imported trace's notices say what its format lacks, not what happened while recording.
    const bool imported = scan::is_imported(c.header.tool_version());
    for (const std::string& n : c.notices) lines.push_back(c.path + (imported ? ": " : ": while recording: ") + n);
    for (const std::string& p : c.device_problems)
      lines.push_back(c.path + ": " + p + "; occupancy unknown for its kernels");
    if (c.alignment.method == AlignMethod::kNone && model.events.size() != 0)
      lines.push_back(c.path + ": " + describe(c.alignment));
  }
  return lines;
}

}  // namespace gantt

namespace gantt {

Model load_job(const std::vector<std::string>& paths, const LoadOptions& options) { return load(paths, options); }

}  // namespace gantt
