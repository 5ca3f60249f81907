// The NCCL calls the hook must understand beyond a plain all-reduce, as one job of real
// processes (each writes its own capture under the hook):
//   - a non-blocking world communicator (config.blocking = 0: NCCL returns ncclInProgress
//     with *comm set, the app polls ncclCommGetAsyncError);
//   - two all-reduces with uneven point-to-point work between them: ranks 0 and 1 trade
//     P2P_ROUNDS grouped send/recv pairs, the other ranks none;
//   - ncclBcast (the deprecated in-place broadcast), ncclCommInitRankScalable (two ids),
//     ncclCommShrink (the last rank excluded, and it does not call it), and a non-blocking
//     ncclCommSplit, each followed by an all-reduce on the new communicator.
//   nccl_api_app --ranks N [--part all|sequence|bcast]
// starts N ranks itself (fork + exec, so each is a fresh process). --part sequence keeps to a
// blocking world communicator and the all-reduces around the uneven send/recv; --part bcast
// to a blocking world communicator and ncclBcast: each checks one thing with nothing else in
// the way.
// Results are checked here; each rank prints one line, so stdout is the same with or
// without the hook. Built against the simulator's libraries; nothing in it is simulator-only.
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

constexpr int kP2pRounds = 3;
constexpr size_t kCount = 1024;

int g_rank = -1;

void die(const char* what, int line, const char* detail) {
  std::fprintf(stderr, "nccl_api_app rank %d line %d: %s: %s\n", g_rank, line, what, detail);
  std::exit(1);
}

// A non-blocking communicator may answer ncclInProgress to any call; the app then waits
// until ncclCommGetAsyncError says the operation is done (NCCL's documented protocol).
ncclResult_t settle(ncclResult_t rc, ncclComm_t comm) {
  while (rc == ncclInProgress && comm != nullptr) {
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    rc = state;
    if (rc == ncclInProgress) usleep(100);
  }
  return rc;
}

// `comm` is read after the call returns: a creating call sets it.
#define NCCL_DO(call, comm)                                                   \
  do {                                                                        \
    ncclResult_t rc_ = (call);                                                \
    rc_ = settle(rc_, (comm));                                                \
    if (rc_ != ncclSuccess) die(#call, __LINE__, ncclGetErrorString(rc_));    \
  } while (0)
#define CUDA_DO(call)                                                         \
  do {                                                                        \
    cudaError_t e_ = (call);                                                  \
    if (e_ != cudaSuccess) die(#call, __LINE__, cudaGetErrorString(e_));      \
  } while (0)

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
  if (s.size() != 2 * n) die("bad NCCL_API_APP_IDS", __LINE__, s.c_str());
  for (size_t i = 0; i < n; ++i)
    static_cast<unsigned char*>(out)[i] = static_cast<unsigned char>(std::stoi(s.substr(2 * i, 2), nullptr, 16));
}

struct Buffers {
  float* device = nullptr;
  std::vector<float> host = std::vector<float>(kCount);
};

// Sums `value` over the communicator and checks the result on every element.
void all_reduce_check(ncclComm_t comm, cudaStream_t stream, Buffers& b, float value, float expect) {
  for (float& x : b.host) x = value;
  CUDA_DO(cudaMemcpy(b.device, b.host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice));
  NCCL_DO(ncclAllReduce(b.device, b.device, kCount, ncclFloat32, ncclSum, comm, stream), comm);
  CUDA_DO(cudaStreamSynchronize(stream));
  CUDA_DO(cudaMemcpy(b.host.data(), b.device, kCount * sizeof(float), cudaMemcpyDeviceToHost));
  if (b.host[0] != expect || b.host[kCount - 1] != expect) {
    std::fprintf(stderr, "rank %d: all-reduce gave %g, want %g\n", g_rank, static_cast<double>(b.host[0]),
                 static_cast<double>(expect));
    std::exit(1);
  }
}

// Uneven point-to-point work, then an all-reduce: only ranks 0 and 1 trade messages.
void p2p_and_all_reduce(int rank, int n, ncclComm_t world, cudaStream_t stream, Buffers& b) {
  if (rank <= 1) {
    float* peer_buf = nullptr;
    CUDA_DO(cudaMalloc(reinterpret_cast<void**>(&peer_buf), kCount * sizeof(float)));
    for (int i = 0; i < kP2pRounds; ++i) {
      NCCL_DO(ncclGroupStart(), nullptr);
      NCCL_DO(ncclSend(b.device, kCount, ncclFloat32, 1 - rank, world, stream), world);
      NCCL_DO(ncclRecv(peer_buf, kCount, ncclFloat32, 1 - rank, world, stream), world);
      NCCL_DO(ncclGroupEnd(), world);
    }
    CUDA_DO(cudaStreamSynchronize(stream));
    CUDA_DO(cudaFree(peer_buf));
  }
  all_reduce_check(world, stream, b, 1.0f, static_cast<float>(n));
}

// In-place broadcast from rank 0 with the deprecated entry point.
void bcast_check(int rank, ncclComm_t world, cudaStream_t stream, Buffers& b) {
  for (float& x : b.host) x = rank == 0 ? 42.0f : -1.0f;
  CUDA_DO(cudaMemcpy(b.device, b.host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice));
  NCCL_DO(ncclBcast(b.device, kCount, ncclFloat32, 0, world, stream), world);
  CUDA_DO(cudaStreamSynchronize(stream));
  CUDA_DO(cudaMemcpy(b.host.data(), b.device, kCount * sizeof(float), cudaMemcpyDeviceToHost));
  if (b.host[7] != 42.0f) die("ncclBcast", __LINE__, "wrong value");
}

int run_rank(int rank, int n, const ncclUniqueId ids[2], const std::string& part) {
  g_rank = rank;
  CUDA_DO(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CUDA_DO(cudaStreamCreate(&stream));
  Buffers b;
  CUDA_DO(cudaMalloc(reinterpret_cast<void**>(&b.device), kCount * sizeof(float)));
  const float sum_ranks = static_cast<float>(n * (n - 1) / 2);

  ncclConfig_t nonblocking = NCCL_CONFIG_INITIALIZER;
  nonblocking.blocking = 0;
  ncclComm_t world = nullptr;
  ncclResult_t rc = part == "all" ? ncclCommInitRankConfig(&world, n, ids[0], rank, &nonblocking)
                                  : ncclCommInitRank(&world, n, ids[0], rank);
  if (rc == ncclInProgress && world == nullptr) die("ncclCommInitRankConfig", __LINE__, "ncclInProgress without *comm");
  NCCL_DO(rc, world);

  all_reduce_check(world, stream, b, static_cast<float>(rank), sum_ranks);
  if (part != "bcast") p2p_and_all_reduce(rank, n, world, stream, b);
  if (part != "sequence") bcast_check(rank, world, stream, b);
  if (part != "all") {
    CUDA_DO(cudaStreamSynchronize(stream));
    NCCL_DO(ncclCommDestroy(world), nullptr);
    std::printf("rank %d of %d: %s checks passed\n", rank, n, part.c_str());
    return 0;
  }

  ncclComm_t scalable = nullptr;
  NCCL_DO(ncclCommInitRankScalable(&scalable, n, rank, 2, const_cast<ncclUniqueId*>(ids), nullptr), scalable);
  all_reduce_check(scalable, stream, b, 2.0f, 2.0f * static_cast<float>(n));

  // The last rank "fails": the others shrink it away; it does not take part.
  if (rank != n - 1) {
    int excluded = n - 1;
    ncclComm_t shrunk = nullptr;
    NCCL_DO(ncclCommShrink(world, &excluded, 1, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), shrunk);
    if (shrunk == nullptr) die("ncclCommShrink", __LINE__, "no communicator");
    all_reduce_check(shrunk, stream, b, static_cast<float>(rank), static_cast<float>((n - 1) * (n - 2) / 2));
    NCCL_DO(ncclCommDestroy(shrunk), nullptr);
  }

  ncclComm_t half = nullptr;
  rc = ncclCommSplit(world, rank % 2, rank, &half, &nonblocking);
  if (rc == ncclInProgress && half == nullptr) die("ncclCommSplit", __LINE__, "ncclInProgress without *newcomm");
  NCCL_DO(rc, half);
  float expect = 0;
  for (int r = rank % 2; r < n; r += 2) expect += static_cast<float>(r);
  all_reduce_check(half, stream, b, static_cast<float>(rank), expect);

  CUDA_DO(cudaStreamSynchronize(stream));
  NCCL_DO(ncclCommDestroy(half), nullptr);
  NCCL_DO(ncclCommDestroy(scalable), nullptr);
  NCCL_DO(ncclCommDestroy(world), nullptr);
  CUDA_DO(cudaFree(b.device));
  CUDA_DO(cudaStreamDestroy(stream));
  std::printf("rank %d of %d: all checks passed\n", rank, n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 3;
  std::string part = "all";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--ranks") == 0) n = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--part") == 0) part = argv[i + 1];
  }
  if (part != "all" && part != "sequence" && part != "bcast") die("--part", __LINE__, part.c_str());
  if (const char* r = std::getenv("RANK")) {
    const char* world = std::getenv("WORLD_SIZE");
    const char* ids_hex = std::getenv("NCCL_API_APP_IDS");
    if (world == nullptr || ids_hex == nullptr) die("RANK without WORLD_SIZE or NCCL_API_APP_IDS", __LINE__, r);
    ncclUniqueId ids[2];
    std::string s = ids_hex;
    unhex(s.substr(0, 2 * sizeof(ncclUniqueId)), &ids[0], sizeof(ncclUniqueId));
    unhex(s.substr(2 * sizeof(ncclUniqueId)), &ids[1], sizeof(ncclUniqueId));
    return run_rank(std::atoi(r), std::atoi(world), ids, part);
  }
  if (n < 3) die("--ranks", __LINE__, "needs at least 3 ranks (one to shrink away, two that trade messages)");
  ncclUniqueId ids[2];
  if (ncclGetUniqueId(&ids[0]) != ncclSuccess || ncclGetUniqueId(&ids[1]) != ncclSuccess) die("ncclGetUniqueId", __LINE__, "");
  const std::string ids_hex = hex(&ids[0], sizeof ids[0]) + hex(&ids[1], sizeof ids[1]);
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid < 0) die("fork", __LINE__, std::strerror(errno));
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(n).c_str(), 1);
      setenv("NCCL_API_APP_IDS", ids_hex.c_str(), 1);
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
  if (failed) std::fprintf(stderr, "nccl_api_app: %d of %d ranks failed\n", failed, n);
  return failed ? 1 : 0;
}
