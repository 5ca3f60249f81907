// The capture reader and writer: the only code that knows the bytes of a .gpuh file.
// Both speak gpuhook::v1::Record with absolute times (0 = unknown); delta coding, string
// interning frames, chunking and compression are internal.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <gpuhook/v1/capture.pb.h>

namespace gpuhook {

namespace wire {
class Record;  // wire_capture.h (from proto/gen_wire.py): the same records without libprotobuf (the hook's)
}
namespace codec {
struct Cursors;
}

inline constexpr uint32_t kFormatVersion = 3;

// Whether a Drops record counts records that were lost. DROP_NO_BUFFER counts refused buffer
// requests (the records are in DROP_CUPTI) and DROP_INVALID_TIME records kept with an unknown
// time: adding either to the losses would count a record twice or a kept one as lost.
inline bool is_loss(v1::DropSource source) {
  return source != v1::DROP_NO_BUFFER && source != v1::DROP_INVALID_TIME;
}

// Why a capture could not be read. Each kind gets its own message; `offset` is the byte
// offset in the file where the problem starts.
enum class CaptureErrorKind {
  kIo,               // open/read failed
  kNotACapture,      // wrong magic: not a .gpuh file
  kTooNew,           // a format version this build does not know
  kCorruptFrame,     // a zstd frame that does not decode
  kChecksum,         // a frame whose content checksum does not match
  kOversizedLength,  // a length field larger than the limits (never allocated)
  kBadRecord,        // a record that does not parse
  kTruncated,        // not thrown by CaptureReader: a truncated tail is reported in Integrity
};

const char* to_string(CaptureErrorKind kind);

class CaptureError : public std::runtime_error {
 public:
  CaptureError(CaptureErrorKind kind, std::string file, uint64_t offset, const std::string& what);
  CaptureErrorKind kind() const { return kind_; }
  const std::string& file() const { return file_; }
  uint64_t offset() const { return offset_; }

 private:
  CaptureErrorKind kind_;
  std::string file_;
  uint64_t offset_;
};

// What the reader found about the file's integrity, filled as it reads.
struct Integrity {
  uint32_t format_version = 0;  // of the file, from its header frame
  uint64_t file_bytes = 0;
  uint64_t chunks = 0;
  uint64_t records = 0;
  bool has_index = false;
  // Why the file's chunk index was set aside at open: it does not name the chunks the file
  // holds (an entry off a frame boundary, a frame it leaves out, entries out of order, a
  // damaged index frame). Every reader then scans, so none trusts what another ignores.
  // Empty when there is no index or it was used.
  std::string index_problem;
  // A mismatch found while scanning past the index's chunks: an entry whose record count or
  // string definitions are not its chunk's (the frames matched, so the index was used; only
  // a reader of every chunk in full can see this). Empty when none was seen.
  std::string index_mismatch;
  bool has_footer = false;
  bool truncated = false;           // the file ends inside a frame (e.g. the process was killed)
  uint64_t truncated_at = 0;        // byte offset of the incomplete frame
  uint64_t truncated_bytes = 0;     // bytes of that incomplete frame that were lost to reading
  std::optional<CaptureError> error;  // the corruption that stopped a lenient read
};

struct ReaderOptions {
  // Strict: corruption throws CaptureError. Lenient: the reader stops at the first
  // corruption, records it in integrity().error and next() returns false. A truncated tail
  // never throws in either mode; it is reported in integrity().
  bool strict = true;
  // Only return records of chunks that may overlap [from_ns, to_ns] (uses the index when
  // present; header, device and string records are always returned). 0,0 = everything.
  uint64_t from_ns = 0;
  uint64_t to_ns = 0;
  // Only the records of index entries [first_chunk, end_chunk); other chunks give only their
  // context records (header, devices, threads, strings, ...), so that several readers can
  // share one file's chunks, each seeing every string. Needs the index: without one (the
  // file was not closed cleanly) every chunk is read. 0,0 = every chunk.
  uint64_t first_chunk = 0;
  uint64_t end_chunk = 0;
  // With first_chunk/end_chunk: outside the range, read only the chunks that define strings,
  // and only their StringDef records (readers that each keep their own range's context).
  bool outside_strings_only = false;
  // A bit per Record kind (1 << kind number): besides the context records, only these kinds
  // are returned, the others stepped over unparsed (a pass that wants one kind costs the
  // chunks' decompression, not their parse). 0: every kind.
  uint64_t only_kinds = 0;
};

struct RecordView;  // below

class CaptureReader {
 public:
  // Throws CaptureError (kIo, kNotACapture, kTooNew) when the file cannot be a capture.
  explicit CaptureReader(const std::string& path, ReaderOptions options = {});
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  // The next record with absolute times, or false at the end. StringDef records are
  // returned too (and also collected in strings()). ChunkStart records are not returned.
  bool next(v1::Record& out);

  // The same records, with Kernel and ApiCall records (nearly all of a large capture) given
  // as plain values decoded straight from their bytes, without a protobuf message: about
  // twice as fast for a reader that folds millions of them. Every other kind is parsed
  // into *out.record, which the caller provides (on an arena, say).
  bool next(RecordView& out);

  // The interned strings seen so far; id 0 is "".
  std::string_view string(uint32_t id) const;
  const std::vector<std::string>& strings() const;

  const Integrity& integrity() const;
  // The index frame's contents, when the file was closed cleanly.
  const std::optional<v1::ChunkIndex>& index() const;
  const std::string& path() const;
  // Byte offset of the chunk the last record came from.
  uint64_t chunk_offset() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Where a CaptureWriter::in_memory() writer puts each chunk: the zstd frame and what the
// chunk index would say of it. The flight recorder keeps the latest ones.
struct ChunkFrame {
  std::string bytes;
  uint64_t records = 0, min_ns = 0, max_ns = 0;
  bool has_string_defs = false, has_context = false;
};
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  virtual void frame(ChunkFrame&& frame) = 0;
};

struct WriterOptions {
  int zstd_level = 3;
  size_t chunk_bytes = 4u << 20;          // flush a chunk when it reaches this size...
  uint64_t flush_interval_ns = 100'000'000;  // ...or when this much time passed (maybe_flush)
  // While *hurry is true (the process is exiting or exec'ing), chunks are compressed at level
  // 1, and a slow-level chunk being compressed when it turns true is started again at level 1.
  const std::atomic<bool>* hurry = nullptr;
  // in_memory() writers only: where the chunks go.
  FrameSink* sink = nullptr;
};

struct WriterStats {
  uint64_t records = 0;
  uint64_t records_by_kind[32] = {};  // indexed by Record::kind_case()
  uint64_t chunks = 0;
  uint64_t bytes_written = 0;  // compressed bytes on disk
  uint64_t raw_bytes = 0;      // serialised bytes before compression
};

// A Kernel and an ApiCall record as plain values, for the writer that produces millions of
// them (the hook fills these straight from CUPTI's records, with no protobuf message in
// between). Field for field the proto messages; times absolute, 0 = unknown.
struct KernelFields {
  uint32_t name_id = 0, device = 0, context = 0, stream = 0, correlation_id = 0;
  int64_t queued_ns = 0, submitted_ns = 0, start_ns = 0, end_ns = 0;
  int32_t grid_x = 0, grid_y = 0, grid_z = 0, block_x = 0, block_y = 0, block_z = 0;
  uint32_t registers_per_thread = 0, static_shared_memory_bytes = 0, dynamic_shared_memory_bytes = 0,
           local_memory_per_thread_bytes = 0;
  uint64_t graph_id = 0, graph_node_id = 0;
  int32_t launch_type = 0;  // v1::LaunchType
  uint32_t channel_id = 0;
  int32_t stream_priority = 0;
  bool device_launched = false;
};

struct ApiFields {
  int32_t domain = 0;  // v1::ApiDomain
  uint32_t cbid = 0, name_id = 0;
  uint64_t thread_id = 0;
  int64_t start_ns = 0, end_ns = 0;
  uint32_t correlation_id = 0;
  int32_t return_value = 0;
};

// Between the two forms; a message's fields that KernelFields lacks (unknown fields of a
// newer version) are not carried.
KernelFields kernel_fields(const v1::Kernel& k);
ApiFields api_fields(const v1::ApiCall& a);
v1::Record to_record(const KernelFields& k);
v1::Record to_record(const ApiFields& a);

// A record as CaptureReader::next(RecordView&) gives it.
struct RecordView {
  v1::Record::KindCase kind = v1::Record::KIND_NOT_SET;
  KernelFields kernel;            // kind kKernel
  ApiFields api;                  // kind kApi
  v1::Record* record = nullptr;   // any other kind: parsed here; set by the caller
};

// Used by the hook's writer thread: one thread at a time.
class CaptureWriter {
 public:
  // Creates `path` with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600, moves its descriptor
  // to a high number out of the program's way, and writes the file magic. nullptr and *error
  // set on failure (never overwrites an existing file).
  // Before each frame the descriptor is checked to still be this file (device and inode): a
  // program that closes every descriptor it did not open may get the number back for a file
  // of its own. Then writing stops with an error, and the descriptor is never closed.
  static std::unique_ptr<CaptureWriter> create(const std::string& path, const WriterOptions& options,
                                               std::string* error);
  // Takes ownership of an open fd (tests, pipes).
  static std::unique_ptr<CaptureWriter> from_fd(int fd, const WriterOptions& options, std::string* error);
  // No file: each chunk's frame goes to options.sink (which must be set) when it is flushed.
  static std::unique_ptr<CaptureWriter> in_memory(const WriterOptions& options, std::string* error);
  ~CaptureWriter();  // closes the fd; does not write the index (call close())

  // Interns `s`: returns its id and queues a StringDef the first time.
  uint32_t intern(std::string_view s);

  // Appends a record with absolute times. Returns false once the file failed (disk full,
  // RLIMIT_FSIZE, I/O error): last_error() says why, later writes are dropped and counted.
  bool write(const v1::Record& record);
  // The same bytes as write(to_record(k)), without building the message.
  bool write(const KernelFields& k);
  bool write(const ApiFields& a);
  // The same bytes as write(r) for the message with these values. The hook writes only these:
  // it links no libprotobuf. write(const v1::Record&) is in the separate
  // object capture_writer_pb.cpp for that reason.
  bool write(const wire::Record& r);

  // Ends the current chunk now (compress + write one frame). The crash-safety point.
  bool flush();
  // Ends the current chunk, then writes a frame another writer made (ChunkFrame) as it is, with
  // its index entry. The frame's string ids must be defined in this file (write_string_def).
  bool append_frame(const ChunkFrame& frame);
  // A StringDef with this exact id, for frames appended from another writer. Does not intern.
  bool write_string_def(uint32_t id, std::string_view value);
  // Every string interned so far, in no particular order.
  template <class F>
  void for_each_string(F&& f) const {
    for_each_string_impl([&](uint32_t id, std::string_view s) { f(id, s); });
  }
  // flush() if the chunk is over chunk_bytes or flush_interval_ns passed since the last.
  bool maybe_flush(uint64_t now_ns);
  // Flushes, appends the index frame, fsyncs and closes.
  bool close();

  const WriterStats& stats() const;
  const std::string& last_error() const;
  uint64_t records_lost() const;  // records dropped after a write failure

 private:
  CaptureWriter();
  void for_each_string_impl(const std::function<void(uint32_t, std::string_view)>& f) const;
  // The steps of writing one generic record, shared by the wire and the protobuf paths.
  bool accepting();                        // false (and the record counted lost) once failed or closed
  void open_chunk_at(int64_t first_time);  // opens a chunk unless one is open
  codec::Cursors& cursors();
  std::string& chunk_bytes();
  void note_time(int64_t t);
  bool record_written(int kind);
  bool record_too_large();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuhook
