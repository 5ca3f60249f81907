// Kernels the program registered (nvcc's __cudaRegisterFunction) and the host twins examples
// register through gpuhook_sim_register_host_kernel(), keyed by the host stub's address.
#pragma once

#include "engine.h"

namespace gpuhook::sim {

KernelInfo* find_kernel(const void* stub);  // nullptr when unknown
KernelInfo* kernel_entry(const void* stub);  // creates it when unknown
KernelInfo* kernel_of_handle(const void* handle);  // a cudaKernel_t (__cudaGetKernel), nullptr when unknown
int registers_for(const KernelInfo& k);

}  // namespace gpuhook::sim
