// CaptureReader: frames -> chunks -> records, treating every byte as untrusted. Memory is
// bounded by one decompressed chunk (framing::kMaxChunkContentBytes) plus the string table;
// no length read from the file is allocated before it is checked against the limits.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <zstd.h>
#include <zstd_errors.h>

#include <gpuhook/capture.h>
#include <gpuhook/foreign_import.h>

#include "fast_decode.h"
#include "framing.h"
#include "record_codec.h"

namespace gpuhook {

namespace {

constexpr size_t kInputBlockBytes = 128 * 1024;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

// Reads a varint from [p, end); false when it runs off the end or past 10 bytes.
bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// The [min, max] of a record's known times; false when it has none.
bool time_span(v1::Record& r, uint64_t& lo, uint64_t& hi) {
  bool any = false;
  visit_times(r, [&](bool& has, int64_t& v) {
    if (!has || v <= 0) return;
    uint64_t u = static_cast<uint64_t>(v);
    if (!any || u < lo) lo = u;
    if (!any || u > hi) hi = u;
    any = true;
  });
  return any;
}

}  // namespace

namespace {
std::atomic<ForeignImporter> g_foreign_importer{nullptr};
std::atomic<const char*> g_foreign_formats{nullptr};

// The error of a file that starts as no capture: and, when an importer is set, as none of its formats.
std::string not_a_capture() {
  const char* formats = g_foreign_importer.load(std::memory_order_acquire) != nullptr
                            ? g_foreign_formats.load(std::memory_order_acquire)
                            : nullptr;
  return std::string("not a gpuhook capture (wrong magic)") + (formats != nullptr ? std::string(", nor ") + formats : "");
}
}  // namespace

struct CaptureReader::Impl {
  std::string path;
  ReaderOptions options;
  int fd = -1;
  uint64_t file_size = 0;
  Integrity integrity;
  std::optional<v1::ChunkIndex> index;
  uint64_t index_frame_offset = 0;  // where the data frames end when there is an index

  std::vector<std::string> strings{std::string()};
  std::unordered_map<uint32_t, std::string> sparse_strings;  // ids out of sequence (hostile)

  ZSTD_DCtx* dctx = nullptr;
  std::vector<uint8_t> input;
  std::string content;       // the current chunk, decompressed
  size_t content_bytes = 0;  // valid bytes in content
  size_t content_pos = 0;
  bool in_chunk = false;
  bool context_only = false;  // a windowed read outside the window: only context records
  bool context_strings_only = false;  // ...and of those only StringDef (outside_strings_only)
  uint64_t chunk_offset = 0;
  codec::Cursors cursors;
  uint32_t version = 0;  // of the file: each version adds a base (record_codec.h)

  uint64_t next_offset = 0;  // the next frame to look at when scanning
  bool windowed = false;
  size_t next_index_entry = 0;  // when reading through the index
  bool done = false;
  // The current chunk, against its index entry (index_mismatch): records before it, and
  // whether it defined strings.
  uint64_t records_before_chunk = 0;
  bool chunk_defines_strings = false;

  ~Impl() {
    if (dctx != nullptr) ZSTD_freeDCtx(dctx);
    if (fd >= 0) ::close(fd);
  }

  [[noreturn]] void error(CaptureErrorKind kind, uint64_t offset, const std::string& what) {
    throw CaptureError(kind, path, offset, what);
  }

  // Reads exactly n bytes at offset; false at end of file (short read).
  bool pread_exact(void* buf, size_t n, uint64_t offset) {
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        error(CaptureErrorKind::kIo, offset + got, std::string("read failed: ") + std::strerror(errno));
      }
      if (r == 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }

  void mark_truncated(uint64_t at) {
    integrity.truncated = true;
    integrity.truncated_at = at;
    integrity.truncated_bytes = file_size - at;
    done = true;
  }

  void open_file() {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) error(CaptureErrorKind::kIo, 0, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) error(CaptureErrorKind::kIo, 0, std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) error(CaptureErrorKind::kIo, 0, "not a regular file");
    file_size = static_cast<uint64_t>(st.st_size);
    integrity.file_bytes = file_size;
    import_foreign();
  }

  // A file that does not start as a capture may be another tool's trace: read the capture
  // the importer made of it instead, under the file's own name.
  void import_foreign() {
    const ForeignImporter importer = g_foreign_importer.load(std::memory_order_acquire);
    if (importer == nullptr) return;
    char head[64] = {};
    const size_t n = static_cast<size_t>(std::min<uint64_t>(file_size, sizeof head));
    if (n > 0 && !pread_exact(head, n, 0)) error(CaptureErrorKind::kIo, 0, "file shrank while opening");
    uint8_t magic[16] = {};
    framing::put_le32(magic, framing::kHeaderFrameMagic);
    std::memcpy(magic + 8, framing::kFileMagic, 8);
    if (n >= 4 && std::memcmp(head, magic, 4) == 0) return;  // a capture, or a corrupt one: ours to say
    const int imported = importer(path, fd, std::string_view(head, n));
    if (imported < 0) return;
    ::close(fd);
    fd = imported;
    struct stat st {};
    if (::fstat(fd, &st) != 0) error(CaptureErrorKind::kIo, 0, std::string("cannot stat: ") + std::strerror(errno));
    file_size = static_cast<uint64_t>(st.st_size);
    integrity.file_bytes = file_size;
  }

  void read_header_frame() {
    uint8_t h[framing::kHeaderFrameBytes] = {};
    size_t n = static_cast<size_t>(std::min<uint64_t>(file_size, sizeof h));
    if (n > 0 && !pread_exact(h, n, 0)) error(CaptureErrorKind::kIo, 0, "file shrank while opening");
    uint8_t expect[16] = {};
    framing::put_le32(expect, framing::kHeaderFrameMagic);
    std::memcpy(expect + 8, framing::kFileMagic, 8);
    if (n < sizeof h) {
      // A file cut inside its first frame (killed right after creation): a capture with
      // nothing in it, if what is there matches the magic.
      bool prefix_ok = true;
      for (size_t i = 0; i < std::min<size_t>(n, 16); ++i) {
        if (i >= 4 && i < 8) continue;  // the payload size
        if (h[i] != expect[i]) prefix_ok = false;
      }
      if (!prefix_ok) error(CaptureErrorKind::kNotACapture, 0, not_a_capture());
      mark_truncated(0);
      return;
    }
    if (framing::get_le32(h) != framing::kHeaderFrameMagic || std::memcmp(h + 8, framing::kFileMagic, 8) != 0) {
      error(CaptureErrorKind::kNotACapture, 0, not_a_capture());
    }
    uint32_t payload = framing::get_le32(h + 4);
    if (payload < framing::kHeaderPayloadBytes) {
      error(CaptureErrorKind::kNotACapture, 4, "not a gpuhook capture (header frame too short)");
    }
    if (payload > framing::kMaxSkippableBytes) {
      error(CaptureErrorKind::kOversizedLength, 4, "header frame length " + std::to_string(payload) + " over the limit");
    }
    uint32_t version = framing::get_le32(h + 16);
    if (version == 0) error(CaptureErrorKind::kNotACapture, 16, "format version 0 is not a gpuhook capture");
    if (version > kFormatVersion) {
      error(CaptureErrorKind::kTooNew, 16,
            "format version " + std::to_string(version) + " is newer than this build reads (" +
                std::to_string(kFormatVersion) + "); update gantt-cli");
    }
    this->version = version;
    integrity.format_version = version;
    cursors = codec::Cursors(version);  // the coding rules of that version (record_codec.h)
    next_offset = 8 + static_cast<uint64_t>(payload);
    if (next_offset > file_size) mark_truncated(0);
  }

  // The index is optional and untrusted: anything odd about it means "scan instead", said once
  // in integrity.index_problem. It is checked against the frames it names here, at open, so
  // that every reader of the file (a whole read, each of several shares planned from the
  // index, a windowed read) decides the same: a stale index once sent shares into the middle
  // of frames or past chunks it did not list, while a scan read them all.
  void read_index() {
    if (done || file_size < next_offset + 8 + framing::kIndexTrailerBytes) return;
    uint8_t trailer[framing::kIndexTrailerBytes];
    if (!pread_exact(trailer, sizeof trailer, file_size - sizeof trailer)) return;
    if (std::memcmp(trailer + 4, framing::kIndexTrailerMagic, 8) != 0) return;  // not closed cleanly
    uint64_t index_bytes = framing::get_le32(trailer);
    uint64_t frame_bytes = 8 + index_bytes + framing::kIndexTrailerBytes;
    if (index_bytes > framing::kMaxSkippableBytes || frame_bytes > file_size - next_offset) {
      return set_index_aside("its length (" + std::to_string(index_bytes) + " bytes) does not fit the file");
    }
    uint64_t frame_at = file_size - frame_bytes;
    uint8_t head[8];
    if (!pread_exact(head, 8, frame_at)) return;
    if (framing::get_le32(head) != framing::kIndexFrameMagic ||
        framing::get_le32(head + 4) != index_bytes + framing::kIndexTrailerBytes) {
      return set_index_aside("its frame at byte " + std::to_string(frame_at) + " does not match its trailer");
    }
    std::string bytes(static_cast<size_t>(index_bytes), '\0');
    if (!pread_exact(bytes.data(), bytes.size(), frame_at + 8)) return;
    v1::ChunkIndex parsed;
    if (!parsed.ParseFromString(bytes)) return set_index_aside("it does not parse");
    const std::string wrong = index_against_frames(parsed, next_offset, frame_at);
    if (!wrong.empty()) return set_index_aside(wrong);
    index = std::move(parsed);
    index_frame_offset = frame_at;
    integrity.has_index = true;
  }

  void set_index_aside(const std::string& why) {
    integrity.index_problem = "the chunk index does not match the file (" + why + "); read without it";
  }

  // What is wrong with `idx` as a list of the zstd frames between the header frame and the
  // index frame, [data_at, data_end); empty when it names each of them, in order, at its
  // offset and size. The frames are walked by their block headers, without decompressing: a
  // few bytes read per 128 KiB block. A frame the walk cannot size (damage, which every
  // reader reports when it gets there) ends the check: the entries from there on are not
  // compared, as no reader gets past the damage to use them.
  std::string index_against_frames(const v1::ChunkIndex& idx, uint64_t data_at, uint64_t data_end) {
    const int n = idx.chunk_size();
    int i = 0;
    for (uint64_t at = data_at; at < data_end;) {
      uint8_t head[8];
      if (data_end - at < 8 || !pread_exact(head, 8, at)) return {};
      const uint32_t magic = framing::get_le32(head);
      if ((magic & framing::kSkippableMask) == framing::kSkippableBase) {
        at += 8 + uint64_t{framing::get_le32(head + 4)};  // metadata a newer writer added: no entry
        continue;
      }
      if (magic != framing::kZstdFrameMagic) return {};
      const uint64_t bytes = zstd_frame_bytes(at, data_end);
      if (bytes == 0) return {};
      if (i == n) {
        return "it names " + std::to_string(n) + " chunks; more follow, from byte " + std::to_string(at);
      }
      const auto& e = idx.chunk(i);
      if (e.offset() != at || e.compressed_bytes() != bytes) {
        return "entry " + std::to_string(i) + " says a chunk of " + std::to_string(e.compressed_bytes()) +
               " bytes at byte " + std::to_string(e.offset()) + "; the chunk there is " + std::to_string(bytes) +
               " bytes at byte " + std::to_string(at);
      }
      ++i;
      at += bytes;
    }
    if (i < n) {
      return "it names " + std::to_string(n) + " chunks; the file holds " + std::to_string(i);
    }
    return {};
  }

  // The size of the zstd frame at `at` from its header and block headers (the zstd format,
  // RFC 8878 section 3.1.1), or 0 when they do not describe a frame ending by `end`.
  uint64_t zstd_frame_bytes(uint64_t at, uint64_t end) {
    uint8_t h[5];
    if (end - at < sizeof h || !pread_exact(h, sizeof h, at)) return 0;
    const uint8_t descriptor = h[4];
    const unsigned content_size_flag = descriptor >> 6;
    const bool single_segment = (descriptor >> 5 & 1) != 0;
    const bool checksum = (descriptor >> 2 & 1) != 0;
    if ((descriptor >> 3 & 1) != 0) return 0;  // the reserved bit
    static constexpr uint64_t kDictionaryIdBytes[4] = {0, 1, 2, 4};
    const uint64_t content_size_bytes = content_size_flag == 0 ? (single_segment ? 1 : 0) : uint64_t{1} << content_size_flag;
    uint64_t p = at + 5 + (single_segment ? 0 : 1) + kDictionaryIdBytes[descriptor & 3] + content_size_bytes;
    for (;;) {
      uint8_t b[3];
      if (p > end || end - p < 3 || !pread_exact(b, 3, p)) return 0;
      const uint32_t block = b[0] | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16;
      const uint32_t type = block >> 1 & 3;
      if (type == 3) return 0;  // reserved
      p += 3 + (type == 1 ? 1 : uint64_t{block >> 3});  // an RLE block stores its one byte
      if ((block & 1) != 0) break;                    // the last block
    }
    if (checksum) p += 4;
    return p > end ? 0 : p - at;
  }

  bool in_window(uint64_t lo, uint64_t hi) const {
    uint64_t to = options.to_ns == 0 ? UINT64_MAX : options.to_ns;
    return hi >= options.from_ns && lo <= to;
  }

  // Decompresses the zstd frame at `offset` into `content`. False when the file ends inside
  // it (the truncation is recorded); throws on corruption.
  bool decompress_frame(uint64_t offset) {
    uint8_t head[18] = {};  // ZSTD_FRAMEHEADERSIZE_MAX, which zstd.h only exports to static linkers
    size_t head_bytes = static_cast<size_t>(std::min<uint64_t>(sizeof head, file_size - offset));
    if (!pread_exact(head, head_bytes, offset)) error(CaptureErrorKind::kIo, offset, "file shrank while reading");
    unsigned long long declared = ZSTD_getFrameContentSize(head, head_bytes);
    if (declared == ZSTD_CONTENTSIZE_ERROR && head_bytes == sizeof head) {
      error(CaptureErrorKind::kCorruptFrame, offset, "corrupt zstd frame header");
    }
    if (declared != ZSTD_CONTENTSIZE_ERROR && declared != ZSTD_CONTENTSIZE_UNKNOWN &&
        declared > framing::kMaxChunkContentBytes) {
      error(CaptureErrorKind::kOversizedLength, offset,
            "chunk declares " + std::to_string(declared) + " bytes, over the " +
                std::to_string(framing::kMaxChunkContentBytes) + "-byte limit");
    }
    if (dctx == nullptr) {
      dctx = ZSTD_createDCtx();
      if (dctx == nullptr) error(CaptureErrorKind::kIo, offset, "cannot create a zstd context");
      // No chunk may exceed 64 MiB, so no window needs to either: a larger one is a file
      // asking for memory it cannot use.
      ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax, 26);
    } else {
      ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
    }
    if (input.size() < kInputBlockBytes) input.resize(kInputBlockBytes);
    if (declared != ZSTD_CONTENTSIZE_ERROR && declared != ZSTD_CONTENTSIZE_UNKNOWN &&
        content.size() < declared + 1) {
      content.resize(static_cast<size_t>(declared) + 1);
    }
    content_bytes = 0;
    uint64_t read_at = offset;
    size_t in_len = 0;
    size_t in_pos = 0;
    for (;;) {
      if (in_pos == in_len) {
        read_at += in_len;
        if (read_at >= file_size) {
          mark_truncated(offset);
          return false;
        }
        in_len = static_cast<size_t>(std::min<uint64_t>(kInputBlockBytes, file_size - read_at));
        if (!pread_exact(input.data(), in_len, read_at)) error(CaptureErrorKind::kIo, read_at, "file shrank while reading");
        in_pos = 0;
      }
      if (content_bytes == content.size()) {
        if (content.size() > framing::kMaxChunkContentBytes) {
          error(CaptureErrorKind::kOversizedLength, offset,
                "chunk decompresses to more than the " + std::to_string(framing::kMaxChunkContentBytes) +
                    "-byte limit");
        }
        size_t grown = std::max<size_t>(64 * 1024, content.size() * 2);
        content.resize(std::min<size_t>(grown, framing::kMaxChunkContentBytes + 1));
      }
      ZSTD_inBuffer in{input.data(), in_len, in_pos};
      ZSTD_outBuffer out{content.data(), content.size(), content_bytes};
      size_t ret = ZSTD_decompressStream(dctx, &out, &in);
      in_pos = in.pos;
      content_bytes = out.pos;
      if (ZSTD_isError(ret)) {
        if (ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge) {
          error(CaptureErrorKind::kOversizedLength, offset, "zstd window over the 64 MiB limit");
        }
        if (ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong) {
          error(CaptureErrorKind::kChecksum, offset, "chunk content checksum does not match (damaged data)");
        }
        error(CaptureErrorKind::kCorruptFrame, offset, std::string("corrupt zstd frame: ") + ZSTD_getErrorName(ret));
      }
      if (ret == 0) {
        if (content_bytes > framing::kMaxChunkContentBytes) {
          error(CaptureErrorKind::kOversizedLength, offset, "chunk over the size limit");
        }
        next_offset = read_at + in_pos;
        return true;
      }
    }
  }

  // Finds and opens the next chunk; false at the end of the file or at a truncated tail.
  bool open_next_chunk() {
    for (;;) {
      if (done) return false;
      uint64_t at = 0;
      if (windowed) {
        if (next_index_entry >= static_cast<size_t>(index->chunk_size())) {
          done = true;
          return false;
        }
        const auto& e = index->chunk(static_cast<int>(next_index_entry++));
        const uint64_t entry = next_index_entry - 1;
        const bool in_range = options.end_chunk == 0 || (entry >= options.first_chunk && entry < options.end_chunk);
        bool overlaps = in_range && in_window(e.min_ns(), e.max_ns());
        const bool strings_only = !in_range && options.outside_strings_only;
        if (!overlaps && !e.has_string_defs() && (strings_only || !e.has_context())) continue;
        context_strings_only = !overlaps && strings_only;
        at = e.offset();
        context_only = !overlaps;
      } else {
        at = next_offset;
        if (at >= file_size) {
          done = true;
          return false;
        }
        if (file_size - at < 4) {
          mark_truncated(at);
          return false;
        }
        uint8_t head[8];
        size_t head_bytes = static_cast<size_t>(std::min<uint64_t>(8, file_size - at));
        if (!pread_exact(head, head_bytes, at)) error(CaptureErrorKind::kIo, at, "file shrank while reading");
        uint32_t magic = framing::get_le32(head);
        if ((magic & framing::kSkippableMask) == framing::kSkippableBase) {
          if (head_bytes < 8) {
            mark_truncated(at);
            return false;
          }
          uint32_t size = framing::get_le32(head + 4);
          if (size > framing::kMaxSkippableBytes) {
            error(CaptureErrorKind::kOversizedLength, at + 4,
                  "skippable frame length " + std::to_string(size) + " over the limit");
          }
          if (size > file_size - at - 8) {
            mark_truncated(at);
            return false;
          }
          next_offset = at + 8 + size;  // the index, or metadata a newer writer added
          continue;
        }
        if (magic != framing::kZstdFrameMagic) {
          error(CaptureErrorKind::kCorruptFrame, at, "not a zstd frame (magic " + hex32(magic) + ")");
        }
        context_only = false;
        context_strings_only = false;
      }
      if (!decompress_frame(at)) return false;
      chunk_offset = at;
      content_pos = 0;
      in_chunk = true;
      integrity.chunks++;
      records_before_chunk = integrity.records;
      chunk_defines_strings = false;
      // The first record must be the ChunkStart: it carries the delta-coding base.
      v1::Record first;
      if (!parse_next(first) || first.kind_case() != v1::Record::kChunkStart) {
        error(CaptureErrorKind::kBadRecord, at, "chunk does not start with a ChunkStart record");
      }
      cursors.start_chunk(static_cast<int64_t>(first.chunk_start().base_ns()));
      return true;
    }
  }

  // The next record's bytes in the chunk, framing checked; false at the end of the chunk.
  // With skip_data, a record that is not of a context kind is stepped over unparsed and
  // *skipped is set: a chunk read only for its context (another reader's share) costs its
  // decompression, not its parse. With skip_kinds, so is one of a kind options.only_kinds
  // leaves out. Skipping is safe for delta coding: each kind's cursors are its own
  // (record_codec.h), and only a kernel's decoding reads another kind's (its launch): with
  // kernels asked for, API calls are decoded and then left out (decoded_kinds(), asked()).
  bool next_bytes(const uint8_t*& record, size_t& size, bool skip_data, bool skip_kinds, bool& skipped) {
    skipped = false;
    if (content_pos >= content_bytes) return false;
    const uint8_t* base = reinterpret_cast<const uint8_t*>(content.data());
    const uint8_t* p = base + content_pos;
    const uint8_t* end = base + content_bytes;
    if (*p != framing::kRecordTag) {
      error(CaptureErrorKind::kBadRecord, chunk_offset, where() + ": unexpected tag");
    }
    ++p;
    uint64_t len = 0;
    if (!read_varint(p, end, len)) {
      error(CaptureErrorKind::kBadRecord, chunk_offset, where() + ": bad length");
    }
    if (len > framing::kMaxRecordBytes) {
      error(CaptureErrorKind::kOversizedLength, chunk_offset,
            where() + ": record length " + std::to_string(len) + " over the limit");
    }
    if (len > static_cast<uint64_t>(end - p)) {
      error(CaptureErrorKind::kBadRecord, chunk_offset,
            where() + ": record runs past the end of its chunk");
    }
    record = p;
    size = static_cast<size_t>(len);
    if (skip_data || skip_kinds) {
      // The Record's only field is its oneof: the first tag's field number is the kind.
      const uint8_t* q = p;
      uint64_t tag = 0;
      const bool tagged = len != 0 && read_varint(q, p + len, tag);
      const uint64_t kind = tag >> 3;
      const bool keep = tagged && (context_strings_only ? kind == v1::Record::kStringDef
                                   : framing::is_context_kind(static_cast<v1::Record::KindCase>(kind)) ||
                                         (!skip_data && (!skip_kinds || (kind < 64 && decoded_kinds() >> kind & 1) != 0)));
      if (!keep) {
        content_pos = static_cast<size_t>(p + len - base);
        skipped = true;
      }
    }
    return true;
  }

  // The kinds a read of options.only_kinds decodes: with kernels, their launches, whose start a
  // kernel's queued time is coded against (a kernel-only read had every kernel's times wrong).
  uint64_t decoded_kinds() const {
    const uint64_t kernels = uint64_t{1} << v1::Record::kKernel;
    return options.only_kinds | ((options.only_kinds & kernels) != 0 ? uint64_t{1} << v1::Record::kApi : 0);
  }
  // False for a record decoded only for the cursors (decoded_kinds()), not asked for.
  bool asked(v1::Record::KindCase kind) const {
    return options.only_kinds == 0 || framing::is_context_kind(kind) || (kind < 64 && (options.only_kinds >> kind & 1) != 0);
  }

  std::string where() const {
    return "chunk at byte " + std::to_string(chunk_offset) + ", record at content byte " + std::to_string(content_pos);
  }

  // Parses the record next_bytes() found (deltas as stored) and steps past it.
  void parse(v1::Record& out, const uint8_t* record, size_t size) {
    if (!out.ParseFromArray(record, static_cast<int>(size))) {
      error(CaptureErrorKind::kBadRecord, chunk_offset, where() + ": does not parse");
    }
    content_pos = static_cast<size_t>(record + size - reinterpret_cast<const uint8_t*>(content.data()));
  }

  // The next record of the chunk as stored; false at the end of the chunk.
  bool parse_next(v1::Record& out, bool skip_data = false, bool skip_kinds = false, bool* skipped = nullptr) {
    const uint8_t* record = nullptr;
    size_t size = 0;
    bool skip = false;
    if (!next_bytes(record, size, skip_data, skip_kinds, skip)) return false;
    if (skipped != nullptr) *skipped = skip;
    if (!skip) parse(out, record, size);
    return true;
  }

  void keep_string(const v1::StringDef& def) {
    uint32_t id = def.id();
    if (id == 0) return;  // id 0 is "" by definition
    if (id < strings.size()) {
      strings[id] = def.value();
    } else if (id == strings.size()) {
      strings.push_back(def.value());
    } else {
      sparse_strings[id] = def.value();
    }
  }

  // What next() does with a parsed record: decode it, keep what the reader keeps, and say
  // whether the caller gets it.
  bool take(v1::Record& out) {
    const auto kind = out.kind_case();
    if (kind == v1::Record::kChunkStart) {
      error(CaptureErrorKind::kBadRecord, chunk_offset, "a second ChunkStart inside one chunk");
    }
    codec::delta_decode(out, cursors);
    integrity.records++;
    if (kind == v1::Record::kStringDef) {
      keep_string(out.string_def());
      chunk_defines_strings = true;
    }
    if (kind == v1::Record::kFooter) integrity.has_footer = true;
    // The format version is the header frame's: read_header_frame() refused a version 0 (not
    // a capture) or one too new, each with its own error, and every record was decoded by
    // that version's rules. The Header record repeats it; one without the copy is still a
    // complete capture of that version, so it is given the frame's here, for every consumer
    // at once. Refusing it later as "no header", in some subcommands only, called a header
    // that was there missing, and whatif copied it into captures its own stats refused.
    if (kind == v1::Record::kHeader && out.header().format_version() == 0) {
      out.mutable_header()->set_format_version(version);
    }
    if (!framing::is_context_kind(kind)) {
      if (context_only) return false;
      if (windowed_by_time()) {
        uint64_t lo = 0, hi = 0;
        if (!time_span(out, lo, hi) || !in_window(lo, hi)) return false;
      }
    }
    return true;
  }

  // At the end of a chunk read in full by a scan: what its index entry says of it. The frames
  // matched at open (index_against_frames), so the scan's n-th chunk is the n-th entry. A
  // count only balances the shares; a chunk said to define no strings while it does would
  // leave shares that read only the chunks that define strings without its names.
  void end_chunk() {
    in_chunk = false;
    if (windowed || !index || !integrity.index_mismatch.empty()) return;
    const uint64_t entry = integrity.chunks - 1;
    if (entry >= static_cast<uint64_t>(index->chunk_size())) return;
    const auto& e = index->chunk(static_cast<int>(entry));
    const uint64_t records = integrity.records - records_before_chunk;
    std::string what;
    if (e.records() != records) {
      what = std::to_string(records) + " records, not the " + std::to_string(e.records()) + " it says";
    } else if (chunk_defines_strings && !e.has_string_defs()) {
      what = "string definitions it says are not there";
    }
    if (!what.empty()) {
      integrity.index_mismatch = "the chunk index is stale: chunk " + std::to_string(entry) + " (byte " +
                                 std::to_string(chunk_offset) + ") holds " + what;
    }
  }

  bool windowed_by_time() const { return options.from_ns != 0 || options.to_ns != 0; }

  bool next(v1::Record& out) {
    for (;;) {
      if (!in_chunk) {
        if (!open_next_chunk()) return false;
      }
      bool skipped = false;
      if (!parse_next(out, context_only, options.only_kinds != 0, &skipped)) {
        end_chunk();
        continue;
      }
      if (skipped) {
        integrity.records++;
        continue;
      }
      if (take(out) && asked(out.kind_case())) return true;
    }
  }

  // next(), with Kernel and ApiCall records in their plain form (fast_decode.h); a record in
  // any other form goes through protobuf and take(), and comes out the same.
  bool next(RecordView& out) {
    for (;;) {
      if (!in_chunk) {
        if (!open_next_chunk()) return false;
      }
      const uint8_t* record = nullptr;
      size_t size = 0;
      bool skipped = false;
      if (!next_bytes(record, size, context_only, options.only_kinds != 0, skipped)) {
        end_chunk();
        continue;
      }
      if (skipped) {
        integrity.records++;
        continue;
      }
      // context_only reads skip both kinds above (neither is a context kind).
      if (fast(record, size, out)) {
        content_pos = static_cast<size_t>(record + size - reinterpret_cast<const uint8_t*>(content.data()));
        integrity.records++;
        if (!asked(out.kind) || (windowed_by_time() && !fast_in_window(out))) continue;
        return true;
      }
      parse(*out.record, record, size);
      if (!take(*out.record) || !asked(out.record->kind_case())) continue;
      out.kind = out.record->kind_case();
      if (out.kind == v1::Record::kKernel) out.kernel = kernel_fields(out.record->kernel());
      if (out.kind == v1::Record::kApi) out.api = api_fields(out.record->api());
      return true;
    }
  }

  // next(), with a failure kept in integrity (thrown only when strict): the reader reports
  // what it read before the damage.
  template <class Out>
  bool next_or_error(Out& out) {
    if (integrity.error) return false;
    try {
      return next(out);
    } catch (const CaptureError& e) {
      done = true;
      in_chunk = false;
      integrity.error = e;
      if (options.strict) throw;
      return false;
    }
  }

  bool fast(const uint8_t* record, size_t size, RecordView& out) {
    const uint8_t* p = record;
    const uint8_t* end = record + size;
    codec::StoredTimes times;
    switch (codec::single_kind(p, end)) {
      case v1::Record::kKernel:
        if (!codec::parse_kernel(p, end, out.kernel, times)) return false;
        codec::decode_kernel_times(out.kernel, times, cursors);
        out.kind = v1::Record::kKernel;
        return true;
      case v1::Record::kApi:
        if (!codec::parse_api(p, end, out.api, times)) return false;
        codec::decode_api_times(out.api, times, cursors);
        out.kind = v1::Record::kApi;
        return true;
      default: return false;
    }
  }

  // time_span() and in_window() of the plain forms.
  bool fast_in_window(const RecordView& r) const {
    uint64_t lo = UINT64_MAX, hi = 0;
    auto span = [&](int64_t v) {
      if (v <= 0) return;
      lo = std::min(lo, static_cast<uint64_t>(v));
      hi = std::max(hi, static_cast<uint64_t>(v));
    };
    if (r.kind == v1::Record::kKernel) {
      for (int64_t v : {r.kernel.queued_ns, r.kernel.submitted_ns, r.kernel.start_ns, r.kernel.end_ns}) span(v);
    } else {
      for (int64_t v : {r.api.start_ns, r.api.end_ns}) span(v);
    }
    return hi != 0 && in_window(lo, hi);
  }
};

void set_foreign_importer(ForeignImporter importer, const char* reads) {
  g_foreign_formats.store(reads, std::memory_order_release);
  g_foreign_importer.store(importer, std::memory_order_release);
}

CaptureReader::CaptureReader(const std::string& path, ReaderOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->options = options;
  impl_->open_file();
  impl_->read_header_frame();
  impl_->read_index();
  impl_->windowed =
      impl_->index.has_value() && (options.from_ns != 0 || options.to_ns != 0 || options.end_chunk != 0);
}

CaptureReader::~CaptureReader() = default;

bool CaptureReader::next(v1::Record& out) { return impl_->next_or_error(out); }
bool CaptureReader::next(RecordView& out) { return impl_->next_or_error(out); }

std::string_view CaptureReader::string(uint32_t id) const {
  if (id < impl_->strings.size()) return impl_->strings[id];
  auto it = impl_->sparse_strings.find(id);
  return it == impl_->sparse_strings.end() ? std::string_view() : std::string_view(it->second);
}

const std::vector<std::string>& CaptureReader::strings() const { return impl_->strings; }
const Integrity& CaptureReader::integrity() const { return impl_->integrity; }
const std::optional<v1::ChunkIndex>& CaptureReader::index() const { return impl_->index; }
const std::string& CaptureReader::path() const { return impl_->path; }
uint64_t CaptureReader::chunk_offset() const { return impl_->chunk_offset; }

}  // namespace gpuhook
