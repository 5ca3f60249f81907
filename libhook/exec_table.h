// Every exec-family entry point the hook wraps, in one table. Each row:
//   X(function, (parameters), (arguments))
// The wrappers in exec_hooks.cpp are generated from these rows; the variadic execl, execlp and
// execle are built on them by hand. glibc's own execl* and execvp reach execve through internal
// aliases, never through these symbols, so each entry point is wrapped itself.
//
// Not here: posix_spawn* and system()/popen(). The calling process goes on (and records on);
// the child execs inside libc, where an interposed symbol is not called, and is a fresh image
// that loads the hook again and writes its own file. vfork()+exec: the wrapper sees the child
// by its pid and touches nothing (entry.cpp, flush_before_exec).
#pragma once

#define GPUHOOK_EXEC_TABLE(X)                                                                    \
  X(execve, (const char* path, char* const argv[], char* const envp[]), (path, argv, envp))      \
  X(execv, (const char* path, char* const argv[]), (path, argv))                                 \
  X(execvp, (const char* file, char* const argv[]), (file, argv))                                \
  X(execvpe, (const char* file, char* const argv[], char* const envp[]), (file, argv, envp))    \
  X(fexecve, (int fd, char* const argv[], char* const envp[]), (fd, argv, envp))                 \
  X(execveat, (int dirfd, const char* path, char* const argv[], char* const envp[], int flags), \
    (dirfd, path, argv, envp, flags))
