// The work of one call, built the same way for a stream and for a graph node: validation,
// the cost model and the copied arguments (rt_launch.cpp, rt_memory.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include "engine.h"

namespace gpuhook::sim {

cudaError_t build_kernel_op(KernelInfo* k, dim3 grid, dim3 block, void** args, size_t shared_bytes, Op& op);
// *pageable: the copy goes through a staging buffer (the host waits for it).
cudaError_t build_copy_op(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, Op& op, bool* pageable);
cudaError_t build_set_op(void* dst, int value, size_t bytes, Op& op);

class ApiScope;
// A copy issued by the call `api` on `stream` (the legacy stream for nullptr): checked, costed,
// enqueued or captured; a synchronous one (!async), and an async one with pageable memory
// outside a capture, returns when the data has arrived (rt_memory.cpp).
cudaError_t copy(ApiScope& api, void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream,
                 bool async);

}  // namespace gpuhook::sim
