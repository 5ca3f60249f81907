// Captures that readers once disagreed about (issue 44, items 14 and 15), made from a good
// capture by rewriting its chunk index or its Header record:
//   make_readers_agree stale-offsets IN OUT   index entries pointing inside other chunks
//   make_readers_agree stale-missing IN OUT   the index names only the first half of the chunks
//   make_readers_agree stale-swapped IN OUT   entries 0 and 1 swapped (each names a real chunk)
//   make_readers_agree stale-counts IN OUT    the right chunks with every record count wrong
//   make_readers_agree no-version IN OUT      the Header record without format_version
//   make_readers_agree no-header IN OUT       no Header record at all
//   make_readers_agree chunked IN OUT         the same records, a chunk every 1,000 (the stale
//                                             cases' input)
// IN must have been closed cleanly (an index) and, for the stale cases, hold several chunks.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gpuhook/capture.h>

namespace v1 = gpuhook::v1;

namespace {

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "make_readers_agree: %s\n", why.c_str());
  std::exit(2);
}

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) die("cannot write " + path);
}

// The file up to its index frame, and the index, as the writer laid them out (proto/framing.h).
void split(const std::string& file, std::string* data, v1::ChunkIndex* index) {
  if (file.size() < 12 || file.compare(file.size() - 8, 8, "GPUHIDX1") != 0) die("no index trailer");
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>(file[file.size() - 12 + i])) << (8 * i);
  const size_t frame = 8 + static_cast<size_t>(n) + 12;
  if (frame > file.size()) die("index length past the file");
  *data = file.substr(0, file.size() - frame);
  if (!index->ParseFromString(file.substr(file.size() - frame + 8, n))) die("index does not parse");
}

std::string index_frame(const v1::ChunkIndex& index) {
  const std::string bytes = index.SerializeAsString();
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  return le32(0x184D2A51) + le32(n + 12) + bytes + le32(n) + "GPUHIDX1";
}

// Rewrites every record of IN through the writer: the Header without its format_version (or
// left out), or a chunk every `per_chunk` records.
enum class HeaderChange { kKeep, kNoVersion, kLeaveOut };
void rewrite(const std::string& in, const std::string& out, HeaderChange header, size_t per_chunk) {
  gpuhook::CaptureReader reader(in);
  std::string err;
  std::remove(out.c_str());
  auto w = gpuhook::CaptureWriter::create(out, {}, &err);
  if (!w) die(err);
  size_t written = 0;
  v1::Record r;
  while (reader.next(r)) {
    if (r.kind_case() == v1::Record::kStringDef) {
      // The writer interns in first-use order; so did IN's writer, so the ids come out the same.
      if (w->intern(r.string_def().value()) != r.string_def().id()) die("string ids differ");
      continue;
    }
    if (r.kind_case() == v1::Record::kHeader) {
      if (header == HeaderChange::kLeaveOut) continue;
      if (header == HeaderChange::kNoVersion) r.mutable_header()->clear_format_version();
    }
    w->write(r);
    if (per_chunk != 0 && ++written % per_chunk == 0) w->flush();
  }
  if (!w->close()) die(w->last_error());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) die("usage: make_readers_agree stale-offsets|stale-missing|stale-swapped|stale-counts|no-version|no-header|chunked IN OUT");
  const std::string mode = argv[1], in = argv[2], out = argv[3];
  if (mode == "no-version" || mode == "no-header" || mode == "chunked") {
    rewrite(in, out,
            mode == "no-version"  ? HeaderChange::kNoVersion
            : mode == "no-header" ? HeaderChange::kLeaveOut
                                  : HeaderChange::kKeep,
            mode == "chunked" ? 1000 : 0);
    return 0;
  }
  std::string data;
  v1::ChunkIndex index;
  split(read_file(in), &data, &index);
  const int n = index.chunk_size();
  if (n < 4) die("IN has " + std::to_string(n) + " chunks; the stale cases need 4 or more");
  if (mode == "stale-offsets") {
    // As if the chunks had been rewritten at other sizes: every entry after the first starts
    // 100 bytes early, inside the chunk before it.
    for (int i = 1; i < n; ++i) {
      auto* e = index.mutable_chunk(i);
      e->set_offset(e->offset() - 100);
      index.mutable_chunk(i - 1)->set_compressed_bytes(index.chunk(i - 1).compressed_bytes() - 100);
      e->set_compressed_bytes(e->compressed_bytes() + 100);
    }
  } else if (mode == "stale-missing") {
    // An index written when the file had half its chunks.
    while (index.chunk_size() > n / 2) index.mutable_chunk()->RemoveLast();
  } else if (mode == "stale-swapped") {
    index.mutable_chunk()->SwapElements(0, 1);
  } else if (mode == "stale-counts") {
    // The first chunk said to hold nearly all the records, the rest almost none.
    uint64_t total = 0;
    for (const auto& e : index.chunk()) total += e.records();
    for (int i = 0; i < n; ++i) index.mutable_chunk(i)->set_records(i == 0 ? total - (n - 1) : 1);
  } else {
    die("unknown mode " + mode);
  }
  write_file(out, data + index_frame(index));
  return 0;
}
