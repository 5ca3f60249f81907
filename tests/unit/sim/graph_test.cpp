// CUDA graphs on the simulator: explicit building and stream capture across streams, run in
// dependency order with independent nodes side by side, and the ids CUPTI puts on the records.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>

#include "sim_test_util.h"

using namespace simtest;

namespace {

// slow: 20 ms per wave, long enough that a loaded machine does not blur overlap; small grids
// (100 blocks of 256 threads) fill ~10% of the device, so independent ones fit side by side.
constexpr const char* kCosts = "slow_kernel 20000000\nmid_kernel 300000\nquick_kernel 20000\n";
constexpr unsigned kSmallGrid = 100;

class Graphs : public ::testing::Test {
 protected:
  void SetUp() override {
    configure(kCosts, {{"GPUHOOK_SIM_QUEUE_DEPTH", "1024"}});
    start_tracing();
  }
};

bool overlap(const KernelRec& a, const KernelRec& b) { return a.start < b.end && b.start < a.end; }

cudaKernelNodeParams params_for(const void* k, unsigned grid) {
  cudaKernelNodeParams p{};
  p.func = const_cast<void*>(k);
  p.gridDim = dim3(grid);
  p.blockDim = dim3(256);
  return p;
}

cudaGraphNode_t add_kernel(cudaGraph_t g, const void* k, std::vector<cudaGraphNode_t> deps, unsigned grid = kSmallGrid) {
  cudaGraphNode_t n = nullptr;
  const cudaKernelNodeParams p = params_for(k, grid);
  EXPECT_EQ(cudaGraphAddKernelNode(&n, g, deps.data(), deps.size(), &p), cudaSuccess);
  return n;
}

std::vector<uint32_t> launch_correlations() {
  std::lock_guard<std::mutex> lock(received().mu);
  std::vector<uint32_t> ids;
  for (const auto& a : received().apis) {
    if (a.cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000) ids.push_back(a.correlation);
  }
  return ids;
}

uint32_t stream_id_of(cudaStream_t s) {
  // The id records give s: that of an ordinary kernel launched on it.
  launch(kernel("probe_kernel"), 1, 32, s);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  auto ks = kernels_named("probe_kernel");
  return ks.empty() ? 0 : ks.back().stream;
}

TEST_F(Graphs, ExplicitGraphRunsInDependencyOrder) {
  // A diamond: root, two branches, then a join node.
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  const void* root = kernel("mid_kernel_root");
  const void* left = kernel("mid_kernel_left");
  const void* right = kernel("mid_kernel_right");
  const void* join = kernel("mid_kernel_join");
  cudaGraphNode_t r = add_kernel(g, root, {});
  cudaGraphNode_t a = add_kernel(g, left, {r});
  cudaGraphNode_t b = add_kernel(g, right, {r});
  add_kernel(g, join, {a, b});
  size_t roots = 0;
  ASSERT_EQ(cudaGraphGetRootNodes(g, nullptr, &roots), cudaSuccess);
  EXPECT_EQ(roots, 1u);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  finish_tracing();
  const auto kr = kernels_named("mid_kernel_root"), kl = kernels_named("mid_kernel_left"),
             kri = kernels_named("mid_kernel_right"), kj = kernels_named("mid_kernel_join");
  ASSERT_EQ(kr.size() + kl.size() + kri.size() + kj.size(), 4u);
  EXPECT_GE(kl[0].start, kr[0].end);
  EXPECT_GE(kri[0].start, kr[0].end);
  EXPECT_GE(kj[0].start, kl[0].end);
  EXPECT_GE(kj[0].start, kri[0].end);
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
}

TEST_F(Graphs, IndependentNodesOverlapAndAChainDoesNot) {
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  // Two independent nodes, and a chain of two.
  add_kernel(g, kernel("slow_kernel_a"), {});
  add_kernel(g, kernel("slow_kernel_b"), {});
  cudaGraphNode_t c1 = add_kernel(g, kernel("slow_kernel_c1"), {});
  add_kernel(g, kernel("slow_kernel_c2"), {c1});
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  finish_tracing();
  const auto a = kernels_named("slow_kernel_a"), b = kernels_named("slow_kernel_b");
  const auto c1k = kernels_named("slow_kernel_c1"), c2k = kernels_named("slow_kernel_c2");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(c1k.size(), 1u);
  ASSERT_EQ(c2k.size(), 1u);
  EXPECT_TRUE(overlap(a[0], b[0])) << "independent nodes must run side by side";
  EXPECT_TRUE(overlap(a[0], c1k[0]));
  EXPECT_FALSE(overlap(c1k[0], c2k[0])) << "a dependency must serialise";
  EXPECT_GE(c2k[0].start, c1k[0].end);
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
}

TEST_F(Graphs, ALaunchFollowsEarlierStreamWorkAndLaterWorkWaitsForAllOfIt) {
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  add_kernel(g, kernel("mid_kernel_g1"), {});
  add_kernel(g, kernel("slow_kernel_g2"), {});
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  launch(kernel("mid_kernel_before"), kSmallGrid, 256, s);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  launch(kernel("mid_kernel_after"), kSmallGrid, 256, s);
  finish_tracing();
  const auto before = kernels_named("mid_kernel_before"), after = kernels_named("mid_kernel_after");
  const auto g1 = kernels_named("mid_kernel_g1"), g2 = kernels_named("slow_kernel_g2");
  ASSERT_EQ(before.size() + after.size() + g1.size() + g2.size(), 4u);
  EXPECT_GE(g1[0].start, before[0].end);
  EXPECT_GE(g2[0].start, before[0].end);
  EXPECT_GE(after[0].start, g2[0].end) << "later work on the stream waits for the whole graph";
  EXPECT_GE(after[0].start, g1[0].end);
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
}

TEST_F(Graphs, EveryNodeRecordCarriesTheLaunchsIds) {
  void* dev = nullptr;
  void* host = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, 4096), cudaSuccess);
  ASSERT_EQ(cudaMallocHost(&host, 4096), cudaSuccess);
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t set = nullptr, copy = nullptr;
  cudaMemsetParams mp{};
  mp.dst = dev;
  mp.value = 0;
  mp.elementSize = 4;
  mp.width = 1024;
  mp.height = 1;
  ASSERT_EQ(cudaGraphAddMemsetNode(&set, g, nullptr, 0, &mp), cudaSuccess);
  cudaGraphNode_t k1 = add_kernel(g, kernel("quick_kernel_ids1"), {set});
  add_kernel(g, kernel("quick_kernel_ids2"), {set});
  ASSERT_EQ(cudaGraphAddMemcpyNode1D(&copy, g, &k1, 1, host, dev, 4096, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const uint32_t sid = stream_id_of(s);
  ASSERT_NE(sid, 0u);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  finish_tracing();
  const auto launches = launch_correlations();
  ASSERT_EQ(launches.size(), 2u);
  auto k = kernels_named("quick_kernel_ids1");
  const auto k2 = kernels_named("quick_kernel_ids2");
  k.insert(k.end(), k2.begin(), k2.end());
  ASSERT_EQ(k.size(), 4u);
  std::vector<CopyRec> copies;
  std::vector<MemsetRec> memsets;
  {
    std::lock_guard<std::mutex> lock(received().mu);
    copies = received().copies;
    memsets = received().memsets;
  }
  ASSERT_EQ(copies.size(), 2u);
  ASSERT_EQ(memsets.size(), 2u);
  const uint32_t graph = k[0].graph_id;
  EXPECT_NE(graph, 0u);
  for (uint32_t launch : launches) {
    std::set<uint64_t> nodes;
    size_t records = 0;
    for (const auto& r : k) {
      if (r.correlation != launch) continue;
      ++records;
      EXPECT_EQ(r.graph_id, graph);
      EXPECT_EQ(r.stream, sid) << "graph nodes report the launch stream";
      EXPECT_EQ(r.queued, 0u) << "CUPTI_TIMESTAMP_UNKNOWN for graph kernels";
      EXPECT_EQ(r.submitted, 0u);
      nodes.insert(r.graph_node_id);
    }
    for (const auto& c : copies) {
      if (c.correlation != launch) continue;
      ++records;
      EXPECT_EQ(c.graph_id, graph);
      EXPECT_EQ(c.stream, sid);
      nodes.insert(c.graph_node_id);
    }
    for (const auto& m : memsets) {
      if (m.correlation != launch) continue;
      ++records;
      EXPECT_EQ(m.graph_id, graph);
      EXPECT_EQ(m.bytes, 4096u);
      nodes.insert(m.graph_node_id);
    }
    EXPECT_EQ(records, 4u) << "launch " << launch;
    EXPECT_EQ(nodes.size(), 4u) << "a graphNodeId of its own for each node";
    EXPECT_EQ(nodes.count(0), 0u);
  }
  // Copy after kernel 1, both after the memset.
  for (const auto& c : copies) {
    for (const auto& r : k) {
      if (r.correlation == c.correlation && r.name == "quick_kernel_ids1") {
        EXPECT_GE(c.start, r.end);
      }
    }
  }
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
}

TEST_F(Graphs, ExecUpdateChangesTheNextLaunchAndRefusesTopologyChanges) {
  const void* k = kernel("quick_kernel_update");
  auto build = [&](unsigned grid, bool chained) {
    cudaGraph_t g;
    EXPECT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
    cudaGraphNode_t a = add_kernel(g, k, {}, grid);
    add_kernel(g, k, chained ? std::vector<cudaGraphNode_t>{a} : std::vector<cudaGraphNode_t>{}, grid);
    return g;
  };
  cudaGraph_t g1 = build(10, true);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g1, 0), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);

  cudaGraph_t g2 = build(20, true);
  cudaGraphExecUpdateResultInfo info{};
  EXPECT_EQ(cudaGraphExecUpdate(e, g2, &info), cudaSuccess);
  EXPECT_EQ(info.result, cudaGraphExecUpdateSuccess);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);

  cudaGraph_t g3 = build(30, false);  // the edge is gone
  EXPECT_EQ(cudaGraphExecUpdate(e, g3, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  EXPECT_NE(info.errorNode, nullptr);
  cudaGraph_t g4;
  ASSERT_EQ(cudaGraphCreate(&g4, 0), cudaSuccess);
  add_kernel(g4, k, {}, 40);
  EXPECT_EQ(cudaGraphExecUpdate(e, g4, &info), cudaErrorGraphExecUpdateFailure);
  EXPECT_EQ(info.result, cudaGraphExecUpdateErrorTopologyChanged);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);  // unchanged by the refused updates

  // cudaGraphExecKernelNodeSetParams names the node of the graph it was instantiated from.
  cudaGraphNode_t nodes[2];
  size_t n = 2;
  ASSERT_EQ(cudaGraphGetNodes(g1, nodes, &n), cudaSuccess);
  ASSERT_EQ(n, 2u);
  const cudaKernelNodeParams p = params_for(k, 50);
  ASSERT_EQ(cudaGraphExecKernelNodeSetParams(e, nodes[1], &p), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  finish_tracing();

  auto ks = kernels_named("quick_kernel_update");
  ASSERT_EQ(ks.size(), 8u);
  std::sort(ks.begin(), ks.end(), [](const auto& a, const auto& b) {
    return a.correlation != b.correlation ? a.correlation < b.correlation : a.start < b.start;
  });
  EXPECT_EQ(ks[0].grid, 10);
  EXPECT_EQ(ks[1].grid, 10);
  EXPECT_EQ(ks[2].grid, 20);
  EXPECT_EQ(ks[3].grid, 20);
  EXPECT_EQ(ks[4].grid, 20);
  EXPECT_EQ(ks[5].grid, 20);
  EXPECT_EQ(ks[6].grid, 20);
  EXPECT_EQ(ks[7].grid, 50);
  for (cudaGraph_t g : {g1, g2, g3, g4}) EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
}

std::atomic<uint64_t> g_host_ran_ns{0};
void CUDART_CB stamp_host(void*) { g_host_ran_ns = monotonic_raw_ns(); }

TEST_F(Graphs, HostAndEventNodesJoinTheOrder) {
  cudaEvent_t ev;
  ASSERT_EQ(cudaEventCreate(&ev), cudaSuccess);
  cudaGraph_t g;
  ASSERT_EQ(cudaGraphCreate(&g, 0), cudaSuccess);
  cudaGraphNode_t k = add_kernel(g, kernel("mid_kernel_host"), {});
  cudaGraphNode_t host = nullptr, rec = nullptr;
  cudaHostNodeParams hp{stamp_host, nullptr};
  ASSERT_EQ(cudaGraphAddHostNode(&host, g, &k, 1, &hp), cudaSuccess);
  ASSERT_EQ(cudaGraphAddEventRecordNode(&rec, g, &host, 1, ev), cudaSuccess);
  cudaGraphNodeType type;
  ASSERT_EQ(cudaGraphNodeGetType(host, &type), cudaSuccess);
  EXPECT_EQ(type, cudaGraphNodeTypeHost);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  cudaStream_t s, other;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess);
  g_host_ran_ns = 0;
  ASSERT_EQ(cudaGraphLaunch(e, s), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(other, ev, 0), cudaSuccess);
  launch(kernel("mid_kernel_waiter"), kSmallGrid, 256, other);
  finish_tracing();
  const auto kk = kernels_named("mid_kernel_host"), waiter = kernels_named("mid_kernel_waiter");
  ASSERT_EQ(kk.size(), 1u);
  ASSERT_EQ(waiter.size(), 1u);
  EXPECT_GE(g_host_ran_ns.load(), kk[0].end) << "the host node runs after the kernel it depends on";
  EXPECT_GE(waiter[0].start, kk[0].end) << "a stream waiting on the graph's event waits for the node";
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(ev), cudaSuccess);
}

TEST_F(Graphs, ForkJoinCaptureYieldsParallelBranches) {
  cudaStream_t a, b;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t fork, join;
  ASSERT_EQ(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&join, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  launch(kernel("mid_kernel_first"), kSmallGrid, 256, a);
  ASSERT_EQ(cudaEventRecord(fork, a), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(b, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive) << "the wait brings b into a's capture";
  unsigned long long id_a = 0, id_b = 0;
  ASSERT_EQ(cudaStreamGetCaptureInfo(a, &status, &id_a), cudaSuccess);
  ASSERT_EQ(cudaStreamGetCaptureInfo(b, &status, &id_b), cudaSuccess);
  EXPECT_EQ(id_a, id_b);
  launch(kernel("slow_kernel_main"), kSmallGrid, 256, a);
  launch(kernel("slow_kernel_side"), kSmallGrid, 256, b);
  ASSERT_EQ(cudaEventRecord(join, b), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(a, join, 0), cudaSuccess);
  launch(kernel("mid_kernel_last"), kSmallGrid, 256, a);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(a, &g), cudaSuccess);
  ASSERT_EQ(cudaStreamIsCapturing(b, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  size_t nodes = 0, roots = 0;
  ASSERT_EQ(cudaGraphGetNodes(g, nullptr, &nodes), cudaSuccess);
  ASSERT_EQ(cudaGraphGetRootNodes(g, nullptr, &roots), cudaSuccess);
  EXPECT_EQ(nodes, 4u);
  EXPECT_EQ(roots, 1u);
  cudaGraphExec_t e;
  ASSERT_EQ(cudaGraphInstantiate(&e, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(e, a), cudaSuccess);
  finish_tracing();
  const auto first = kernels_named("mid_kernel_first"), main_k = kernels_named("slow_kernel_main"),
             side = kernels_named("slow_kernel_side"), last = kernels_named("mid_kernel_last");
  ASSERT_EQ(first.size() + main_k.size() + side.size() + last.size(), 4u);
  EXPECT_TRUE(overlap(main_k[0], side[0])) << "the two branches run side by side";
  EXPECT_GE(main_k[0].start, first[0].end);
  EXPECT_GE(side[0].start, first[0].end);
  EXPECT_GE(last[0].start, side[0].end) << "the join orders the last kernel after the side branch";
  EXPECT_GE(last[0].start, main_k[0].end);
  EXPECT_EQ(cudaGraphExecDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(fork), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(join), cudaSuccess);
}

TEST_F(Graphs, AnUnjoinedForkFailsTheCapture) {
  cudaStream_t a, b;
  ASSERT_EQ(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t fork;
  ASSERT_EQ(cudaEventCreate(&fork), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(fork, a), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(b, fork, 0), cudaSuccess);
  launch(kernel("quick_kernel_a"), 1, 32, a);
  launch(kernel("quick_kernel_b"), 1, 32, b);
  cudaGraph_t g = reinterpret_cast<cudaGraph_t>(0x1);
  EXPECT_EQ(cudaStreamEndCapture(b, &g), cudaErrorStreamCaptureUnmatched) << "only the origin ends it";
  EXPECT_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureUnjoined);
  EXPECT_EQ(g, nullptr);
  cudaStreamCaptureStatus status;
  ASSERT_EQ(cudaStreamIsCapturing(b, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  cudaGetLastError();
  finish_tracing();
  EXPECT_TRUE(kernels_named("quick_kernel_b").empty()) << "captured work never ran";
  EXPECT_EQ(cudaEventDestroy(fork), cudaSuccess);
}

TEST_F(Graphs, CaptureRulesRefuseAndInvalidate) {
  cudaStream_t a;
  ASSERT_EQ(cudaStreamCreate(&a), cudaSuccess);  // blocking: the legacy stream may not be used
  cudaGraph_t g = nullptr;
  cudaStreamCaptureStatus status;

  // Synchronising a capturing stream.
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(a), cudaErrorStreamCaptureUnsupported);
  ASSERT_EQ(cudaStreamIsCapturing(a, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);

  // The legacy stream while a blocking stream captures.
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaLaunchKernel(kernel("quick_kernel_legacy"), dim3(1), dim3(32), nullptr, 0, nullptr),
            cudaErrorStreamCaptureImplicit);
  EXPECT_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);

  // cudaMalloc: refused in Global mode, allowed once the thread is Relaxed.
  void* p = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(mode, cudaStreamCaptureModeGlobal);
  EXPECT_EQ(cudaMalloc(&p, 64), cudaSuccess);
  ASSERT_EQ(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(a, &g), cudaSuccess);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal), cudaSuccess);
  void* q = nullptr;
  EXPECT_EQ(cudaMalloc(&q, 64), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(a, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  cudaGetLastError();
  finish_tracing();
  EXPECT_TRUE(kernels_named("quick_kernel_legacy").empty());
}

}  // namespace
