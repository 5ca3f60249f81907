// Record-level coding shared by the writer and the reader: length-delimited framing of one
// record and the delta coding of its time fields.
#pragma once

#include <cstdint>
#include <string>

#include "capture.pb.h"
#include "framing.h"

namespace gpuhook::codec {

inline void append_varint(std::string& out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, n);
}

// Appends `r` as Capture.record: tag 0x0A, varint length, bytes. False (nothing appended)
// when the record is larger than a reader would accept.
inline bool append_record(std::string& out, const v1::Record& r) {
  size_t n = r.ByteSizeLong();
  if (n > framing::kMaxRecordBytes) return false;
  out.push_back(static_cast<char>(framing::kRecordTag));
  append_varint(out, n);
  size_t at = out.size();
  out.resize(at + n);
  r.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
  return true;
}

// The first known (non-zero) time of `r`, 0 if none.
inline int64_t first_time(v1::Record& r) {
  int64_t first = 0;
  framing::visit_times(r, [&first](bool& has, int64_t& v) {
    if (first == 0 && has && v != 0) first = v;
  });
  return first;
}

// Absolute -> delta, in place. 0 (unknown) becomes unset. `note` sees every known time.
// Arithmetic is unsigned so hostile or extreme values wrap instead of overflowing.
template <class Note>
void delta_encode(v1::Record& r, int64_t& cursor_ns, Note&& note) {
  framing::visit_times(r, [&](bool& has, int64_t& v) {
    if (!has || v == 0) {
      has = false;
      return;
    }
    note(v);
    int64_t d = static_cast<int64_t>(static_cast<uint64_t>(v) - static_cast<uint64_t>(cursor_ns));
    cursor_ns = v;
    v = d;
  });
}

// Delta -> absolute, in place.
inline void delta_decode(v1::Record& r, int64_t& cursor_ns) {
  framing::visit_times(r, [&](bool& has, int64_t& v) {
    if (!has) return;
    cursor_ns = static_cast<int64_t>(static_cast<uint64_t>(cursor_ns) + static_cast<uint64_t>(v));
    v = cursor_ns;
  });
}

}  // namespace gpuhook::codec
