// What one share of a scanned export writes (export.h write_scanned): its text, in batches of
// a megabyte, to a file of its own; once every share has ended, the files are put together in
// file order. Until then nothing reaches the output, so a capture that turns out to need
// loading (event_scan.h) or an output over --max-output leaves no partial file behind.
//
// Where the output is a plain file, the first share's file is made beside it and renamed to it
// at the end, the later shares' files appended to it in the kernel: the first share's bytes
// (half the output on two threads) are written once instead of spooled to /tmp and copied, which
// on a 10 M-kernel capture was 1.9 GB of the 7.6 GB written for a 3.8 GB CSV.
// Internal to libgantt's export part.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gantt::exporting {

class Spool {
 public:
  // `total`: the bytes every share has written, checked against `limit` (0: none).
  Spool(std::atomic<uint64_t>* total, uint64_t limit) : total_(total), limit_(limit) {}
  ~Spool();  // a file made beside the output and never committed is removed
  Spool(const Spool&) = delete;
  Spool& operator=(const Spool&) = delete;

  std::string text;  // appended to by the share's writer, then maybe_flush()
  void maybe_flush() {
    if (text.size() >= (size_t{1} << 20)) flush();
  }
  void flush();
  // The outputs of every share together passed the limit: the share stops.
  bool over() const { return over_; }

  // Makes this (the first share's) spool a new file beside `output`, `head` first (counted by
  // the caller), to be renamed to `output` by commit(). False, and nothing made, where `output`
  // is not a plain file of ours or absent (a device, a link, another's file) or its directory
  // takes no new file: the spool then goes to /tmp as the others.
  bool become(const std::string& output, std::string_view head);
  bool in_place() const { return !partial_.empty(); }
  // `later`'s output appended to this one's, `later` left empty: the shares of a job's later
  // captures go into its first share's spool as each capture ends (one file, not one a share).
  void absorb(Spool& later);

 private:
  friend void deliver(const std::vector<Spool*>&, std::string_view, std::string_view, const std::function<std::ostream&()>&);
  void copy_to(std::ostream& out);
  void append_to(Spool& first);
  void commit(std::string_view tail);

  std::FILE* file_ = nullptr;
  std::atomic<uint64_t>* total_;
  uint64_t limit_;
  bool over_ = false;
  std::string partial_, output_;  // in place: the file beside the output, and the output
};

// The export put together once every share has ended: `head`, the spools in order, `tail`.
// Renamed into place when the first spool became the output, else written to `open_output()`.
// Throws std::runtime_error when a file cannot be written.
void deliver(const std::vector<Spool*>& spools, std::string_view head, std::string_view tail,
             const std::function<std::ostream&()>& open_output);

}  // namespace gantt::exporting
