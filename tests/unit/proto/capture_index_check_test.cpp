// The chunk index is checked against the chunks it names when a reader opens the file, so that
// every reader decides alike whether to use it (issue 44, item 14); and a Header record without
// its format_version is read with the header frame's (item 15).
#include <gtest/gtest.h>

#include "capture_test_util.h"

namespace gpuhook {
namespace {

using namespace gpuhook::testing;

// Kernels named by strings defined in the chunks that first use them: 6 chunks of 10.
std::string several_chunks(const std::string& tag) {
  std::vector<v1::Record> recs;
  for (uint32_t i = 0; i < 60; ++i) {
    if (i % 20 == 0) {
      v1::Record s;
      s.mutable_string_def()->set_id(1 + i / 20);
      s.mutable_string_def()->set_value("kernel" + std::to_string(i / 20));
      recs.push_back(s);
    }
    v1::Record r;
    r.mutable_kernel()->set_name_id(1 + i / 20);
    r.mutable_kernel()->set_correlation_id(i);
    r.mutable_kernel()->set_start_ns(1'000'000 + 100 * i);
    r.mutable_kernel()->set_end_ns(1'000'000 + 100 * i + 50);
    recs.push_back(r);
  }
  return write_capture(tag, recs, 11);
}

// The file before its index frame, and the index.
void split(const std::string& file, std::string* data, v1::ChunkIndex* index) {
  ASSERT_EQ(file.compare(file.size() - 8, 8, "GPUHIDX1"), 0);
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<uint8_t>(file[file.size() - 12 + i])) << (8 * i);
  const size_t frame = 8 + n + 12;
  *data = file.substr(0, file.size() - frame);
  ASSERT_TRUE(index->ParseFromString(file.substr(file.size() - frame + 8, n)));
}

std::string with_index(const std::string& data, const v1::ChunkIndex& index) {
  const std::string bytes = index.SerializeAsString();
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  return data + le32(0x184D2A51) + le32(n + 12) + bytes + le32(n) + "GPUHIDX1";
}

// The kernels' correlation ids and names, as shares of `parts` index entries each read them
// (every share sees every string), or as one scan when parts is 0.
std::vector<std::string> kernels(const std::string& path, uint64_t parts = 0) {
  std::vector<std::string> out;
  auto read = [&](ReaderOptions o) {
    CaptureReader r(path, o);
    v1::Record rec;
    while (r.next(rec))
      if (rec.has_kernel())
        out.push_back(std::to_string(rec.kernel().correlation_id()) + " " + std::string(r.string(rec.kernel().name_id())));
    return r.index().has_value() ? static_cast<uint64_t>(r.index()->chunk_size()) : 0;
  };
  if (parts == 0) {
    read({});
    return out;
  }
  const uint64_t chunks = CaptureReader(path).index() ? CaptureReader(path).index()->chunk_size() : 0;
  if (chunks == 0) {
    read({});  // no index: one reader of everything, as the planners do
    return out;
  }
  for (uint64_t first = 0; first < chunks; first += parts) {
    ReaderOptions o;
    o.first_chunk = first;
    o.end_chunk = std::min(first + parts, chunks);
    o.outside_strings_only = true;
    read(o);
  }
  return out;
}

TEST(CaptureIndexCheck, AnIndexThatMatchesIsUsedAndFoundRight) {
  const std::string path = several_chunks("index-good");
  CaptureReader r(path);
  ASSERT_TRUE(r.index());
  EXPECT_EQ(r.index()->chunk_size(), 6);
  EXPECT_TRUE(r.integrity().index_problem.empty());
  v1::Record rec;
  while (r.next(rec)) {
  }
  EXPECT_TRUE(r.integrity().index_mismatch.empty()) << r.integrity().index_mismatch;
  EXPECT_EQ(kernels(path, 2), kernels(path));
}

// Each way an index can name other chunks than the file holds: the reader sets it aside at
// open and says why, so shares planned from it (there are none) and a scan read the same.
TEST(CaptureIndexCheck, AStaleIndexIsSetAsideAtOpen) {
  const std::string good = several_chunks("index-stale");
  std::string data;
  v1::ChunkIndex index;
  split(read_bytes(good), &data, &index);
  const std::vector<std::string> expect = kernels(good);
  ASSERT_EQ(expect.size(), 60u);

  struct Case {
    const char* name;
    void (*change)(v1::ChunkIndex&);
  };
  const Case cases[] = {
      {"offsets inside other chunks",
       [](v1::ChunkIndex& x) {
         for (int i = 1; i < x.chunk_size(); ++i) {
           x.mutable_chunk(i)->set_offset(x.chunk(i).offset() - 7);
           x.mutable_chunk(i)->set_compressed_bytes(x.chunk(i).compressed_bytes() + 7);
           x.mutable_chunk(i - 1)->set_compressed_bytes(x.chunk(i - 1).compressed_bytes() - 7);
         }
       }},
      {"chunks left out", [](v1::ChunkIndex& x) { x.mutable_chunk()->DeleteSubrange(3, 3); }},
      {"a chunk in the middle left out", [](v1::ChunkIndex& x) { x.mutable_chunk()->DeleteSubrange(2, 1); }},
      {"entries swapped", [](v1::ChunkIndex& x) { x.mutable_chunk()->SwapElements(1, 2); }},
      {"a chunk that is not there", [](v1::ChunkIndex& x) { *x.add_chunk() = x.chunk(x.chunk_size() - 1); }},
      {"a size off by one", [](v1::ChunkIndex& x) { x.mutable_chunk(4)->set_compressed_bytes(x.chunk(4).compressed_bytes() + 1); }},
  };
  for (const Case& c : cases) {
    v1::ChunkIndex stale = index;
    c.change(stale);
    const std::string path = write_bytes("index-stale", with_index(data, stale));
    CaptureReader r(path);
    EXPECT_FALSE(r.index()) << c.name;
    EXPECT_FALSE(r.integrity().has_index) << c.name;
    EXPECT_NE(r.integrity().index_problem.find("the chunk index does not match the file"), std::string::npos)
        << c.name << ": " << r.integrity().index_problem;
    EXPECT_EQ(kernels(path), expect) << c.name;
    EXPECT_EQ(kernels(path, 2), expect) << c.name;
    ReaderOptions windowed;
    windowed.from_ns = 1'000'000;
    windowed.to_ns = 1'000'000 + 100 * 59 + 50;
    CaptureReader w(path, windowed);
    v1::Record rec;
    size_t n = 0;
    while (w.next(rec)) n += rec.has_kernel();
    EXPECT_EQ(n, 60u) << c.name;
    EXPECT_FALSE(w.integrity().error) << c.name;
  }
}

// Counts and string flags cannot be checked without decoding every chunk: the index is used
// (the frames match) and a scan, which decodes them all, says where it is stale.
TEST(CaptureIndexCheck, AScanSaysWhereTheCountsAreStale) {
  const std::string good = several_chunks("index-counts");
  std::string data;
  v1::ChunkIndex index;
  split(read_bytes(good), &data, &index);
  v1::ChunkIndex stale = index;
  stale.mutable_chunk(3)->set_records(stale.chunk(3).records() + 5);
  const std::string path = write_bytes("index-counts", with_index(data, stale));
  CaptureReader r(path);
  ASSERT_TRUE(r.index());
  EXPECT_TRUE(r.integrity().index_problem.empty());
  v1::Record rec;
  while (r.next(rec)) {
  }
  EXPECT_NE(r.integrity().index_mismatch.find("chunk 3"), std::string::npos) << r.integrity().index_mismatch;
  EXPECT_EQ(kernels(path, 2), kernels(good));

  v1::ChunkIndex no_strings = index;
  for (auto& e : *no_strings.mutable_chunk()) e.set_has_string_defs(false);
  const std::string path2 = write_bytes("index-strings", with_index(data, no_strings));
  CaptureReader r2(path2);
  while (r2.next(rec)) {
  }
  EXPECT_NE(r2.integrity().index_mismatch.find("string definitions"), std::string::npos)
      << r2.integrity().index_mismatch;
}

// Damage inside a chunk is the scan's to report; it does not make the index wrong.
TEST(CaptureIndexCheck, ADamagedChunkLeavesTheIndexAlone) {
  const std::string good = several_chunks("index-damage");
  std::string bytes = read_bytes(good);
  CaptureReader g(good);
  const auto& third = g.index()->chunk(2);
  bytes[third.offset() + third.compressed_bytes() / 2] ^= 0x55;  // inside its compressed blocks
  const std::string path = write_bytes("index-damage", bytes);
  ReaderOptions lenient;
  lenient.strict = false;
  CaptureReader r(path, lenient);
  EXPECT_TRUE(r.integrity().index_problem.empty()) << r.integrity().index_problem;
}

TEST(CaptureHeaderVersion, AHeaderWithoutFormatVersionGetsTheFramesVersion) {
  v1::Record h;
  h.mutable_header()->set_host_name("h");
  h.mutable_header()->set_pid(7);
  v1::Record k;
  k.mutable_kernel()->set_start_ns(1000);
  k.mutable_kernel()->set_end_ns(2000);
  const std::string path = write_capture("noversion", {h, k});
  const std::vector<v1::Record> recs = read_all(path);
  ASSERT_FALSE(recs.empty());
  ASSERT_TRUE(recs[0].has_header());
  EXPECT_EQ(recs[0].header().format_version(), kFormatVersion);
  EXPECT_EQ(recs[0].header().host_name(), "h");

  // A version the record states is left as it is.
  h.mutable_header()->set_format_version(2);
  EXPECT_EQ(read_all(write_capture("version2", {h, k}))[0].header().format_version(), 2u);
}

}  // namespace
}  // namespace gpuhook
