// exec interposition: the wrappers are generated from exec_table.h. Each one writes out what
// this image recorded (flush_before_exec, bounded by GPUHOOK_EXIT_MS) and calls the real
// function, found with dlsym(RTLD_NEXT). errno on entry is what the real call sees; on failure
// it is the real call's, and recording goes on (exec lost the last flush
// period's records). Runs in fork children before exec: no allocation here.
#include <alloca.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstddef>

#include "exec_table.h"
#include "interpose.h"
#include "visibility.h"

namespace gpuhook::hook {

void flush_before_exec();  // entry.cpp

namespace {

void flush_keeping_errno() {
  const int saved = errno;
  flush_before_exec();
  errno = saved;
}

}  // namespace

#define GPUHOOK_EXEC_REAL(name, ...) std::atomic<void*> g_real_##name{nullptr};
GPUHOOK_EXEC_TABLE(GPUHOOK_EXEC_REAL)
#undef GPUHOOK_EXEC_REAL

// Resolved at start: a fork child about to exec should not be the first to call dlsym.
int resolve_exec() {
  int found = 0;
#define GPUHOOK_EXEC_RESOLVE(name, ...) found += resolve_early(g_real_##name, #name);
  GPUHOOK_EXEC_TABLE(GPUHOOK_EXEC_RESOLVE)
#undef GPUHOOK_EXEC_RESOLVE
  return found;
}

}  // namespace gpuhook::hook

using namespace gpuhook::hook;

// noexcept: glibc declares them __THROW, which a definition must repeat in C++.
#define GPUHOOK_EXEC_WRAPPER(name, params, args)              \
  extern "C" GPUHOOK_EXPORT int name params noexcept {        \
    using Fn = int(*) params;                                 \
    auto real = resolve<Fn>(g_real_##name, #name);            \
    if (real == nullptr) {                                    \
      errno = ENOSYS; /* an older libc without this call */   \
      return -1;                                              \
    }                                                         \
    flush_keeping_errno();                                    \
    return real args;                                         \
  }
GPUHOOK_EXEC_TABLE(GPUHOOK_EXEC_WRAPPER)
#undef GPUHOOK_EXEC_WRAPPER

// The list forms, as glibc builds them (posix/execl.c): the argument vector on the stack, then
// the vector form above, which flushes.
namespace {

// The arguments after the first, up to and including the null pointer that ends them.
size_t count_args(va_list* list) {
  va_list copy;
  va_copy(copy, *list);
  size_t argc = 1;
  while (va_arg(copy, const char*) != nullptr) ++argc;
  va_end(copy);
  return argc;
}

void fill_args(const char* first, va_list* list, char** argv, size_t argc) {
  argv[0] = const_cast<char*>(first);
  for (size_t i = 1; i <= argc; ++i) argv[i] = va_arg(*list, char*);  // argv[argc]: the null
}

}  // namespace

extern "C" GPUHOOK_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
  va_list list;
  va_start(list, arg);
  const size_t argc = count_args(&list);
  auto** argv = static_cast<char**>(alloca((argc + 1) * sizeof(char*)));
  fill_args(arg, &list, argv, argc);
  va_end(list);
  return execv(path, argv);
}

extern "C" GPUHOOK_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
  va_list list;
  va_start(list, arg);
  const size_t argc = count_args(&list);
  auto** argv = static_cast<char**>(alloca((argc + 1) * sizeof(char*)));
  fill_args(arg, &list, argv, argc);
  va_end(list);
  return execvp(file, argv);
}

extern "C" GPUHOOK_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
  va_list list;
  va_start(list, arg);
  const size_t argc = count_args(&list);
  auto** argv = static_cast<char**>(alloca((argc + 1) * sizeof(char*)));
  fill_args(arg, &list, argv, argc);
  char** envp = va_arg(list, char**);  // after the null pointer
  va_end(list);
  return execve(path, argv, envp);
}
