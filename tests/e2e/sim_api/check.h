// The sim_api programs' one check: a failed call prints its name and the error's name, exit 1.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>

#define CHECK_OK(call)                                                                         \
  do {                                                                                         \
    const cudaError_t check_err_ = (call);                                                     \
    if (check_err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                \
                   cudaGetErrorName(check_err_));                                              \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

#define EXPECT_TRUE(cond)                                                                      \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                 \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
