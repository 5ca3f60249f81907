// gantt-cli info FILE...: what a capture holds and whether it is intact. Reads leniently so a
// damaged file still shows everything before the damage; the damage itself is reported and
// makes the exit code 2.
#include <sys/stat.h>

#include <google/protobuf/descriptor.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include <gpuhook/capture.h>
#include <gpuhook/record_times.h>

#include <gantt/model/json.h>
#include <gantt/model/model.h>
#include <gantt/ranks/ranks.h>
#include <gantt/scan/trace_import.h>

#include "commands.h"
#include "load_captures.h"
#include "gantt/scan/open.h"

namespace gantt_cli {

namespace {

namespace pb = google::protobuf;
namespace v1 = gpuhook::v1;

struct InfoOptions {
  std::vector<std::string> files;
  bool json = false;
  LoadFlags load;
};

// Quoted and escaped for both the text and the JSON output: header strings come from the
// traced program's environment (host name, command line) and may be any bytes; well-formed
// UTF-8 stays readable, anything else becomes U+FFFD (gantt/model/json.h).
std::string json_string(std::string_view s) { return gantt::json::quoted(s); }

struct Summary {
  std::optional<v1::Header> header;
  std::vector<v1::DeviceInfo> devices;
  // A merged job holds every rank's devices, each after its rank's header: the rank each one
  // belongs to (the header's rank, else the capture's place), so two ranks' "device 0" differ.
  std::vector<int32_t> device_rank;
  std::optional<v1::Footer> footer;
  std::map<std::string, uint64_t> counts;  // by kind name, sorted for stable output
  uint64_t records = 0;
  uint64_t headers = 0;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint64_t dropped = 0;
  uint64_t string_bytes = 0;
  std::vector<std::string> notices;  // what happened to the recording itself (a CUPTI takeover)
};

void note_time(Summary& s, int64_t t) {
  if (t <= 0) return;
  uint64_t u = static_cast<uint64_t>(t);
  if (s.first_ns == 0 || u < s.first_ns) s.first_ns = u;
  if (u > s.last_ns) s.last_ns = u;
}

// The record's times, as the format lists them (gpuhook::visit_times).
void scan_times(Summary& s, v1::Record& rec) {
  gpuhook::visit_times(rec, [&s](bool& has, int64_t& v) {
    if (has) note_time(s, v);
  });
}

std::string ns_span(uint64_t ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string integrity_text(const gpuhook::Integrity& in) {
  if (in.error) {
    return std::string("corrupt: ") + gpuhook::to_string(in.error->kind()) + " at byte " +
           std::to_string(in.error->offset()) + ": " + in.error->what();
  }
  if (in.truncated) {
    return "truncated at byte " + std::to_string(in.truncated_at) + " (" + std::to_string(in.truncated_bytes) +
           " bytes lost)";
  }
  if (!in.index_problem.empty()) return "ok, but " + in.index_problem;
  if (!in.index_mismatch.empty()) return "ok, but " + in.index_mismatch + "; the records were read from the chunks";
  return std::string("ok") + (in.has_index ? "" : " (no index: not closed cleanly)");
}

// What the file's own first bytes say it is: a capture (kUnknown) or another tool's trace.
gantt::scan::TraceFormat foreign_format(const std::string& file) {
  char head[64] = {};
  std::ifstream in(file, std::ios::binary);
  in.read(head, sizeof head);
  return gantt::scan::detect_format(std::string_view(head, static_cast<size_t>(in.gcount())));
}

void print_text(const std::string& file, const gpuhook::CaptureReader& reader, const Summary& s) {
  const gpuhook::Integrity& in = reader.integrity();
  std::ostringstream o;
  o << file << "\n";
  if (const gantt::scan::TraceFormat format = foreign_format(file); format != gantt::scan::TraceFormat::kUnknown) {
    // Another tool's trace: its own format and size, then the capture it was read as.
    struct stat st {};
    const long long bytes = ::stat(file.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : -1;
    o << "  format:      " << gantt::scan::to_string(format) << ", " << bytes << " bytes; read as a gpuhook v"
      << in.format_version << " capture of " << in.file_bytes << " bytes in memory\n";
  } else {
    o << "  format:      gpuhook v" << in.format_version << ", " << in.file_bytes << " bytes, " << in.chunks
      << " chunks, index " << (in.has_index ? "yes" : "no") << ", footer " << (in.has_footer ? "yes" : "no") << "\n";
  }
  o << "  integrity:   " << integrity_text(in) << "\n";
  if (s.header) {
    const v1::Header& h = *s.header;
    o << "  host:        " << json_string(h.host_name()) << " pid " << h.pid() << " ppid " << h.ppid();
    if (h.has_rank()) o << " rank " << h.rank();
    if (h.has_world_size()) o << "/" << h.world_size();
    if (!h.job_id().empty()) o << " job " << json_string(h.job_id());
    o << "\n";
    o << "  command:    ";
    for (const auto& a : h.command_line()) o << " " << json_string(a);
    o << "\n";
    o << "  tool:        " << json_string(h.tool_version()) << ", clock " << json_string(h.clock_domain())
      << ", cupti " << json_string(h.cupti_version()) << ", features 0x" << std::hex << h.features() << std::dec
      << "\n";
    if (!h.predicted_from().empty()) {  // gantt-cli whatif wrote it: its times are a prediction
      o << "  predicted:   from " << json_string(h.predicted_from()) << " by";
      for (const auto& c : h.predicted_change()) o << " " << json_string(c);
      o << " (not a measurement)\n";
    }
    if (!h.flight_trigger().empty()) {  // a flight recorder's dump: what made the hook write it
      const double at_s = h.flight_time_ns() > h.start_monotonic_raw_ns()
                              ? static_cast<double>(h.flight_time_ns() - h.start_monotonic_raw_ns()) / 1e9
                              : 0.0;
      char when[64];
      std::snprintf(when, sizeof when, "%.3f", at_s);
      o << "  flight:      dump " << h.flight_sequence() << ", trigger " << json_string(h.flight_trigger());
      if (!h.flight_reason().empty()) o << ": " << json_string(h.flight_reason());
      o << " at +" << when << " s; kept the last " << h.flight_duration_ns() / 1'000'000 << " ms (at most "
        << (h.flight_max_bytes() >> 20) << " MiB), " << h.flight_chunks_dropped() << " older chunks let go; "
        << json_string(h.flight_settings()) << "\n";
    }
  } else {
    o << "  header:      missing\n";
  }
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const auto& d = s.devices[i];
    if (s.headers > 1) o << "  rank " << s.device_rank[i] << " device " << d.ordinal() << ": ";
    else o << "  device " << d.ordinal() << ":    ";
    o << json_string(d.name()) << ", " << d.sm_count() << " SMs, cc "
      << d.cc_major() << "." << d.cc_minor() << ", " << d.global_memory_bytes() << " bytes";
    // Older captures, and captures recorded without NVML, name no link: nothing is shown.
    if (d.pcie_link_max_generation() != 0 && d.pcie_link_max_width() != 0)
      o << ", PCIe gen" << d.pcie_link_max_generation() << " x" << d.pcie_link_max_width();
    o << "\n";
  }
  o << "  time span:   ";
  if (s.first_ns != 0) {
    o << s.first_ns << " .. " << s.last_ns << " ns (" << ns_span(s.last_ns - s.first_ns) << ")\n";
  } else {
    o << "none\n";
  }
  o << "  records:     " << s.records;
  for (const auto& [k, n] : s.counts) o << ", " << k << " " << n;
  o << "\n";
  o << "  strings:     " << (reader.strings().size() - 1) << " (" << s.string_bytes << " bytes)\n";
  char bpr[32];
  std::snprintf(bpr, sizeof bpr, "%.2f", s.records ? static_cast<double>(in.file_bytes) / s.records : 0.0);
  o << "  bytes/record: " << bpr << "\n";
  o << "  dropped:     " << s.dropped << "\n";
  for (const std::string& n : s.notices) o << "  notice:      " << json_string(n) << "\n";
  std::cout << o.str();
}

void print_json(const std::string& file, const gpuhook::CaptureReader& reader, const Summary& s, bool first) {
  const gpuhook::Integrity& in = reader.integrity();
  std::ostringstream o;
  o << (first ? "" : ",\n") << "{\"file\":" << json_string(file) << ",\"format_version\":" << in.format_version
    << ",\"file_bytes\":" << in.file_bytes << ",\"chunks\":" << in.chunks
    << ",\"has_index\":" << (in.has_index ? "true" : "false") << ",\"has_footer\":" << (in.has_footer ? "true" : "false")
    << ",\"integrity\":{\"ok\":" << (!in.error && !in.truncated ? "true" : "false")
    << ",\"truncated\":" << (in.truncated ? "true" : "false") << ",\"truncated_at\":" << in.truncated_at
    << ",\"truncated_bytes\":" << in.truncated_bytes;
  if (!in.index_problem.empty()) o << ",\"index_problem\":" << json_string(in.index_problem);
  if (!in.index_mismatch.empty()) o << ",\"index_mismatch\":" << json_string(in.index_mismatch);
  if (in.error) {
    o << ",\"error\":{\"kind\":" << json_string(gpuhook::to_string(in.error->kind()))
      << ",\"offset\":" << in.error->offset() << ",\"what\":" << json_string(in.error->what()) << "}";
  }
  o << "}";
  if (s.header) {
    const v1::Header& h = *s.header;
    o << ",\"header\":{\"host\":" << json_string(h.host_name()) << ",\"pid\":" << h.pid() << ",\"ppid\":" << h.ppid();
    if (h.has_rank()) o << ",\"rank\":" << h.rank();
    if (h.has_world_size()) o << ",\"world_size\":" << h.world_size();
    if (!h.job_id().empty()) o << ",\"job_id\":" << json_string(h.job_id());
    o << ",\"command_line\":[";
    for (int i = 0; i < h.command_line_size(); ++i) o << (i ? "," : "") << json_string(h.command_line(i));
    o << "],\"tool_version\":" << json_string(h.tool_version()) << ",\"clock_domain\":" << json_string(h.clock_domain())
      << ",\"cupti_version\":" << json_string(h.cupti_version()) << ",\"features\":" << h.features();
    if (!h.predicted_from().empty()) {
      o << ",\"predicted_from\":" << json_string(h.predicted_from()) << ",\"predicted_changes\":[";
      for (int i = 0; i < h.predicted_change_size(); ++i) o << (i ? "," : "") << json_string(h.predicted_change(i));
      o << "]";
    }
    if (!h.flight_trigger().empty())
      o << ",\"flight\":{\"sequence\":" << h.flight_sequence() << ",\"trigger\":" << json_string(h.flight_trigger())
        << ",\"reason\":" << json_string(h.flight_reason()) << ",\"time_ns\":" << h.flight_time_ns()
        << ",\"duration_ns\":" << h.flight_duration_ns() << ",\"max_bytes\":" << h.flight_max_bytes()
        << ",\"chunks_dropped\":" << h.flight_chunks_dropped() << ",\"settings\":" << json_string(h.flight_settings())
        << "}";
    o << "}";
  }
  o << ",\"devices\":[";
  for (size_t i = 0; i < s.devices.size(); ++i) {
    const auto& d = s.devices[i];
    o << (i ? "," : "") << "{";
    if (s.headers > 1) o << "\"rank\":" << s.device_rank[i] << ",";
    o << "\"ordinal\":" << d.ordinal() << ",\"name\":" << json_string(d.name())
      << ",\"sm_count\":" << d.sm_count() << ",\"cc\":\"" << d.cc_major() << "." << d.cc_minor()
      << "\",\"global_memory_bytes\":" << d.global_memory_bytes() << "}";
  }
  o << "],\"first_ns\":" << s.first_ns << ",\"last_ns\":" << s.last_ns << ",\"records\":" << s.records
    << ",\"records_by_kind\":{";
  bool comma = false;
  for (const auto& [k, n] : s.counts) {
    o << (comma ? "," : "") << json_string(k) << ":" << n;
    comma = true;
  }
  char bpr[32];
  std::snprintf(bpr, sizeof bpr, "%.2f", s.records ? static_cast<double>(in.file_bytes) / s.records : 0.0);
  o << "},\"strings\":" << (reader.strings().size() - 1) << ",\"string_bytes\":" << s.string_bytes
    << ",\"bytes_per_record\":" << bpr << ",\"dropped\":" << s.dropped << "}";
  std::cout << o.str();
}

// Returns false when the file was damaged (the caller turns that into exit code 2).
// Prints what one file holds, record by record (the file as written, not the model). Adds the
// file's Header records to *headers: more than one is a merged job.
bool info_one(const std::string& file, bool json, bool first, uint64_t* headers) {
  gpuhook::ReaderOptions ro;
  ro.strict = false;
  const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(file, ro);
  gpuhook::CaptureReader& reader = *opened_reader;
  Summary s;
  v1::Record rec;
  const pb::Descriptor* rd = v1::Record::descriptor();
  int32_t last_rank = 0;
  while (reader.next(rec)) {
    s.records++;
    const pb::FieldDescriptor* of = rd->FindFieldByNumber(static_cast<int>(rec.kind_case()));
    if (of == nullptr) continue;
    s.counts[std::string(of->name())]++;
    switch (rec.kind_case()) {
      case v1::Record::kHeader:
        if (!s.header) s.header = rec.header();
        last_rank = rec.header().has_rank() ? rec.header().rank() : static_cast<int32_t>(s.headers);
        ++s.headers;
        ++*headers;
        break;
      case v1::Record::kDevice:
        s.devices.push_back(rec.device());
        s.device_rank.push_back(last_rank);
        break;
      case v1::Record::kFooter:
        s.footer = rec.footer();
        break;
      case v1::Record::kNotice:
        // Untrusted: a few, each cut to a line's worth.
        if (s.notices.size() < 16) s.notices.push_back(rec.notice().text().substr(0, 512));
        break;
      case v1::Record::kDrops:
        if (gpuhook::is_loss(rec.drops().source())) s.dropped += rec.drops().count();
        break;
      case v1::Record::kStringDef:
        s.string_bytes += rec.string_def().value().size();
        break;
      default:
        break;
    }
    // ClockSync pairs carry other clock domains (GPU, realtime): not part of the span.
    if (rec.kind_case() != v1::Record::kClockSync) scan_times(s, rec);
  }
  if (json) {
    print_json(file, reader, s, first);
  } else {
    print_text(file, reader, s);
  }
  if (const auto& e = reader.integrity().error) {
    std::cerr << "gantt-cli: " << e->file() << ": byte " << e->offset() << ": " << e->what() << "\n";
    return false;
  }
  return true;
}

}  // namespace

void register_info(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<InfoOptions>();
  CLI::App* cmd = app.add_subcommand("info",
      "What a capture holds and whether it is intact: header (host, pid, rank, command line,\n"
      "clock pair), devices, time span, record counts by kind, strings, chunks, bytes per record,\n"
      "dropped records, and integrity (a truncated tail with the bytes lost, a corrupt frame with\n"
      "its byte offset). Exit 2 when a file is damaged.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli info app.gpuh\n"
      "  gantt-cli info --json rank*.gpuh | python3 -m json.tool\n");
  cmd->add_option("files", opts->files, "capture files (.gpuh)")->required();
  cmd->add_flag("--json", opts->json, "one JSON array, one object per file (the same as --format json)");
  cmd->add_option_function<std::string>(
         "--format", [opts](const std::string& f) { opts->json = f == "json"; }, "text or json, as the other subcommands")
      ->check(CLI::IsMember({"text", "json"}));
  add_load_flags(*cmd, opts->load);
  cmd->callback([opts, &exit_code] {
    bool ok = true;
    uint64_t headers = 0;
    opts->files = with_stdin(opts->files);
    if (opts->json) std::cout << "[";
    for (size_t i = 0; i < opts->files.size(); ++i) {
      try {
        ok = info_one(opts->files[i], opts->json, i == 0, &headers) && ok;
      } catch (const gpuhook::CaptureError& e) {
        // Not a capture at all (or too new): say so and go on with the other files.
        std::cerr << "gantt-cli: " << e.file() << ": byte " << e.offset() << ": " << e.what() << "\n";
        ok = false;
      }
    }
    if (opts->json) std::cout << "]\n";
    if (!opts->json && ok && headers > 1) {
      // The ranks of one job (several captures, or one merged file) and how their clocks line up
      // (gantt/ranks/ranks.h), from their collectives, as merge aligns them.
      try {
        std::vector<gantt::RankClockInput> inputs;
        for (const std::string& f : opts->files)
          for (gantt::RankClockInput& in :
               clock_inputs_of(f, opts->load, 0, {"the ranks' clocks of this file are read from it loaded whole", gantt::scan::WholePath::kClocks}))
            inputs.push_back(std::move(in));
        if (inputs.size() > 1) {
          const gantt::RankAlignment alignment = gantt::align_ranks(inputs);
          std::cout << "ranks (times mapped onto the first capture's clock):\n";
          for (const std::string& line : gantt::describe(alignment, inputs)) std::cout << "  " << line << "\n";
          std::cout << "  " << gantt::summarize(alignment) << "\n";
        }
      } catch (const LoadTooLarge& e) {
        std::cerr << "gantt-cli: info: the ranks' clocks left out: " << e.what() << "\n";  // the files' own info stands
      }
    }
    std::cout.flush();
    exit_code = ok ? kExitOk : kExitError;
  });
}

}  // namespace gantt_cli
