// include/gpuhook/nccl_types.h: the NCCL numbers the hook and the analysis share. The hook
// checks the datatypes against nccl.h at compile time; this pins the op codes against the
// capture schema and the classification both sides use.
#include <gpuhook/capture.h>
#include <gpuhook/nccl_types.h>

#include <gtest/gtest.h>

namespace {

using namespace gpuhook;

TEST(NcclTypes, OpCodesAreTheSchemaValues) {
  EXPECT_EQ(kNcclOpUnknown, v1::NCCL_OP_UNKNOWN);
  EXPECT_EQ(kNcclAllReduce, v1::NCCL_ALL_REDUCE);
  EXPECT_EQ(kNcclBroadcast, v1::NCCL_BROADCAST);
  EXPECT_EQ(kNcclReduce, v1::NCCL_REDUCE);
  EXPECT_EQ(kNcclAllGather, v1::NCCL_ALL_GATHER);
  EXPECT_EQ(kNcclReduceScatter, v1::NCCL_REDUCE_SCATTER);
  EXPECT_EQ(kNcclSend, v1::NCCL_SEND);
  EXPECT_EQ(kNcclRecv, v1::NCCL_RECV);
  EXPECT_EQ(kNcclAllToAll, v1::NCCL_ALL_TO_ALL);
  EXPECT_EQ(kNcclGather, v1::NCCL_GATHER);
  EXPECT_EQ(kNcclScatter, v1::NCCL_SCATTER);
}

TEST(NcclTypes, EveryRankCallingMakesACollectiveSendAndRecvArePointToPoint) {
  for (uint32_t op : {v1::NCCL_ALL_REDUCE, v1::NCCL_BROADCAST, v1::NCCL_REDUCE, v1::NCCL_ALL_GATHER,
                      v1::NCCL_REDUCE_SCATTER, v1::NCCL_ALL_TO_ALL, v1::NCCL_GATHER, v1::NCCL_SCATTER}) {
    EXPECT_TRUE(nccl_op_is_collective(op)) << op;
    EXPECT_FALSE(nccl_op_is_point_to_point(op)) << op;
  }
  for (uint32_t op : {v1::NCCL_SEND, v1::NCCL_RECV}) {
    EXPECT_FALSE(nccl_op_is_collective(op)) << op;
    EXPECT_TRUE(nccl_op_is_point_to_point(op)) << op;
  }
  for (uint32_t op : {v1::NCCL_OP_UNKNOWN, v1::NCCL_GROUP_START, v1::NCCL_GROUP_END, v1::NCCL_COMM_INIT}) {
    EXPECT_FALSE(nccl_op_is_collective(op)) << op;
    EXPECT_FALSE(nccl_op_is_point_to_point(op)) << op;
  }
}

TEST(NcclTypes, DatatypeBytesFollowNcclAndUnknownIsZero) {
  static_assert(nccl_datatype_bytes(kNcclFloat32) == 4);  // usable at compile time
  EXPECT_EQ(nccl_datatype_bytes(kNcclInt8), 1u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclUint8), 1u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclFloat8e4m3), 1u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclFloat8e5m2), 1u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclFloat16), 2u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclBfloat16), 2u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclInt32), 4u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclUint32), 4u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclInt64), 8u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclUint64), 8u);
  EXPECT_EQ(nccl_datatype_bytes(kNcclFloat64), 8u);
  EXPECT_EQ(nccl_datatype_bytes(12), 0u);
  EXPECT_EQ(nccl_datatype_bytes(-1), 0u);
}

}  // namespace
