// diagnose of one capture scanned (diagnose.h diagnose_scan): each share's events and calls
// feed a DiagnoseWork of its own, absorbed in file order, and the rules of GPU work read it as
// they read a loaded model's (diagnose_work.h). The rules of records read a model of only the
// records kept whole: the GPU counter samples (NVML's few a second). pipeline-bubble and
// slow-link read only NCCL's point-to-point calls (pipeline.cpp, p2p.cpp), so a capture of
// collectives gives them none, and its calls are not kept: they number one per collective,
// growing with the capture. Where those rules would judge records against the kernels
// (allocations, sends and receives, a throttle stretch, PM sampling's SM active), the scan says
// so and the caller loads the capture.
#include <memory>
#include <string>
#include <vector>

#include "gantt/analysis/diagnose.h"
#include "gantt/analysis/event_scan.h"
#include "gantt/analysis/stats.h"
#include "gantt/model/model_builder.h"
#include "diagnose_work.h"

namespace gantt::analysis {
namespace {

namespace v1 = gpuhook::v1;
using namespace detail;

// Counter samples kept for the rules of records; past them, the capture is loaded.
constexpr size_t kMaxSamples = size_t{1} << 21;  // 32 bytes each

struct Sample {
  int64_t time_ns;
  uint64_t value;
  uint32_t device;
  int32_t metric;  // v1::GpuMetric
  bool has_time;
};

class DiagnoseShare final : public EventConsumer {
 public:
  explicit DiagnoseShare(const Model& context) : work(context) {}

  void event(const ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
    // stats.h is_gpu_work: a synchronisation and a host function are no GPU work.
    if (e.kind == EventKind::kSync || e.kind == EventKind::kHostFunc || e.start_ns == 0 || e.end_ns <= e.start_ns) return;
    WorkEvent x{e.kind, 0, e.device, e.stream, e.priority, e.name_id != 0 ? e.name_id : e.launch_name_id, e.start_ns,
                e.end_ns, e.queued_ns, e.bytes, e.grid, e.block, static_cast<uint16_t>(e.registers_per_thread),
                e.shared_memory_bytes, e.graph_id != 0, false};
    if (e.kind == EventKind::kMemcpy)
      x.host_waits = copy_host_wait(e.launched && async_copy_call(reader.string(e.launch_name_id)), e.copy_kind,
                                    (e.copy_flags & kCopyAsync) != 0, (e.copy_flags & kCopyPageable) != 0,
                                    e.graph_id != 0) != CopyHostWait::kNone;
    if (e.launched && e.launch_ns != 0) {
      x.launch_ns = e.launch_ns;
      x.launch_thread = e.launch_thread_id;
    }
    work.add(x);
    reader_ = &reader;
  }

  void api(const gpuhook::ApiFields& a, const gpuhook::CaptureReader& reader) override {
    if (a.start_ns <= 0 || a.end_ns <= a.start_ns) return;
    reader_ = &reader;
    if (!is_sync(a.name_id, reader)) return;
    work.add_sync({static_cast<uint64_t>(a.start_ns), static_cast<uint64_t>(a.end_ns), 0, a.name_id});
  }

  void record(const v1::Record& r, const gpuhook::CaptureReader&) override {
    switch (r.kind_case()) {
      case v1::Record::kMemory:
      case v1::Record::kMemoryUse:
      case v1::Record::kMemoryTag:
        needs_load = "allocation records (memory-peak and memory-idle judge them beside the calls and kernels)";
        break;
      case v1::Record::kMetricSample: {
        const auto& x = r.metric_sample();
        if (samples.size() < kMaxSamples)
          samples.push_back({x.time_ns(), x.value(), x.device(), static_cast<int32_t>(x.metric()), x.has_time_ns()});
        else
          needs_load = "more GPU counter samples than a scan keeps";
        break;
      }
      case v1::Record::kNccl:
        if (r.nccl().op() == v1::NCCL_SEND || r.nccl().op() == v1::NCCL_RECV)
          needs_load = "NCCL sends and receives (pipeline-bubble and slow-link join them to their kernels)";
        break;
      default: break;
    }
  }
  bool stopped() const override { return !needs_load.empty(); }

  // The share's reader, once it has handed anything on: it has read every string of the file.
  const gpuhook::CaptureReader* reader() const { return reader_; }

  DiagnoseWork work;
  std::vector<Sample> samples;
  std::string needs_load;

 private:
  // A capture has a few call names and millions of calls: each name is judged once.
  bool is_sync(uint32_t name_id, const gpuhook::CaptureReader& reader) {
    if (name_id >= kCachedNames) return is_sync_call(reader.string(name_id));
    if (name_id >= sync_name_.size()) sync_name_.resize(size_t{name_id} + 1, 0);
    if (sync_name_[name_id] == 0) sync_name_[name_id] = is_sync_call(reader.string(name_id)) ? 2 : 1;
    return sync_name_[name_id] == 2;
  }
  static constexpr uint32_t kCachedNames = 1u << 20;
  std::vector<uint8_t> sync_name_;  // by name id: 0 not judged yet, 1 no, 2 a synchronize call
  const gpuhook::CaptureReader* reader_ = nullptr;
};

}  // namespace

std::optional<ScannedDiagnosis> diagnose_scan(const std::string& path, const DiagnoseScanOptions& options,
                                              std::string* why_not) {
  EventScanOptions so;
  so.load = options.load;
  so.threads = options.threads;
  so.join_nccl = true;
  EventScanner scanner(path, so);
  const auto refuse = [why_not](const std::string& why) -> std::optional<ScannedDiagnosis> {
    if (why_not) *why_not = why;
    return std::nullopt;
  };
  if (!scanner.refused().empty()) return refuse(scanner.refused());
  const Model& context = scanner.context();
  ScannedDiagnosis out;
  out.unusable = unusable_capture(context);
  if (!out.unusable.empty()) return out;
  std::vector<std::unique_ptr<DiagnoseShare>> shares;
  std::vector<EventConsumer*> consumers;
  for (size_t i = 0; i < scanner.shares(); ++i) {
    shares.push_back(std::make_unique<DiagnoseShare>(context));
    consumers.push_back(shares.back().get());
  }
  std::string why;
  if (!scanner.run(consumers, &why)) {
    for (const auto& sh : shares)
      if (!sh->needs_load.empty()) return refuse(sh->needs_load);
    return refuse(why);
  }
  out.warnings = scanner.warnings();
  out.corrupt = scanner.corrupt();
  DiagnoseWork& work = shares.front()->work;
  for (size_t i = 1; i < shares.size(); ++i) work.absorb(std::move(shares[i]->work));
  work.complete();
  out.late_events = work.late();
  out.busy_exact = work.busy_exact();
  const gpuhook::CaptureReader* reader = nullptr;
  for (const auto& sh : shares)
    if (!reader) reader = sh->reader();
  const WorkNames names{[reader](uint32_t id) { return reader ? std::string(reader->string(id)) : std::string(); },
                        [reader](uint32_t id) { return reader ? demangle(reader->string(id)) : std::string(); }};
  rules_on_work(work, names, out.report, nullptr);
  // The rules of records on a model of the records alone: without allocations or
  // point-to-point calls (those were loaded) they find what they find on the capture.
  Model records;
  {
    ModelBuilder builder(records);
    builder.begin_capture(path);
    v1::Record r;
    v1::MetricSample* x = r.mutable_metric_sample();
    for (const auto& sh : shares) {
      for (const Sample& s : sh->samples) {
        if (s.has_time) x->set_time_ns(s.time_ns);
        else x->clear_time_ns();
        x->set_value(s.value);
        x->set_device(s.device);
        x->set_metric(static_cast<v1::GpuMetric>(s.metric));
        builder.add(r);
      }
    }
    builder.end_capture({});
  }
  if (throttled_judges_kernels(records)) return refuse("a throttle stretch in the GPU counter samples (throttled judges the kernels that ran in it)");
  if (stalled_judges_kernels(records)) return refuse("PM sampling's SM-active samples (stalled judges the kernels that ran during them)");
  rule_records(records, out.report);
  say_what_imported_traces_lack(context, out.report);
  return out;
}

}  // namespace gantt::analysis
