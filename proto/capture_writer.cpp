// CaptureWriter: records -> delta-coded, length-delimited protobuf -> one zstd frame per chunk.
// Runs on the hook's writer thread, never on an application thread, so it may allocate; its
// memory is bounded by one chunk buffer plus the string table and the chunk index.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>

#include <zstd.h>

#include <gpuhook/capture.h>

#include "framing.h"
#include "fast_encode.h"
#include "record_codec.h"
#include "wire_capture.h"

namespace gpuhook {

// Delta coding keeps a cursor per record kind number: a kind past the last slot would share a
// slot with another kind and both would code against the wrong base.
static_assert(wire::Record::kKindCount <= codec::Cursors::kKindSlots,
              "capture.proto has more record kinds than codec::Cursors has slots: raise kKindSlots");

namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Appends `r` as Capture.record, as codec::append_record does for the protobuf message.
bool append_record(std::string& out, const wire::Record& r) {
  size_t n = r.ByteSizeLong();
  if (n > framing::kMaxRecordBytes) return false;
  out.push_back(static_cast<char>(framing::kRecordTag));
  codec::append_varint(out, n);
  size_t at = out.size();
  out.resize(at + n);
  r.Write(reinterpret_cast<uint8_t*>(out.data() + at));
  return true;
}

// The level a hurried chunk is compressed at: 4 MiB take about 10 ms, against seconds at 19.
constexpr int kHurryLevel = 1;
// A slow-level chunk is compressed in pieces of this size, so a hurry is seen within one.
constexpr size_t kHurryPieceBytes = 128u << 10;

// A program that closes every descriptor it did not open usually walks up from 3, and one
// that wants a particular number (dup2) picks a small one: the capture sits just below 1024
// (or the descriptor limit), where neither looks. Not higher: the kernel's descriptor table
// grows to the highest number in use.
int move_out_of_the_way(int fd) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return fd;
  const rlim_t top = std::min<rlim_t>(limit.rlim_cur, 1024);
  if (top < 128) return fd;
  int high = ::fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(top - 64));
  if (high < 0) return fd;  // all taken: the low number still works
  ::close(fd);
  return high;
}

}  // namespace

struct CaptureWriter::Impl {
  int fd = -1;
  // The file the descriptor was opened on; checked before each frame (capture.h).
  dev_t dev = 0;
  ino_t ino = 0;
  bool identity_known = false;
  bool fd_lost = false;  // the descriptor is no longer ours: never write to or close it
  WriterOptions options;
  ZSTD_CCtx* cctx = nullptr;

  std::string raw;         // the open chunk, uncompressed
  std::string compressed;  // reused output buffer
  wire::Record scratch;    // the record being delta-coded (the caller's stays untouched)

  // The open chunk.
  bool chunk_open = false;
  codec::Cursors cursors;
  uint64_t chunk_records = 0;
  uint64_t chunk_min_ns = 0;
  uint64_t chunk_max_ns = 0;
  bool chunk_has_strings = false;
  bool chunk_has_context = false;

  uint64_t file_offset = 0;
  uint64_t sequence = 0;
  wire::ChunkIndex index;

  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> strings;
  uint32_t next_string_id = 1;

  WriterStats stats;
  std::string last_error;
  bool failed = false;
  bool closed = false;
  uint64_t lost = 0;
  uint64_t last_flush_ns = 0;

  ~Impl() {
    if (cctx != nullptr) ZSTD_freeCCtx(cctx);
    if (fd >= 0 && still_ours()) ::close(fd);
  }

  void remember_identity() {
    struct stat st{};
    if (::fstat(fd, &st) != 0) return;
    dev = st.st_dev;
    ino = st.st_ino;
    identity_known = true;
  }

  // True while the descriptor is the file it was opened on. A program that closed it and
  // opened a file of its own under the same number must not get our frames, nor lose its
  // file to our close(). (A close and reopen between this check and the write cannot be
  // seen; the check narrows that to one syscall's width.)
  bool still_ours() {
    if (fd_lost) return false;
    if (!identity_known) return true;
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
      fd_lost = true;
      fail("the capture's descriptor " + std::to_string(fd) + " was closed by the program; writing stopped");
      return false;
    }
    if (st.st_dev != dev || st.st_ino != ino) {
      fd_lost = true;
      fail("the capture's descriptor " + std::to_string(fd) +
           " was closed by the program and now holds another file; writing stopped, that file left alone");
      return false;
    }
    return true;
  }

  void fail(const std::string& why) {
    if (!failed) last_error = why;
    failed = true;
  }

  bool write_all(const void* data, size_t n) {
    if (!still_ours()) return false;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail(std::string("write failed: ") + std::strerror(errno));
        return false;
      }
      if (w == 0) {
        fail("write failed: no progress");
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
      file_offset += static_cast<uint64_t>(w);
      stats.bytes_written += static_cast<uint64_t>(w);
    }
    return true;
  }

  bool write_header_frame() {
    uint8_t frame[framing::kHeaderFrameBytes] = {};
    framing::put_le32(frame, framing::kHeaderFrameMagic);
    framing::put_le32(frame + 4, framing::kHeaderPayloadBytes);
    std::memcpy(frame + 8, framing::kFileMagic, sizeof framing::kFileMagic);
    framing::put_le32(frame + 16, kFormatVersion);
    framing::put_le32(frame + 20, 0);
    return write_all(frame, sizeof frame);
  }

  void open_chunk(int64_t base_ns) {
    chunk_open = true;
    cursors.start_chunk(base_ns);
    chunk_records = 0;
    chunk_min_ns = 0;
    chunk_max_ns = 0;
    chunk_has_strings = false;
    chunk_has_context = false;
    wire::Record start;
    start.mutable_chunk_start()->set_sequence(sequence);
    start.mutable_chunk_start()->set_base_ns(static_cast<uint64_t>(base_ns));
    append_record(raw, start);
  }

  void note_time(int64_t t) {
    if (t <= 0) return;
    uint64_t u = static_cast<uint64_t>(t);
    if (chunk_min_ns == 0 || u < chunk_min_ns) chunk_min_ns = u;
    if (u > chunk_max_ns) chunk_max_ns = u;
  }

  // The bookkeeping after a record went into the open chunk; flushes a full chunk.
  bool record_written(int kind) {
    chunk_records++;
    stats.records++;
    if (kind >= 0 && static_cast<size_t>(kind) < std::size(stats.records_by_kind)) stats.records_by_kind[kind]++;
    if (kind == v1::Record::kStringDef) chunk_has_strings = true;
    if (framing::is_context_kind(static_cast<v1::Record::KindCase>(kind))) chunk_has_context = true;
    if (raw.size() >= options.chunk_bytes) return flush_chunk();
    return true;
  }

  int level_set = 0;  // the level the context has; changed only between frames
  void set_level(int level) {
    if (level == level_set) return;
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
    level_set = level;
  }

  bool hurrying() const { return options.hurry != nullptr && options.hurry->load(std::memory_order_acquire); }

  // One zstd frame of `raw` into `compressed`; the size or a zstd error code. At level 19 a
  // 4 MiB chunk takes seconds: such a chunk goes in pieces, and if the process starts to exit
  // or exec meanwhile it is started again at kHurryLevel, so the exit is not held up and
  // nothing is lost (SIGTERM waited 3-6 s for the writer).
  size_t compress_chunk() {
    const bool hurry = hurrying();
    const int level = hurry ? std::min(options.zstd_level, kHurryLevel) : options.zstd_level;
    set_level(level);
    if (hurry || options.hurry == nullptr || level <= 3) {
      return ZSTD_compress2(cctx, compressed.data(), compressed.size(), raw.data(), raw.size());
    }
    // The content size in the frame header, as ZSTD_compress2 writes it (the reader checks it).
    ZSTD_CCtx_setPledgedSrcSize(cctx, raw.size());
    ZSTD_outBuffer out{compressed.data(), compressed.size(), 0};
    size_t pos = 0;
    for (;;) {
      const size_t piece_end = std::min(raw.size(), pos + kHurryPieceBytes);
      const bool last = piece_end == raw.size();
      ZSTD_inBuffer in{raw.data(), piece_end, pos};
      size_t left;
      do {
        left = ZSTD_compressStream2(cctx, &out, &in, last ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(left)) {
          ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
          return left;
        }
      } while (last ? left != 0 : in.pos < in.size);
      if (last) return out.pos;
      pos = in.pos;
      if (hurrying()) {
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
        set_level(kHurryLevel);
        return ZSTD_compress2(cctx, compressed.data(), compressed.size(), raw.data(), raw.size());
      }
    }
  }

  bool flush_chunk() {
    if (!chunk_open) return !failed;
    size_t bound = ZSTD_compressBound(raw.size());
    if (compressed.size() < bound) compressed.resize(bound);
    size_t n = compress_chunk();
    uint64_t frame_offset = file_offset;
    bool ok = true;
    if (ZSTD_isError(n)) {
      fail(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
      ok = false;
    } else if (options.sink != nullptr) {
      ChunkFrame f;
      f.bytes.assign(compressed.data(), n);
      f.records = chunk_records;
      f.min_ns = chunk_min_ns;
      f.max_ns = chunk_max_ns;
      f.has_string_defs = chunk_has_strings;
      f.has_context = chunk_has_context;
      stats.bytes_written += n;
      options.sink->frame(std::move(f));
    } else {
      ok = write_all(compressed.data(), n);
    }
    if (ok && options.sink == nullptr) {
      auto* e = index.add_chunk();
      e->set_offset(frame_offset);
      e->set_compressed_bytes(n);
      e->set_records(chunk_records);
      e->set_min_ns(chunk_min_ns);
      e->set_max_ns(chunk_max_ns);
      e->set_has_string_defs(chunk_has_strings);
      e->set_has_context(chunk_has_context);
    }
    if (ok) {
      stats.chunks++;
      stats.raw_bytes += raw.size();
      sequence++;
    } else {
      lost += chunk_records;
    }
    raw.clear();
    chunk_open = false;
    return ok;
  }
};

CaptureWriter::CaptureWriter() : impl_(std::make_unique<Impl>()) {}
CaptureWriter::~CaptureWriter() = default;

std::unique_ptr<CaptureWriter> CaptureWriter::create(const std::string& path, const WriterOptions& options,
                                                     std::string* error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (error != nullptr) *error = "cannot create " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  return from_fd(move_out_of_the_way(fd), options, error);
}

std::unique_ptr<CaptureWriter> CaptureWriter::in_memory(const WriterOptions& options, std::string* error) {
  if (options.sink == nullptr) {
    if (error != nullptr) *error = "an in-memory capture writer needs a frame sink";
    return nullptr;
  }
  return from_fd(-1, options, error);
}

std::unique_ptr<CaptureWriter> CaptureWriter::from_fd(int fd, const WriterOptions& options, std::string* error) {
  std::unique_ptr<CaptureWriter> w(new CaptureWriter());
  Impl& m = *w->impl_;
  m.fd = fd;
  m.options = options;
  if (m.options.sink == nullptr) m.remember_identity();
  if (m.options.chunk_bytes == 0 || m.options.chunk_bytes > framing::kMaxWriterChunkBytes) {
    m.options.chunk_bytes = framing::kMaxWriterChunkBytes;
  }
  m.cctx = ZSTD_createCCtx();
  if (m.cctx == nullptr) {
    if (error != nullptr) *error = "cannot create a zstd context";
    return nullptr;
  }
  // The checksum is what lets the reader tell a damaged chunk from a good one.
  m.set_level(options.zstd_level);
  ZSTD_CCtx_setParameter(m.cctx, ZSTD_c_checksumFlag, 1);
  m.raw.reserve(m.options.chunk_bytes + 4096);
  if (m.options.sink == nullptr && !m.write_header_frame()) {
    if (error != nullptr) *error = m.last_error;
    return nullptr;
  }
  return w;
}

uint32_t CaptureWriter::intern(std::string_view s) {
  if (s.empty()) return 0;
  Impl& m = *impl_;
  if (auto it = m.strings.find(s); it != m.strings.end()) return it->second;
  uint32_t id = m.next_string_id++;
  m.strings.emplace(std::string(s), id);
  wire::Record def;
  def.mutable_string_def()->set_id(id);
  def.mutable_string_def()->set_value(s);
  write(def);
  return id;
}

bool CaptureWriter::accepting() {
  Impl& m = *impl_;
  if (m.failed || m.closed) {
    m.lost++;
    return false;
  }
  return true;
}
void CaptureWriter::open_chunk_at(int64_t first_time) {
  if (!impl_->chunk_open) impl_->open_chunk(first_time);
}
codec::Cursors& CaptureWriter::cursors() { return impl_->cursors; }
std::string& CaptureWriter::chunk_bytes() { return impl_->raw; }
void CaptureWriter::note_time(int64_t t) { impl_->note_time(t); }
bool CaptureWriter::record_written(int kind) { return impl_->record_written(kind); }
bool CaptureWriter::record_too_large() {
  Impl& m = *impl_;
  m.lost++;
  if (m.last_error.empty()) m.last_error = "a record larger than the format allows was dropped";
  return false;
}

bool CaptureWriter::write(const wire::Record& record) {
  if (!accepting()) return false;
  const int kind = record.kind_case();
  if (kind == wire::Record::kChunkStart || kind == wire::Record::KIND_NOT_SET) {
    return true;  // framing is the writer's job; an empty record carries nothing
  }
  Impl& m = *impl_;
  m.scratch = record;
  open_chunk_at(codec::first_time(m.scratch));
  int64_t saved_cursor = m.cursors[kind];
  codec::delta_encode(m.scratch, m.cursors, [&m](int64_t t) { m.note_time(t); });
  if (!append_record(m.raw, m.scratch)) {
    m.cursors[kind] = saved_cursor;
    return record_too_large();
  }
  return m.record_written(kind);
}

bool CaptureWriter::write(const KernelFields& k) {
  Impl& m = *impl_;
  if (m.failed || m.closed) {
    m.lost++;
    return false;
  }
  if (!m.chunk_open) {
    const int64_t times[] = {k.queued_ns, k.submitted_ns, k.start_ns, k.end_ns};
    int64_t first = 0;
    for (int64_t t : times) {
      if (first == 0) first = t;
    }
    m.open_chunk(first);
  }
  codec::encode_kernel(m.raw, k, m.cursors, [&m](int64_t t) { m.note_time(t); });
  return m.record_written(v1::Record::kKernel);
}

bool CaptureWriter::write(const ApiFields& a) {
  Impl& m = *impl_;
  if (m.failed || m.closed) {
    m.lost++;
    return false;
  }
  if (!m.chunk_open) m.open_chunk(a.start_ns != 0 ? a.start_ns : a.end_ns);
  codec::encode_api(m.raw, a, m.cursors, [&m](int64_t t) { m.note_time(t); });
  return m.record_written(v1::Record::kApi);
}

bool CaptureWriter::flush() {
  if (impl_->closed) return !impl_->failed;
  return impl_->flush_chunk();
}

bool CaptureWriter::append_frame(const ChunkFrame& frame) {
  Impl& m = *impl_;
  if (m.closed || m.failed || m.options.sink != nullptr) return false;
  if (!m.flush_chunk()) return false;
  const uint64_t offset = m.file_offset;
  if (!m.write_all(frame.bytes.data(), frame.bytes.size())) return false;
  auto* e = m.index.add_chunk();
  e->set_offset(offset);
  e->set_compressed_bytes(frame.bytes.size());
  e->set_records(frame.records);
  e->set_min_ns(frame.min_ns);
  e->set_max_ns(frame.max_ns);
  e->set_has_string_defs(frame.has_string_defs);
  e->set_has_context(frame.has_context);
  m.stats.chunks++;
  m.stats.records += frame.records;
  m.sequence++;
  return true;
}

bool CaptureWriter::write_string_def(uint32_t id, std::string_view value) {
  wire::Record def;
  def.mutable_string_def()->set_id(id);
  def.mutable_string_def()->set_value(value);
  return write(def);
}

void CaptureWriter::for_each_string_impl(const std::function<void(uint32_t, std::string_view)>& f) const {
  for (const auto& [text, id] : impl_->strings) f(id, text);
}

bool CaptureWriter::maybe_flush(uint64_t now_ns) {
  Impl& m = *impl_;
  if (m.closed) return !m.failed;
  // The first call starts the clock; a clock that went backwards restarts it.
  if (m.last_flush_ns == 0 || now_ns < m.last_flush_ns) m.last_flush_ns = now_ns;
  bool due = now_ns - m.last_flush_ns >= m.options.flush_interval_ns;
  if (m.raw.size() >= m.options.chunk_bytes || due) {
    m.last_flush_ns = now_ns;
    return m.flush_chunk();
  }
  return !m.failed;
}

bool CaptureWriter::close() {
  Impl& m = *impl_;
  if (m.closed) return !m.failed;
  m.flush_chunk();
  if (m.options.sink != nullptr) {  // in memory: no index, no file
    m.closed = true;
    return !m.failed;
  }
  if (!m.failed) {
    std::string payload(m.index.ByteSizeLong(), '\0');
    m.index.Write(reinterpret_cast<uint8_t*>(payload.data()));
    uint32_t index_bytes = static_cast<uint32_t>(payload.size());
    uint8_t trailer[framing::kIndexTrailerBytes];
    framing::put_le32(trailer, index_bytes);
    std::memcpy(trailer + 4, framing::kIndexTrailerMagic, sizeof framing::kIndexTrailerMagic);
    payload.append(reinterpret_cast<const char*>(trailer), sizeof trailer);
    uint8_t head[8];
    framing::put_le32(head, framing::kIndexFrameMagic);
    framing::put_le32(head + 4, static_cast<uint32_t>(payload.size()));
    if (m.write_all(head, sizeof head)) m.write_all(payload.data(), payload.size());
  }
  // A descriptor that is no longer ours is the program's: neither synced nor closed.
  if (m.fd >= 0 && !m.still_ours()) m.fd = -1;
  // fsync fails with EINVAL on pipes and sockets: nothing to make durable there.
  if (m.fd >= 0 && ::fsync(m.fd) != 0 && errno != EINVAL && errno != EROFS) {
    m.fail(std::string("fsync failed: ") + std::strerror(errno));
  }
  if (m.fd >= 0 && ::close(m.fd) != 0 && errno != EINTR) {
    m.fail(std::string("close failed: ") + std::strerror(errno));
  }
  m.fd = -1;
  m.closed = true;
  return !m.failed;
}

const WriterStats& CaptureWriter::stats() const { return impl_->stats; }
const std::string& CaptureWriter::last_error() const { return impl_->last_error; }
uint64_t CaptureWriter::records_lost() const { return impl_->lost; }

}  // namespace gpuhook
