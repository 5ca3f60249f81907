// Structured fuzzing of everything that consumes a capture's *values*: the byte fuzzer
// (reader_fuzz.cpp) rarely gets past zstd's checksum, so it never hands libgantt a record
// whose string id is 0xFFFFFFFF, whose warp size is 2^31 or whose block has 2^32-1 threads
// (real crashes came from such values). This driver decodes the seed captures, sets
// protobuf fields to boundary and random values through reflection, drops, duplicates and
// reorders records, writes a valid capture again and runs it through load (one file and a job), stats,
// diagnose, diff, every exporter, the SVG renderer, the straggler finder and merge.
//   structured_fuzz [--seconds S] [--iterations N] [--seed X] [--only I] SEED.gpuh...
// Deterministic: iteration I always makes the same capture from the same seeds (--only I
// replays it). Exits 0 when every iteration ended in output or a clean exception; a crash,
// a sanitizer report or a hang (ctest TIMEOUT) is the finding. GCC has no libFuzzer, so
// this runs as a short ctest on every test run, under ASan+UBSan with --sanitize.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gpuhook/capture.h>
#include <gpuhook/v1/summary.pb.h>

#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/diff.h"
#include "gantt/analysis/metrics.h"
#include "gantt/analysis/pipeline.h"
#include "gantt/analysis/stats.h"
#include "gantt/analysis/summary.h"
#include "gantt/export/export.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"
#include "gantt/ranks/ranks.h"
#include "gantt/analysis/waits.h"
#include "gantt/render/render.h"
#include "gantt/whatif/whatif.h"

namespace {

namespace pb = google::protobuf;
namespace v1 = gpuhook::v1;
namespace ga = gantt::analysis;

constexpr size_t kMaxSeedRecords = 4000;

std::vector<v1::Record> read_seed(const std::string& path) {
  std::vector<v1::Record> out;
  try {
    gpuhook::CaptureReader reader(path, gpuhook::ReaderOptions{false, 0, 0});
    v1::Record r;
    while (out.size() < kMaxSeedRecords && reader.next(r)) out.push_back(r);
  } catch (const gpuhook::CaptureError&) {
  }
  return out;
}

// A seed the committed captures lack: two pipeline stages (one process, two devices) sending
// to and receiving from each other inside "step" ranges, with their kernels, and allocations
// at one address reused each step, tagged with gpuhook_mem_tag(). Without it no mutation
// reaches the send/receive matching, the pipeline bubbles or the memory categories (a
// mutated op never becomes a send).
std::vector<v1::Record> pipeline_seed() {
  std::vector<v1::Record> out;
  v1::Record r;
  r.mutable_header()->set_format_version(1);
  r.mutable_header()->set_start_monotonic_raw_ns(1'000'000);
  r.mutable_header()->set_features(v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_NCCL | v1::FEATURE_NVTX);
  out.push_back(r);
  uint32_t next_id = 1;
  auto string = [&](const std::string& s) {
    v1::Record d;
    d.mutable_string_def()->set_id(next_id);
    d.mutable_string_def()->set_value(s);
    out.push_back(d);
    return next_id++;
  };
  const uint32_t step = string("step"), send = string("ncclSend"), recv = string("ncclRecv"),
                 kernel = string("ncclDevKernel_SendRecv"), work = string("work"), launch = string("cudaLaunchKernel"),
                 activations = string("activations");
  for (uint32_t dev = 0; dev < 2; ++dev) {
    r.Clear();
    r.mutable_device()->set_ordinal(dev);
    r.mutable_device()->set_name("Fuzz GPU");
    out.push_back(r);
  }
  uint32_t corr = 1;
  uint64_t external = 1;
  int64_t t = 2'000'000;
  auto launch_kernel = [&](uint32_t name, uint32_t dev, uint64_t tid, int64_t at, int64_t run_ns) {
    r.Clear();
    auto* a = r.mutable_api();
    a->set_domain(v1::API_DOMAIN_RUNTIME);
    a->set_name_id(launch);
    a->set_thread_id(tid);
    a->set_start_ns(at);
    a->set_end_ns(at + 5);
    a->set_correlation_id(corr);
    out.push_back(r);
    r.Clear();
    auto* k = r.mutable_kernel();
    k->set_name_id(name);
    k->set_device(dev);
    k->set_stream(7 + dev);
    k->set_correlation_id(corr);
    k->set_start_ns(at + 100);
    k->set_end_ns(at + 100 + run_ns);
    k->set_grid_x(1), k->set_grid_y(1), k->set_grid_z(1), k->set_block_x(32), k->set_block_y(1), k->set_block_z(1);
    out.push_back(r);
    return corr++;
  };
  auto p2p = [&](bool is_send, int32_t rank, int64_t at, int64_t run_ns) {
    const uint64_t tid = 100 + static_cast<uint64_t>(rank);
    r.Clear();
    auto* n = r.mutable_nccl();
    n->set_op(is_send ? v1::NCCL_SEND : v1::NCCL_RECV);
    n->set_name_id(is_send ? send : recv);
    n->set_bytes(1 << 20);
    n->set_count(1 << 18);
    n->set_root_or_peer(1 - rank);
    n->set_comm_id(0x77);
    n->set_rank(rank);
    n->set_nranks(2);
    n->set_device(rank);
    n->set_thread_id(tid);
    n->set_start_ns(at);
    n->set_end_ns(at + 50);
    n->set_external_id(external);
    out.push_back(r);
    const uint32_t c = launch_kernel(kernel, static_cast<uint32_t>(rank), tid, at + 10, run_ns);
    r.Clear();
    r.mutable_external_correlation()->set_kind(5);
    r.mutable_external_correlation()->set_external_id(external++);
    r.mutable_external_correlation()->set_correlation_id(c);
    out.push_back(r);
  };
  auto range = [&](v1::RangeType type, uint64_t tid, int64_t at) {
    r.Clear();
    r.mutable_range()->set_type(type);
    if (type == v1::RANGE_PUSH) r.mutable_range()->set_name_id(step);
    r.mutable_range()->set_thread_id(tid);
    r.mutable_range()->set_time_ns(at);
    out.push_back(r);
  };
  auto memory = [&](v1::MemoryOp op, int64_t at) {
    r.Clear();
    auto* x = r.mutable_memory();
    x->set_op(op);
    x->set_address(0x10000);
    x->set_bytes(op == v1::MEMORY_OP_ALLOC ? 1 << 20 : 0);
    x->set_time_ns(at);
    x->set_memory_kind(v1::MEMORY_DEVICE);
    out.push_back(r);
  };
  for (int s = 0; s < 4; ++s) {
    range(v1::RANGE_PUSH, 100, t);
    range(v1::RANGE_PUSH, 101, t);
    memory(v1::MEMORY_OP_ALLOC, t + 1);
    r.Clear();
    r.mutable_memory_tag()->set_address(0x10000 + 64);
    r.mutable_memory_tag()->set_category_id(activations);
    r.mutable_memory_tag()->set_time_ns(t + 2);
    r.mutable_memory_tag()->set_thread_id(100);
    out.push_back(r);
    r.Clear();
    r.mutable_memory_use()->set_address(0x10000 + 128);
    r.mutable_memory_use()->set_time_ns(t + 12);
    r.mutable_memory_use()->set_correlation_id(1);
    r.mutable_memory_use()->set_thread_id(100);
    out.push_back(r);
    // An NVML read of device 0 in the middle of the step: utilisation, SM clock, reasons.
    for (const auto& [metric, value] : {std::pair{v1::GPU_METRIC_GPU_UTIL_PERCENT, uint64_t{90}},
                                        std::pair{v1::GPU_METRIC_SM_CLOCK_MHZ, uint64_t{s == 2 ? 1410u : 1980u}},
                                        std::pair{v1::GPU_METRIC_CLOCKS_EVENT_REASONS, uint64_t{s == 2 ? 4u : 0u}}}) {
      r.Clear();
      r.mutable_metric_sample()->set_time_ns(t + 500);
      r.mutable_metric_sample()->set_metric(metric);
      r.mutable_metric_sample()->set_value(value);
      out.push_back(r);
    }
    launch_kernel(work, 0, 100, t + 10, 1'000);
    p2p(true, 0, t + 1'200, 300);
    p2p(false, 1, t + 20, 1'600);
    launch_kernel(work, 1, 101, t + 1'700, 2'000);
    p2p(true, 1, t + 3'800, 200);
    p2p(false, 0, t + 1'300, 2'800);
    launch_kernel(work, 0, 100, t + 4'200, 900);
    memory(v1::MEMORY_OP_FREE, t + 5'000);
    range(v1::RANGE_POP, 100, t + 5'500);
    range(v1::RANGE_POP, 101, t + 5'500);
    t += 10'000;
  }
  return out;
}

template <typename T>
T pick(std::mt19937_64& rng, std::initializer_list<T> values) {
  return values.begin()[rng() % values.size()];
}

// Sets one scalar field of `m` (or of a message inside it) to a value chosen to break
// arithmetic: 0, +-1, the type's limits, powers of two, or random bits.
void mutate_field(pb::Message& m, std::mt19937_64& rng, int depth = 0) {
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection* r = m.GetReflection();
  if (d->field_count() == 0) return;
  const pb::FieldDescriptor* f = d->field(static_cast<int>(rng() % static_cast<uint64_t>(d->field_count())));
  if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    if (depth > 3 || f->is_repeated()) return;
    // A oneof: only descend into the case that is set, so the record keeps its kind.
    if (f->containing_oneof() != nullptr && !r->HasField(m, f)) {
      const pb::FieldDescriptor* set = r->GetOneofFieldDescriptor(m, f->containing_oneof());
      if (set == nullptr || set->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) return;
      f = set;
    }
    mutate_field(*r->MutableMessage(&m, f), rng, depth + 1);
    return;
  }
  if (f->is_repeated()) {
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) r->AddString(&m, f, std::string(rng() % 3000, 'a'));
    return;
  }
  const uint64_t bits = rng();
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32:
      r->SetInt32(&m, f, pick<int32_t>(rng, {0, 1, -1, INT32_MIN, INT32_MAX, 65537, 65535, 1 << 30,
                                             static_cast<int32_t>(bits)}));
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT32:
      r->SetUInt32(&m, f, pick<uint32_t>(rng, {0u, 1u, 2u, UINT32_MAX, UINT32_MAX - 1, 0x80000000u, 0xFFFFFFF0u,
                                               1u << 24, 1u << 16, static_cast<uint32_t>(bits)}));
      break;
    case pb::FieldDescriptor::CPPTYPE_INT64:
      r->SetInt64(&m, f, pick<int64_t>(rng, {0, 1, -1, INT64_MIN, INT64_MAX, INT64_MAX - 1, int64_t{1} << 62,
                                             int64_t{1} << 32, static_cast<int64_t>(bits),
                                             static_cast<int64_t>(static_cast<uint64_t>(r->GetInt64(m, f)) + bits % 2'000'000 -
                                                                 1'000'000)}));
      break;
    case pb::FieldDescriptor::CPPTYPE_UINT64:
      r->SetUInt64(&m, f, pick<uint64_t>(rng, {0ull, 1ull, UINT64_MAX, UINT64_MAX - 1, 1ull << 63, 1ull << 32, bits}));
      break;
    case pb::FieldDescriptor::CPPTYPE_BOOL: r->SetBool(&m, f, !r->GetBool(m, f)); break;
    case pb::FieldDescriptor::CPPTYPE_ENUM:
      r->SetEnumValue(&m, f, pick<int>(rng, {0, 1, 2, 3, 6, 7, -1, 1000, INT32_MAX}));
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING: {
      // Proto3 string fields must stay UTF-8 (the writer would refuse the record).
      const bool text = f->type() == pb::FieldDescriptor::TYPE_STRING;
      std::string s = pick<std::string>(rng, {"", "=cmd|' /C calc'!A0", "a,b\"c\nd", std::string(60'000, 'k'),
                                              "_Z3fooILi1EEvv", "nccl", "step", "-2+3"});
      if (!text && (bits & 1)) s += "\xFF\xFE";
      r->SetString(&m, f, s);
      break;
    }
    default: break;
  }
}

std::vector<v1::Record> mutate(const std::vector<std::vector<v1::Record>>& seeds, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<v1::Record> recs = seeds[rng() % seeds.size()];
  if (recs.empty()) return recs;
  // Records whose values feed arithmetic and tables get most of the edits.
  std::vector<size_t> rich;
  for (size_t k = 0; k < recs.size(); ++k) {
    switch (recs[k].kind_case()) {
      case v1::Record::kDevice: case v1::Record::kKernel: case v1::Record::kApi: case v1::Record::kNccl:
      case v1::Record::kRange: case v1::Record::kStringDef: case v1::Record::kHeader: case v1::Record::kMemory:
      case v1::Record::kMemoryTag: case v1::Record::kMemoryUse: case v1::Record::kMetricSample:
        rich.push_back(k);
        break;
      default: break;
    }
  }
  const int edits = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < edits; ++i) {
    const size_t at = !rich.empty() && (rng() & 1) ? rich[rng() % rich.size()] % recs.size() : rng() % recs.size();
    switch (rng() % 8) {
      case 0: recs.erase(recs.begin() + static_cast<std::ptrdiff_t>(at)); break;
      case 1: recs.insert(recs.begin() + static_cast<std::ptrdiff_t>(rng() % recs.size()), recs[at]); break;
      case 2: std::swap(recs[at], recs[rng() % recs.size()]); break;
      default: mutate_field(recs[at], rng); break;
    }
    if (recs.empty()) return recs;
  }
  return recs;
}

void exercise(const std::string& path, const std::string& dir) {
  gantt::Model m;
  try {
    m = gantt::load({path});
  } catch (const gpuhook::CaptureError&) {
    return;
  }
  for (ga::GroupBy by : {ga::GroupBy::kKernel, ga::GroupBy::kStream, ga::GroupBy::kDevice, ga::GroupBy::kRange}) {
    ga::StatsOptions so;
    so.by = by;
    const ga::StatsReport s = ga::compute_stats(m, so);
    for (ga::Format f : {ga::Format::kText, ga::Format::kJson, ga::Format::kCsv}) (void)ga::format_stats(s, f);
  }
  // The summary of the same values, through its file message and merged with itself: what a
  // hostile capture's extremes do to the reduce step.
  {
    ga::StatsSummary sum = ga::summarize(
        m, {ga::GroupBy::kKernel, ga::GroupBy::kStream, ga::GroupBy::kDevice, ga::GroupBy::kRange}, 4);
    ga::add_diff_samples(sum, m);
    gpuhook::v1::StatsSummary message;
    ga::to_proto(sum, &message);
    if (!m.captures.empty()) {
      ga::StatsSummary back = ga::from_proto(message);
      ga::merge(back, sum);
      (void)ga::format_stats(ga::report(back, ga::StatsOptions{}), ga::Format::kJson);
      (void)ga::format_diff(ga::diff_inputs(ga::diff_input(back, true), ga::diff_input(m, true)), ga::Format::kCsv);
    }
  }
  (void)ga::format_diagnose(ga::diagnose(m), ga::Format::kText);
  (void)ga::format_diff(ga::diff_models(m, m), ga::Format::kCsv);
  for (ga::Format f : {ga::Format::kText, ga::Format::kJson, ga::Format::kCsv})
    (void)ga::format_metric_stats(m, ga::metric_stats(m), f);
  gantt::EventFilter filter;
  filter.kernel_regex = "(a+)+$";
  for (const gantt::EventFilter& fl : {gantt::EventFilter{}, filter}) {
    try {
      const gantt::Selection sel = gantt::select_events(m, fl);
      for (const gantt::Exporter* e : gantt::exporters()) {
        std::ostringstream os;
        gantt::ExportOptions eo;
        eo.folded_root = gantt::analysis::StackRoot::kDevice;  // the root frame reads the header and device
        e->write(m, sel, eo, os);
      }
      std::ostringstream svg;
      gantt::RenderOptions ro;
      ro.memory_strip = ro.deps = true;
      gantt::write_svg(gantt::build_scene(m, sel, ro), svg);
      // The views and the tables behind them: waits, utilisation, memory.
      const auto waits = ga::wait_causes(m, sel.events);
      (void)ga::format_wait_stats(m, waits, "json");
      (void)ga::event_dependencies(m);
      const auto memory = ga::memory_report(m);
      (void)ga::format_memory_stats(m, memory, "text");
      gantt::write_svg(gantt::memory_scene(m, sel, memory, ro), svg);
      std::vector<std::string> comm_notes, pipeline_notes;
      for (const char* step : {"", "step"}) {
        const auto pipelines = ga::pipeline_reports(m, step, &pipeline_notes);
        (void)ga::format_pipeline_stats(m, pipelines, "json", pipeline_notes);
        (void)ga::format_pipeline_stats(m, pipelines, "text", pipeline_notes);
      }
      const auto comm = ga::comm_matrices(m, &comm_notes);
      (void)ga::format_comm_stats(comm, comm_notes, "json");
      gantt::write_svg(gantt::comm_scene(m, comm, comm_notes, ro), svg);
      const ga::Timeline t = ga::utilisation_timeline(m, sel, 0);
      (void)ga::format_timeline(m, t, "csv");
      gantt::write_svg(gantt::utilisation_scene(m, sel, t, ro), svg);
    } catch (const std::invalid_argument&) {
    }
  }
  // What if: the same capture re-timed under each change (a hostile one must get an error or
  // a prediction, never a crash or a hang).
  for (const char* change : {"graphs", "streams=4", "remove-syncs", "scale=.*:2", "async-copies", "pin-copies"}) {
    const std::string predicted = dir + "/predicted.gpuh";
    std::filesystem::remove(predicted);
    try {
      gantt::whatif::Options wo;
      wo.pinned_gbps = 10;
      (void)gantt::whatif::predict({path}, {gantt::whatif::parse_change(change)}, wo, predicted);
      (void)gantt::load({predicted}, gantt::LoadOptions{});
    } catch (const std::exception&) {
    }
  }
  (void)gantt::find_straggler(gantt::match_collectives(gantt::collective_calls(m)));
  try {
    const gantt::Model job = gantt::load({path, path}, gantt::LoadOptions{});
    (void)ga::diagnose(job);
    const std::string merged = dir + "/merged.gpuh";
    std::filesystem::remove(merged);
    (void)gantt::merge_captures({path}, merged);
    (void)gantt::load({merged}, gantt::LoadOptions{});
  } catch (const gpuhook::CaptureError&) {
  } catch (const std::runtime_error&) {
  }
}

// The iteration a crash happened in, said from the signal handler (async-signal-safe).
volatile sig_atomic_t g_iteration = -1;

void on_crash(int sig) {
  char buf[96] = "\nstructured_fuzz: crashed in iteration ";
  size_t n = std::strlen(buf);
  char digits[24];
  size_t d = 0;
  long v = g_iteration;
  do digits[d++] = static_cast<char>('0' + v % 10), v /= 10;
  while (v > 0 && d < sizeof digits);
  while (d > 0 && n < sizeof buf - 24) buf[n++] = digits[--d];
  const char tail[] = " (replay it with --only)\n";
  std::memcpy(buf + n, tail, sizeof tail - 1);
  n += sizeof tail - 1;
  (void)!write(2, buf, n);
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  uint64_t iterations = UINT64_MAX, base_seed = 22, only = UINT64_MAX;
  std::vector<std::vector<v1::Record>> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (a == "--iterations" && i + 1 < argc) iterations = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--seed" && i + 1 < argc) base_seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--only" && i + 1 < argc) only = std::strtoull(argv[++i], nullptr, 10);
    else if (auto recs = read_seed(a); !recs.empty()) seeds.push_back(std::move(recs));
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "structured_fuzz: no readable seed capture given\n");
    return 2;
  }
  seeds.push_back(pipeline_seed());
  char tmpl[] = "/tmp/structured_fuzz.XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  for (int sig : {SIGSEGV, SIGFPE, SIGABRT, SIGBUS, SIGILL}) signal(sig, on_crash);
  const auto start = std::chrono::steady_clock::now();
  uint64_t done = 0;
  for (uint64_t i = only == UINT64_MAX ? 0 : only; i < iterations; ++i) {
    if (only == UINT64_MAX &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds)
      break;
    const std::vector<v1::Record> recs = mutate(seeds, base_seed * 1'000'003 + i);
    const std::string path = dir + "/case.gpuh";
    std::filesystem::remove(path);
    std::string err;
    auto w = gpuhook::CaptureWriter::create(path, gpuhook::WriterOptions{}, &err);
    if (!w) {
      std::fprintf(stderr, "structured_fuzz: %s\n", err.c_str());
      return 2;
    }
    for (size_t k = 0; k < recs.size(); ++k) {
      w->write(recs[k]);
      if (k % 97 == 96) w->flush();  // several chunks, as the hook writes them
    }
    w->close();
    g_iteration = static_cast<sig_atomic_t>(i);
    exercise(path, dir);
    ++done;
    if (only != UINT64_MAX) break;
  }
  std::filesystem::remove_all(dir);
  std::fprintf(stderr, "structured_fuzz: %llu mutated captures from %zu seeds, no crash\n",
               static_cast<unsigned long long>(done), seeds.size());
  return 0;
}
