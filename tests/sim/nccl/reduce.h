// Element-wise reductions for every ncclDataType_t the collectives accept: the simulated
// collectives really compute (sum sums), so examples can check their results.
#pragma once

#include <nccl.h>

#include <cstddef>

namespace simnccl {

size_t dtype_bytes(ncclDataType_t dtype);  // 0 for an unknown type
const char* dtype_suffix(ncclDataType_t dtype);  // as in NCCL kernel names: "f32", "bf16", ...
bool redop_valid(ncclRedOp_t op);

// acc[i] = acc[i] (op) in[i] for n elements. Returns false for an unsupported combination
// (fp8 reductions are not simulated).
bool reduce_into(void* acc, const void* in, size_t n, ncclDataType_t dtype, ncclRedOp_t op);
// data[i] *= *scalar (a value of type dtype) for n elements: a PreMulSum operator's local step.
bool scale_by(void* data, size_t n, ncclDataType_t dtype, const void* scalar);
// ncclAvg: divide the summed values by nranks.
void finish_average(void* acc, size_t n, ncclDataType_t dtype, int nranks);

}  // namespace simnccl
