// Every NCCL entry point the hook interposes, in one table. Each row:
//   X(function, op, (parameters), (arguments), count, datatype, reduce_op, root_or_peer, comm, stream)
// count/datatype/... are expressions over the parameters; -1 means "none". The wrappers in
// nccl_hooks.cpp are generated from these rows.
#pragma once

#define GPUHOOK_NCCL_NONE (-1)

#define GPUHOOK_NCCL_TABLE(X)                                                                              \
  X(ncclAllReduce, NCCL_ALL_REDUCE,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,          \
     ncclComm_t comm, cudaStream_t stream),                                                                \
    (sendbuff, recvbuff, count, datatype, op, comm, stream), count, datatype, op, GPUHOOK_NCCL_NONE, comm, \
    stream)                                                                                                \
  X(ncclBroadcast, NCCL_BROADCAST,                                                                         \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,                \
     ncclComm_t comm, cudaStream_t stream),                                                                \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), count, datatype, GPUHOOK_NCCL_NONE, root,   \
    comm, stream)                                                                                          \
  /* The deprecated in-place broadcast. NCCL implements it as a call of ncclBroadcast        */ \
  /* through the PLT (src/collectives.cc): the re-entry guard keeps that inner call from     */ \
  /* becoming a second record and taking a second sequence number.                           */ \
  X(ncclBcast, NCCL_BROADCAST,                                                                             \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream),   \
    (buff, count, datatype, root, comm, stream), count, datatype, GPUHOOK_NCCL_NONE, root, comm, stream)   \
  X(ncclReduce, NCCL_REDUCE,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,          \
     int root, ncclComm_t comm, cudaStream_t stream),                                                      \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream), count, datatype, op, root, comm, stream) \
  X(ncclAllGather, NCCL_ALL_GATHER,                                                                        \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,     \
     cudaStream_t stream),                                                                                 \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream), sendcount, datatype, GPUHOOK_NCCL_NONE,       \
    GPUHOOK_NCCL_NONE, comm, stream)                                                                       \
  X(ncclReduceScatter, NCCL_REDUCE_SCATTER,                                                                \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,      \
     ncclComm_t comm, cudaStream_t stream),                                                                \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), recvcount, datatype, op,                  \
    GPUHOOK_NCCL_NONE, comm, stream)                                                                       \
  X(ncclSend, NCCL_SEND,                                                                                   \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,               \
     cudaStream_t stream),                                                                                 \
    (sendbuff, count, datatype, peer, comm, stream), count, datatype, GPUHOOK_NCCL_NONE, peer, comm, stream) \
  X(ncclRecv, NCCL_RECV,                                                                                   \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), \
    (recvbuff, count, datatype, peer, comm, stream), count, datatype, GPUHOOK_NCCL_NONE, peer, comm, stream) \
  X(ncclAlltoAll, NCCL_ALL_TO_ALL,                                                                         \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,         \
     cudaStream_t stream),                                                                                 \
    (sendbuff, recvbuff, count, datatype, comm, stream), count, datatype, GPUHOOK_NCCL_NONE,               \
    GPUHOOK_NCCL_NONE, comm, stream)                                                                       \
  X(ncclGather, NCCL_GATHER,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,                \
     ncclComm_t comm, cudaStream_t stream),                                                                \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), count, datatype, GPUHOOK_NCCL_NONE, root,   \
    comm, stream)                                                                                          \
  X(ncclScatter, NCCL_SCATTER,                                                                             \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,                \
     ncclComm_t comm, cudaStream_t stream),                                                                \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), count, datatype, GPUHOOK_NCCL_NONE, root,   \
    comm, stream)                                                                                          \
  X(ncclGroupStart, NCCL_GROUP_START, (), (), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE,  \
    nullptr, nullptr)                                                                                      \
  X(ncclGroupEnd, NCCL_GROUP_END, (), (), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE,      \
    nullptr, nullptr)                                                                                      \
  X(ncclCommInitRank, NCCL_COMM_INIT, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank),     \
    (comm, nranks, commId, rank), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE,              \
    after_init_rank(rc, comm, commId, rank, nranks), nullptr)                                              \
  X(ncclCommInitRankConfig, NCCL_COMM_INIT,                                                                \
    (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config),                  \
    (comm, nranks, commId, rank, config), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE,      \
    after_init_rank(rc, comm, commId, rank, nranks), nullptr)                                              \
  X(ncclCommInitAll, NCCL_COMM_INIT, (ncclComm_t * comm, int ndev, const int* devlist),                    \
    (comm, ndev, devlist), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE,                     \
    after_init_all(rc, comm, ndev), nullptr)                                                               \
  X(ncclCommInitRankScalable, NCCL_COMM_INIT,                                                              \
    (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds, ncclConfig_t* config),   \
    (newcomm, nranks, myrank, nId, commIds, config), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE,              \
    GPUHOOK_NCCL_NONE, after_init_scalable(rc, newcomm, nranks, myrank, nId, commIds), nullptr)            \
  X(ncclCommShrink, NCCL_COMM_INIT,                                                                        \
    (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,                   \
     ncclConfig_t* config, int shrinkFlags),                                                               \
    (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags), 0, GPUHOOK_NCCL_NONE,       \
    GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, after_shrink(rc, comm, excludeRanksList, excludeRanksCount, newcomm), \
    nullptr)                                                                                               \
  X(ncclCommSplit, NCCL_COMM_INIT,                                                                         \
    (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config),                      \
    (comm, color, key, newcomm, config), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE,       \
    after_split(rc, comm, color, newcomm), nullptr)                                                        \
  X(ncclCommFinalize, NCCL_COMM_DESTROY, (ncclComm_t comm), (comm), 0, GPUHOOK_NCCL_NONE,                  \
    GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, comm, nullptr)                                                   \
  X(ncclCommDestroy, NCCL_COMM_DESTROY, (ncclComm_t comm), (comm), 0, GPUHOOK_NCCL_NONE,                   \
    GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, forget_comm(comm), nullptr)                                      \
  X(ncclCommAbort, NCCL_COMM_DESTROY, (ncclComm_t comm), (comm), 0, GPUHOOK_NCCL_NONE, GPUHOOK_NCCL_NONE, \
    GPUHOOK_NCCL_NONE, forget_comm(comm), nullptr)
