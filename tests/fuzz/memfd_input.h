// A fuzzer's input as a file: the readers take a path, so the bytes go into an anonymous
// in-memory file whose /proc/self/fd path they can open. Closed when it goes out of scope.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

class MemfdInput {
 public:
  MemfdInput(const char* name, const uint8_t* data, size_t size) : fd_(memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) return;
    size_t off = 0;
    while (off < size) {
      const ssize_t w = write(fd_, data + off, size - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemfdInput() {
    if (fd_ >= 0) close(fd_);
  }
  MemfdInput(const MemfdInput&) = delete;
  MemfdInput& operator=(const MemfdInput&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};
