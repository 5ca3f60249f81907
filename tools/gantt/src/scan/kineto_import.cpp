// torch.profiler/Kineto Chrome-trace JSON as capture records (TRACE-FORMATS.md, part A; the
// field layout as libkineto's output_json.cpp writes it).
//
// One pass over the text, in the memory of one event: the records go into an in-memory
// capture whose chunks are spooled to an anonymous file as they fill; what the header needs
// (baseTimeNanoseconds and distributedInfo may come after traceEvents, the devices, the host
// process, whether CUPTI's synchronisation records are there) is learnt on the way, and the
// header is written before the spooled chunks are appended. A second pass would cost as much
// again: parsing is most of an import's time. Only the NCCL kernels, the annotation ranges and
// the syncs taken from blocking calls are held to the end (each a small fraction of a trace).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gpuhook/capture.h>
#include <gpuhook/nccl_types.h>
#include <gpuhook/version.h>

#include "frame_spool.h"
#include "gantt/scan/trace_import.h"
#include "kineto_json.h"
#include "kineto_mapping.h"
#include "text_source.h"

namespace gantt::scan {

namespace v1 = gpuhook::v1;
using gpuhook::CaptureError;
using gpuhook::CaptureErrorKind;
using namespace kineto;

constexpr uint32_t kHookExternalKind = 5;  // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2

// Times are ns below 2^62 (parse_us_as_ns), the base too: base + ts + dur fits in an int64.
constexpr int64_t kMaxNs = int64_t{1} << 62;

namespace {

[[noreturn]] void bad(const std::string& path, uint64_t offset, const std::string& what) {
  throw CaptureError(CaptureErrorKind::kBadRecord, path, offset, what);
}

// What the header needs, learnt during the pass.
struct Survey {
  int64_t base_ns = 0;
  std::string host_name;
  std::optional<int32_t> rank, world_size;
  std::vector<v1::DeviceInfo> devices;
  std::set<uint32_t> devices_seen;             // by the GPU events, for traces without deviceProperties
  std::map<int64_t, uint64_t> host_pid_events;  // pid -> host events
  bool has_cuda_sync = false;
  bool has_nccl = false;
  std::optional<int64_t> first_rel_ns, last_rel_ns;
  // c10d's record_param_comms ops by External id: where older PyTorch put a collective's
  // facts, which its NCCL kernel (same External id) then lacks.
  std::map<int64_t, std::map<std::string, JsonScalar, std::less<>>> comms_by_external_id;
};

// The keys c10d writes about a collective (TRACE-FORMATS.md, A8).
constexpr std::string_view kCommsKeys[] = {"Collective name", "In msg nelems", "dtype", "Group size",
                                           "Process Group Name", "Seq", "Src Rank", "Dst Rank"};
constexpr size_t kMaxCommsOps = size_t{1} << 20;

class Importer {
 public:
  Importer(const std::string& path, int fd, bool gzip, gpuhook::CaptureWriter& out)
      : path_(path), fd_(fd), gzip_(gzip), final_(out), spool_(path) {}

  void run() {
    gpuhook::WriterOptions options;
    options.zstd_level = 1;  // read once, a moment later: speed over size
    options.sink = &spool_;
    std::string error;
    body_ = gpuhook::CaptureWriter::in_memory(options, &error);
    if (!body_) throw CaptureError(CaptureErrorKind::kIo, path_, 0, "cannot write the imported capture: " + error);
    convert();
    write_thread_names();
    write_blocking_syncs();
    write_ranges();
    write_nccl();
    if (!body_->close()) {
      throw CaptureError(CaptureErrorKind::kIo, path_, 0, "cannot write the imported capture: " + body_->last_error());
    }
    write_header();
    final_.flush();
    spool_.append_to(final_);
    write_footer();
  }

 private:
  // What the header needs, learnt from each event.
  void survey_event(const JsonEvent& e) {
    if (!e.cat.present) return;
    const std::string_view cat = e.cat.text;
    if (e.ph.text == "X" && (is_gpu_category(cat) || is_host_category(cat))) {
      const int64_t ts = event_ts(e);
      const int64_t end = ts + event_dur(e);
      if (!s_.first_rel_ns || ts < *s_.first_rel_ns) s_.first_rel_ns = ts;
      if (!s_.last_rel_ns || end > *s_.last_rel_ns) s_.last_rel_ns = end;
    }
    if (is_gpu_category(cat)) {
      if (s_.devices_seen.size() < 1024) s_.devices_seen.insert(device_of(e));
      if (cat == "cuda_sync") s_.has_cuda_sync = true;
      if (cat == "kernel" && is_nccl_kernel(e.name.text)) s_.has_nccl = true;
    } else if (is_host_category(cat)) {
      int64_t pid = 0;
      if (as_int(&e.pid, &pid) && s_.host_pid_events.size() < 4096) ++s_.host_pid_events[pid];
      int64_t external_id = 0;
      if (cat == "cpu_op" && e.name.text == "record_param_comms" && as_int(e.arg_scalar("External id"), &external_id) &&
          s_.comms_by_external_id.size() < kMaxCommsOps) {
        auto& facts = s_.comms_by_external_id[external_id];
        for (std::string_view key : kCommsKeys) {
          if (const JsonScalar* v = e.arg_scalar(key)) facts.emplace(std::string(key), *v);
        }
      }
    }
  }

  // ---- times ----
  int64_t event_ts(const JsonEvent& e) const {
    int64_t ns = 0;
    if (!e.ts.present) bad(path_, e.offset, "an event without ts");
    if (e.ts.is_string || !parse_us_as_ns(e.ts.text, &ns)) {
      bad(path_, e.offset, "ts is not a finite, non-negative time in µs: " + excerpt(e.ts.text));
    }
    return ns;
  }
  int64_t event_dur(const JsonEvent& e) const {
    int64_t ns = 0;
    if (!e.dur.present) return 0;
    if (e.dur.is_string || !parse_us_as_ns(e.dur.text, &ns)) {
      bad(path_, e.offset, "dur is not a finite, non-negative duration in µs: " + excerpt(e.dur.text));
    }
    if (ns > kMaxNs - event_ts(e)) bad(path_, e.offset, "ts + dur is past 2^62 ns");
    return ns;
  }
  // A record's time: ts, plus baseTimeNanoseconds when it came before the events (convert()).
  // ts and the base are each at most 2^62, so the sum fits.
  int64_t time_of(int64_t rel_ns) const { return offset_ns_ + rel_ns; }

  static uint32_t device_of(const JsonEvent& e) {
    const JsonScalar* d = e.arg_scalar("device");
    return d != nullptr ? u32_or(d, 0) : u32_or(&e.pid, 0);
  }
  static uint32_t stream_of(const JsonEvent& e) {
    const JsonScalar* s = e.arg_scalar("stream");
    return s != nullptr ? u32_or(s, 0) : u32_or(&e.tid, 0);
  }
  // Host rows: the OS tid (negative in traces from before Kineto's sanitizeTid, 2024-10).
  static uint64_t thread_of(const JsonEvent& e) {
    int64_t tid = 0;
    if (!as_int(&e.tid, &tid)) return 0;
    return static_cast<uint64_t>(tid < 0 ? -tid : tid);
  }

  // ---- header ----
  void write_header() {
    int64_t host_pid = 0;
    uint64_t most = 0;
    for (const auto& [pid, n] : s_.host_pid_events) {
      if (n > most) {
        most = n;
        host_pid = pid;
      }
    }
    const int64_t first_rel = s_.first_rel_ns.value_or(0);
    v1::Record r;
    v1::Header* h = r.mutable_header();
    h->set_format_version(gpuhook::kFormatVersion);
    // ", read by gantt-cli" marks an imported trace for the loaders (load.cpp).
    h->set_tool_version(std::string("torch.profiler (Kineto) JSON trace, read by gantt-cli ") + GPUHOOK_VERSION);
    h->set_host_name(s_.host_name);
    h->set_pid(clamp_u32(host_pid));
    if (s_.rank) h->set_rank(*s_.rank);
    if (s_.world_size) h->set_world_size(*s_.world_size);
    // The records' clock and the wall clock, paired at the first event (both within 2^63).
    h->set_start_monotonic_raw_ns(static_cast<uint64_t>(offset_ns_) + static_cast<uint64_t>(first_rel));
    h->set_start_realtime_ns(static_cast<uint64_t>(s_.base_ns) + static_cast<uint64_t>(first_rel));
    h->set_clock_domain(offset_ns_ == s_.base_ns ? "CLOCK_REALTIME (Kineto)" : "Kineto ts (baseTimeNanoseconds after the events)");
    uint64_t features = v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_SYSTEM_THREAD_IDS;
    if (s_.has_nccl) features |= v1::FEATURE_NCCL;
    h->set_features(features);
    final_.write(r);
    std::set<uint32_t> described;
    for (const v1::DeviceInfo& d : s_.devices) {
      if (!described.insert(d.ordinal()).second) continue;
      v1::Record dr;
      *dr.mutable_device() = d;
      final_.write(dr);
    }
    for (uint32_t id : s_.devices_seen) {
      if (described.count(id) != 0) continue;
      // A device the GPU events use and deviceProperties does not describe (ROCm traces have
      // none): its ordinal only, so occupancy is unknown rather than wrong.
      v1::Record dr;
      dr.mutable_device()->set_ordinal(id);
      final_.write(dr);
    }
    notice(
        "read from a torch.profiler (Kineto) trace: queued and submitted times are unknown (Kineto does not "
        "ask CUPTI for them), so launch-to-start is not split into queue and submit stages");
    if (!s_.has_cuda_sync) {
      notice("the trace has no cuda_sync events (Kineto before 2023-06): synchronisation is taken from the "
             "blocking CUDA calls, without their streams");
    }
  }

  void notice(const std::string& text) {
    v1::Record r;
    r.mutable_notice()->set_kind(v1::NOTICE_UNKNOWN);
    r.mutable_notice()->set_time_ns(time_of(s_.first_rel_ns.value_or(0)));
    r.mutable_notice()->set_text(text);
    final_.write(r);
  }

  // ---- the pass ----
  void convert() {
    TextSource text(path_, fd_, gzip_);
    JsonTraceHandlers h;
    h.metadata = [&](std::string_view key, const JsonScalar& v) {
      if (key == "baseTimeNanoseconds") {
        int64_t base = 0;
        if (!as_int(&v, &base) || base < 0 || base >= kMaxNs) {
          bad(path_, 0, "baseTimeNanoseconds is not a non-negative integer: " + excerpt(v.text));
        }
        s_.base_ns = base;
      } else if (key == "host_name" && v.is_string) {
        s_.host_name = v.text;
      }
    };
    h.device = [&](const JsonObject& o) {
      if (s_.devices.size() < 1024) s_.devices.push_back(device_info_of(o));
    };
    h.distributed = [&](const JsonObject& o) {
      int64_t v = 0;
      if (as_int(o.get("rank"), &v) && v >= 0 && v < INT32_MAX) s_.rank = static_cast<int32_t>(v);
      if (as_int(o.get("world_size"), &v) && v > 0 && v < INT32_MAX) s_.world_size = static_cast<int32_t>(v);
    };
    h.event = [&](const JsonEvent& e) {
      if (!clock_fixed_) {
        // Records carry baseTimeNanoseconds + ts when the base came before the events (every
        // trace since 2025-03), else ts as it is: the header's clock pair then says where the
        // base puts it (Kineto between 2024-05 and 2025-03 wrote the base after traceEvents).
        clock_fixed_ = true;
        offset_ns_ = s_.base_ns;
      }
      survey_event(e);
      convert_event(e);
    };
    read_json_trace(path_, text, h);
  }

  void convert_event(const JsonEvent& e) {
    if (e.ph.text == "M") return thread_name(e);
    if (e.ph.text != "X" || !e.cat.present) return;
    const std::string_view cat = e.cat.text;
    if (cat == "kernel") return kernel(e);
    if (cat == "gpu_memcpy") return copy(e);
    if (cat == "gpu_memset") return fill(e);
    if (cat == "cuda_runtime" || cat == "cuda_driver") return api(e, cat == "cuda_driver");
    if (cat == "cuda_sync") return sync(e);
    if (cat == "user_annotation" || (cat == "cpu_op" && starts_with(e.name.text, "ProfilerStep#"))) return range(e);
  }

  // Thread names of the host process, known only at the end: kept until then (a few per trace).
  void thread_name(const JsonEvent& e) {
    if (e.name.text != "thread_name") return;
    int64_t pid = 0;
    const JsonScalar* name = e.arg_scalar("name");
    if (!as_int(&e.pid, &pid) || name == nullptr || thread_names_.size() >= kMaxThreadNames) return;
    thread_names_.push_back(ThreadName{pid, thread_of(e), body_->intern(name->text)});
  }

  void write_thread_names() {
    for (const ThreadName& t : thread_names_) {
      if (s_.host_pid_events.count(t.pid) == 0) continue;
      v1::Record r;
      r.mutable_thread()->set_thread_id(t.thread_id);
      r.mutable_thread()->set_name_id(t.name_id);
      body_->write(r);
    }
  }

  void kernel(const JsonEvent& e) {
    const int64_t start = time_of(event_ts(e));
    gpuhook::KernelFields k;
    k.name_id = body_->intern(e.name.text);
    k.device = device_of(e);
    k.context = u32_or(e.arg_scalar("context"), 0);
    k.stream = stream_of(e);
    k.correlation_id = u32_or(e.arg_scalar("correlation"), 0);
    k.start_ns = start;
    k.end_ns = start + event_dur(e);
    auto dims = [&](std::string_view key, int32_t* x, int32_t* y, int32_t* z) {
      const JsonArg* a = e.arg(key);
      int32_t* out[3] = {x, y, z};
      for (size_t i = 0; i < 3; ++i) {
        JsonScalar item;
        item.present = a != nullptr && a->is_array && i < a->items.size();
        if (item.present) item.text = a->items[i];
        *out[i] = static_cast<int32_t>(std::clamp<int64_t>(int_or(&item, 0), 0, INT32_MAX));
      }
    };
    dims("grid", &k.grid_x, &k.grid_y, &k.grid_z);
    dims("block", &k.block_x, &k.block_y, &k.block_z);
    k.registers_per_thread = u32_or(e.arg_scalar("registers per thread"), 0);
    // Kineto writes static + dynamic as one figure; occupancy needs only the sum.
    k.static_shared_memory_bytes = clamp_u32(int_or(e.arg_scalar("shared memory"), 0));
    k.graph_id = static_cast<uint64_t>(std::max<int64_t>(0, int_or(e.arg_scalar("graph id"), 0)));
    k.graph_node_id = static_cast<uint64_t>(std::max<int64_t>(0, int_or(e.arg_scalar("graph node id"), 0)));
    k.stream_priority = static_cast<int32_t>(std::clamp<int64_t>(int_or(e.arg_scalar("priority"), 0), INT32_MIN, INT32_MAX));
    body_->write(k);
    if (is_nccl_kernel(e.name.text)) keep_nccl(e, k);
  }

  // A GPU activity's times and where it ran (Memcpy, Memset, Synchronization share the fields).
  template <class Activity>
  void place(const JsonEvent& e, Activity* a) const {
    const int64_t start = time_of(event_ts(e));
    a->set_start_ns(start);
    a->set_end_ns(start + event_dur(e));
    a->set_device(device_of(e));
    a->set_context(u32_or(e.arg_scalar("context"), 0));
    a->set_stream(stream_of(e));
    a->set_correlation_id(u32_or(e.arg_scalar("correlation"), 0));
  }

  void copy(const JsonEvent& e) {
    v1::Record r;
    v1::Memcpy* m = r.mutable_memcpy();
    m->set_copy_kind(copy_kind_of(e.name.text));
    const auto [src, dst] = memory_kinds_in(e.name.text);
    m->set_src_kind(src);
    m->set_dst_kind(dst);
    m->set_bytes(static_cast<uint64_t>(std::max<int64_t>(0, int_or(e.arg_scalar("bytes"), 0))));
    place(e, m);
    m->set_src_device(u32_or(e.arg_scalar("fromDevice"), m->device()));
    m->set_dst_device(u32_or(e.arg_scalar("toDevice"), m->device()));
    body_->write(r);
  }

  void fill(const JsonEvent& e) {
    v1::Record r;
    v1::Memset* m = r.mutable_memset();
    m->set_bytes(static_cast<uint64_t>(std::max<int64_t>(0, int_or(e.arg_scalar("bytes"), 0))));
    place(e, m);
    m->set_memory_kind(memory_kinds_in(e.name.text).first);
    body_->write(r);
  }

  void api(const JsonEvent& e, bool driver) {
    const int64_t start = time_of(event_ts(e));
    const int64_t end = start + event_dur(e);
    gpuhook::ApiFields a;
    a.domain = driver ? v1::API_DOMAIN_DRIVER : v1::API_DOMAIN_RUNTIME;
    a.cbid = u32_or(e.arg_scalar("cbid"), 0);
    a.name_id = body_->intern(e.name.text);
    a.thread_id = thread_of(e);
    a.start_ns = start;
    a.end_ns = end;
    a.correlation_id = u32_or(e.arg_scalar("correlation"), 0);
    body_->write(a);
    const v1::SyncType type = sync_type_of_call(e.name.text);
    if (type != v1::SYNC_UNKNOWN && !s_.has_cuda_sync) blocking_.push_back(BlockingCall{type, start, end, a.correlation_id});
  }

  // Traces from before cuda_sync (2023-06): the blocking calls say where the host waited. Known
  // to be needed only at the end, when no cuda_sync event came.
  void write_blocking_syncs() {
    if (s_.has_cuda_sync) return;
    for (const BlockingCall& b : blocking_) {
      v1::Record r;
      v1::Synchronization* s = r.mutable_sync();
      s->set_type(b.type);
      s->set_start_ns(b.start_ns);
      s->set_end_ns(b.end_ns);
      s->set_correlation_id(b.correlation_id);
      body_->write(r);
    }
  }

  void sync(const JsonEvent& e) {
    v1::Record r;
    v1::Synchronization* s = r.mutable_sync();
    s->set_type(sync_type_of_event(e.name.text));
    place(e, s);
    s->set_event_id(u32_or(e.arg_scalar("wait_on_cuda_event_id"), 0));
    body_->write(r);
  }

  // A record_function range on its thread. Kept to the end: written as push/pop in nesting
  // order, so that each launch gets its innermost range as an NVTX push/pop range would give it.
  void range(const JsonEvent& e) {
    const int64_t start = time_of(event_ts(e));
    ranges_.push_back(HostRange{thread_of(e), start, start + event_dur(e), body_->intern(step_range_name(e.name.text))});
  }

  // Kineto writes slices per buffer, not in time order, and with_stack=True makes them overlap
  // (TRACE-FORMATS.md, A11): per thread, by start (the longer first at equal starts), a range
  // that outlives the one it starts in is cut at that one's end.
  void write_ranges() {
    std::sort(ranges_.begin(), ranges_.end(), [](const HostRange& a, const HostRange& b) {
      return std::tie(a.thread, a.start_ns, b.end_ns) < std::tie(b.thread, b.start_ns, a.end_ns);
    });
    std::vector<int64_t> open;  // the ends of the ranges open on the current thread
    uint64_t thread = 0;
    auto emit = [&](v1::RangeType type, uint64_t tid, int64_t t, uint32_t name) {
      v1::Record r;
      v1::Range* g = r.mutable_range();
      g->set_type(type);
      g->set_name_id(name);
      g->set_thread_id(tid);
      g->set_time_ns(t);
      body_->write(r);
    };
    auto close_until = [&](int64_t t) {
      while (!open.empty() && open.back() <= t) {
        emit(v1::RANGE_POP, thread, open.back(), 0);
        open.pop_back();
      }
    };
    for (const HostRange& r : ranges_) {
      if (r.thread != thread) {
        close_until(INT64_MAX);
        thread = r.thread;
      }
      close_until(r.start_ns);
      const int64_t end = open.empty() ? r.end_ns : std::min(r.end_ns, open.back());
      emit(v1::RANGE_PUSH, thread, r.start_ns, r.name_id);
      open.push_back(end);
    }
    close_until(INT64_MAX);
    ranges_.clear();
  }

  // ---- NCCL ----
  // Where the collective's facts are depends on the PyTorch version (TRACE-FORMATS.md, A8): on
  // the kernel since 2024-05; before that only the kernel's name says which collective.
  struct HostRange {
    uint64_t thread;
    int64_t start_ns, end_ns;
    uint32_t name_id;
  };

  // What a collective's NCCL kernel says of it; the rest comes from its record_param_comms op,
  // which may come later in the file, so the facts are settled in write_nccl().
  struct NcclKernel {
    uint32_t correlation_id, device, stream;
    int64_t start_ns, end_ns;
    std::string kernel_name;         // says the op when no "Collective name" does
    int64_t external_id;             // -1: none
    std::map<std::string, JsonScalar, std::less<>> facts;  // kCommsKeys on the kernel itself
  };

  void keep_nccl(const JsonEvent& e, const gpuhook::KernelFields& k) {
    NcclKernel n{};
    n.correlation_id = k.correlation_id;
    n.device = k.device;
    n.stream = k.stream;
    n.start_ns = k.start_ns;
    n.end_ns = k.end_ns;
    n.kernel_name = e.name.text;
    n.external_id = int_or(e.arg_scalar("External id"), -1);
    for (std::string_view key : kCommsKeys) {
      if (const JsonScalar* v = e.arg_scalar(key)) n.facts.emplace(std::string(key), *v);
    }
    nccl_.push_back(std::move(n));
  }

  // A collective's fact: on the kernel itself (PyTorch since 2024-05), else on the
  // record_param_comms op with the kernel's External id.
  const JsonScalar* comms_fact(const NcclKernel& n, std::string_view key) const {
    if (const auto v = n.facts.find(key); v != n.facts.end()) return &v->second;
    const auto op = s_.comms_by_external_id.find(n.external_id);
    if (n.external_id < 0 || op == s_.comms_by_external_id.end()) return nullptr;
    const auto v = op->second.find(key);
    return v == op->second.end() ? nullptr : &v->second;
  }

  struct Collective {
    v1::NcclOp op;
    uint64_t count;
    int32_t datatype, nranks, peer;
    uint64_t comm_id;
    int64_t seq;  // -1: none in the trace
  };

  Collective collective_of(const NcclKernel& n) const {
    Collective c{};
    const JsonScalar* name = comms_fact(n, "Collective name");
    c.op = nccl_op_of(name != nullptr ? std::string_view(name->text) : std::string_view(), n.kernel_name);
    c.count = static_cast<uint64_t>(std::max<int64_t>(0, int_or(comms_fact(n, "In msg nelems"), 0)));
    const JsonScalar* dtype = comms_fact(n, "dtype");
    c.datatype = dtype != nullptr ? nccl_datatype_of(dtype->text) : -1;
    c.nranks = static_cast<int32_t>(
        std::clamp<int64_t>(int_or(comms_fact(n, "Group size"), s_.world_size.value_or(0)), 0, INT32_MAX));
    const JsonScalar* peer = c.op == v1::NCCL_SEND ? comms_fact(n, "Dst Rank") : comms_fact(n, "Src Rank");
    c.peer = static_cast<int32_t>(std::clamp<int64_t>(int_or(peer, -1), -1, INT32_MAX));
    const JsonScalar* pg = comms_fact(n, "Process Group Name");
    c.comm_id = fnv1a(pg != nullptr ? std::string_view(pg->text) : std::string_view("default_pg"));
    c.seq = int_or(comms_fact(n, "Seq"), -1);
    return c;
  }

  void write_nccl() {
    if (nccl_.empty()) return;
    // Without c10d's Seq, each stream's collectives are numbered in time order: every rank
    // issues a communicator's collectives in the same order on its stream.
    std::sort(nccl_.begin(), nccl_.end(), [](const NcclKernel& a, const NcclKernel& b) {
      return std::tie(a.device, a.stream, a.start_ns) < std::tie(b.device, b.stream, b.start_ns);
    });
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> next_seq, next_p2p;  // (comm, device<<32|stream)
    for (const NcclKernel& n : nccl_) {
      const Collective k = collective_of(n);
      const uint32_t name = body_->intern(nccl_entry_point(k.op));
      const uint64_t external_id = ++external_ids_;
      v1::Record x;
      // The kind the hook pushes around its NCCL calls (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2,
      // libhook/cupti_tracer.h), which the model joins collectives to their kernels by.
      x.mutable_external_correlation()->set_kind(kHookExternalKind);
      x.mutable_external_correlation()->set_external_id(external_id);
      x.mutable_external_correlation()->set_correlation_id(n.correlation_id);
      body_->write(x);
      v1::Record r;
      v1::NcclCall* c = r.mutable_nccl();
      c->set_op(k.op);
      c->set_name_id(name);
      c->set_count(k.count);
      c->set_datatype(k.datatype);
      const uint64_t size = k.datatype >= 0 ? gpuhook::nccl_datatype_bytes(k.datatype) : 0;
      c->set_bytes(size != 0 && k.count <= UINT64_MAX / size ? k.count * size : 0);
      c->set_reduce_op(-1);
      c->set_root_or_peer(k.peer);
      c->set_comm_id(k.comm_id);
      c->set_rank(s_.rank.value_or(-1));
      c->set_nranks(k.nranks);
      // The host call's own times are not in the trace: the kernel's stand in.
      c->set_start_ns(n.start_ns);
      c->set_end_ns(n.end_ns);
      c->set_device(static_cast<int32_t>(n.device));
      c->set_cuda_stream_id(n.stream);
      c->set_external_id(external_id);
      const std::pair<uint64_t, uint64_t> key{k.comm_id, (uint64_t{n.device} << 32) | n.stream};
      if (gpuhook::nccl_op_is_point_to_point(static_cast<uint32_t>(k.op))) {
        c->set_p2p_sequence(next_p2p[key]++);
      } else {
        c->set_sequence(k.seq >= 0 ? static_cast<uint64_t>(k.seq) : next_seq[key]++);
      }
      body_->write(r);
    }
  }

  void write_footer() {
    v1::Record r;
    const uint64_t last_rel = static_cast<uint64_t>(s_.last_rel_ns.value_or(0));
    r.mutable_footer()->set_end_monotonic_raw_ns(static_cast<uint64_t>(offset_ns_) + last_rel);
    r.mutable_footer()->set_end_realtime_ns(static_cast<uint64_t>(s_.base_ns) + last_rel);
    r.mutable_footer()->set_records(final_.stats().records);
    r.mutable_footer()->set_clean(true);
    final_.write(r);
  }

  struct ThreadName {
    int64_t pid;
    uint64_t thread_id;
    uint32_t name_id;
  };
  struct BlockingCall {
    v1::SyncType type;
    int64_t start_ns, end_ns;
    uint32_t correlation_id;
  };
  static constexpr size_t kMaxThreadNames = 65536;

  const std::string& path_;
  int fd_;
  bool gzip_;
  gpuhook::CaptureWriter& final_;  // the capture: header, then the spooled chunks, then the footer
  FrameSpool spool_;
  std::unique_ptr<gpuhook::CaptureWriter> body_;  // every other record, into spool_
  bool clock_fixed_ = false;
  int64_t offset_ns_ = 0;
  std::vector<ThreadName> thread_names_;
  std::vector<BlockingCall> blocking_;
  Survey s_;
  std::vector<HostRange> ranges_;
  uint64_t external_ids_ = 0;
  std::vector<NcclKernel> nccl_;
};

}  // namespace

void import_kineto(const std::string& path, int fd, bool gzip, gpuhook::CaptureWriter& out) {
  Importer(path, fd, gzip, out).run();
}

}  // namespace gantt::scan
