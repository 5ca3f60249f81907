// The bytes of a text file, read in blocks from a descriptor, through zlib when it is gzip'd
// (every member of a multi-member file, RFC 1952), as a RapidJSON input stream. Memory is two
// blocks whatever the file's size.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gantt::scan {

class TextSource {
 public:
  // Reads from byte 0 of fd (pread: the descriptor's offset is left alone).
  TextSource(const std::string& path, int fd, bool gzip);
  ~TextSource();
  TextSource(const TextSource&) = delete;
  TextSource& operator=(const TextSource&) = delete;

  // RapidJSON's stream concept (rapidjson/stream.h): '\0' at the end.
  using Ch = char;
  Ch Peek() const { return current_ < end_ ? *current_ : '\0'; }
  Ch Take() {
    if (current_ >= end_) return '\0';
    const Ch c = *current_++;
    if (current_ == end_) refill();
    return c;
  }
  size_t Tell() const { return static_cast<size_t>(consumed_ + static_cast<uint64_t>(current_ - text_.data())); }
  // Unused by a reader, required by the concept.
  Ch* PutBegin() { return nullptr; }
  void Put(Ch) {}
  void Flush() {}
  size_t PutEnd(Ch*) { return 0; }

  // Where the compressed input stands (for errors in a gzip'd file).
  uint64_t compressed_offset() const { return file_offset_; }
  bool gzip() const { return gzip_; }

 private:
  void refill();
  size_t read_file(char* buf, size_t n);
  [[noreturn]] void fail(uint64_t offset, const std::string& what) const;

  std::string path_;
  int fd_;
  bool gzip_;
  z_stream zs_{};
  bool zs_ready_ = false;
  bool member_ended_ = false;  // the last member ended exactly at the end of the input read
  std::vector<char> in_;       // compressed input
  std::vector<char> text_;     // text
  const char* current_ = nullptr;
  const char* end_ = nullptr;
  uint64_t consumed_ = 0;     // text bytes before text_'s first
  uint64_t file_offset_ = 0;  // file bytes read so far
  bool eof_ = false;
};

}  // namespace gantt::scan
