// gantt-cli dump FILE: every record as one stable line, "TIME KIND field=value ...".
// Fields print in field-number order, only when set; times are absolute ns ("-" when the
// record has none); interned names are resolved and quoted with C-style escapes, so the
// output is plain ASCII whatever bytes the capture holds. Golden tests depend on this shape.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <gpuhook/capture.h>

#include "commands.h"
#include "load_captures.h"
#include "gantt/scan/open.h"

namespace gantt_cli {

namespace {

namespace pb = google::protobuf;

struct DumpOptions {
  std::string file;
  std::vector<std::string> kinds;
  uint64_t limit = 0;
};

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

bool is_string_ref(const pb::FieldDescriptor* f) {
  return f->type() == pb::FieldDescriptor::TYPE_UINT32 && (f->name() == "name_id" || f->name() == "domain_id");
}

std::string scalar(const pb::Message& m, const pb::Reflection* r, const pb::FieldDescriptor* f, int i,
                   const gpuhook::CaptureReader& reader) {
  bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
      return std::to_string(rep ? r->GetRepeatedInt32(m, f, i) : r->GetInt32(m, f));
    case pb::FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(rep ? r->GetRepeatedInt64(m, f, i) : r->GetInt64(m, f));
    case pb::FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v = rep ? r->GetRepeatedUInt32(m, f, i) : r->GetUInt32(m, f);
      if (is_string_ref(f)) return quote(reader.string(v));
      return std::to_string(v);
    }
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      return std::to_string(rep ? r->GetRepeatedUInt64(m, f, i) : r->GetUInt64(m, f));
    case pb::FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, i) : r->GetBool(m, f)) ? "true" : "false";
    case pb::FieldDescriptor::CPPTYPE_ENUM: {
      const pb::EnumValueDescriptor* e = rep ? r->GetRepeatedEnum(m, f, i) : r->GetEnum(m, f);
      return std::string(e->name());
    }
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return quote(rep ? r->GetRepeatedString(m, f, i) : r->GetString(m, f));
    default:
      return "?";
  }
}

// The record's first known time, for the leading column.
std::string lead_time(const pb::Message& m) {
  const pb::Reflection* r = m.GetReflection();
  const pb::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->has_presence() && f->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64 && r->HasField(m, f)) {
      return std::to_string(r->GetInt64(m, f));
    }
  }
  return "-";
}

std::string kind_name(const gpuhook::v1::Record& rec) {
  const pb::FieldDescriptor* f = rec.GetDescriptor()->FindFieldByNumber(static_cast<int>(rec.kind_case()));
  return f != nullptr ? std::string(f->name()) : "unknown";
}

}  // namespace

// One line for a record (also used by tests through the golden files).
std::string dump_line(const gpuhook::v1::Record& rec, const gpuhook::CaptureReader& reader) {
  const pb::FieldDescriptor* of = rec.GetDescriptor()->FindFieldByNumber(static_cast<int>(rec.kind_case()));
  if (of == nullptr) return "- unknown";
  const pb::Message& m = rec.GetReflection()->GetMessage(rec, of);
  std::string line = lead_time(m) + " " + std::string(of->name());
  const pb::Reflection* r = m.GetReflection();
  const pb::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) {
      int n = r->FieldSize(m, f);
      for (int j = 0; j < n; ++j) line += " " + std::string(f->name()) + "=" + scalar(m, r, f, j, reader);
      continue;
    }
    if (!r->HasField(m, f)) continue;
    std::string name(f->name());
    if (is_string_ref(f)) name = name.substr(0, name.size() - 3);  // name_id -> name
    line += " " + name + "=" + scalar(m, r, f, 0, reader);
  }
  return line;
}

void register_dump(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<DumpOptions>();
  CLI::App* cmd = app.add_subcommand("dump",
      "Print every record of a capture as one stable line: time, kind, fields. Times are absolute\n"
      "nanoseconds of the capture's clock; names are shown with non-ASCII bytes escaped.\n"
      "\n"
      "Examples:\n"
      "  gantt-cli dump app.gpuh --kind kernel --limit 20\n"
      "  gantt-cli dump app.gpuh --kind nccl,range | grep AllReduce\n");
  cmd->add_option("file", opts->file, "capture file (.gpuh)")->required();
  // The kinds from the schema itself, so a new record kind is listed without a change here.
  std::string kind_list;
  const pb::Descriptor* record = gpuhook::v1::Record::descriptor();
  for (int i = 0; i < record->field_count(); ++i) {
    const std::string name(record->field(i)->name());
    if (name == "chunk_start") continue;  // framing, never returned by the reader
    kind_list += (kind_list.empty() ? "" : ", ") + name;
  }
  cmd->add_option("--kind", opts->kinds, "only records of these kinds, comma separated (" + kind_list + ")")
      ->delimiter(',');
  cmd->add_option("--limit", opts->limit, "stop after this many lines (0 = all)");
  cmd->callback([opts, &exit_code] {
    const pb::Descriptor* rd = gpuhook::v1::Record::descriptor();
    for (const auto& k : opts->kinds) {
      const pb::FieldDescriptor* f = rd->FindFieldByName(k);
      if (f == nullptr || f->name() == "chunk_start") throw CLI::ValidationError("--kind", "unknown record kind '" + k + "'");
    }
    gpuhook::ReaderOptions ro;
    ro.strict = true;
    const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(with_stdin({opts->file}).front(), ro);
    gpuhook::CaptureReader& reader = *opened_reader;
    gpuhook::v1::Record rec;
    uint64_t lines = 0;
    std::string out;
    while (reader.next(rec)) {
      if (!opts->kinds.empty()) {
        std::string k = kind_name(rec);
        if (std::find(opts->kinds.begin(), opts->kinds.end(), k) == opts->kinds.end()) continue;
      }
      out = dump_line(rec, reader);
      out += '\n';
      std::fwrite(out.data(), 1, out.size(), stdout);
      if (opts->limit != 0 && ++lines >= opts->limit) break;
    }
    std::fflush(stdout);
    const gpuhook::Integrity& in = reader.integrity();
    if (in.truncated) {
      std::fprintf(stderr, "gantt-cli: %s: byte %llu: truncated tail, %llu bytes lost\n", opts->file.c_str(),
                   static_cast<unsigned long long>(in.truncated_at),
                   static_cast<unsigned long long>(in.truncated_bytes));
    }
    exit_code = kExitOk;
  });
}

}  // namespace gantt_cli
