// The initial value of a __device__ or __constant__ variable, read from the device image nvcc
// embeds in the program: the host shadow that __cudaRegisterVar names holds zeros, and the
// initialiser lives only in the image's ELF (.nv.global.init, .nv.constant3).
#pragma once

#include <cstddef>
#include <vector>

namespace gpuhook::sim {

// The variable's first `bytes` bytes as the image initialises them; empty when the image does
// not say (compressed, relocatable device code, PTX only, or no initialiser: it starts zeroed).
// `fat_cubin` is what __cudaRegisterFatBinary was given.
std::vector<unsigned char> variable_initialiser(const void* fat_cubin, const char* device_name, size_t bytes);

}  // namespace gpuhook::sim
