/* Loads a library with dlopen(RTLD_LOCAL) and runs its work, as a Python import loads PyTorch
 * (and with it libcudart and libnccl, outside the global scope).
 *   rtld_local_app LIBRARY.so */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: rtld_local_app LIBRARY.so\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 2;
  }
  int (*work)(void) = (int (*)(void))dlsym(lib, "rtld_local_work");
  if (work == NULL) return 2;
  const int rc = work();
  printf("rtld_local: %s\n", rc == 0 ? "OK" : "failed");
  return rc;
}
