// `export -o NAME.gz`: what the exporter writes goes through zlib's deflate in gzip framing, so
// `zcat`, Python's gzip module and Perfetto UI (which opens .json.gz) read it back.
#pragma once

#include <memory>
#include <streambuf>
#include <string_view>

namespace gantt {

// True when the output's name asks for gzip (it ends in ".gz").
bool wants_gzip(std::string_view output_name);

// A stream buffer that deflates into `to`. finish() writes the last block and the trailer
// (once; the destructor does it if it was not called); false when zlib or `to` failed.
class GzipBuf : public std::streambuf {
 public:
  explicit GzipBuf(std::streambuf* to, int level);
  ~GzipBuf() override;
  GzipBuf(const GzipBuf&) = delete;
  GzipBuf& operator=(const GzipBuf&) = delete;
  bool finish();

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  struct Impl;
  bool deflate_input(int flush);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gantt
