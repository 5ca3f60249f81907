// Record-level coding shared by the writer and the reader: length-delimited framing of one
// record and the delta coding of its time fields.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

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

// Delta coding state of one chunk: one cursor per record kind, all starting at the chunk's
// base. Per kind because records of different kinds interleave out of time order (CUPTI
// hands kernels over in batches after their launches): against the previous record of the
// same kind, the first time of a record is a small step (the launch interval).
//
// Format version 2 adds one more base: a Kernel's start_ns is coded against the end_ns of the
// previous Kernel of the same (context, stream) in the chunk. A stream runs its kernels one
// after another, so on a busy stream that gap is the GPU's launch latency (about a
// microsecond), while start - submitted is the time the kernel waited in the queue (up to a
// millisecond, different every time): on the synthetic benchmark this took 18.5 to 16.3 bytes
// per kernel + launch.
struct Cursors {
  struct StreamKeyHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return std::hash<uint64_t>{}(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  int64_t by_kind[32] = {};
  uint32_t correlation_by_kind[32] = {};  // the previous non-zero correlation id of each kind
  bool stream_coding = true;              // version 2: Kernel start_ns against its stream's last end
  std::unordered_map<std::pair<uint64_t, uint64_t>, int64_t, StreamKeyHash> stream_end;  // (context, stream)
  explicit Cursors(int64_t base_ns = 0, bool stream_coding_ = true) : stream_coding(stream_coding_) {
    for (auto& c : by_kind) c = base_ns;
  }
  int64_t& operator[](v1::Record::KindCase k) { return by_kind[static_cast<size_t>(k) & 31]; }
  uint32_t& correlation(v1::Record::KindCase k) { return correlation_by_kind[static_cast<size_t>(k) & 31]; }
  // The end_ns of the previous Kernel of this (context, stream) with a known end, if any.
  const int64_t* last_end(uint64_t context, uint64_t stream) const {
    if (!stream_coding) return nullptr;
    auto it = stream_end.find({context, stream});
    return it == stream_end.end() ? nullptr : &it->second;
  }
  void set_end(uint64_t context, uint64_t stream, int64_t end_ns) {
    if (stream_coding) stream_end.insert_or_assign(std::make_pair(context, stream), end_ns);
  }
};

// Correlation ids count up by one per API call, so stored as they are they cost a changing
// byte or three per record that zstd cannot match (measured: ~6 of 25 bytes per kernel on
// the synthetic benchmark). On disk 0 stays 0 (no correlation); any other id is coded from
// d = id - prev (32-bit wrapping; prev = the previous non-zero id of the same kind in the
// chunk, 0 at its start) as z = zigzag(d), then stored = z + 1 when z < zigzag(-prev), else z.
// The one delta that would give id 0 (d = -prev) never occurs, which is what frees the
// stored value 0 for "no correlation" while keeping the mapping one-to-one.
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

inline uint32_t zigzag32(uint32_t d) { return (d << 1) ^ (0u - (d >> 31)); }
inline uint32_t unzigzag32(uint32_t z) { return (z >> 1) ^ (0u - (z & 1)); }

inline uint32_t correlation_encode(uint32_t id, uint32_t& prev) {
  if (id == 0) return 0;
  uint32_t z = zigzag32(id - prev);
  uint32_t forbidden = zigzag32(0u - prev);
  prev = id;
  return z < forbidden ? z + 1 : z;
}
inline uint32_t correlation_decode(uint32_t stored, uint32_t& prev) {
  if (stored == 0) return 0;
  uint32_t forbidden = zigzag32(0u - prev);
  uint32_t z = stored <= forbidden ? stored - 1 : stored;
  prev += unzigzag32(z);
  return prev;
}

// Absolute -> delta, in place: the record's first known time minus its kind's cursor, each
// later known time minus the previous known time of the same record (so end - start is the
// duration). 0 (unknown) becomes unset. `note` sees every known time. Arithmetic wraps, so
// hostile or extreme values never overflow.
template <class Note>
void delta_encode(v1::Record& r, Cursors& cursors, Note&& note) {
  uint32_t& prev_correlation = cursors.correlation(r.kind_case());
  framing::visit_correlation(r, [&](uint32_t& v) { v = correlation_encode(v, prev_correlation); });
  int64_t& cursor = cursors[r.kind_case()];
  int64_t prev = cursor;
  bool first = true;
  const bool kernel = r.kind_case() == v1::Record::kKernel;
  const int64_t* stream_base = kernel ? cursors.last_end(r.kernel().context(), r.kernel().stream()) : nullptr;
  int field = 0;
  int64_t end_ns = 0;
  framing::visit_times(r, [&](bool& has, int64_t& v) {
    int index = field++;
    if (!has || v == 0) {
      has = false;
      return;
    }
    note(v);
    int64_t t = v;
    v = wrap_sub(t, kernel && index == 2 && stream_base != nullptr ? *stream_base : prev);
    prev = t;
    if (first) cursor = t;
    first = false;
    if (kernel && index == 3) end_ns = t;
  });
  if (kernel && end_ns != 0) cursors.set_end(r.kernel().context(), r.kernel().stream(), end_ns);
}

// Delta -> absolute, in place.
inline void delta_decode(v1::Record& r, Cursors& cursors) {
  uint32_t& prev_correlation = cursors.correlation(r.kind_case());
  framing::visit_correlation(r, [&](uint32_t& v) { v = correlation_decode(v, prev_correlation); });
  int64_t& cursor = cursors[r.kind_case()];
  int64_t prev = cursor;
  bool first = true;
  const bool kernel = r.kind_case() == v1::Record::kKernel;
  const int64_t* stream_base = kernel ? cursors.last_end(r.kernel().context(), r.kernel().stream()) : nullptr;
  int field = 0;
  bool has_end = false;
  int64_t end_ns = 0;
  framing::visit_times(r, [&](bool& has, int64_t& v) {
    int index = field++;
    if (!has) return;
    prev = wrap_add(kernel && index == 2 && stream_base != nullptr ? *stream_base : prev, v);
    v = prev;
    if (first) cursor = prev;
    first = false;
    if (kernel && index == 3) {
      has_end = true;
      end_ns = prev;
    }
  });
  if (has_end && end_ns != 0) cursors.set_end(r.kernel().context(), r.kernel().stream(), end_ns);
}

}  // namespace gpuhook::codec
