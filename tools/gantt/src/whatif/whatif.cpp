// gantt::whatif::predict: read, build, change, replay, write (whatif.h).
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <gpuhook/capture.h>

#include "gantt/analysis/memory.h"  // saturating_add
#include "gantt/model/model.h"
#include "gantt/scan/open.h"

#include "whatif_internal.h"

namespace gantt::whatif {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

double parse_number(const std::string& text, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(v) || v <= 0)
    throw std::invalid_argument("--change " + text + ": '" + value + "' is not a positive number");
  return v;
}

// One input file as sections: a merged capture holds one per rank, each starting at a Header.
// A bound on decoded records as every loader's (AmplificationGuard), at the replay's own rate
// (kMaxRecordsPerByte): a file decodes to no more than a capture of its size can hold.
std::vector<detail::Section> read_sections(const std::string& path, uint64_t max_records_per_byte,
                                           std::vector<std::string>* warnings) {
  const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, gpuhook::ReaderOptions{false, 0, 0});
  gpuhook::CaptureReader& reader = *opened_reader;
  LoadOptions limits;
  limits.max_records_per_byte = max_records_per_byte;
  const AmplificationGuard guard(reader, limits);
  // The index says how many records come: over the limit, refuse before holding any.
  if (const auto& index = reader.index()) {
    uint64_t records = 0;
    for (const auto& chunk : index->chunk()) records = std::min(UINT64_MAX - records, chunk.records()) + records;
    if (!guard.allows(records))
      throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kOversizedLength, path, 0,
                                  "its index lists " + std::to_string(records) + " records in " +
                                      std::to_string(reader.integrity().file_bytes) + " bytes, over " +
                                      std::to_string(max_records_per_byte) +
                                      " per byte of file that the replay takes (about 330 bytes of memory a record); "
                                      "--max-records-per-byte 0 reads it anyway");
  }
  auto strings = std::make_shared<std::unordered_map<uint32_t, std::string>>();
  std::vector<detail::Section> out;
  gpuhook::v1::Record r;
  while (reader.next(r)) {
    guard.check(reader);
    if (r.kind_case() == gpuhook::v1::Record::kStringDef) {
      (*strings)[r.string_def().id()] = r.string_def().value();
      continue;
    }
    if (r.kind_case() == gpuhook::v1::Record::kHeader || out.empty()) out.emplace_back();
    out.back().records.add(r);
  }
  const gpuhook::Integrity& in = reader.integrity();
  if (in.error) throw *in.error;
  if (in.truncated)
    warnings->push_back(path + ": byte " + std::to_string(in.truncated_at) +
                        ": truncated tail; predicted from what was written before it");
  if (out.empty())
    throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kTruncated, path, in.truncated ? in.truncated_at : 0,
                                in.truncated ? "truncated before its first whole chunk: no records to predict from"
                                             : "no records to predict from");
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].name = out.size() == 1 ? path : path + "#" + std::to_string(i);
    out[i].strings = strings;
  }
  return out;
}

namespace v1 = gpuhook::v1;

// KernelSectors of the sections' own records (with their inputs' strings) or of other files,
// summed by kernel name. A sum saturates: an untrusted count cannot wrap.
void add_count(std::map<std::string, SectorCount>& out, const std::string& name, const v1::KernelSectors& k,
               const std::string& path) {
  if (out.size() >= kMaxSectorNames && out.find(name) == out.end())
    throw std::invalid_argument(path + ": more than " + std::to_string(kMaxSectorNames) +
                                " kernel names with sector counts; a capture holds one record a kernel and device");
  SectorCount& c = out[name];
  c.sectors = analysis::saturating_add(c.sectors, k.sectors());
  c.ideal_sectors = analysis::saturating_add(c.ideal_sectors, k.ideal_sectors());
}

void read_sector_counts(detail::Built& b, const std::vector<std::string>& paths) {
  v1::Record r;
  if (paths.empty()) {
    for (const detail::Section& s : b.sections)
      for (uint32_t i = 0; i < s.records.size(); ++i) {
        s.records.get(i, &r);
        if (r.kind_case() == v1::Record::kKernelSectors) add_count(b.sectors, s.string(r.kernel_sectors().name_id()), r.kernel_sectors(), s.name);
      }
    b.sectors_source = "the capture itself (on a GPU its kernels ran slower, patched to count: record the times "
                       "without GPUHOOK_SECTORS and pass the counts with --sectors-from)";
    return;
  }
  for (const std::string& path : paths) {
    const std::unique_ptr<gpuhook::CaptureReader> reader = gantt::scan::open_capture(path, gpuhook::ReaderOptions{false, 0, 0});
    LoadOptions limits;
    const AmplificationGuard guard(*reader, limits);
    while (reader->next(r)) {
      guard.check(*reader);
      if (r.kind_case() == v1::Record::kKernelSectors)
        add_count(b.sectors, std::string(reader->string(r.kernel_sectors().name_id())), r.kernel_sectors(), path);
    }
    const gpuhook::Integrity& in = reader->integrity();
    if (in.error) throw *in.error;
    // The counts are written at the end of a run: a truncated file has lost them.
    b.sectors_source += (b.sectors_source.empty() ? "" : ", ") + path +
                        (in.truncated ? " (truncated at byte " + std::to_string(in.truncated_at) + ")" : "");
  }
}

}  // namespace

namespace detail {

void RecordStore::add(const v1::Record& r) {
  const size_t n = r.ByteSizeLong();
  if (blocks_.empty() || blocks_.back().size() + n > blocks_.back().capacity()) {
    blocks_.emplace_back();
    blocks_.back().reserve(std::max(kBlockBytes, n));
  }
  at_.push_back({static_cast<uint32_t>(blocks_.size() - 1), static_cast<uint32_t>(blocks_.back().size())});
  r.AppendToString(&blocks_.back());
}

void RecordStore::get(size_t i, v1::Record* out) const {
  const At a = at_[i];
  const std::string& block = blocks_[a.block];
  const size_t end = i + 1 < at_.size() && at_[i + 1].block == a.block ? at_[i + 1].offset : block.size();
  if (!out->ParseFromArray(block.data() + a.offset, static_cast<int>(end - a.offset))) out->Clear();
}

}  // namespace detail

namespace {
// REGEX:N, where what follows the last colon of *name is a number (a colon in a regex
// otherwise): the number, with *name left as the regex. Throws when the regex is empty.
std::optional<double> trailing_count(const std::string& text, std::string* name, const char* spelling) {
  const size_t colon = name->rfind(':');
  if (colon == std::string::npos || colon + 1 >= name->size() ||
      name->find_first_not_of("0123456789", colon + 1) != std::string::npos)
    return std::nullopt;
  const double n = parse_number(text, name->substr(colon + 1));
  name->resize(colon);
  if (name->empty()) throw std::invalid_argument("--change " + text + ": write " + spelling);
  return n;
}
}  // namespace

Change parse_change(const std::string& text) {
  Change c;
  c.text = text;
  if (text == "pin-copies") c.kind = Change::Kind::kPinCopies;
  else if (text == "async-copies") c.kind = Change::Kind::kAsyncCopies;
  else if (text == "remove-syncs") c.kind = Change::Kind::kRemoveSyncs;
  else if (starts_with(text, "remove-syncs=") && text.size() > 13) c.kind = Change::Kind::kRemoveSyncs, c.name = text.substr(13);
  else if (text == "graphs") c.kind = Change::Kind::kGraphs;
  else if (text == "balance-ranks") c.kind = Change::Kind::kBalanceRanks;
  else if (text == "overlap-copies") c.kind = Change::Kind::kOverlapCopies;
  else if (text == "free-idle") c.kind = Change::Kind::kFreeIdle;
  else if (starts_with(text, "streams=")) {
    c.kind = Change::Kind::kStreams;
    const double n = parse_number(text, text.substr(8));
    if (n != std::floor(n) || n < 2 || n > 1024)
      throw std::invalid_argument("--change " + text + ": the number of streams is a whole number from 2 to 1024");
    c.streams = static_cast<uint32_t>(n);
  } else if (starts_with(text, "scale=")) {
    c.kind = Change::Kind::kScale;
    const std::string rest = text.substr(6);
    const size_t colon = rest.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw std::invalid_argument("--change " + text + ": write scale=KERNEL_REGEX:FACTOR, e.g. scale=gemm:0.8");
    c.name = rest.substr(0, colon);
    c.factor = parse_number(text, rest.substr(colon + 1));
    if (c.factor > 1e6) throw std::invalid_argument("--change " + text + ": a factor above 1e6 is not a prediction");
  } else if (starts_with(text, "block-size=") && text.size() > 11) {
    c.kind = Change::Kind::kBlockSize;
    c.name = text.substr(11);
    if (const auto n = trailing_count(text, &c.name, "block-size=KERNEL_REGEX[:THREADS]")) {
      if (*n > 65536) throw std::invalid_argument("--change " + text + ": a block holds at most 65536 threads on any GPU");
      c.threads = static_cast<uint32_t>(*n);
    }
  } else if (starts_with(text, "fuse=") && text.size() > 5) {
    c.kind = Change::Kind::kFuse;
    c.name = text.substr(5);
    if (const auto n = trailing_count(text, &c.name, "fuse=KERNEL_REGEX[:LAUNCHES]")) {
      if (*n < 2 || *n > UINT32_MAX) throw std::invalid_argument("--change " + text + ": a fused kernel takes from 2 launches up");
      c.launches = static_cast<uint32_t>(*n);
    }
  } else if (starts_with(text, "checkpoint=") && text.size() > 11) {
    c.kind = Change::Kind::kCheckpoint;
    c.name = text.substr(11);
    if (const auto n = trailing_count(text, &c.name, "checkpoint=CATEGORY_REGEX[:K]")) {
      if (*n != std::floor(*n) || *n > 1e6) throw std::invalid_argument("--change " + text + ": K is a whole number from 1 to 1000000");
      c.every = static_cast<uint32_t>(*n);
    }
  } else if (text == "pipeline=1f1b" || starts_with(text, "pipeline=1f1b:")) {
    c.kind = Change::Kind::kPipeline;
    if (text != "pipeline=1f1b") {
      const double n = parse_number(text, text.substr(14));
      if (n != std::floor(n) || n < 1 || n > 65536)
        throw std::invalid_argument("--change " + text + ": M, the micro-batches a step, is a whole number from 1 to 65536");
      c.micro_batches = static_cast<uint32_t>(n);
    }
  } else if (starts_with(text, "coalesce=") && text.size() > 9) {
    c.kind = Change::Kind::kCoalesce;
    c.name = text.substr(9);
  } else if (starts_with(text, "priority=") && text.size() > 9) {
    c.kind = Change::Kind::kPriority;
    c.name = text.substr(9);
  } else {
    throw std::invalid_argument("--change '" + text + "' is not a change whatif knows:\n" + change_help());
  }
  return c;
}

const char* change_help() {
  return "  pin-copies             pageable copies at the pinned bandwidth: --pinned-gbps, else measured\n"
         "                         on the capture's pinned copies, else 80% of the device's PCIe link\n"
         "                         (recorded from NVML); cudaMemcpyAsync no longer blocks the host\n"
         "  async-copies           synchronous copies become async on a copy stream, ordered by events\n"
         "                         with the work that feeds or reads them\n"
         "  remove-syncs[=NAME]    drop the synchronising calls (only those named NAME) the host's loop\n"
         "                         repeats; a thread's last wait, waits before it reads a DtoH copy, and\n"
         "                         a wait no other wait of its name follows the same call to stay\n"
         "  streams=N              each stream's repeating chains of work spread over N streams\n"
         "  overlap-copies         copies that follow the kernels computing their chunks go to a copy\n"
         "                         stream, each behind its own chunk's kernel (paired by position)\n"
         "  graphs                 repeated launch sequences become one graph launch each\n"
         "  scale=REGEX:FACTOR     kernels whose name matches REGEX take FACTOR times as long\n"
         "  coalesce=REGEX         kernels matching REGEX with their global loads and stores coalesced:\n"
         "                         each takes its time times the fewest sectors its accesses need over\n"
         "                         the sectors they touched (a kernel bound by its memory traffic), as\n"
         "                         counted in a run with GPUHOOK_SECTORS=1 (--sectors-from)\n"
         "  balance-ranks          each step's compute on every rank set to the ranks' mean\n"
         "  priority=REGEX         the streams that run kernels matching REGEX at a greater priority\n"
         "                         than every other stream of their device\n"
         "  block-size=REGEX[:N]   kernels matching REGEX launched with N threads a block (default: the\n"
         "                         size cudaOccupancyMaxPotentialBlockSize suggests) over the blocks that\n"
         "                         cover the same threads; each takes its waves of blocks times its\n"
         "                         measured time per wave (1-D launches on a recorded device)\n"
         "  fuse=REGEX[:N]         each run of back-to-back launches of kernels matching REGEX on one\n"
         "                         stream (at most N) becomes one launch over all their blocks, timed by\n"
         "                         its waves of blocks at their measured time per wave; the launch calls\n"
         "                         after the first and the host time between them go\n"
         "  checkpoint=REGEX[:K]   activation checkpointing: a run of allocations tagged REGEX\n"
         "                         (gpuhook_mem_tag) made one after another and freed in reverse keeps\n"
         "                         one in K (default: the square root of the run) for the backward pass,\n"
         "                         frees the others once the next is made, and makes a segment again\n"
         "                         when the backward pass reaches it; memory only: the recompute's\n"
         "                         kernels are counted in the note, not added to the timeline\n"
         "  free-idle              what diagnose memory-idle names: an allocation held unused at its\n"
         "                         device's memory peak for at least half the capture is freed right\n"
         "                         after its last use (record with GPUHOOK_MEM_USE=1)\n"
         "  pipeline=1f1b[:M]      a GPipe pipeline (every stage's capture; each step all its forward\n"
         "                         passes, then all its backward passes) run as 1F1B, as Megatron-LM\n"
         "                         does, with M micro-batches a step (default: as recorded), each\n"
         "                         micro-batch's kernels and transfers scaled to its size; the sends and\n"
         "                         receives meet again across the ranks\n";
}

Prediction predict(const std::vector<std::string>& inputs, const std::vector<Change>& changes, const Options& options,
                   const std::string& output) {
  struct stat st {};
  if (::stat(output.c_str(), &st) == 0) throw std::runtime_error(output + ": exists; whatif never overwrites a file");
  std::vector<detail::Section> sections;
  std::vector<std::string> warnings;
  for (const std::string& in : inputs)
    for (detail::Section& s : read_sections(in, options.max_records_per_byte, &warnings)) sections.push_back(std::move(s));
  if (sections.size() > UINT16_MAX) throw std::invalid_argument("whatif: more than 65535 captures");
  detail::Built built = detail::build(std::move(sections));
  for (const Change& c : changes)
    if (c.kind == Change::Kind::kCoalesce) {
      read_sector_counts(built, options.sectors_from);
      break;
    }
  replay(built.graph);  // the unchanged replay: how well the model matches this capture
  Prediction p;
  const std::vector<Span> measured = original_spans(built.graph), unchanged = replayed_spans(built.graph);
  for (uint16_t s = 0; s < built.sections.size(); ++s) {
    Prediction::Section sec;
    sec.name = built.sections[s].name;
    sec.measured = s < measured.size() ? measured[s] : Span{};
    sec.unchanged = s < unchanged.size() ? unchanged[s] : Span{};
    p.sections.push_back(sec);
  }
  detail::apply(built, changes, options);
  replay(built.graph);
  const std::vector<Span> predicted = replayed_spans(built.graph);
  for (uint16_t s = 0; s < built.sections.size() && s < predicted.size(); ++s) p.sections[s].predicted = predicted[s];
  p.notes = built.graph.notes;
  p.warnings = warnings;
  p.records_written = detail::write(built, changes, output);
  return p;
}

}  // namespace gantt::whatif
