// What one share of a scanned export writes (export.h write_scanned): its text, in batches of
// a megabyte, to an unlinked temporary file, copied to the output in file order once every
// share has ended. Until then nothing reaches the output, so a capture that turns out to need
// loading (event_scan.h) or an output over --max-output leaves no partial file behind.
// Internal to libgantt's export part.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>

namespace gantt::exporting {

class Spool {
 public:
  // `total`: the bytes every share has written, checked against `limit` (0: none).
  Spool(std::atomic<uint64_t>* total, uint64_t limit) : total_(total), limit_(limit) {}
  ~Spool() {
    if (file_) std::fclose(file_);
  }
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  std::string text;  // appended to by the share's writer, then maybe_flush()
  void maybe_flush() {
    if (text.size() >= (size_t{1} << 20)) flush();
  }
  void flush();
  // The outputs of every share together passed the limit: the share stops.
  bool over() const { return over_; }
  // The whole spool onto `out`.
  void copy_to(std::ostream& out);

 private:
  std::FILE* file_ = nullptr;
  std::atomic<uint64_t>* total_;
  uint64_t limit_;
  bool over_ = false;
};

}  // namespace gantt::exporting
