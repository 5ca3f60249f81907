// Helpers for the format tests: records with every field set from a seed, captures written to
// temporary files, and raw byte surgery for the hostile-input cases.
#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <zstd.h>

#include <gpuhook/capture.h>

#include "capture_builder.h"

namespace gpuhook::testing {

namespace pb = google::protobuf;

// Sets every field of `m` to a value drawn from `rng`. Times (optional sint64) get positive,
// non-zero values, as the writer only stores known (non-zero) times.
inline void fill_message(pb::Message& m, std::mt19937_64& rng) {
  const pb::Reflection* r = m.GetReflection();
  const pb::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    uint64_t v = rng();
    if (f->is_repeated()) {
      if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) {
        for (uint64_t k = 0; k < 1 + v % 3; ++k) r->AddString(&m, f, "arg" + std::to_string(rng() % 1000));
      }
      continue;
    }
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_INT32: r->SetInt32(&m, f, static_cast<int32_t>(v % 100000) - 50000); break;
      case pb::FieldDescriptor::CPPTYPE_INT64:
        r->SetInt64(&m, f, static_cast<int64_t>(1 + v % (1ull << 50)));
        break;
      case pb::FieldDescriptor::CPPTYPE_UINT32: r->SetUInt32(&m, f, static_cast<uint32_t>(1 + v % 1000000)); break;
      case pb::FieldDescriptor::CPPTYPE_UINT64: r->SetUInt64(&m, f, v | 1); break;
      case pb::FieldDescriptor::CPPTYPE_BOOL: r->SetBool(&m, f, true); break;
      case pb::FieldDescriptor::CPPTYPE_ENUM: {
        const pb::EnumDescriptor* e = f->enum_type();
        r->SetEnum(&m, f, e->value(static_cast<int>(v % static_cast<uint64_t>(e->value_count()))));
        break;
      }
      case pb::FieldDescriptor::CPPTYPE_STRING: {
        std::string s(1 + v % 40, '\0');
        // bytes fields take any value; proto3 string fields must be UTF-8, so ASCII there.
        bool text = f->type() == pb::FieldDescriptor::TYPE_STRING;
        for (auto& c : s) c = static_cast<char>(text ? 'a' + rng() % 26 : rng());
        r->SetString(&m, f, s);
        break;
      }
      default: break;
    }
  }
}

// Every Record kind a producer may write (ChunkStart belongs to the framing).
inline std::vector<const pb::FieldDescriptor*> record_kinds() {
  std::vector<const pb::FieldDescriptor*> out;
  const pb::OneofDescriptor* o = v1::Record::descriptor()->FindOneofByName("kind");
  for (int i = 0; i < o->field_count(); ++i) {
    if (o->field(i)->number() != v1::Record::kChunkStart) out.push_back(o->field(i));
  }
  return out;
}

inline v1::Record random_record(const pb::FieldDescriptor* kind, std::mt19937_64& rng) {
  v1::Record rec;
  pb::Message* m = rec.GetReflection()->MutableMessage(&rec, kind);
  fill_message(*m, rng);
  return rec;
}

// A unique temporary path (the file does not exist yet), in one directory per test process
// that is removed when the process exits.
inline std::string temp_path(const std::string& tag) {
  static int counter = 0;
  static const std::string dir = [] {
    char d[] = "/tmp/gpuhook-test-XXXXXX";
    std::string made = mkdtemp(d) ? d : "";
    if (made.empty()) return std::string("/tmp");
    static std::string to_remove;
    to_remove = made;
    std::atexit([] { std::filesystem::remove_all(to_remove); });
    return made;
  }();
  return dir + "/" + tag + "-" + std::to_string(counter++) + ".gpuh";
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string write_bytes(const std::string& tag, const std::string& bytes) {
  std::string p = temp_path(tag);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// Writes `records` (flushing a chunk every `per_chunk` records when non-zero) and closes, or
// leaves the file without its index as a killed process does.
inline std::string write_capture(const std::string& tag, const std::vector<v1::Record>& records,
                                 size_t per_chunk = 0, bool close = true) {
  std::string p = temp_path(tag);
  gpuhook::test::CaptureBuilder b(p);
  if (!b.ok()) return "";
  size_t n = 0;
  for (const auto& r : records) {
    b.write(r);
    if (per_chunk != 0 && ++n % per_chunk == 0) b.flush();
  }
  if (close) {
    b.close();
  } else {
    b.flush();
  }
  return p;
}

inline std::vector<v1::Record> read_all(const std::string& path, ReaderOptions o = {}) {
  CaptureReader reader(path, o);
  std::vector<v1::Record> out;
  v1::Record r;
  while (reader.next(r)) out.push_back(r);
  return out;
}

// Raw files, for records no writer would produce.
inline std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

// A header frame of format `version` and one zstd frame (checksum on) holding `content` as it stands.
inline std::string file_with_chunk(const std::string& content, uint32_t version = 1) {
  std::string f = le32(0x184D2A50) + le32(16) + std::string("GPUHOOK\0", 8) + le32(version) + le32(0);
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(content.size()), '\0');
  size_t n = ZSTD_compress2(c, out.data(), out.size(), content.data(), content.size());
  ZSTD_freeCCtx(c);
  out.resize(n);
  return f + out;
}

// ChunkStart{sequence 0, base 0} as Capture.record.
inline std::string chunk_start_bytes() {
  v1::Record r;
  r.mutable_chunk_start()->set_sequence(0);
  r.mutable_chunk_start()->set_base_ns(100);
  std::string b = r.SerializeAsString();
  return std::string(1, '\x0A') + static_cast<char>(b.size()) + b;
}

}  // namespace gpuhook::testing
