// The loop nccl-tests' all_reduce_perf and sendrecv_perf run, as one process per rank driving
// G devices each (nccl-tests `-g G`; with `--ranks R`, R such processes, as `mpirun -np R`):
// every iteration is one NCCL group in which each of the process's devices issues the same
// operation of the same size, then every stream is synchronised. The work is identical on
// every device, so nothing the CLI says may call one device or rank busier, and a sendrecv
// ring (each rank sends to the next and receives from the previous at once) is an exchange,
// not a pipeline.
//   nccl_perf_app --op all_reduce|sendrecv [--gpus G] [--ranks R] [--iters N] [--count C]
// Results are checked here; stdout is one line per process, the same with or without the hook.
// Built against the simulator's libraries; nothing in it is simulator-only.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_rank = 0;

void die(const char* what, int line, const char* detail) {
  std::fprintf(stderr, "nccl_perf_app process %d line %d: %s: %s\n", g_rank, line, what, detail);
  std::exit(1);
}

#define NCCL_DO(call)                                                         \
  do {                                                                        \
    ncclResult_t rc_ = (call);                                                \
    if (rc_ != ncclSuccess) die(#call, __LINE__, ncclGetErrorString(rc_));    \
  } while (0)
#define CUDA_DO(call)                                                         \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) die(#call, __LINE__, cudaGetErrorString(e_));      \
  } while (0)

struct Options {
  std::string op = "all_reduce";
  int gpus = 1, ranks = 1, iters = 20;
  size_t count = 1 << 16;
};

struct Slot {  // one device of this process: one communicator rank
  int device = 0;
  int rank = 0;  // in the job's communicator
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float* send = nullptr;
  float* recv = nullptr;
};

int run_process(const Options& o, int process, const ncclUniqueId* id) {
  g_rank = process;
  const int nranks = o.ranks * o.gpus;
  std::vector<Slot> slots(static_cast<size_t>(o.gpus));
  if (id == nullptr) {
    // One process, all devices: ncclCommInitAll, as nccl-tests does without MPI.
    std::vector<ncclComm_t> comms(slots.size());
    std::vector<int> devices(slots.size());
    for (int g = 0; g < o.gpus; ++g) devices[static_cast<size_t>(g)] = g;
    NCCL_DO(ncclCommInitAll(comms.data(), o.gpus, devices.data()));
    for (int g = 0; g < o.gpus; ++g) slots[static_cast<size_t>(g)] = {g, g, comms[static_cast<size_t>(g)]};
  } else {
    NCCL_DO(ncclGroupStart());
    for (int g = 0; g < o.gpus; ++g) {
      Slot& s = slots[static_cast<size_t>(g)];
      s.device = g;
      s.rank = process * o.gpus + g;
      CUDA_DO(cudaSetDevice(g));
      NCCL_DO(ncclCommInitRank(&s.comm, nranks, *id, s.rank));
    }
    NCCL_DO(ncclGroupEnd());
  }
  std::vector<float> host(o.count);
  for (Slot& s : slots) {
    CUDA_DO(cudaSetDevice(s.device));
    CUDA_DO(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
    CUDA_DO(cudaMalloc(reinterpret_cast<void**>(&s.send), o.count * sizeof(float)));
    CUDA_DO(cudaMalloc(reinterpret_cast<void**>(&s.recv), o.count * sizeof(float)));
    for (float& x : host) x = static_cast<float>(s.rank + 1);
    CUDA_DO(cudaMemcpy(s.send, host.data(), o.count * sizeof(float), cudaMemcpyHostToDevice));
  }
  for (int it = 0; it < o.iters; ++it) {
    NCCL_DO(ncclGroupStart());
    for (Slot& s : slots) {
      if (o.op == "all_reduce") {
        NCCL_DO(ncclAllReduce(s.send, s.recv, o.count, ncclFloat, ncclSum, s.comm, s.stream));
      } else {
        // sendrecv_perf: to the next rank, from the previous one, in one group.
        NCCL_DO(ncclSend(s.send, o.count, ncclFloat, (s.rank + 1) % nranks, s.comm, s.stream));
        NCCL_DO(ncclRecv(s.recv, o.count, ncclFloat, (s.rank + nranks - 1) % nranks, s.comm, s.stream));
      }
    }
    NCCL_DO(ncclGroupEnd());
    for (Slot& s : slots) {
      CUDA_DO(cudaSetDevice(s.device));
      CUDA_DO(cudaStreamSynchronize(s.stream));
    }
  }
  for (Slot& s : slots) {
    CUDA_DO(cudaSetDevice(s.device));
    CUDA_DO(cudaMemcpy(host.data(), s.recv, o.count * sizeof(float), cudaMemcpyDeviceToHost));
    // all-reduce: 1 + 2 + ... + nranks; sendrecv: the previous rank's value.
    const float want = o.op == "all_reduce" ? static_cast<float>(nranks * (nranks + 1) / 2)
                                            : static_cast<float>((s.rank + nranks - 1) % nranks + 1);
    if (host[o.count / 2] != want) die(o.op.c_str(), __LINE__, "wrong value received");
    NCCL_DO(ncclCommDestroy(s.comm));
    CUDA_DO(cudaFree(s.send));
    CUDA_DO(cudaFree(s.recv));
    CUDA_DO(cudaStreamDestroy(s.stream));
  }
  std::printf("process %d: %s over %d ranks, %d iterations: ok\n", process, o.op.c_str(), nranks, o.iters);
  return 0;
}

std::string hex(const void* data, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char b = static_cast<const unsigned char*>(data)[i];
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

void unhex(const std::string& s, void* out, size_t n) {
  if (s.size() != 2 * n) die("bad NCCL_PERF_APP_ID", __LINE__, s.c_str());
  for (size_t i = 0; i < n; ++i)
    static_cast<unsigned char*>(out)[i] = static_cast<unsigned char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--op") o.op = value;
    else if (flag == "--gpus") o.gpus = std::atoi(value.c_str());
    else if (flag == "--ranks") o.ranks = std::atoi(value.c_str());
    else if (flag == "--iters") o.iters = std::atoi(value.c_str());
    else if (flag == "--count") o.count = std::strtoull(value.c_str(), nullptr, 10);
    else die("unknown flag", __LINE__, flag.c_str());
  }
  if ((o.op != "all_reduce" && o.op != "sendrecv") || o.gpus < 1 || o.ranks < 1 || o.iters < 1 || o.count < 1)
    die("usage", __LINE__, "--op all_reduce|sendrecv [--gpus G] [--ranks R] [--iters N] [--count C]");
  if (o.ranks == 1) return run_process(o, 0, nullptr);
  if (const char* r = std::getenv("RANK")) {
    const char* id_hex = std::getenv("NCCL_PERF_APP_ID");
    if (id_hex == nullptr) die("RANK without NCCL_PERF_APP_ID", __LINE__, r);
    ncclUniqueId id;
    unhex(id_hex, &id, sizeof id);
    return run_process(o, std::atoi(r), &id);
  }
  ncclUniqueId id;
  NCCL_DO(ncclGetUniqueId(&id));
  const std::string id_hex = hex(&id, sizeof id);
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) die("fork", __LINE__, std::strerror(errno));
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(o.ranks).c_str(), 1);
      setenv("NCCL_PERF_APP_ID", id_hex.c_str(), 1);
      execv("/proc/self/exe", argv);
      _exit(127);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed) std::fprintf(stderr, "nccl_perf_app: %d of %d processes failed\n", failed, o.ranks);
  return failed ? 1 : 0;
}
