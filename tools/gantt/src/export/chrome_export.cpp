// Chrome trace JSON (the Trace Event Format), for Perfetto UI and chrome://tracing.
//
// Layout: one process per GPU device with one track per stream; one process per capture for
// the host with one track per OS thread (API calls and NCCL calls) and one per thread for
// its NVTX ranges. Viewers drop or mis-nest "X" slices that overlap on one track without
// nesting, so any slice that would do that goes to an extra track ("stream 7 #2").
// Timestamps are microseconds from the model's first time, printed from integer ns with
// three decimals: no rounding through binary floating point. A kernel's queued and submitted
// stages are nestable async slices on its stream; each device has a counter track of the
// kernels and copies running and the kernels queued, and one per GPU counter the hook sampled
// (NVML: "GPU util %", "SM MHz", "power W", ...).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gantt/analysis/metrics.h"
#include "gantt/export/export.h"
#include "gantt/model/json.h"
#include "gantt/ranks/ranks.h"
#include "chrome_lanes.h"

namespace gantt {
namespace {

using exporting::LaneAssigner;

constexpr uint32_t kHostPidBase = 1'000'000;  // host processes after the device processes

struct Slice {
  uint64_t start = 0, end = 0;
  uint32_t row = 0;  // event, API, range or NCCL row
  uint8_t what = 0;  // 0 GPU event, 1 API call, 2 NVTX range, 3 NCCL call
};

struct Track {
  uint32_t pid = 0;
  uint32_t tid = 0;
  std::string name;
  uint32_t sort = 0;
};

class ChromeExporter : public Exporter {
 public:
  std::string_view format() const override { return "chrome"; }
  std::string_view description() const override {
    return "Chrome trace JSON for Perfetto UI / chrome://tracing (devices, streams, host threads, NVTX, flows)";
  }
  void write(const Model& m, const Selection& sel, const ExportOptions&, std::ostream& os) const override;
  bool scans() const override { return true; }
  bool write_scanned(const std::vector<std::string>& paths, const ScanExportOptions& o, const OpenOutput& open_output,
                     ScannedExport* result, std::string* why_not) const override {
    return exporting::write_chrome_scanned(paths, o, open_output, result, why_not);
  }
};

const char* memory_kind_name(uint8_t kind) {
  switch (kind) {
    case gpuhook::v1::MEMORY_PAGEABLE: return "pageable host";
    case gpuhook::v1::MEMORY_PINNED: return "pinned host";
    case gpuhook::v1::MEMORY_DEVICE: return "device";
    case gpuhook::v1::MEMORY_ARRAY: return "array";
    case gpuhook::v1::MEMORY_MANAGED: return "managed";
    case gpuhook::v1::MEMORY_DEVICE_STATIC: return "device static";
    case gpuhook::v1::MEMORY_MANAGED_STATIC: return "managed static";
    default: return "other";
  }
}

void ts(std::string& o, uint64_t t, uint64_t base) { json::append_us_from_ns(o, static_cast<int64_t>(t - base)); }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void ChromeExporter::write(const Model& m, const Selection& sel, const ExportOptions&, std::ostream& os) const {
  // The time origin: the earliest time of anything written, so no timestamp is negative.
  uint64_t base = m.first_ns();
  const uint64_t w0 = sel.window_start_ns, w1 = sel.window_end_ns;
  // Without an asked-for window every host record is written: the API calls before the first
  // kernel (allocation, set-up) and after the last are part of the program's story.
  const auto in_window = [&](uint64_t s, uint64_t e) { return w1 == 0 || sel.window_fitted || (e >= w0 && s <= w1); };
  for (uint32_t e : sel.events)
    if (m.events.start_ns[e] && m.events.start_ns[e] < base) base = m.events.start_ns[e];

  // Host slices: API calls, NCCL calls and NVTX ranges that overlap the window (all of them
  // when none was asked for).
  std::vector<Slice> host;
  for (uint32_t a = 0; a < m.api.size(); ++a)
    if (m.api.start_ns[a] && m.api.end_ns[a] >= m.api.start_ns[a] && in_window(m.api.start_ns[a], m.api.end_ns[a]))
      host.push_back({m.api.start_ns[a], m.api.end_ns[a], a, 1});
  for (uint32_t r = 0; r < m.ranges.size(); ++r)
    if (m.ranges.start_ns[r] && m.ranges.end_ns[r] >= m.ranges.start_ns[r] && in_window(m.ranges.start_ns[r], m.ranges.end_ns[r]))
      host.push_back({m.ranges.start_ns[r], m.ranges.end_ns[r], r, 2});
  for (uint32_t n = 0; n < m.nccl.size(); ++n)
    if (m.nccl.start_ns[n] && m.nccl.end_ns[n] >= m.nccl.start_ns[n] && in_window(m.nccl.start_ns[n], m.nccl.end_ns[n]))
      host.push_back({m.nccl.start_ns[n], m.nccl.end_ns[n], n, 3});
  std::stable_sort(host.begin(), host.end(), [](const Slice& a, const Slice& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;  // the enclosing one first, so the other nests
    return a.what < b.what;
  });
  for (const Slice& h : host) if (h.start < base) base = h.start;  // never negative ts
  // GPU counter samples start with CUDA, before the first record of the program's own.
  for (size_t i = 0; i < m.metrics.size(); ++i) {
    const uint64_t t = m.metrics.time_ns[i];
    if (t != 0 && t < base && (!sel.window_asked || (t >= w0 && t <= w1))) base = t;
  }
  std::string head = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"gantt-cli export --format chrome\","
                     "\"time_origin_ns\":" + std::to_string(base);
  if (!sel.description.empty()) {
    head += ",\"selection\":";
    json::append_string(head, sel.description);
  }
  head += "},\n\"traceEvents\":[\n";
  os << head;
  // Track ids are handed out in a fixed order so the bytes are deterministic.
  std::map<std::tuple<uint32_t, std::string, size_t>, uint32_t> tid_of;  // (pid, track, lane)
  std::vector<Track> tracks;
  std::map<uint32_t, std::string> processes;
  const auto track = [&](uint32_t pid, const std::string& name, size_t lane, uint32_t sort) {
    auto [it, fresh] = tid_of.try_emplace({pid, name, lane}, static_cast<uint32_t>(tracks.size() + 1));
    if (fresh) tracks.push_back({pid, it->second, lane ? name + " #" + std::to_string(lane + 1) : name, sort});
    return it->second;
  };
  const auto device_pid = [&](uint16_t c, uint32_t d) {
    const uint32_t pid = 1 + c * 1024u + (d & 1023u);
    if (!processes.count(pid)) {
      std::string name = (m.captures.size() > 1 ? "capture " + std::to_string(c) + " " : std::string()) + "GPU " + std::to_string(d);
      if (c < m.captures.size())
        if (const auto* info = m.captures[c].device(d)) name += " (" + info->name() + ")";
      processes[pid] = name;
    }
    return pid;
  };
  const auto host_pid = [&](uint16_t c) {
    const uint32_t pid = kHostPidBase + c;
    if (!processes.count(pid)) {
      std::string name = "host";
      if (c < m.captures.size()) {
        const auto& h = m.captures[c].header;
        name += " pid " + std::to_string(h.pid());
        if (h.has_rank()) name += " rank " + std::to_string(h.rank());
      }
      processes[pid] = name;
    }
    return pid;
  };

  // Events are written out in chunks, so memory does not grow with the trace; the process
  // and track names (metadata events may appear anywhere) follow at the end.
  std::string body;
  bool first = true;
  const auto open_event = [&]() {
    if (body.size() > (1u << 20)) {
      os.write(body.data(), static_cast<std::streamsize>(body.size()));
      body.clear();
    }
    if (!first) body += ",\n";
    first = false;
  };

  // NCCL calls by the GPU event they launched: their arguments go on the kernel slice.
  const std::vector<uint32_t> nccl_of = m.nccl_call_of_events();

  // GPU slices, per (device, stream), in start order.
  std::vector<uint32_t> gpu;
  for (uint32_t e : sel.events)
    if (m.events.start_ns[e] && m.events.end_ns[e] >= m.events.start_ns[e]) gpu.push_back(e);
  std::stable_sort(gpu.begin(), gpu.end(), [&](uint32_t a, uint32_t b) {
    return m.events.start_ns[a] != m.events.start_ns[b] ? m.events.start_ns[a] < m.events.start_ns[b]
                                                        : m.events.end_ns[a] > m.events.end_ns[b];
  });
  std::map<std::tuple<uint16_t, uint32_t, uint32_t>, LaneAssigner> stream_lanes;
  std::vector<std::pair<uint32_t, uint32_t>> gpu_track(m.events.size(), {0, 0});  // (pid, tid) of each placed event
  std::vector<uint8_t> placed(m.events.size(), 0);
  for (uint32_t e : gpu) {
    const uint16_t c = m.events.capture[e];
    const uint32_t d = m.events.device[e], s = m.events.stream[e];
    const uint32_t pid = device_pid(c, d);
    const size_t lane = stream_lanes[{c, d, s}].place(m.events.start_ns[e], m.events.end_ns[e]);
    const uint32_t tid = track(pid, "stream " + std::to_string(s), lane, s);
    gpu_track[e] = {pid, tid};
    placed[e] = 1;
    open_event();
    body += "{\"ph\":\"X\",\"cat\":";
    json::append_string(body, to_string(m.events.kind[e]));
    body += ",\"name\":";
    if (m.events.kind[e] == EventKind::kMemcpy)
      json::append_string(body, std::string("Memcpy ") + copy_kind_name(m.events.copy_kind[e]));
    else if (m.events.kind[e] == EventKind::kMemset)
      json::append_string(body, "Memset");
    else
      json::append_string(body, m.display_name(e));
    body += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
    ts(body, m.events.start_ns[e], base);
    body += ",\"dur\":";
    json::append_us_from_ns(body, static_cast<int64_t>(m.events.end_ns[e] - m.events.start_ns[e]));
    body += ",\"args\":{\"stream\":" + std::to_string(s) + ",\"correlation_id\":" + std::to_string(m.events.correlation_id[e]);
    if (m.events.bytes[e]) body += ",\"bytes\":" + std::to_string(m.events.bytes[e]);
    if (m.events.kind[e] == EventKind::kKernel || m.events.kind[e] == EventKind::kNccl) {
      const auto& g = m.events.grid[e];
      const auto& b = m.events.block[e];
      body += ",\"grid\":\"" + std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]) +
              "\",\"block\":\"" + std::to_string(b[0]) + "x" + std::to_string(b[1]) + "x" + std::to_string(b[2]) +
              "\",\"registers_per_thread\":" + std::to_string(m.events.registers_per_thread[e]);
      const Stages st = m.stages(e);
      if (st.queued_to_start_ns) body += ",\"queued_to_start_ns\":" + std::to_string(*st.queued_to_start_ns);
      if (st.launch_to_queued_ns) body += ",\"launch_to_queued_ns\":" + std::to_string(*st.launch_to_queued_ns);
      if (!std::isnan(m.events.occupancy[e])) {
        body += ",\"occupancy\":";
        json::append_number(body, m.events.occupancy[e], 4);
      }
    }
    if (m.events.range[e] != kNone) {
      body += ",\"range\":";
      json::append_string(body, m.range_path(e));
    }
    if (const uint32_t n = nccl_of[e]; n != kNone) {
      body += ",\"nccl_op\":";
      json::append_string(body, nccl_op_name(m.nccl.op[n]));
      body += ",\"nccl_count\":" + std::to_string(m.nccl.count[n]) + ",\"nccl_datatype\":" +
              std::to_string(m.nccl.datatype[n]) + ",\"nccl_bytes\":" + std::to_string(m.nccl.bytes[n]) +
              ",\"nccl_root_or_peer\":" + std::to_string(m.nccl.root_or_peer[n]) + ",\"nccl_comm\":\"" +
              hex(m.nccl.comm_id[n]) + "\",\"nccl_rank\":" + std::to_string(m.nccl.rank[n]) +
              ",\"nccl_nranks\":" + std::to_string(m.nccl.nranks[n]) + ",\"nccl_sequence\":" +
              std::to_string(m.nccl.sequence[n]);
    }
    body += "}}";
  }

  // The queued and submitted stages as nestable async slices under the kernel's stream (many
  // kernels wait at once: async slices stack instead of mis-nesting on one track).
  for (uint32_t e : gpu) {
    const uint64_t q = m.events.queued_ns[e], sb = m.events.submitted_ns[e], st = m.events.start_ns[e];
    if (q == 0 || q >= st) continue;
    const std::string id = ",\"id\":\"" + hex(e) + "\",\"pid\":" + std::to_string(gpu_track[e].first) +
                           ",\"tid\":" + std::to_string(gpu_track[e].second) + ",\"ts\":";
    const auto async = [&](const char* ph, const char* name, uint64_t at) {
      open_event();
      body += std::string("{\"ph\":\"") + ph + "\",\"cat\":\"stage\",\"name\":\"" + name + "\"" + id;
      ts(body, at, base);
      body += "}";
    };
    async("b", "queued", q);
    const bool submitted = sb > q && sb < st;
    if (submitted) {
      async("b", "submitted", sb);
      async("e", "submitted", st);
    }
    async("e", "queued", st);
  }

  // Counter tracks per device: kernels and copies running, kernels queued and not started.
  {
    struct Change {
      uint32_t pid;
      uint64_t t;
      int32_t kernels, copies, queued;
    };
    std::vector<Change> changes;
    for (uint32_t e : gpu) {
      const uint32_t pid = gpu_track[e].first;
      const EventKind k = m.events.kind[e];
      const bool kernel = k == EventKind::kKernel || k == EventKind::kNccl;
      const bool copy = k == EventKind::kMemcpy || k == EventKind::kMemset;
      if (!kernel && !copy) continue;
      changes.push_back({pid, m.events.start_ns[e], kernel ? 1 : 0, copy ? 1 : 0, 0});
      changes.push_back({pid, m.events.end_ns[e], kernel ? -1 : 0, copy ? -1 : 0, 0});
      if (kernel && m.events.queued_ns[e] && m.events.queued_ns[e] < m.events.start_ns[e]) {
        changes.push_back({pid, m.events.queued_ns[e], 0, 0, 1});
        changes.push_back({pid, m.events.start_ns[e], 0, 0, -1});
      }
    }
    std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
      return a.pid != b.pid ? a.pid < b.pid : a.t < b.t;
    });
    int64_t kernels = 0, copies = 0, queued = 0;
    for (size_t i = 0; i < changes.size();) {
      const uint32_t pid = changes[i].pid;
      if (i == 0 || changes[i - 1].pid != pid) kernels = copies = queued = 0;
      const uint64_t t = changes[i].t;
      for (; i < changes.size() && changes[i].pid == pid && changes[i].t == t; ++i) {
        kernels += changes[i].kernels;
        copies += changes[i].copies;
        queued += changes[i].queued;
      }
      open_event();
      body += "{\"ph\":\"C\",\"name\":\"GPU work\",\"pid\":" + std::to_string(pid) + ",\"ts\":";
      ts(body, t, base);
      body += ",\"args\":{\"kernels running\":" + std::to_string(kernels) + ",\"copies running\":" +
              std::to_string(copies) + ",\"kernels queued\":" + std::to_string(queued) + "}}";
    }
  }

  // Memory in use per device over time, from the allocations and frees recorded (with
  // GPUHOOK_API=alloc or all), in MiB by kind: device, pinned host, managed, ...
  {
    struct Step {
      uint32_t pid;
      uint64_t t;
      uint8_t kind;
      int64_t delta;
    };
    std::vector<Step> steps;
    const MemoryTable& mt = m.memory;
    for (uint32_t i = 0; i < mt.size(); ++i) {
      if (mt.time_ns[i] == 0 || mt.bytes[i] == 0) continue;
      if (w1 != 0 && !sel.window_fitted && (mt.time_ns[i] < w0 || mt.time_ns[i] > w1)) continue;
      const int64_t b = static_cast<int64_t>(std::min<uint64_t>(mt.bytes[i], uint64_t{1} << 60));
      steps.push_back({device_pid(mt.capture[i], mt.device[i]), mt.time_ns[i], mt.kind[i],
                       mt.op[i] == gpuhook::v1::MEMORY_OP_FREE ? -b : b});
    }
    std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
      return a.pid != b.pid ? a.pid < b.pid : a.t < b.t;
    });
    std::map<uint8_t, int64_t> in_use;
    for (size_t i = 0; i < steps.size();) {
      const uint32_t pid = steps[i].pid;
      if (i == 0 || steps[i - 1].pid != pid) in_use.clear();
      const uint64_t t = steps[i].t;
      for (; i < steps.size() && steps[i].pid == pid && steps[i].t == t; ++i) in_use[steps[i].kind] += steps[i].delta;
      if (t < base) continue;  // before the trace's origin: no negative timestamps
      open_event();
      body += "{\"ph\":\"C\",\"name\":\"memory in use (MiB)\",\"pid\":" + std::to_string(pid) + ",\"ts\":";
      ts(body, t, base);
      body += ",\"args\":{";
      bool first_arg = true;
      for (const auto& [kind, bytes] : in_use) {
        body += first_arg ? "" : ",";
        first_arg = false;
        json::append_string(body, memory_kind_name(kind));
        body += ":";
        json::append_number(body, static_cast<double>(std::max<int64_t>(0, bytes)) / (1 << 20), 3);
      }
      body += "}}";
    }
  }
  // The GPU's own counters (NVML), one counter track per counter on its device's process; the
  // reason mask becomes "throttled" (1 while a power or thermal reason is set).
  for (const analysis::MetricSeries& series : analysis::metric_series(m)) {
    const analysis::MetricInfo* info = analysis::metric_info(series.metric);
    if (info == nullptr) continue;
    const bool reasons = series.metric == gpuhook::v1::GPU_METRIC_CLOCKS_EVENT_REASONS;
    const std::string name = reasons ? "throttled" : info->label;
    const uint32_t pid = device_pid(series.capture, series.device);
    for (size_t i = series.begin; i < series.end; ++i) {
      const uint64_t t = m.metrics.time_ns[i];
      if (t < base || (sel.window_asked && (t < w0 || t > w1))) continue;
      open_event();
      body += "{\"ph\":\"C\",\"name\":";
      json::append_string(body, name);
      body += ",\"pid\":" + std::to_string(pid) + ",\"ts\":";
      ts(body, t, base);
      body += ",\"args\":{\"value\":";
      const uint64_t v = m.metrics.value[i];
      if (reasons) body += (v & analysis::kThrottleReasons) != 0 ? "1" : "0";
      else json::append_number(body, static_cast<double>(v) * info->scale, 3);
      body += "}}";
    }
  }

  std::map<std::pair<uint32_t, bool>, LaneAssigner> thread_lanes;  // (thread row, nvtx track)
  std::vector<std::pair<uint32_t, uint32_t>> api_track(m.api.size(), {0, 0});
  for (const Slice& h : host) {
    const uint16_t c = h.what == 1 ? m.api.capture[h.row] : h.what == 2 ? m.ranges.capture[h.row] : m.nccl.capture[h.row];
    const uint32_t thread = h.what == 1 ? m.api.thread[h.row] : h.what == 2 ? m.ranges.thread[h.row] : m.nccl.thread[h.row];
    const uint64_t os_tid = thread < m.threads.size() ? m.threads.thread_id[thread] : 0;
    std::string tname = "thread " + std::to_string(os_tid);
    if (thread < m.threads.size() && m.threads.name[thread]) tname += " " + std::string(m.string(m.threads.name[thread]));
    const bool nvtx = h.what == 2;
    if (nvtx) tname += " NVTX";
    const uint32_t pid = host_pid(c);
    const size_t lane = thread_lanes[{thread, nvtx}].place(h.start, h.end);
    const uint32_t tid = track(pid, tname, lane, static_cast<uint32_t>(os_tid & 0x7FFFFFFF));
    open_event();
    const bool mark = nvtx && m.ranges.kind[h.row] == RangeKind::kMark;
    body += mark ? "{\"ph\":\"i\",\"s\":\"t\",\"cat\":" : "{\"ph\":\"X\",\"cat\":";
    json::append_string(body, h.what == 1 ? "api" : h.what == 2 ? "nvtx" : "nccl");
    body += ",\"name\":";
    const uint32_t name = h.what == 1 ? m.api.name[h.row] : h.what == 2 ? m.ranges.name[h.row] : m.nccl.name[h.row];
    json::append_string(body, m.string(name));
    body += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"ts\":";
    ts(body, h.start, base);
    if (!mark) {
      body += ",\"dur\":";
      json::append_us_from_ns(body, static_cast<int64_t>(h.end - h.start));
    }
    if (h.what == 1) {
      body += ",\"args\":{\"correlation_id\":" + std::to_string(m.api.correlation_id[h.row]) +
              ",\"return_value\":" + std::to_string(m.api.return_value[h.row]) + "}";
      api_track[h.row] = {pid, tid};
    } else if (h.what == 3) {
      body += ",\"args\":{\"bytes\":" + std::to_string(m.nccl.bytes[h.row]) + ",\"count\":" +
              std::to_string(m.nccl.count[h.row]) + ",\"comm\":\"" + hex(m.nccl.comm_id[h.row]) + "\",\"rank\":" +
              std::to_string(m.nccl.rank[h.row]) + ",\"nranks\":" + std::to_string(m.nccl.nranks[h.row]) +
              ",\"sequence\":" + std::to_string(m.nccl.sequence[h.row]) + "}";
    } else if (h.what == 2) {
      // The domain, and the colour and category the program gave the range.
      std::string args;
      if (m.ranges.domain[h.row]) {
        args += "\"domain\":";
        json::append_string(args, m.string(m.ranges.domain[h.row]));
      }
      if (const uint32_t c = m.ranges.color[h.row]) {
        char hexc[16];
        std::snprintf(hexc, sizeof hexc, "#%06x", c & 0xFFFFFFu);
        args += std::string(args.empty() ? "" : ",") + "\"color\":\"" + hexc + "\"";
      }
      if (const uint32_t c = m.ranges.category[h.row]) args += std::string(args.empty() ? "" : ",") + "\"category\":" + std::to_string(c);
      if (!args.empty()) body += ",\"args\":{" + args + "}";
    }
    body += "}";
  }

  // Flow arrows from each launch call to its GPU activity ("bp":"e": bind to the enclosing
  // slice at the arrow's end, the kernel).
  uint64_t flow_id = 0;
  for (uint32_t e : gpu) {
    const uint32_t a = m.events.api[e];
    if (a == kNone || !placed[e] || api_track[a].first == 0) continue;
    ++flow_id;
    open_event();
    body += "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":" + std::to_string(flow_id) +
            ",\"pid\":" + std::to_string(api_track[a].first) + ",\"tid\":" + std::to_string(api_track[a].second) + ",\"ts\":";
    ts(body, m.api.start_ns[a], base);
    body += "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":" + std::to_string(flow_id) +
            ",\"pid\":" + std::to_string(gpu_track[e].first) + ",\"tid\":" + std::to_string(gpu_track[e].second) + ",\"ts\":";
    ts(body, m.events.start_ns[e], base);
    body += "}";
  }

  // Names and order of processes and tracks.
  std::string meta;
  for (const auto& [pid, name] : processes) {
    meta += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"args\":{\"name\":";
    json::append_string(meta, name);
    meta += "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(pid) +
            ",\"args\":{\"sort_index\":" + std::to_string(pid) + "}},\n";
  }
  for (const Track& t : tracks) {
    meta += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(t.pid) + ",\"tid\":" + std::to_string(t.tid) +
            ",\"args\":{\"name\":";
    json::append_string(meta, t.name);
    meta += "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + std::to_string(t.pid) + ",\"tid\":" +
            std::to_string(t.tid) + ",\"args\":{\"sort_index\":" + std::to_string(t.tid) + "}},\n";
  }
  os.write(body.data(), static_cast<std::streamsize>(body.size()));
  if (!first && !meta.empty()) os << ",\n";
  if (meta.size() >= 2) meta.resize(meta.size() - 2);  // the last ",\n"
  os << meta;
  os << "\n]}\n";
}

}  // namespace

std::unique_ptr<Exporter> make_chrome_exporter() { return std::make_unique<ChromeExporter>(); }

}  // namespace gantt
