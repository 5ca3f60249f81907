/* A CUDA program whose runtime the hook cannot see: it loads the (simulated) runtime under
 * another soname with RTLD_LOCAL, so neither dlsym(RTLD_DEFAULT, "cuda...") nor
 * dlopen("libcudart.so.13", RTLD_NOLOAD) finds it, as with nvcc's default static cudart.
 *   hidden_runtime_app RUNTIME.so */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

typedef int (*Malloc)(void**, size_t);
typedef int (*Memset)(void*, int, size_t);
typedef int (*Sync)(void);
typedef int (*Free)(void*);

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: hidden_runtime_app RUNTIME.so\n");
    return 2;
  }
  void* rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (rt == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 1;
  }
  Malloc cuda_malloc = (Malloc)dlsym(rt, "cudaMalloc");
  Memset cuda_memset = (Memset)dlsym(rt, "cudaMemset");
  Sync cuda_sync = (Sync)dlsym(rt, "cudaDeviceSynchronize");
  Free cuda_free = (Free)dlsym(rt, "cudaFree");
  if (!cuda_malloc || !cuda_memset || !cuda_sync || !cuda_free) return 1;
  void* p = NULL;
  int rc = cuda_malloc(&p, 1 << 20);
  for (int i = 0; rc == 0 && i < 4; ++i) rc = cuda_memset(p, i, 1 << 20);
  if (rc == 0) rc = cuda_sync();
  if (rc == 0) rc = cuda_free(p);
  printf("hidden runtime: %s\n", rc == 0 ? "OK" : "failed");
  return rc == 0 ? 0 : 1;
}
