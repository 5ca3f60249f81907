// Which copies held the host: one rule (copy_host_wait) for stats, summaries, diagnose's
// copy-overlap and whatif's async-copies, on fabricated captures: a graph's memcpy nodes
// (issued by cudaGraphLaunch, pinned, asynchronous), cudaMemcpy, and cudaMemcpyAsync from
// pageable memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include <gpuhook/capture.h>

#include "capture_builder.h"
#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/stream_stats.h"
#include "gantt/analysis/summary.h"
#include "gantt/whatif/whatif.h"

namespace ga = gantt::analysis;
namespace v1 = gpuhook::v1;
using ga::CopyHostWait;

namespace {

enum class Issued { kGraphLaunch, kMemcpy, kPageableMemcpyAsync };
constexpr uint64_t kSteps = 20;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/copy_wait_" + std::to_string(::getpid()) + "_" + name + ".gpuh";
}

// Per step: a 400 ns HtoD copy, a 100 ns kernel, a 400 ns DtoH copy, one after the other on
// one stream: copies are most of the busy time and none runs under a kernel, so diagnose's
// copy-overlap fires whoever issued them.
std::string write_capture(const std::string& name, Issued issued) {
  const std::string path = temp_path(name);
  std::remove(path.c_str());
  gpuhook::test::CaptureBuilder b(path);
  EXPECT_TRUE(b.ok()) << b.error();
  b.header("testhost", 42, 1'000'000, v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_LATENCY_TIMESTAMPS);
  b.sm_device(0, 8);
  const gpuhook::test::Shape shape{80, 256, 32};
  uint32_t corr = 1;
  for (uint64_t i = 0; i < kSteps; ++i) {
    const uint64_t t = 100'000 + i * 10'000;
    const auto copy = [&](v1::CopyKind kind, uint64_t start, uint32_t call_corr, uint64_t node) {
      auto m = b.copy(kind, 1 << 20, 7, call_corr, start, start + 400);
      const bool to_device = kind == v1::COPY_HTOD;
      const v1::MemoryKind host = issued == Issued::kPageableMemcpyAsync ? v1::MEMORY_PAGEABLE : v1::MEMORY_PINNED;
      m->set_src_kind(to_device ? host : v1::MEMORY_DEVICE);
      m->set_dst_kind(to_device ? v1::MEMORY_DEVICE : host);
      m->set_async(issued != Issued::kMemcpy);  // CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC as CUDA sets it
      if (issued == Issued::kGraphLaunch) m->set_graph_id(5), m->set_graph_node_id(node);
    };
    if (issued == Issued::kGraphLaunch) {
      // One cudaGraphLaunch; CUPTI gives every node its correlation id.
      const uint32_t c = corr++;
      b.api("cudaGraphLaunch", 100, t, t + 50, c);
      copy(v1::COPY_HTOD, t + 1000, c, 1);
      auto k = b.kernel("_Z4stepPf", 7, c, t + 1400, t + 1500, shape);
      k->set_graph_id(5);
      k->set_graph_node_id(2);
      copy(v1::COPY_DTOH, t + 1500, c, 3);
      continue;
    }
    const std::string copy_call = issued == Issued::kMemcpy ? "cudaMemcpy" : "cudaMemcpyAsync";
    const bool waits = issued == Issued::kMemcpy || issued == Issued::kPageableMemcpyAsync;
    const uint32_t c1 = corr++, c2 = corr++, c3 = corr++;
    b.api(copy_call, 100, t, waits ? t + 1450 : t + 50, c1);
    copy(v1::COPY_HTOD, t + 1000, c1, 0);
    b.api("cudaLaunchKernel", 100, t + 1460, t + 1470, c2);
    b.kernel("_Z4stepPf", 7, c2, t + 1480, t + 1580, shape);
    b.api(copy_call, 100, t + 1480, waits ? t + 2000 : t + 1500, c3);
    copy(v1::COPY_DTOH, t + 1580, c3, 0);
  }
  EXPECT_TRUE(b.close()) << b.error();
  return path;
}

const ga::Finding* copy_overlap(const ga::DiagnoseReport& r) {
  for (const ga::Finding& f : r.findings)
    if (f.rule == "copy-overlap") return &f;
  return nullptr;
}

std::string evidence_of(const ga::Finding& f) {
  std::string all;
  for (const std::string& e : f.evidence) all += e + "\n";
  return all;
}

// The copies that held the host as the loaded capture, its summary and the streamed
// summary count them: all three the same.
uint64_t synchronous_copies(const std::string& path) {
  const gantt::Model m = gantt::load({path});
  const ga::StatsSummary loaded = ga::summarize(m, {ga::GroupBy::kKernel}, 3);
  ga::StreamStatsOptions o;
  o.by = {ga::GroupBy::kKernel};
  std::string why;
  const auto streamed = ga::stream_stats(path, o, &why);
  EXPECT_TRUE(streamed) << why;
  EXPECT_EQ(loaded.devices.size(), 1u);
  if (!streamed || loaded.devices.size() != 1 || streamed->summary.devices.size() != 1) return UINT64_MAX;
  EXPECT_EQ(streamed->summary.devices[0].sync_copies, loaded.devices[0].sync_copies) << path;
  return loaded.devices[0].sync_copies;
}

// What `whatif --change async-copies` says it did.
std::string async_copies_note(const std::string& path) {
  const std::string out = temp_path("predicted");
  std::remove(out.c_str());
  const gantt::whatif::Prediction p =
      gantt::whatif::predict({path}, {gantt::whatif::parse_change("async-copies")}, {}, out);
  std::remove(out.c_str());
  for (const std::string& n : p.notes)
    if (n.rfind("async-copies", 0) == 0) return n;
  return "";
}

}  // namespace

TEST(CopyHostWait, TheCallTheFlagAndTheMemoryDecide) {
  // cudaMemcpy waits for a host copy; cudaMemcpyAsync with pinned memory does not.
  EXPECT_EQ(ga::copy_host_wait(false, v1::COPY_HTOD, false, false, false), CopyHostWait::kSynchronousCall);
  EXPECT_EQ(ga::copy_host_wait(true, v1::COPY_HTOD, true, false, false), CopyHostWait::kNone);
  // Pageable memory holds even cudaMemcpyAsync.
  EXPECT_EQ(ga::copy_host_wait(true, v1::COPY_DTOH, true, true, false), CopyHostWait::kPageableMemory);
  // A graph's memcpy node: its call is cudaGraphLaunch, which has no "Async" and waits for nothing.
  EXPECT_EQ(ga::copy_host_wait(ga::async_copy_call("cudaGraphLaunch"), v1::COPY_HTOD, true, false, true),
            CopyHostWait::kNone);
  EXPECT_EQ(ga::copy_host_wait(ga::async_copy_call("cudaGraphLaunch"), v1::COPY_HTOD, false, false, true),
            CopyHostWait::kNone);
  // Device to device, cudaMemcpy does not synchronise with the host; nor does cudaMemcpyPeer.
  EXPECT_EQ(ga::copy_host_wait(false, v1::COPY_DTOD, false, false, false), CopyHostWait::kNone);
  EXPECT_EQ(ga::copy_host_wait(false, v1::COPY_PTOP, false, false, false), CopyHostWait::kNone);
  // No call recorded: CUPTI's flag says which API it was.
  EXPECT_EQ(ga::copy_host_wait(false, v1::COPY_HTOD, true, false, false), CopyHostWait::kNone);
  EXPECT_EQ(ga::copy_host_wait(false, v1::COPY_HTOD, false, false, false), CopyHostWait::kSynchronousCall);
  EXPECT_TRUE(ga::async_copy_call("cuMemcpyHtoDAsync_v2"));
  EXPECT_FALSE(ga::async_copy_call("cudaMemcpy2D"));
}

TEST(CopyHostWait, GraphNodeCopiesAreNotCalledSynchronousNorToldToPin) {
  const std::string path = write_capture("graph", Issued::kGraphLaunch);
  const ga::DiagnoseReport r = ga::diagnose(gantt::load({path}));
  const ga::Finding* f = copy_overlap(r);
  ASSERT_NE(f, nullptr) << ga::format_diagnose(r, ga::Format::kText);
  EXPECT_EQ(evidence_of(*f).find("synchronous"), std::string::npos) << evidence_of(*f);
  EXPECT_EQ(evidence_of(*f).find("held the host"), std::string::npos) << evidence_of(*f);
  EXPECT_EQ(f->fix.find("cudaMallocHost"), std::string::npos) << f->fix;  // the memory is pinned already
  EXPECT_EQ(synchronous_copies(path), 0u);
  EXPECT_NE(async_copies_note(path).find("no synchronous copy"), std::string::npos) << async_copies_note(path);
  std::remove(path.c_str());
}

TEST(CopyHostWait, CudaMemcpyCopiesAreSynchronousToDiagnoseStatsAndWhatif) {
  const std::string path = write_capture("memcpy", Issued::kMemcpy);
  const ga::DiagnoseReport r = ga::diagnose(gantt::load({path}));
  const ga::Finding* f = copy_overlap(r);
  ASSERT_NE(f, nullptr) << ga::format_diagnose(r, ga::Format::kText);
  EXPECT_NE(evidence_of(*f).find(std::to_string(2 * kSteps) + " of them held the host"), std::string::npos)
      << evidence_of(*f);
  // Pinned, but a summary could not tell: the advice to pin is only for pageable buffers.
  EXPECT_NE(f->fix.find("if their host buffers are pageable"), std::string::npos) << f->fix;
  EXPECT_EQ(synchronous_copies(path), 2 * kSteps);
  EXPECT_NE(async_copies_note(path).find(std::to_string(2 * kSteps) + " synchronous copies"), std::string::npos)
      << async_copies_note(path);
  std::remove(path.c_str());
}

TEST(CopyHostWait, PageableCudaMemcpyAsyncHoldsTheHostAndIsToldToPin) {
  const std::string path = write_capture("pageable", Issued::kPageableMemcpyAsync);
  const ga::DiagnoseReport r = ga::diagnose(gantt::load({path}));
  const ga::Finding* f = copy_overlap(r);
  ASSERT_NE(f, nullptr) << ga::format_diagnose(r, ga::Format::kText);
  EXPECT_NE(evidence_of(*f).find(std::to_string(2 * kSteps) + " of them held the host"), std::string::npos)
      << evidence_of(*f);
  EXPECT_NE(f->fix.find("cudaMallocHost"), std::string::npos) << f->fix;
  EXPECT_EQ(synchronous_copies(path), 2 * kSteps);
  // async-copies leaves them (the call is asynchronous already) and names the change that helps.
  const std::string note = async_copies_note(path);
  EXPECT_NE(note.find("no synchronous copy"), std::string::npos) << note;
  EXPECT_NE(note.find("pin-copies"), std::string::npos) << note;
  std::remove(path.c_str());
}
