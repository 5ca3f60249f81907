// A row of text built in a small buffer on the stack and appended to its output once: on 1 M
// kernels, std::string's push_back and append (a capacity check and a call a cell) and the
// number formatting took about 40% of a CSV export's CPU time (perf). Internal to libgantt's
// export part; the scanned exports write every row through it.
#pragma once

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gantt::exporting {

class RowWriter {
 public:
  explicit RowWriter(std::string& out) : out_(out) {}
  ~RowWriter() { flush(); }
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;

  RowWriter& operator<<(char c) {
    room(1);
    *p_++ = c;
    return *this;
  }
  RowWriter& operator<<(std::string_view s) {
    if (s.size() > kLong) {
      flush();
      out_.append(s);
      return *this;
    }
    room(s.size());
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
    return *this;
  }
  RowWriter& operator<<(const char* s) { return *this << std::string_view(s); }
  RowWriter& operator<<(uint64_t v) {
    room(20);
    p_ = std::to_chars(p_, p_ + 20, v).ptr;
    return *this;
  }
  RowWriter& operator<<(uint32_t v) { return *this << uint64_t{v}; }
  RowWriter& operator<<(int64_t v) {
    room(20);
    p_ = std::to_chars(p_, p_ + 20, v).ptr;
    return *this;
  }
  RowWriter& operator<<(int32_t v) { return *this << int64_t{v}; }
  // Microseconds from integer nanoseconds, exact, in the fewest digits: "12", "12.5", "12.345".
  void us_from_ns(int64_t ns) {
    room(24);
    uint64_t mag = static_cast<uint64_t>(ns);
    if (ns < 0) {
      *p_++ = '-';
      mag = 0 - mag;
    }
    p_ = std::to_chars(p_, p_ + 20, mag / 1000).ptr;
    unsigned frac = static_cast<unsigned>(mag % 1000);
    if (frac == 0) return;
    *p_++ = '.';
    *p_++ = static_cast<char>('0' + frac / 100);
    frac %= 100;
    if (frac == 0) return;
    *p_++ = static_cast<char>('0' + frac / 10);
    frac %= 10;
    if (frac != 0) *p_++ = static_cast<char>('0' + frac);
  }
  void flush() {
    out_.append(buf_, static_cast<size_t>(p_ - buf_));
    p_ = buf_;
  }

 private:
  static constexpr size_t kLong = 256;  // longer strings go straight to the output
  void room(size_t n) {
    if (p_ + n > buf_ + sizeof buf_) flush();
  }
  std::string& out_;
  char buf_[1024];
  char* p_ = buf_;
};

}  // namespace gantt::exporting
