// NCCL facts that the hook (which records calls) and the analysis (which sizes and matches
// them) must agree on, as plain constants: no <nccl.h> and no protobuf, so either side can
// include it. The hook static_asserts the datatype values against <nccl.h>; a unit test
// pins the op codes against capture.proto's NcclOp.
#pragma once

#include <cstdint>

namespace gpuhook {

// ncclDataType_t values from nccl.h. They are ABI: a captured `datatype` field holds them.
// The fp8 types came with NCCL 2.19.
enum NcclDataType : int32_t {
  kNcclInt8 = 0, kNcclUint8 = 1, kNcclInt32 = 2, kNcclUint32 = 3, kNcclInt64 = 4, kNcclUint64 = 5,
  kNcclFloat16 = 6, kNcclFloat32 = 7, kNcclFloat64 = 8, kNcclBfloat16 = 9,
  kNcclFloat8e4m3 = 10, kNcclFloat8e5m2 = 11,
};

// Bytes of one element, or 0 for a type this table does not know (a newer NCCL's, or a
// corrupt capture's): callers treat 0 as "size unknown", never divide by it.
constexpr uint64_t nccl_datatype_bytes(int32_t datatype) {
  switch (datatype) {
    case kNcclInt8: case kNcclUint8: case kNcclFloat8e4m3: case kNcclFloat8e5m2: return 1;
    case kNcclFloat16: case kNcclBfloat16: return 2;
    case kNcclInt32: case kNcclUint32: case kNcclFloat32: return 4;
    case kNcclInt64: case kNcclUint64: case kNcclFloat64: return 8;
    default: return 0;
  }
}

// capture.proto's v1::NcclOp, for code that sees the op as a number.
enum NcclOpCode : uint8_t {
  kNcclOpUnknown = 0, kNcclAllReduce = 1, kNcclBroadcast = 2, kNcclReduce = 3, kNcclAllGather = 4,
  kNcclReduceScatter = 5, kNcclSend = 6, kNcclRecv = 7, kNcclAllToAll = 8, kNcclGather = 9,
  kNcclScatter = 10,
};

constexpr bool nccl_op_is_point_to_point(uint32_t op) { return op == kNcclSend || op == kNcclRecv; }

// Every rank of the communicator calls it and it takes a number from the communicator's
// collective counter. All-to-all, gather and scatter run as point-to-point work inside NCCL
// but every rank calls them, so they count as collectives here.
constexpr bool nccl_op_is_collective(uint32_t op) {
  return op >= kNcclAllReduce && op <= kNcclScatter && !nccl_op_is_point_to_point(op);
}

}  // namespace gpuhook
