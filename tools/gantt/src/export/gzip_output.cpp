// gzip framing over zlib's deflate (gzip_output.h).
#include "gantt/export/gzip_output.h"

#include <zlib.h>

#include <vector>

namespace gantt {

bool wants_gzip(std::string_view name) { return name.size() > 3 && name.substr(name.size() - 3) == ".gz"; }

struct GzipBuf::Impl {
  std::streambuf* to = nullptr;
  z_stream z{};
  bool open = false, failed = false, finished = false;
  std::vector<char> in, out;
};

GzipBuf::GzipBuf(std::streambuf* to, int level) : impl_(std::make_unique<Impl>()) {
  impl_->to = to;
  impl_->in.resize(size_t{1} << 18);
  impl_->out.resize(size_t{1} << 18);
  // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
  impl_->open = deflateInit2(&impl_->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  impl_->failed = !impl_->open;
  setp(impl_->in.data(), impl_->in.data() + impl_->in.size());
}

GzipBuf::~GzipBuf() {
  finish();
  if (impl_->open) deflateEnd(&impl_->z);
}

bool GzipBuf::deflate_input(int flush) {
  Impl& b = *impl_;
  if (b.failed) return false;
  b.z.next_in = reinterpret_cast<Bytef*>(pbase());
  b.z.avail_in = static_cast<uInt>(pptr() - pbase());
  do {
    b.z.next_out = reinterpret_cast<Bytef*>(b.out.data());
    b.z.avail_out = static_cast<uInt>(b.out.size());
    const int rc = deflate(&b.z, flush);
    if (rc == Z_STREAM_ERROR) {
      b.failed = true;
      return false;
    }
    const std::streamsize have = static_cast<std::streamsize>(b.out.size() - b.z.avail_out);
    if (have > 0 && b.to->sputn(b.out.data(), have) != have) {
      b.failed = true;
      return false;
    }
  } while (b.z.avail_out == 0 || (flush == Z_FINISH && b.z.avail_in != 0));
  setp(b.in.data(), b.in.data() + b.in.size());
  return true;
}

GzipBuf::int_type GzipBuf::overflow(int_type c) {
  if (!deflate_input(Z_NO_FLUSH)) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

std::streamsize GzipBuf::xsputn(const char* s, std::streamsize n) {
  std::streamsize done = 0;
  while (done < n) {
    const std::streamsize room = epptr() - pptr();
    if (room == 0) {
      if (!deflate_input(Z_NO_FLUSH)) return done;
      continue;
    }
    const std::streamsize k = std::min(room, n - done);
    traits_type::copy(pptr(), s + done, static_cast<size_t>(k));
    pbump(static_cast<int>(k));
    done += k;
  }
  return done;
}

int GzipBuf::sync() { return impl_->failed ? -1 : 0; }  // a gzip member is flushed by finish()

bool GzipBuf::finish() {
  Impl& b = *impl_;
  if (b.finished) return !b.failed;
  b.finished = true;
  if (!deflate_input(Z_FINISH)) return false;
  return b.to->pubsync() == 0;
}

}  // namespace gantt
