// Chunks of an in-memory capture (CaptureWriter::in_memory) kept in an anonymous file until the
// header they follow can be written: an importer learns what the header says only at the end of
// its one pass over a trace. Memory is one chunk at a time, whatever the trace's size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gpuhook/capture.h>

namespace gantt::scan {

class FrameSpool : public gpuhook::FrameSink {
 public:
  explicit FrameSpool(std::string path);  // the trace's path, for errors
  ~FrameSpool() override;
  FrameSpool(const FrameSpool&) = delete;
  FrameSpool& operator=(const FrameSpool&) = delete;

  void frame(gpuhook::ChunkFrame&& frame) override;
  // Appends every chunk, in order, to `out` (CaptureWriter::append_frame). Throws
  // gpuhook::CaptureError (kIo) naming the trace when spooling or appending failed.
  void append_to(gpuhook::CaptureWriter& out);

 private:
  struct Entry {
    uint64_t offset, bytes, records, min_ns, max_ns;
    bool has_string_defs, has_context;
  };
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::vector<Entry> entries_;
  std::string error_;  // the first failure while spooling (frame() cannot throw through the writer)
};

}  // namespace gantt::scan
