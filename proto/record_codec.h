// Record-level coding shared by the writer and the reader: length-delimited framing of one
// record and the delta coding of its time fields.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <gpuhook/capture.h>

#include <gpuhook/v1/capture.pb.h>
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
template <class R>
int64_t first_time(R& r) {
  int64_t first = 0;
  visit_times(r, [&first](bool& has, int64_t& v) {
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
//
// Format version 3 adds another: a Kernel's queued_ns is coded against the start_ns of the
// ApiCall with its correlation id earlier in the chunk (the launch that queued it), found in
// a direct-mapped table of the chunk's recent API calls. queued - launch start is the launch
// call's own path to the queue (about a microsecond, steady), while queued minus the previous
// kernel's queued is the host's launch interval (Python gaps, blocking launches): 16.3 to
// 15.9 bytes per kernel + launch on the synthetic benchmark. The writer and the reader fill
// the table from the same records in the same order, so no flag on disk says which base was
// taken.
struct Cursors {
  struct StreamKeyHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return std::hash<uint64_t>{}(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  // Slot = correlation id mod kLaunchSlots; a slot of an earlier chunk (older epoch) or of
  // another id is a miss. Kernel records trail their launches by CUPTI's buffering, a few
  // thousand launches at most, so 16k slots find nearly all; a miss only costs bytes.
  static constexpr uint32_t kLaunchSlots = 16384;
  struct LaunchSlot {
    uint32_t correlation = 0;
    uint32_t epoch = 0;
    int64_t start_ns = 0;
  };

  // One slot per record kind number (capture_writer.cpp checks every kind has one).
  static constexpr size_t kKindSlots = 32;
  int64_t by_kind[kKindSlots] = {};
  uint32_t correlation_by_kind[kKindSlots] = {};  // the previous non-zero correlation id of each kind
  bool stream_coding = true;              // version 2: Kernel start_ns against its stream's last end
  bool launch_coding = true;              // version 3: Kernel queued_ns against its launch's start
  std::unordered_map<std::pair<uint64_t, uint64_t>, int64_t, StreamKeyHash> stream_end;  // (context, stream)
  // In front of stream_end: the map's lookups were 10% of the hook writer's time, and a
  // program uses a handful of streams. Entries point into the map (stable across rehashes).
  struct StreamMemo {
    uint64_t context = 0, stream = 0;
    int64_t* end = nullptr;
  };
  StreamMemo stream_memo[16];
  std::vector<LaunchSlot> launches;  // allocated at the first ApiCall
  uint32_t epoch = 1;

  // Coding rules of a file of format `version`.
  explicit Cursors(uint32_t version = kFormatVersion) : stream_coding(version >= 2), launch_coding(version >= 3) {}

  // Moves only: stream_memo points into stream_end, which a move carries over and a copy would not.
  Cursors(const Cursors&) = delete;
  Cursors& operator=(const Cursors&) = delete;
  Cursors(Cursors&&) = default;
  Cursors& operator=(Cursors&&) = default;

  // A chunk is decodable alone: every base restarts at its ChunkStart.
  void start_chunk(int64_t base_ns) {
    for (auto& c : by_kind) c = base_ns;
    for (auto& c : correlation_by_kind) c = 0;
    stream_end.clear();
    for (auto& m : stream_memo) m = StreamMemo{};
    if (++epoch == 0) {  // after 2^32 chunks: forget every slot for real
      for (auto& s : launches) s = LaunchSlot{};
      epoch = 1;
    }
  }

  // k: a Record::KindCase (v1 or wire, the same numbers).
  int64_t& operator[](int k) { return by_kind[static_cast<size_t>(k) % kKindSlots]; }
  uint32_t& correlation(int k) { return correlation_by_kind[static_cast<size_t>(k) % kKindSlots]; }
  // The end_ns of the previous Kernel of this (context, stream) with a known end, if any.
  const int64_t* last_end(uint64_t context, uint64_t stream) {
    if (!stream_coding) return nullptr;
    return find_stream(context, stream);
  }
  void set_end(uint64_t context, uint64_t stream, int64_t end_ns) {
    if (!stream_coding) return;
    if (int64_t* end = find_stream(context, stream)) {
      *end = end_ns;
      return;
    }
    int64_t& slot = stream_end[{context, stream}];
    slot = end_ns;
    remember_stream(context, stream, &slot);
  }
  static size_t memo_slot(uint64_t context, uint64_t stream) { return (stream ^ (context * 31)) & 15; }
  int64_t* find_stream(uint64_t context, uint64_t stream) {
    StreamMemo& m = stream_memo[memo_slot(context, stream)];
    if (m.end != nullptr && m.context == context && m.stream == stream) return m.end;
    auto it = stream_end.find({context, stream});
    if (it == stream_end.end()) return nullptr;
    remember_stream(context, stream, &it->second);
    return &it->second;
  }
  void remember_stream(uint64_t context, uint64_t stream, int64_t* end) {
    stream_memo[memo_slot(context, stream)] = StreamMemo{context, stream, end};
  }

  // The start_ns of this chunk's latest ApiCall with this correlation id, if still in the table.
  const int64_t* launch_start(uint32_t correlation_id) const {
    if (!launch_coding || correlation_id == 0 || launches.empty()) return nullptr;
    const LaunchSlot& s = launches[correlation_id % kLaunchSlots];
    return s.epoch == epoch && s.correlation == correlation_id ? &s.start_ns : nullptr;
  }
  // After each ApiCall with a correlation id and a known start.
  void set_launch(uint32_t correlation_id, int64_t start_ns) {
    if (!launch_coding || correlation_id == 0 || start_ns == 0) return;
    if (launches.empty()) launches.resize(kLaunchSlots);
    launches[correlation_id % kLaunchSlots] = LaunchSlot{correlation_id, epoch, start_ns};
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
// R: v1::Record or wire::Record.
template <class R, class Note>
void delta_encode(R& r, Cursors& cursors, Note&& note) {
  const bool kernel = r.kind_case() == R::kKernel;
  const bool api = r.kind_case() == R::kApi;
  uint32_t correlation_id = 0;  // as given, before coding
  uint32_t& prev_correlation = cursors.correlation(r.kind_case());
  framing::visit_correlation(r, [&](uint32_t& v) {
    correlation_id = v;
    v = correlation_encode(v, prev_correlation);
  });
  int64_t& cursor = cursors[r.kind_case()];
  int64_t prev = cursor;
  bool first = true;
  const int64_t* stream_base = kernel ? cursors.last_end(r.kernel().context(), r.kernel().stream()) : nullptr;
  const int64_t* launch_base = kernel ? cursors.launch_start(correlation_id) : nullptr;
  int field = 0;
  int64_t end_ns = 0;
  int64_t api_start_ns = 0;
  visit_times(r, [&](bool& has, int64_t& v) {
    int index = field++;
    if (!has || v == 0) {
      has = false;
      return;
    }
    note(v);
    int64_t t = v;
    int64_t base = prev;
    if (kernel && index == kKernelQueuedTime && launch_base != nullptr) base = *launch_base;
    if (kernel && index == kKernelStartTime && stream_base != nullptr) base = *stream_base;
    v = wrap_sub(t, base);
    prev = t;
    if (first) cursor = t;
    first = false;
    if (kernel && index == kKernelEndTime) end_ns = t;
    if (api && index == kApiStartTime) api_start_ns = t;
  });
  if (kernel && end_ns != 0) cursors.set_end(r.kernel().context(), r.kernel().stream(), end_ns);
  if (api) cursors.set_launch(correlation_id, api_start_ns);
}

// Delta -> absolute, in place.
inline void delta_decode(v1::Record& r, Cursors& cursors) {
  const bool kernel = r.kind_case() == v1::Record::kKernel;
  const bool api = r.kind_case() == v1::Record::kApi;
  uint32_t correlation_id = 0;
  uint32_t& prev_correlation = cursors.correlation(r.kind_case());
  framing::visit_correlation(r, [&](uint32_t& v) {
    v = correlation_decode(v, prev_correlation);
    correlation_id = v;
  });
  int64_t& cursor = cursors[r.kind_case()];
  int64_t prev = cursor;
  bool first = true;
  const int64_t* stream_base = kernel ? cursors.last_end(r.kernel().context(), r.kernel().stream()) : nullptr;
  const int64_t* launch_base = kernel ? cursors.launch_start(correlation_id) : nullptr;
  int field = 0;
  bool has_end = false;
  int64_t end_ns = 0;
  int64_t api_start_ns = 0;
  visit_times(r, [&](bool& has, int64_t& v) {
    int index = field++;
    if (!has) return;
    int64_t base = prev;
    if (kernel && index == kKernelQueuedTime && launch_base != nullptr) base = *launch_base;
    if (kernel && index == kKernelStartTime && stream_base != nullptr) base = *stream_base;
    prev = wrap_add(base, v);
    v = prev;
    if (first) cursor = prev;
    first = false;
    if (kernel && index == kKernelEndTime) {
      has_end = true;
      end_ns = prev;
    }
    if (api && index == kApiStartTime) api_start_ns = prev;
  });
  if (has_end && end_ns != 0) cursors.set_end(r.kernel().context(), r.kernel().stream(), end_ns);
  if (api) cursors.set_launch(correlation_id, api_start_ns);
}

}  // namespace gpuhook::codec
