// Which GPUHOOK_API group a CUDA runtime or driver function belongs to, by its name, so the
// per-cbid enabling follows new CUDA versions without a hand-kept id list.
#pragma once

#include <cstdint>

namespace gpuhook::hook {

// One of the ApiGroup bits of config.h (kApiOther when none fits).
uint32_t api_group_of(const char* function_name);

}  // namespace gpuhook::hook
