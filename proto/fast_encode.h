// Hand encoders for the two hottest record kinds (Kernel and its launch ApiCall), used by the
// writer instead of copying the message and serialising it through protobuf: the profile of
// the generic path was dominated by CopyFrom + ByteSizeLong + serialise.
//
// The bytes are ordinary protobuf (any parser reads them), with one deliberate choice:
// fields are emitted in an order that groups what repeats from one launch of a kernel to the
// next (name, grid, block, registers, shared memory) ahead of what changes every time
// (stream, correlation id, times). Protobuf parsers accept fields in any order, and this
// lets zstd cover each record's constant part with one match.
#pragma once

#include <cstdint>
#include <string>

#include <gpuhook/capture.h>

#include <gpuhook/v1/capture.pb.h>
#include "record_codec.h"

namespace gpuhook::codec {

class FieldBuffer {
 public:
  void varint(uint64_t v) {
    while (v >= 0x80) {
      b_[n_++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    b_[n_++] = static_cast<uint8_t>(v);
  }
  void tag(uint32_t field, uint32_t wire_type) { varint(field << 3 | wire_type); }
  // proto3 implicit presence: zero values are not written.
  void u64(uint32_t field, uint64_t v) {
    if (v != 0) {
      tag(field, 0);
      varint(v);
    }
  }
  // int32 and enums are sign-extended to 64 bits on the wire, as protobuf does.
  void i32(uint32_t field, int32_t v) { u64(field, static_cast<uint64_t>(static_cast<int64_t>(v))); }
  void sint64(uint32_t field, int64_t v) {
    tag(field, 0);
    varint((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  size_t size() const { return n_; }
  const uint8_t* data() const { return b_; }

 private:
  // The largest Kernel: 25 fields of at most 1 tag byte + 10 varint bytes each.
  uint8_t b_[25 * 11 + 16];
  size_t n_ = 0;
};

// Codes one time field of a chain: see delta_encode() in record_codec.h for the rule.
struct TimeChain {
  int64_t& cursor;
  int64_t prev;
  bool first = true;
  explicit TimeChain(int64_t& c) : cursor(c), prev(c) {}
  // t == 0: unknown, not written.
  template <class Note>
  void put(FieldBuffer& b, uint32_t field, int64_t t, Note& note) {
    if (t == 0) return;
    note(t);
    b.sint64(field, wrap_sub(t, prev));
    prev = t;
    if (first) cursor = t;
    first = false;
  }
};

inline void append_wrapped(std::string& out, uint32_t record_field, const FieldBuffer& body) {
  uint8_t head[16];
  size_t h = 0;
  auto put = [&](uint64_t v) {
    while (v >= 0x80) {
      head[h++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    head[h++] = static_cast<uint8_t>(v);
  };
  size_t inner = body.size();
  size_t inner_len_bytes = 1;
  for (uint64_t v = inner; v >= 0x80; v >>= 7) ++inner_len_bytes;
  put(framing::kRecordTag);
  put(1 + inner_len_bytes + inner);  // the Record: one field, the kind
  put(record_field << 3 | 2);
  put(inner);
  out.append(reinterpret_cast<const char*>(head), h);
  out.append(reinterpret_cast<const char*>(body.data()), inner);
}

template <class Note>
void encode_kernel(std::string& out, const KernelFields& k, Cursors& cursors, Note&& note) {
  FieldBuffer b;
  b.u64(v1::Kernel::kNameIdFieldNumber, k.name_id);
  b.i32(v1::Kernel::kGridXFieldNumber, k.grid_x);
  b.i32(v1::Kernel::kGridYFieldNumber, k.grid_y);
  b.i32(v1::Kernel::kGridZFieldNumber, k.grid_z);
  b.i32(v1::Kernel::kBlockXFieldNumber, k.block_x);
  b.i32(v1::Kernel::kBlockYFieldNumber, k.block_y);
  b.i32(v1::Kernel::kBlockZFieldNumber, k.block_z);
  b.u64(v1::Kernel::kRegistersPerThreadFieldNumber, k.registers_per_thread);
  b.u64(v1::Kernel::kStaticSharedMemoryBytesFieldNumber, k.static_shared_memory_bytes);
  b.u64(v1::Kernel::kDynamicSharedMemoryBytesFieldNumber, k.dynamic_shared_memory_bytes);
  b.u64(v1::Kernel::kLocalMemoryPerThreadBytesFieldNumber, k.local_memory_per_thread_bytes);
  b.i32(v1::Kernel::kLaunchTypeFieldNumber, k.launch_type);
  b.u64(v1::Kernel::kDeviceLaunchedFieldNumber, k.device_launched ? 1 : 0);
  // Coded as a step from the previous kernel's id: almost always the same byte.
  b.u64(v1::Kernel::kCorrelationIdFieldNumber, correlation_encode(k.correlation_id, cursors.correlation(v1::Record::kKernel)));
  b.u64(v1::Kernel::kDeviceFieldNumber, k.device);
  b.u64(v1::Kernel::kContextFieldNumber, k.context);
  b.u64(v1::Kernel::kStreamFieldNumber, k.stream);
  b.u64(v1::Kernel::kChannelIdFieldNumber, k.channel_id);
  b.i32(v1::Kernel::kStreamPriorityFieldNumber, k.stream_priority);
  b.u64(v1::Kernel::kGraphIdFieldNumber, k.graph_id);
  b.u64(v1::Kernel::kGraphNodeIdFieldNumber, k.graph_node_id);
  TimeChain chain(cursors[v1::Record::kKernel]);
  // Version 3: queued against the start of its launch (record_codec.h says why).
  if (const int64_t* launch_base = cursors.launch_start(k.correlation_id); launch_base != nullptr && k.queued_ns != 0) {
    chain.prev = *launch_base;
  }
  chain.put(b, v1::Kernel::kQueuedNsFieldNumber, k.queued_ns, note);
  chain.put(b, v1::Kernel::kSubmittedNsFieldNumber, k.submitted_ns, note);
  // Version 2: start against the previous end on the same stream (record_codec.h says why).
  if (const int64_t* stream_base = cursors.last_end(k.context, k.stream); stream_base != nullptr && k.start_ns != 0) {
    chain.prev = *stream_base;
  }
  chain.put(b, v1::Kernel::kStartNsFieldNumber, k.start_ns, note);
  chain.put(b, v1::Kernel::kEndNsFieldNumber, k.end_ns, note);
  if (k.end_ns != 0) cursors.set_end(k.context, k.stream, k.end_ns);
  append_wrapped(out, v1::Record::kKernel, b);
}

template <class Note>
void encode_api(std::string& out, const ApiFields& a, Cursors& cursors, Note&& note) {
  FieldBuffer b;
  b.i32(v1::ApiCall::kDomainFieldNumber, a.domain);
  b.u64(v1::ApiCall::kCbidFieldNumber, a.cbid);
  b.u64(v1::ApiCall::kNameIdFieldNumber, a.name_id);
  b.u64(v1::ApiCall::kThreadIdFieldNumber, a.thread_id);
  b.i32(v1::ApiCall::kReturnValueFieldNumber, a.return_value);
  b.u64(v1::ApiCall::kCorrelationIdFieldNumber, correlation_encode(a.correlation_id, cursors.correlation(v1::Record::kApi)));
  TimeChain chain(cursors[v1::Record::kApi]);
  chain.put(b, v1::ApiCall::kStartNsFieldNumber, a.start_ns, note);
  chain.put(b, v1::ApiCall::kEndNsFieldNumber, a.end_ns, note);
  cursors.set_launch(a.correlation_id, a.start_ns);
  append_wrapped(out, v1::Record::kApi, b);
}

}  // namespace gpuhook::codec
