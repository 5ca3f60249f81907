// The NCCL twin of CHECK_CUDA (common.h), for the examples that link NCCL.
#pragma once

#include <nccl.h>

#include <cstdio>
#include <cstdlib>

// Every NCCL call is checked: a failure names the call, the file and line, then exits 1.
#define CHECK_NCCL(call)                                                                           \
  do {                                                                                             \
    const ncclResult_t check_res_ = (call);                                                        \
    if (check_res_ != ncclSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                    \
                   ncclGetErrorString(check_res_));                                                \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)
