// A capture with CUDA graph launches, as CUPTI records them: every node of one launch carries
// the graph's id, its own node id and the cudaGraphLaunch call's correlation id; graph kernels
// have no queued/submitted stamps. Times are known by construction:
//
//   launch i (i = 0..launches-1) at t = 10'000 + 100'000 i, cudaGraphLaunch [t, t + 2000], corr 10 + i
//     node 1  A       t+3000 .. t+3800      (graph node id 101)
//     node 2  B       t+4000 .. t+4800      (102)  } independent branches:
//     node 3  C       t+4200 .. t+5000      (103)  } side by side on stream 13
//     node 4  A       t+5100 .. t+5900 + slow_node4_ns   (104)
//     node 5  memset  t+6000 .. t+6500      (105)
//   then one kernel D launched on its own (cudaLaunchKernel, corr 5000) after the launches.
#pragma once

#include <cstdint>

#include "fabricate.h"
#include "gantt/model/model.h"

namespace gantt_test {

enum : uint32_t { kGraphLaunchName = 40, kLaunchKernelName = 41, kNodeA = 42, kNodeB = 43, kNodeC = 44, kLoneD = 45 };
inline constexpr uint64_t kGraphId = 3;
inline constexpr uint32_t kGraphStream = 13;

inline v1::Record graph_kernel(uint32_t name, uint32_t corr, uint64_t node_id, uint64_t start, uint64_t end) {
  v1::Record r = kernel(name, kGraphStream, corr, 0, 0, start, end);
  r.mutable_kernel()->set_graph_id(kGraphId);
  r.mutable_kernel()->set_graph_node_id(node_id);
  return r;
}

inline void add_graph_capture(gantt::ModelBuilder& b, int launches = 4, uint64_t slow_node4_ns = 0) {
  b.add(header());
  b.add(a100());
  b.add(string_def(kGraphLaunchName, "cudaGraphLaunch"));
  b.add(string_def(kLaunchKernelName, "cudaLaunchKernel"));
  b.add(string_def(kNodeA, "_Z5nodeAPf"));
  b.add(string_def(kNodeB, "nodeB"));
  b.add(string_def(kNodeC, "nodeC<&>"));  // a name that needs escaping in SVG
  b.add(string_def(kLoneD, "loneD"));
  uint64_t t = 10'000;
  for (int i = 0; i < launches; ++i, t += 100'000) {
    const uint32_t corr = 10 + static_cast<uint32_t>(i);
    b.add(api(kGraphLaunchName, 100, t, t + 2000, corr));
    b.add(graph_kernel(kNodeA, corr, 101, t + 3000, t + 3800));
    b.add(graph_kernel(kNodeB, corr, 102, t + 4000, t + 4800));
    b.add(graph_kernel(kNodeC, corr, 103, t + 4200, t + 5000));
    b.add(graph_kernel(kNodeA, corr, 104, t + 5100, t + 5900 + slow_node4_ns));
    v1::Record ms;
    auto* s = ms.mutable_memset();
    s->set_bytes(4096);
    s->set_stream(kGraphStream);
    s->set_correlation_id(corr);
    s->set_start_ns(static_cast<int64_t>(t + 6000));
    s->set_end_ns(static_cast<int64_t>(t + 6500));
    s->set_graph_id(kGraphId);
    s->set_graph_node_id(105);
    b.add(ms);
  }
  b.add(api(kLaunchKernelName, 100, t, t + 500, 5000));
  b.add(kernel(kLoneD, kGraphStream, 5000, t + 400, t + 450, t + 1000, t + 3000));
}

inline gantt::Model graph_model(int launches = 4, uint64_t slow_node4_ns = 0, const char* path = "graphs.gpuh") {
  gantt::Model m;
  gantt::ModelBuilder b(m);
  b.begin_capture(path);
  add_graph_capture(b, launches, slow_node4_ns);
  b.end_capture({});
  return m;
}

}  // namespace gantt_test
