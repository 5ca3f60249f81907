// Hand decoders for the two hottest record kinds (Kernel and its launch ApiCall), the
// reader's counterpart of fast_encode.h: a streamed `stats` of a large capture spent a third
// of its time in protobuf's generic parse of these two messages and another tenth in
// delta_decode's walk over the parsed message.
//
// Only the plain form is taken: the Record's bytes are exactly one kind field holding a Kernel
// or an ApiCall, whose fields are known numbers with their declared wire type. Anything else
// (unknown or mistyped fields, a second kind field, bad varints) is left to protobuf, which
// gives it its meaning or its error; so both paths agree on every input by construction.
#pragma once

#include <cstdint>

#include <gpuhook/capture.h>

#include <gpuhook/v1/capture.pb.h>
#include "record_codec.h"

namespace gpuhook::codec {

// A base-128 varint of at most 10 bytes, as protobuf reads it (bits past 64 are dropped).
inline bool fast_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  if (p < end && *p < 0x80) {  // tags of fields 1 to 15, ids and small steps: one byte
    v = *p++;
    return true;
  }
  if (end - p >= 3) {  // tags of fields 16 and up, most steps and sizes: two or three bytes
    const uint64_t b0 = p[0], b1 = p[1], b2 = p[2];
    if (b1 < 0x80) {
      v = (b0 & 0x7F) | b1 << 7;
      p += 2;
      return true;
    }
    if (b2 < 0x80) {
      v = (b0 & 0x7F) | (b1 & 0x7F) << 7 | b2 << 14;
      p += 3;
      return true;
    }
  }
  v = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t b = *p++;
    if (shift < 64) v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

inline int64_t unzigzag64(uint64_t z) { return static_cast<int64_t>((z >> 1) ^ (0 - (z & 1))); }

// The four kernel times (visit_times' order) and the two API times as stored, with presence.
struct StoredTimes {
  int64_t v[4] = {};
  bool has[4] = {};
};

// The Record's payload when it is one length-delimited kind field covering all of it:
// its field number, or 0.
inline uint32_t single_kind(const uint8_t*& p, const uint8_t* end) {
  uint64_t tag = 0, len = 0;
  if (!fast_varint(p, end, tag) || (tag & 7) != 2 || !fast_varint(p, end, len)) return 0;
  if (len != static_cast<uint64_t>(end - p)) return 0;
  return tag >> 3 <= UINT32_MAX ? static_cast<uint32_t>(tag >> 3) : 0;
}

// A message whose fields are all varints, as stored: each field's last value by number and
// which numbers were present. False (leave it to protobuf) for a field number above
// kMaxField, field 0, or another wire type. One store per field and no branch on which
// field it is: the parse of a kernel record is a tight loop.
template <uint32_t kMaxField>
struct VarintFields {
  uint64_t raw[kMaxField + 1] = {};
  uint64_t present = 0;
  static_assert(kMaxField < 64);

  bool parse(const uint8_t* p, const uint8_t* end) {
    while (p < end) {
      uint64_t tag = 0, v = 0;
      if (!fast_varint(p, end, tag) || (tag & 7) != 0 || tag >> 3 == 0 || tag >> 3 > kMaxField ||
          !fast_varint(p, end, v))
        return false;
      raw[tag >> 3] = v;
      present |= uint64_t{1} << (tag >> 3);
    }
    return true;
  }
  bool has(uint32_t field) const { return (present >> field & 1) != 0; }
  uint32_t u32(uint32_t field) const { return static_cast<uint32_t>(raw[field]); }
  int32_t i32(uint32_t field) const { return static_cast<int32_t>(raw[field]); }
  int64_t sint64(uint32_t field) const { return unzigzag64(raw[field]); }
};

// Kernel fields as stored (correlation id and times still coded); false: leave it to protobuf.
inline bool parse_kernel(const uint8_t* p, const uint8_t* end, KernelFields& k, StoredTimes& t) {
  using K = v1::Kernel;
  VarintFields<K::kDeviceLaunchedFieldNumber> f;
  if (!f.parse(p, end)) return false;
  k.name_id = f.u32(K::kNameIdFieldNumber);
  k.device = f.u32(K::kDeviceFieldNumber);
  k.context = f.u32(K::kContextFieldNumber);
  k.stream = f.u32(K::kStreamFieldNumber);
  k.correlation_id = f.u32(K::kCorrelationIdFieldNumber);
  k.grid_x = f.i32(K::kGridXFieldNumber);
  k.grid_y = f.i32(K::kGridYFieldNumber);
  k.grid_z = f.i32(K::kGridZFieldNumber);
  k.block_x = f.i32(K::kBlockXFieldNumber);
  k.block_y = f.i32(K::kBlockYFieldNumber);
  k.block_z = f.i32(K::kBlockZFieldNumber);
  k.registers_per_thread = f.u32(K::kRegistersPerThreadFieldNumber);
  k.static_shared_memory_bytes = f.u32(K::kStaticSharedMemoryBytesFieldNumber);
  k.dynamic_shared_memory_bytes = f.u32(K::kDynamicSharedMemoryBytesFieldNumber);
  k.local_memory_per_thread_bytes = f.u32(K::kLocalMemoryPerThreadBytesFieldNumber);
  k.graph_id = f.raw[K::kGraphIdFieldNumber];
  k.graph_node_id = f.raw[K::kGraphNodeIdFieldNumber];
  k.launch_type = f.i32(K::kLaunchTypeFieldNumber);
  k.channel_id = f.u32(K::kChannelIdFieldNumber);
  k.stream_priority = f.i32(K::kStreamPriorityFieldNumber);
  k.device_launched = f.raw[K::kDeviceLaunchedFieldNumber] != 0;
  constexpr uint32_t kTimes[4] = {K::kQueuedNsFieldNumber, K::kSubmittedNsFieldNumber, K::kStartNsFieldNumber,
                                  K::kEndNsFieldNumber};  // visit_times' order
  for (int i = 0; i < 4; ++i) {
    t.has[i] = f.has(kTimes[i]);
    t.v[i] = f.sint64(kTimes[i]);
  }
  return true;
}

inline bool parse_api(const uint8_t* p, const uint8_t* end, ApiFields& a, StoredTimes& t) {
  using A = v1::ApiCall;
  VarintFields<A::kReturnValueFieldNumber> f;
  if (!f.parse(p, end)) return false;
  a.domain = f.i32(A::kDomainFieldNumber);
  a.cbid = f.u32(A::kCbidFieldNumber);
  a.name_id = f.u32(A::kNameIdFieldNumber);
  a.thread_id = f.raw[A::kThreadIdFieldNumber];
  a.correlation_id = f.u32(A::kCorrelationIdFieldNumber);
  a.return_value = f.i32(A::kReturnValueFieldNumber);
  t.has[kApiStartTime] = f.has(A::kStartNsFieldNumber);
  t.v[kApiStartTime] = f.sint64(A::kStartNsFieldNumber);
  t.has[kApiEndTime] = f.has(A::kEndNsFieldNumber);
  t.v[kApiEndTime] = f.sint64(A::kEndNsFieldNumber);
  return true;
}

// delta_decode() of record_codec.h on the plain forms, step for step: the same cursors read
// and updated in the same order. A time the record does not carry is 0 here, as
// kernel_fields() gives it.
inline void decode_kernel_times(KernelFields& k, StoredTimes& t, Cursors& cursors) {
  k.correlation_id = correlation_decode(k.correlation_id, cursors.correlation(v1::Record::kKernel));
  int64_t& cursor = cursors[v1::Record::kKernel];
  int64_t prev = cursor;
  bool first = true;
  const int64_t* stream_base = cursors.last_end(k.context, k.stream);
  const int64_t* launch_base = cursors.launch_start(k.correlation_id);
  for (int i = 0; i < 4; ++i) {
    if (!t.has[i]) continue;
    int64_t base = prev;
    if (i == kKernelQueuedTime && launch_base != nullptr) base = *launch_base;
    if (i == kKernelStartTime && stream_base != nullptr) base = *stream_base;
    prev = wrap_add(base, t.v[i]);
    t.v[i] = prev;
    if (first) cursor = prev;
    first = false;
  }
  k.queued_ns = t.has[kKernelQueuedTime] ? t.v[kKernelQueuedTime] : 0;
  k.submitted_ns = t.has[kKernelSubmittedTime] ? t.v[kKernelSubmittedTime] : 0;
  k.start_ns = t.has[kKernelStartTime] ? t.v[kKernelStartTime] : 0;
  k.end_ns = t.has[kKernelEndTime] ? t.v[kKernelEndTime] : 0;
  if (k.end_ns != 0) cursors.set_end(k.context, k.stream, k.end_ns);
}

inline void decode_api_times(ApiFields& a, StoredTimes& t, Cursors& cursors) {
  a.correlation_id = correlation_decode(a.correlation_id, cursors.correlation(v1::Record::kApi));
  int64_t& cursor = cursors[v1::Record::kApi];
  int64_t prev = cursor;
  bool first = true;
  for (int i = 0; i < 2; ++i) {
    if (!t.has[i]) continue;
    prev = wrap_add(prev, t.v[i]);
    t.v[i] = prev;
    if (first) cursor = prev;
    first = false;
  }
  a.start_ns = t.has[kApiStartTime] ? t.v[kApiStartTime] : 0;
  a.end_ns = t.has[kApiEndTime] ? t.v[kApiEndTime] : 0;
  cursors.set_launch(a.correlation_id, a.start_ns);
}

}  // namespace gpuhook::codec
