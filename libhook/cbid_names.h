// Names of CUDA runtime and driver callback ids, generated at configure time from the
// toolkit's cupti_runtime_cbid.h / cupti_driver_cbid.h. Used when the loaded CUPTI has no
// cuptiGetCallbackName (the test simulator) and to classify ids into GPUHOOK_API groups.
#pragma once

#include <cupti.h>

#include <cstdint>

namespace gpuhook::hook {

// "cudaLaunchKernel_v7000" for (RUNTIME, 211); nullptr when unknown.
const char* builtin_callback_name(CUpti_CallbackDomain domain, uint32_t cbid);

}  // namespace gpuhook::hook
