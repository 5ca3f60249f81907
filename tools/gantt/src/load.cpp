// Reading capture files into the model: the only place libgantt touches the reader.
#include <algorithm>

#include "gantt/model.h"

namespace gantt {

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

Model load(const std::vector<std::string>& paths, const LoadOptions& options) {
  Model model;
  ModelBuilder builder(model);
  for (const std::string& path : paths) {
    gpuhook::ReaderOptions ro;
    ro.strict = options.strict;
    ro.from_ns = options.from_ns;
    ro.to_ns = options.to_ns;
    gpuhook::CaptureReader reader(path, ro);
    builder.begin_capture(path);
    reserve_from_index(builder, reader);
    gpuhook::v1::Record record;
    const AmplificationGuard guard(reader, options);
    while (reader.next(record)) {
      guard.check(reader);
      builder.add(record);
    }
    builder.end_capture(reader.integrity());
  }
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
    for (const std::string& n : c.notices) lines.push_back(c.path + ": while recording: " + n);
    for (const std::string& p : c.device_problems)
      lines.push_back(c.path + ": " + p + "; occupancy unknown for its kernels");
    if (c.alignment.method == AlignMethod::kNone && model.events.size() != 0)
      lines.push_back(c.path + ": " + describe(c.alignment));
  }
  return lines;
}

}  // namespace gantt
