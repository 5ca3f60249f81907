#include "frame_spool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gantt::scan {

FrameSpool::FrameSpool(std::string path) : path_(std::move(path)) {
  fd_ = ::memfd_create("gantt-import-spool", MFD_CLOEXEC);
  if (fd_ < 0) error_ = std::string("cannot make room for the import (memfd_create): ") + std::strerror(errno);
}

FrameSpool::~FrameSpool() {
  if (fd_ >= 0) ::close(fd_);
}

void FrameSpool::frame(gpuhook::ChunkFrame&& frame) {
  if (!error_.empty()) return;
  const char* p = frame.bytes.data();
  size_t left = frame.bytes.size();
  uint64_t at = size_;
  while (left > 0) {
    const ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error_ = std::string("cannot spool the import: ") + std::strerror(errno);
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
    at += static_cast<uint64_t>(n);
  }
  entries_.push_back(Entry{size_, frame.bytes.size(), frame.records, frame.min_ns, frame.max_ns, frame.has_string_defs,
                           frame.has_context});
  size_ = at;
}

void FrameSpool::append_to(gpuhook::CaptureWriter& out) {
  if (!error_.empty()) fail(error_);
  gpuhook::ChunkFrame frame;
  for (const Entry& e : entries_) {
    frame.bytes.resize(e.bytes);
    size_t done = 0;
    while (done < e.bytes) {
      const ssize_t n = ::pread(fd_, frame.bytes.data() + done, e.bytes - done, static_cast<off_t>(e.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(std::string("cannot read the spooled import back: ") + std::strerror(n < 0 ? errno : EIO));
      done += static_cast<size_t>(n);
    }
    frame.records = e.records;
    frame.min_ns = e.min_ns;
    frame.max_ns = e.max_ns;
    frame.has_string_defs = e.has_string_defs;
    frame.has_context = e.has_context;
    if (!out.append_frame(frame)) fail("cannot write the imported capture: " + out.last_error());
  }
}

void FrameSpool::fail(const std::string& what) const {
  throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kIo, path_, 0, what);
}

}  // namespace gantt::scan
