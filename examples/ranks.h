// Shared by the examples whose ranks are processes (allreduce_train, pipeline_parallel): who
// this process is, the ncclUniqueId exchange, and starting the ranks when no launcher did.
//
// A rank started by a launcher reads torchrun-style RANK / WORLD_SIZE / LOCAL_RANK, or
// OpenMPI's OMPI_COMM_WORLD_*; ranks exchange the ncclUniqueId through a file that rank 0
// writes (one host, or a shared file system). Without RANK the program starts its ranks
// itself: fresh processes through exec, so a preloaded profiler writes one file per rank.
#pragma once

#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nccl_check.h"

namespace examples::ranks {

inline int env_int(const char* name, const char* fallback_name, int fallback) {
  const char* s = std::getenv(name);
  if (!s && fallback_name) s = std::getenv(fallback_name);
  return s ? std::atoi(s) : fallback;
}

struct Identity {
  int rank = -1;  // -1: no launcher started this process
  int world = 0;
  int local_rank = 0;
};

inline Identity from_environment(int default_world) {
  Identity id;
  id.rank = env_int("RANK", "OMPI_COMM_WORLD_RANK", -1);
  id.world = env_int("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", default_world);
  id.local_rank = env_int("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", id.rank);
  return id;
}

// `id_env` names the file when set; else /tmp/<program>-<MASTER_PORT>.id.
inline std::string id_file_path(const char* program, const char* id_env) {
  if (const char* f = std::getenv(id_env)) return f;
  const char* port = std::getenv("MASTER_PORT");
  return std::string("/tmp/") + program + "-" + (port ? port : "29500") + ".id";
}

// Rank 0 makes the id and writes it (to a temporary name, then rename: readers never see half
// of it); the others wait for it, at most 60 s. Exits 1 when it cannot.
inline ncclUniqueId exchange_id(int rank, const std::string& path, const char* program) {
  ncclUniqueId id;
  if (rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
      std::fprintf(stderr, "%s: cannot write %s\n", program, path.c_str());
      std::exit(1);
    }
    return id;
  }
  for (int tries = 0; tries < 60000; ++tries) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const size_t got = std::fread(&id, sizeof id, 1, f);
      std::fclose(f);
      if (got == 1) return id;
    }
    usleep(1000);
  }
  std::fprintf(stderr, "%s: no NCCL id in %s after 60 s\n", program, path.c_str());
  std::exit(1);
}

// Starts `ranks` copies of this program with RANK, LOCAL_RANK, WORLD_SIZE and `id_env` set
// (the id file in a fresh directory) and waits for them. Returns how many failed, -1 when
// they could not be started.
inline int launch(const char* program, int ranks, char** argv, const char* id_env) {
  std::string dir = std::string("/tmp/") + program + ".XXXXXX";
  if (!mkdtemp(dir.data())) {
    std::fprintf(stderr, "%s: mkdtemp: cannot make a directory for the NCCL id\n", program);
    return -1;
  }
  const std::string id_path = dir + "/nccl.id";
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    if (pid == 0) {
      const std::string rank = std::to_string(r), world = std::to_string(ranks);
      setenv("RANK", rank.c_str(), 1);
      setenv("LOCAL_RANK", rank.c_str(), 1);
      setenv("WORLD_SIZE", world.c_str(), 1);
      setenv(id_env, id_path.c_str(), 1);
      execv("/proc/self/exe", argv);
      std::perror("exec");
      _exit(127);
    }
    pids.push_back(pid);
  }
  int failed = ranks - static_cast<int>(pids.size());
  for (pid_t pid : pids) {
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  std::remove(id_path.c_str());
  rmdir(dir.c_str());
  if (failed) std::fprintf(stderr, "%s: %d of %d ranks failed\n", program, failed, ranks);
  return failed;
}

}  // namespace examples::ranks
