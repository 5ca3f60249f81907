// Jobs: aligning a loaded job, and merging captures into one aligned file (gantt::load reads
// such a file back).
#include <cinttypes>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include <gpuhook/capture.h>
#include <gpuhook/record_times.h>

#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"
#include "gantt/model/record_strings.h"
#include "gantt/scan/open.h"

namespace gantt {

namespace v1 = gpuhook::v1;

RankAlignment align_model_ranks(Model& model, const RankAlignOptions& options) {
  if (model.captures.size() < 2) {
    RankAlignment none;
    none.captures.resize(model.captures.size());
    return none;
  }
  RankAlignment alignment = align_ranks(rank_clock_inputs(model), options);
  apply_rank_alignment(model, alignment);
  return alignment;
}

namespace {

// Shifts every host-clock time of a record: the time fields are those the format codes
// (gpuhook::visit_times), so a new record kind with times is shifted without a change here.
// GPU records are shifted too when the capture's GPU times are on the host clock (the hook's
// CUPTI timestamp callback); otherwise they are on a clock of their own and stay as recorded
// (the capture is reported unaligned). Of a ClockSync (never written by the hook, kept as read)
// only host_ns is the host clock. Unknown (absent or 0) stays unknown;
// arithmetic wraps, so a hostile value cannot overflow.
void shift_record(v1::Record& r, int64_t delta, bool gpu_on_host_clock) {
  switch (r.kind_case()) {
    case v1::Record::kHeader:
      if (r.header().start_monotonic_raw_ns() != 0)
        r.mutable_header()->set_start_monotonic_raw_ns(r.header().start_monotonic_raw_ns() + static_cast<uint64_t>(delta));
      return;
    case v1::Record::kFooter:
      if (r.footer().end_monotonic_raw_ns() != 0)
        r.mutable_footer()->set_end_monotonic_raw_ns(r.footer().end_monotonic_raw_ns() + static_cast<uint64_t>(delta));
      return;
    case v1::Record::kKernel:
    case v1::Record::kMemcpy:
    case v1::Record::kMemset:
    case v1::Record::kSync:
      if (!gpu_on_host_clock) return;
      break;
    default:
      break;
  }
  const bool clock_sync = r.kind_case() == v1::Record::kClockSync;
  int index = 0;
  gpuhook::visit_times(r, [&](bool& has, int64_t& v) {
    const int i = index++;
    if (clock_sync && i != gpuhook::kClockSyncHostTime) return;  // gpu_ns and realtime_ns are other clocks
    if (has && v != 0) v = static_cast<int64_t>(static_cast<uint64_t>(v) + static_cast<uint64_t>(delta));
  });
}

std::string format_offset(int64_t ns) {
  char buf[64];
  snprintf(buf, sizeof buf, "%+.6f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace

MergeResult merge_captures(const std::vector<std::string>& inputs, const std::string& output,
                           const ClockInputsOf& clock_inputs_of) {
  MergeResult result;
  // Pass 1: alignment inputs, one capture at a time.
  std::vector<RankClockInput> clock_inputs;
  for (const std::string& path : inputs)
    for (RankClockInput& in : clock_inputs_of(path)) clock_inputs.push_back(std::move(in));
  result.alignment = align_ranks(clock_inputs);
  for (const RankClockInput& in : clock_inputs) {
    RankClockInput light = in;
    light.ends.clear();
    result.inputs.push_back(std::move(light));
  }

  std::string error;
  auto writer = gpuhook::CaptureWriter::create(output, gpuhook::WriterOptions{}, &error);
  if (!writer) throw std::runtime_error("merge: " + error);  // the writer's error names the file

  // Pass 2: stream every input's records, shifted and re-interned. Sections must line up
  // with pass 1's captures: an input without a readable Header (truncated before its first
  // chunk ended, or empty) still gets one, or its records would join the previous rank.
  size_t section = 0;
  for (const std::string& path : inputs) {
    const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, gpuhook::ReaderOptions{false, 0, 0});
    gpuhook::CaptureReader& reader = *opened_reader;
    // Input id -> output id, only for ids this input defined: ids are untrusted values, so
    // the table grows with the StringDefs read, never with an id (0xFFFFFFFF once wrapped a
    // resize to 0 and wrote out of bounds). An id without a definition is named as missing,
    // as load does, and counted for one warning.
    std::unordered_set<uint32_t> defined;
    std::unordered_map<uint32_t, uint32_t> ids;
    uint64_t undefined_refs = 0, undefined_at = 0;
    uint32_t undefined_first = 0;
    auto remap = [&](uint32_t id) -> uint32_t {
      if (id == 0) return 0;
      auto it = ids.find(id);
      if (it != ids.end()) return it->second;
      if (defined.count(id)) return ids.emplace(id, writer->intern(reader.string(id))).first->second;
      if (undefined_refs++ == 0) {
        undefined_first = id;
        undefined_at = reader.chunk_offset();
      }
      return writer->intern("<string " + std::to_string(id) + " missing>");
    };
    int64_t delta = 0;
    bool gpu_on_host_clock = true;
    auto start_section = [&](v1::Record& header) {
      const CaptureOffset co =
          section < result.alignment.captures.size() ? result.alignment.captures[section] : CaptureOffset{};
      delta = co.offset_ns;
      gpu_on_host_clock = (header.header().features() & v1::FEATURE_HOST_CLOCK_CALLBACK) != 0;
      std::string note = header.header().note();
      if (!note.empty()) note += "; ";
      note += "gantt-cli merge: section " + std::to_string(section) + " of " + path + ", shifted " +
              format_offset(delta) + " (" + to_string(co.method) + ")";
      header.mutable_header()->set_note(note);
      ++section;
    };
    auto synthetic_header = [&] {
      v1::Record h;
      h.mutable_header()->set_format_version(gpuhook::kFormatVersion);
      h.mutable_header()->set_note("no readable header in the input");
      start_section(h);
      if (writer->write(h)) ++result.records_written;
    };
    v1::Record r;
    bool first = true;
    while (reader.next(r)) {
      if (r.kind_case() == v1::Record::kStringDef) {  // the writer defines its own
        defined.insert(r.string_def().id());
        ids.erase(r.string_def().id());  // redefined: the new text from here on
        continue;
      }
      if (first && r.kind_case() != v1::Record::kHeader) synthetic_header();
      first = false;
      // Inputs that are merged files themselves hold several sections.
      if (r.kind_case() == v1::Record::kHeader) start_section(r);
      shift_record(r, delta, gpu_on_host_clock);
      remap_strings(r, remap);
      if (writer->write(r)) ++result.records_written;
      writer->maybe_flush(0);  // by size only: a chunk per 4 MiB keeps memory flat
    }
    if (first) synthetic_header();
    if (undefined_refs)
      result.warnings.push_back(path + ": byte " + std::to_string(undefined_at) + ": " + std::to_string(undefined_refs) +
                                " reference(s) to an undefined string id (first " + std::to_string(undefined_first) +
                                "); merged as \"<string N missing>\"");
    const gpuhook::Integrity& in = reader.integrity();
    if (in.truncated)
      result.warnings.push_back(path + ": byte " + std::to_string(in.truncated_at) +
                                ": truncated tail; merged what was flushed before it");
    if (in.error)
      result.warnings.push_back(path + ": byte " + std::to_string(in.error->offset()) + ": " + in.error->what() +
                                "; merged what was read before it");
  }
  if (!writer->close()) throw std::runtime_error(output + ": " + writer->last_error());
  result.records_lost = writer->records_lost();
  return result;
}

MergeResult merge_captures(const std::vector<std::string>& inputs, const std::string& output,
                           const LoadOptions& options) {
  return merge_captures(inputs, output, [&options](const std::string& path) {
    return rank_clock_inputs(load({path}, options));
  });
}

MergeResult merge_captures(const std::vector<std::string>& inputs, const std::string& output) {
  return merge_captures(inputs, output, LoadOptions{});
}

}  // namespace gantt
