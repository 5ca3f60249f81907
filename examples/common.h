// Shared by the example programs: argument parsing, CUDA error checks, and the hook that lets
// the gpuhook CPU simulator compute each kernel's result (see README.md, "Host twins").
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <utility>

// Every CUDA call is checked: a failure names the call, the file and line, then exits 1.
#define CHECK_CUDA(call)                                                                  \
  do {                                                                                    \
    const cudaError_t check_err_ = (call);                                                \
    if (check_err_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,           \
                   cudaGetErrorString(check_err_));                                       \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// After a <<<>>> launch, which returns nothing: picks up a launch error.
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

namespace examples {

struct Options {
  int iterations;
  long long size;
  bool fixed;  // run the fixed twin of the pattern
};

inline Options parse_options(int argc, char** argv, int default_iterations, long long default_size,
                             const char* what) {
  Options o{default_iterations, default_size, false};
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--iterations") == 0 && has_value) {
      o.iterations = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--size") == 0 && has_value) {
      o.size = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--fixed") == 0) {
      o.fixed = true;
    } else {
      std::fprintf(stderr, "%s\nusage: %s [--iterations N] [--size N] [--fixed]\n", what, argv[0]);
      std::exit(2);
    }
  }
  if (o.iterations < 1 || o.size < 1) {
    std::fprintf(stderr, "%s: --iterations and --size must be positive\n", argv[0]);
    std::exit(2);
  }
  return o;
}

// The options of the programs that take more than parse_options' three: "--name N" integers
// and bare "--name" flags. An unknown option, or a name without its value, calls usage (which
// exits 2).
struct IntOption {
  const char* name;
  int* value;
};
struct FlagOption {
  const char* name;
  bool* value;
};

inline void parse_flags(int argc, char** argv, std::initializer_list<IntOption> ints,
                        std::initializer_list<FlagOption> flags, void (*usage)(const char* argv0)) {
  for (int i = 1; i < argc; ++i) {
    bool known = false;
    for (const IntOption& o : ints) {
      if (std::strcmp(argv[i], o.name) != 0) continue;
      if (i + 1 >= argc) usage(argv[0]);
      *o.value = std::atoi(argv[++i]);
      known = true;
      break;
    }
    for (const FlagOption& f : flags) {
      if (known || std::strcmp(argv[i], f.name) != 0) continue;
      *f.value = true;
      known = true;
    }
    if (!known) usage(argv[0]);
  }
}

// Exits 1 with a message when a computed value is wrong, so a test fails on a wrong result.
inline void expect_close(const char* what, double got, double want, double tolerance = 1e-6) {
  const double scale = std::abs(want) > 1.0 ? std::abs(want) : 1.0;
  if (!(std::abs(got - want) <= tolerance * scale)) {
    std::fprintf(stderr, "WRONG RESULT: %s = %.9g, expected %.9g\n", what, got, want);
    std::exit(1);
  }
}

// Calls body(global_thread_index, total_threads) for every thread of a 1-D launch, in
// order: the CPU rendering of blockIdx.x * blockDim.x + threadIdx.x.
template <class Body>
void for_each_thread(dim3 grid, dim3 block, Body body) {
  const unsigned long long total = 1ull * grid.x * block.x;
  for (unsigned long long t = 0; t < total; ++t) body(t, total);
}

}  // namespace examples

// Host twins. The simulator cannot run device code, so each kernel has a CPU function that
// computes the same thing from the same arguments, grid and block. Only the simulator's
// libcudart defines this symbol; against a real libcudart the weak reference is null, nothing
// is registered and the real kernel runs on the GPU.
extern "C" void gpuhook_sim_register_host_kernel(const void* stub,
                                                 void (*host)(void** args, dim3 grid, dim3 block),
                                                 const size_t* arg_sizes, int arg_count)
    __attribute__((weak));

namespace examples {

template <auto Host, class... A, size_t... I>
void call_twin(void** args, dim3 grid, dim3 block, std::index_sequence<I...>) {
  Host(grid, block, *static_cast<std::remove_reference_t<A>*>(args[I])...);
}

template <auto Host, class... A>
void twin_adapter(void** args, dim3 grid, dim3 block) {
  call_twin<Host, A...>(args, grid, block, std::index_sequence_for<A...>{});
}

// Host must have the kernel's parameters after (dim3 grid, dim3 block).
template <auto Host, class... A>
bool register_twin(void (*kernel)(A...)) {
  if (gpuhook_sim_register_host_kernel == nullptr) return false;
  static const size_t sizes[] = {sizeof(A)..., 0};
  gpuhook_sim_register_host_kernel(reinterpret_cast<const void*>(kernel), &twin_adapter<Host, A...>,
                                   sizes, static_cast<int>(sizeof...(A)));
  return true;
}

}  // namespace examples

#define HOST_TWIN(kernel, host) \
  [[maybe_unused]] static const bool kernel##_has_twin = examples::register_twin<host>(kernel)
