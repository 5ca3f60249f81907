#include "text_source.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <gpuhook/capture.h>

namespace gantt::scan {

namespace {
constexpr size_t kBlockBytes = 1u << 20;
}

TextSource::TextSource(const std::string& path, int fd, bool gzip) : path_(path), fd_(fd), gzip_(gzip) {
  text_.resize(kBlockBytes);
  if (gzip_) {
    in_.resize(kBlockBytes);
    // 16 + MAX_WBITS: a gzip wrapper, not zlib's (zlib.h, inflateInit2).
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) fail(0, "zlib cannot start");
    zs_ready_ = true;
  }
  current_ = end_ = text_.data();
  refill();
}

TextSource::~TextSource() {
  if (zs_ready_) inflateEnd(&zs_);
}

void TextSource::fail(uint64_t offset, const std::string& what) const {
  throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kCorruptFrame, path_, offset, what);
}

size_t TextSource::read_file(char* buf, size_t n) {
  for (;;) {
    const ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(file_offset_));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kIo, path_, file_offset_,
                                  std::string("read failed: ") + std::strerror(errno));
    }
    file_offset_ += static_cast<uint64_t>(r);
    return static_cast<size_t>(r);
  }
}

void TextSource::refill() {
  consumed_ += static_cast<uint64_t>(end_ - text_.data());
  current_ = end_ = text_.data();
  if (eof_) return;
  if (!gzip_) {
    const size_t n = read_file(text_.data(), text_.size());
    if (n == 0) eof_ = true;
    end_ = text_.data() + n;
    return;
  }
  zs_.next_out = reinterpret_cast<Bytef*>(text_.data());
  zs_.avail_out = static_cast<uInt>(text_.size());
  while (zs_.avail_out == text_.size()) {
    if (zs_.avail_in == 0) {
      const size_t n = read_file(in_.data(), in_.size());
      if (n == 0) {
        // The input ends: cleanly only right after a member's end.
        if (!member_ended_) {
          throw gpuhook::CaptureError(gpuhook::CaptureErrorKind::kTruncated, path_, file_offset_,
                                      "the gzip stream is cut short (truncated file)");
        }
        eof_ = true;
        break;
      }
      zs_.next_in = reinterpret_cast<Bytef*>(in_.data());
      zs_.avail_in = static_cast<uInt>(n);
    }
    if (member_ended_) {
      // Another member follows (RFC 1952 allows several); zlib stops at each end.
      if (inflateReset(&zs_) != Z_OK) fail(file_offset_ - zs_.avail_in, "zlib cannot restart");
      member_ended_ = false;
    }
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      member_ended_ = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      fail(file_offset_ - zs_.avail_in,
           std::string("corrupt gzip data: ") + (zs_.msg != nullptr ? zs_.msg : "inflate failed"));
    }
  }
  end_ = text_.data() + (text_.size() - zs_.avail_out);
}

}  // namespace gantt::scan
