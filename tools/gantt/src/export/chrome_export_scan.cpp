// The Chrome trace of one capture, written as it is scanned (analysis/event_scan.h): each
// share of the chunk index writes its slices as it reads them, in file order, which is time
// order on a stream and on a thread; the NVTX ranges (read before the events) and the names
// of the processes and tracks follow. Memory grows with streams, threads and names, not
// events.
//
// Compact, about 310 bytes a kernel with its launch on tests/bench/export's capture, whose
// kernel names take 57 of them (a 10 M-kernel capture once made a 14 GB trace, 1.4 KB a kernel): no "cat"; arguments under short keys (docs/export.md has the
// legend) and only those the slice does not already say (its stream is its track, its
// correlation id its flow); the launch->kernel arrow as Chrome's v2 flow (bind_id with
// flow_out on the call, flow_in on the kernel) rather than two more events. Left to the loaded
// trace (chrome_export.cpp): the queued and submitted stages as async slices (here the "q"
// argument), the counter tracks of kernels running and queued (four events a kernel; the
// slices say the same), memory in use, and the NCCL call's arguments repeated on its kernel.
// Times exact as in the loaded trace, microseconds from the capture's start computed from
// integer nanoseconds, but without the trailing zeros of the three decimals ("12.5", "12"):
// Chrome and Perfetto read "ts" and "dur" as JSON numbers in microseconds, and
// "displayTimeUnit" changes only how they are shown, so integer nanoseconds cannot be written.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "chrome_lanes.h"
#include "gantt/analysis/event_scan.h"
#include "gantt/analysis/metrics.h"
#include "gantt/model/json.h"
#include "gantt/model/text.h"
#include "row_writer.h"
#include "scan_job.h"
#include "scan_spool.h"

namespace gantt::exporting {
namespace {

namespace v1 = gpuhook::v1;

// The host's process 1 and the devices' from 2, not the loaded trace's 1,000,000 and 1:
// 6 bytes less on every host call. The host still sorts after the devices.
constexpr uint32_t kHostPid = 1;
constexpr uint64_t kHostSortIndex = 1'000'000;
constexpr uint64_t kNvtxTrack = uint64_t{1} << 31;

// Where a capture's slices go: a trace of one capture is as before; in a trace of several,
// capture c's processes are numbered from c * kPidsPerCapture, its correlation ids (the flows'
// bind ids) are made its own with c above 32 bits, and its times are shifted onto the job's
// clock: `base` is the trace's origin less the capture's shift.
constexpr uint32_t kPidsPerCapture = 1025;
struct CapturePlace {
  uint32_t index = 0;
  uint64_t base = 0;      // subtracted from the capture's own times (wrapping, as int64 after)
  uint64_t first_ns = 0;  // the capture's own first time (its clock): the samples kept from it
  uint32_t host_pid() const { return kHostPid + index * kPidsPerCapture; }
  uint32_t device_pid(uint32_t device) const { return 2 + index * kPidsPerCapture + (device & 1023u); }
  uint64_t bind_id(uint32_t corr) const { return (uint64_t{index} << 32) | corr; }
};
// A track's tid: its lane's number above 32 bits, so the first lane's tid is the stream's id
// or the thread's (an NVTX track with bit 31 set), and every share names a track alike.
uint64_t lane_tid(uint64_t id, size_t lane) { return (uint64_t{lane} << 32) | id; }
uint64_t thread_tid(uint64_t os_tid, bool nvtx) { return (os_tid & 0x7FFFFFFFu) | (nvtx ? kNvtxTrack : 0); }

// Microseconds as exact as the nanoseconds and no longer: "12", "12.5", "12.345".
void us(std::string& o, int64_t ns) { RowWriter(o).us_from_ns(ns); }
void num(std::string& o, uint64_t v) {
  char buf[24];
  char* end = buf + sizeof buf;
  char* p = end;
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v);
  o.append(p, end);
}
// CUDA's dim3 as written in a launch: trailing 1s left out ("264", "16x16").
void dims(RowWriter& o, const std::array<int32_t, 3>& d) {
  o << '"' << d[0];
  const int shown = d[2] != 1 ? 3 : d[1] != 1 ? 2 : 1;
  for (int i = 1; i < shown; ++i) o << 'x' << d[static_cast<size_t>(i)];
  o << '"';
}

// What the tracks are called: (pid, tid) -> (name, sort index).
using TrackNames = std::map<std::pair<uint32_t, uint64_t>, std::string>;

class ChromeShare final : public analysis::EventConsumer {
 public:
  ChromeShare(const Model& context, const CapturePlace& place, std::atomic<uint64_t>* total, uint64_t limit)
      : spool(total, limit), context_(context), place_(place), base_(place.base), host_pid_(place.host_pid()) {
    for (uint32_t i = 0; i < context.threads.size(); ++i)
      if (context.threads.name[i]) thread_names_.emplace(context.threads.thread_id[i], std::string(context.string(context.threads.name[i])));
  }

  void event(const analysis::ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
    if (e.start_ns == 0 || e.end_ns < e.start_ns) return;  // not placed in time, as the loaded trace
    const uint32_t pid = place_.device_pid(e.device);
    devices.insert(e.device);
    // The slice's text before its tid, and after it.
    head_.clear();
    rest_.clear();
    {
      RowWriter a(head_);
      a << ",\n{\"ph\":\"X\",\"name\":";
      if (e.kind == EventKind::kMemcpy) a << "\"Memcpy " << copy_kind_name(e.copy_kind) << '"';
      else if (e.kind == EventKind::kMemset) a << "\"Memset\"";
      else a << name_of(e, reader);
      a << ",\"pid\":" << pid << ",\"tid\":";
    }
    {
      RowWriter b(rest_);
      b << ",\"ts\":";
      b.us_from_ns(static_cast<int64_t>(e.start_ns - base_));
      b << ",\"dur\":";
      b.us_from_ns(static_cast<int64_t>(e.end_ns - e.start_ns));
      if (e.correlation_id) b << ",\"bind_id\":" << place_.bind_id(e.correlation_id) << ",\"flow_in\":true";
      const bool kernel = e.kind == EventKind::kKernel || e.kind == EventKind::kNccl;
      if (kernel) {
        b << ",\"args\":{\"g\":";
        dims(b, e.grid);
        b << ",\"b\":";
        dims(b, e.block);
        b << ",\"r\":" << e.registers_per_thread;
        if (e.shared_memory_bytes) b << ",\"sm\":" << e.shared_memory_bytes;
        if (e.queued_ns && e.queued_ns <= e.start_ns) b << ",\"q\":" << (e.start_ns - e.queued_ns);
        b << '}';
      } else if (e.bytes) {
        b << ",\"args\":{\"B\":" << e.bytes << '}';
      }
      b << '}';
    }
    ++events;
    const std::pair<uint32_t, uint32_t> key{e.device, e.stream};
    // A share after the first does not know the share before's last slices on a stream: its
    // first kHold there are placed once that share has ended, beside them.
    if (!first_ && held_.size() < kMaxHeld) {
      size_t& opening = opening_[key];
      if (opening < kHold) {
        ++opening;
        held_.push_back({key, e.start_ns, e.end_ns, head_, rest_});
        return;
      }
    }
    const size_t lane = stream_lanes_[key].place(e.start_ns, e.end_ns);
    auto& heads = heads_[key];
    if (heads.size() < RecentLanes::kKeep) heads.push_back({lane, e.start_ns, e.end_ns});
    write_placed(key, lane, head_, rest_);
    spool.maybe_flush();
  }

  // The held slices placed among the lanes the shares before left (`lanes`, by stream) and this
  // share's first slices; then this share's lanes are the next one's.
  void place_held(std::map<std::pair<uint32_t, uint32_t>, RecentLanes>& lanes) {
    for (const auto& [key, heads] : heads_)
      for (const Head& h : heads) lanes[key].add(h.lane, h.start, h.end);
    for (const Held& h : held_) {
      const size_t lane = lanes[h.key].place(h.start, h.end);
      write_placed(h.key, lane, h.head, h.rest);
      spool.maybe_flush();
    }
    held_.clear();
    for (auto& [key, own] : stream_lanes_) lanes[key] = own;
  }

  void api(const gpuhook::ApiFields& a, const gpuhook::CaptureReader& reader) override {
    const uint64_t s = a.start_ns > 0 ? static_cast<uint64_t>(a.start_ns) : 0, e = a.end_ns > 0 ? static_cast<uint64_t>(a.end_ns) : 0;
    if (s == 0 || e < s || (filter_ && !filter_->host_in_window(s, e))) return;
    const uint64_t tid = host_track(a.thread_id, false, s, e);
    {
      RowWriter o(spool.text);
      o << ",\n{\"ph\":\"X\",\"name\":" << call_name(a.name_id, reader) << ",\"pid\":" << host_pid_ << ",\"tid\":" << tid
        << ",\"ts\":";
      o.us_from_ns(static_cast<int64_t>(s - base_));
      o << ",\"dur\":";
      o.us_from_ns(static_cast<int64_t>(e - s));
      if (a.correlation_id && a.domain != v1::API_DOMAIN_NCCL) o << ",\"bind_id\":" << place_.bind_id(a.correlation_id) << ",\"flow_out\":true";
      if (a.return_value) o << ",\"args\":{\"ret\":" << int64_t{a.return_value} << '}';
      o << '}';
    }
    spool.maybe_flush();
  }

  void record(const v1::Record& r, const gpuhook::CaptureReader& reader) override {
    if (r.kind_case() == v1::Record::kNccl) {
      const auto& n = r.nccl();
      const uint64_t s = n.has_start_ns() && n.start_ns() > 0 ? static_cast<uint64_t>(n.start_ns()) : 0;
      const uint64_t e = n.has_end_ns() && n.end_ns() > 0 ? static_cast<uint64_t>(n.end_ns()) : 0;
      if (s == 0 || e < s || (filter_ && !filter_->host_in_window(s, e))) return;
      std::string& o = spool.text;
      o += ",\n{\"ph\":\"X\",\"name\":";
      json::append_string(o, reader.string(n.name_id()));
      slice_times(o, host_pid_, host_track(n.thread_id(), false, s, e), s, e);
      char comm[24];
      std::snprintf(comm, sizeof comm, "0x%016llx", static_cast<unsigned long long>(n.comm_id()));
      o += ",\"args\":{\"bytes\":" + std::to_string(n.bytes()) + ",\"count\":" + std::to_string(n.count()) +
           ",\"comm\":\"" + comm + "\",\"rank\":" + std::to_string(n.rank()) + ",\"nranks\":" + std::to_string(n.nranks()) +
           ",\"sequence\":" + std::to_string(n.sequence()) + "}}";
      spool.maybe_flush();
    } else if (r.kind_case() == v1::Record::kMetricSample) {
      // The GPU's own counters (NVML, PM sampling), a counter track each on the device's process.
      const auto& x = r.metric_sample();
      const analysis::MetricInfo* info = analysis::metric_info(x.metric());
      const uint64_t t = x.has_time_ns() && x.time_ns() > 0 ? static_cast<uint64_t>(x.time_ns()) : 0;
      if (!info || t < place_.first_ns || t == 0 || x.device() >= 4096) return;  // as ModelBuilder keeps them
      if (filter_ && !filter_->host_in_window(t, t)) return;
      const bool reasons = x.metric() == v1::GPU_METRIC_CLOCKS_EVENT_REASONS;
      std::string& o = spool.text;
      o += ",\n{\"ph\":\"C\",\"name\":";
      json::append_string(o, reasons ? std::string("throttled") : std::string(info->label));
      o += ",\"pid\":";
      num(o, place_.device_pid(x.device()));
      devices.insert(x.device());
      o += ",\"ts\":";
      us(o, static_cast<int64_t>(t - base_));
      o += ",\"args\":{\"value\":";
      const uint64_t v = x.metric() >= v1::GPU_METRIC_GR_ACTIVE_CENTIPCT ? std::min<uint64_t>(x.value(), 10000) : x.value();
      if (reasons) o += (v & analysis::kThrottleReasons) != 0 ? "1" : "0";
      else json::append_number(o, static_cast<double>(v) * info->scale, 3);
      o += "}}";
      spool.maybe_flush();
    }
  }

  bool stopped() const override { return spool.over(); }
  bool first_ = false;  // the file's first share: no share before it
  const analysis::ScanFilter* filter_ = nullptr;  // the host records' window; null: all

  // The NVTX ranges of the context (every share's calls are written first): in start order,
  // enclosing ones first, on each thread's NVTX track.
  void ranges() {
    const RangeTable& rt = context_.ranges;
    std::vector<uint32_t> rows;
    for (uint32_t r = 0; r < rt.size(); ++r)
      if (rt.start_ns[r] && rt.end_ns[r] >= rt.start_ns[r] && (!filter_ || filter_->host_in_window(rt.start_ns[r], rt.end_ns[r])))
        rows.push_back(r);
    std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
      return rt.start_ns[a] != rt.start_ns[b] ? rt.start_ns[a] < rt.start_ns[b] : rt.end_ns[a] > rt.end_ns[b];
    });
    for (uint32_t r : rows) {
      const uint64_t os_tid = rt.thread[r] < context_.threads.size() ? context_.threads.thread_id[rt.thread[r]] : 0;
      const bool mark = rt.kind[r] == RangeKind::kMark;
      std::string& o = spool.text;
      o += mark ? ",\n{\"ph\":\"i\",\"s\":\"t\",\"name\":" : ",\n{\"ph\":\"X\",\"name\":";
      json::append_string(o, context_.string(rt.name[r]));
      const uint64_t tid = host_track(os_tid, true, rt.start_ns[r], rt.end_ns[r]);
      if (mark) {
        o += ",\"pid\":";
        num(o, host_pid_);
        o += ",\"tid\":";
        num(o, tid);
        o += ",\"ts\":";
        us(o, static_cast<int64_t>(rt.start_ns[r] - base_));
      } else {
        slice_times(o, host_pid_, tid, rt.start_ns[r], rt.end_ns[r]);
      }
      std::string args;
      if (rt.domain[r]) {
        args += "\"domain\":";
        json::append_string(args, context_.string(rt.domain[r]));
      }
      if (const uint32_t c = rt.color[r]) {
        char hexc[16];
        std::snprintf(hexc, sizeof hexc, "#%06x", c & 0xFFFFFFu);
        args += std::string(args.empty() ? "" : ",") + "\"color\":\"" + hexc + "\"";
      }
      if (const uint32_t c = rt.category[r]) args += std::string(args.empty() ? "" : ",") + "\"category\":" + std::to_string(c);
      if (!args.empty()) o += ",\"args\":{" + args + "}";
      o += '}';
      spool.maybe_flush();
    }
  }

  Spool spool;
  uint64_t events = 0;
  std::set<uint32_t> devices;
  TrackNames tracks;

 private:
  void slice_times(std::string& o, uint32_t pid, uint64_t tid, uint64_t s, uint64_t e) {
    o += ",\"pid\":";
    num(o, pid);
    o += ",\"tid\":";
    num(o, tid);
    o += ",\"ts\":";
    us(o, static_cast<int64_t>(s - base_));
    o += ",\"dur\":";
    us(o, static_cast<int64_t>(e - s));
  }
  uint64_t host_track(uint64_t os_tid, bool nvtx, uint64_t s, uint64_t e) {
    const size_t lane = thread_lanes_[{os_tid, nvtx}].place(s, e);
    const uint64_t tid = lane_tid(thread_tid(os_tid, nvtx), lane);
    if (auto [it, fresh] = tracks.try_emplace({host_pid_, tid}); fresh) {
      std::string name = "thread " + std::to_string(os_tid);
      if (auto n = thread_names_.find(os_tid); n != thread_names_.end()) name += " " + n->second;
      if (nvtx) name += " NVTX";
      if (lane) name += " #" + std::to_string(lane + 1);
      it->second = std::move(name);
    }
    return tid;
  }
  // A kernel's demangled name as a JSON string, once per name id (millions of launches of a
  // few kernels).
  const std::string& name_of(const analysis::ScannedEvent& e, const gpuhook::CaptureReader& reader) {
    uint32_t id = e.name_id ? e.name_id : e.launch_name_id;
    const bool by_call = e.kind == EventKind::kSync;
    const auto json = [&](std::string& out) {
      out.clear();
      if (id == 0) return json::append_string(out, unjoined_name(e.kind, e.copy_kind));
      const std::string_view text = reader.string(id);
      const std::string d = demangle(text);
      json::append_string(out, d != text || !by_call ? std::string_view(d) : api_display_name(text));
    };
    if (id == 0 || id >= kCachedNames) {
      json(scratch_);
      return scratch_;
    }
    auto [it, fresh] = names_.try_emplace((uint64_t{id} << 1) | (by_call ? 1 : 0));
    if (fresh) json(it->second);
    return it->second;
  }
  // An API call's name as a JSON string, once per name id.
  const std::string& call_name(uint32_t id, const gpuhook::CaptureReader& reader) {
    if (id >= kCachedNames) {
      scratch_.clear();
      json::append_string(scratch_, reader.string(id));
      return scratch_;
    }
    auto [it, fresh] = call_names_.try_emplace(id);
    if (fresh) json::append_string(it->second, reader.string(id));
    return it->second;
  }
  static constexpr uint32_t kCachedNames = 1u << 20;

  void write_placed(const std::pair<uint32_t, uint32_t>& key, size_t lane, const std::string& head, const std::string& rest) {
    const uint64_t tid = lane_tid(key.second, lane);
    if (auto [it, fresh] = tracks.try_emplace({place_.device_pid(key.first), tid}); fresh)
      it->second = "stream " + std::to_string(key.second) + (lane ? " #" + std::to_string(lane + 1) : std::string());
    RowWriter(spool.text) << head << tid << rest;
  }

  struct Held {
    std::pair<uint32_t, uint32_t> key;
    uint64_t start, end;
    std::string head, rest;
  };
  struct Head {
    size_t lane;
    uint64_t start, end;
  };
  static constexpr size_t kHold = RecentLanes::kKeep;  // a stream's first slices a share holds
  static constexpr size_t kMaxHeld = size_t{1} << 16;  // all streams' together (past it, placed at once)

  const Model& context_;
  CapturePlace place_;
  uint64_t base_;
  uint32_t host_pid_;
  std::map<std::pair<uint32_t, uint32_t>, RecentLanes> stream_lanes_;  // (device, stream)
  std::map<std::pair<uint32_t, uint32_t>, size_t> opening_;            // slices held so far
  std::map<std::pair<uint32_t, uint32_t>, std::vector<Head>> heads_;   // the first placed
  std::vector<Held> held_;
  std::string head_, rest_;
  std::map<std::pair<uint64_t, bool>, RecentLanes> thread_lanes_;       // (OS thread, NVTX track)
  std::unordered_map<uint64_t, std::string> thread_names_;
  std::unordered_map<uint64_t, std::string> names_;       // (name id, by call) -> JSON string
  std::unordered_map<uint32_t, std::string> call_names_;  // an API call's name id -> JSON string
  std::string scratch_;
};

void metadata(std::string& o, const char* what, uint32_t pid, const uint64_t* tid, const std::string& name, uint64_t sort) {
  o += ",\n{\"ph\":\"M\",\"name\":\"";
  o += what;
  o += "_name\",\"pid\":";
  num(o, pid);
  if (tid) {
    o += ",\"tid\":";
    num(o, *tid);
  }
  o += ",\"args\":{\"name\":";
  json::append_string(o, name);
  o += "}},\n{\"ph\":\"M\",\"name\":\"";
  o += what;
  o += "_sort_index\",\"pid\":";
  num(o, pid);
  if (tid) {
    o += ",\"tid\":";
    num(o, *tid);
  }
  o += ",\"args\":{\"sort_index\":";
  num(o, sort);
  o += "}}";
}

}  // namespace

bool write_chrome_scanned(const std::vector<std::string>& paths, const ScanExportOptions& opt,
                          const Exporter::OpenOutput& open_output, ScannedExport* result, std::string* why_not) {
  analysis::EventScanOptions so;
  so.load = opt.load;
  so.threads = opt.threads;
  so.join_launches = false;  // the flows need only the correlation id; the lanes, file order
  std::optional<ScanJob> job = open_scan_job(paths, so, opt.filter, why_not);
  if (!job) return false;
  const bool several = paths.size() > 1;
  const analysis::ScanFilter* filter = job->scanners.front()->filter();  // its description is the job's
  const uint64_t base = job->first_ns;  // the origin: Model::first_ns() as far as it is known
  const auto host_name = [](const CaptureInfo& capture) {
    std::string host = "host pid " + std::to_string(capture.header.pid());
    if (capture.header.has_rank()) host += " rank " + std::to_string(capture.header.rank());
    return host;
  };

  std::string head = "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"gantt-cli export --format chrome\",\"time_origin_ns\":";
  num(head, base);
  if (filter && !filter->window.description.empty()) {
    head += ",\"selection\":";
    json::append_string(head, filter->window.description);
  }
  head += ",\"args\":\"g grid, b block, r registers per thread, sm shared memory bytes, q queued->start ns, B bytes, "
          "ret return value (docs/export.md)\"},\n\"traceEvents\":[\n";
  // The first capture's host process first: every event after it begins with its comma.
  const std::string first_host = host_name(job->scanners.front()->context().captures.front());
  head += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
  num(head, kHostPid);
  head += ",\"args\":{\"name\":";
  json::append_string(head, first_host);
  head += "}}";

  // Capture by capture, each on every thread; in a job of several, each capture's spools then go
  // into the first one, so that it holds one file (end_capture), and its scanner is let go.
  std::atomic<uint64_t> total{head.size()};
  std::vector<std::unique_ptr<ChromeShare>> kept;  // the shares whose spools make the output (end_capture)
  std::string tail;
  for (size_t c = 0; c < job->scanners.size(); ++c) {
    analysis::EventScanner& scanner = *job->scanners[c];
    const Model& context = scanner.context();
    const CaptureInfo& capture = context.captures.front();
    CapturePlace place;
    place.index = static_cast<uint32_t>(c);
    place.base = base - static_cast<uint64_t>(job->offsets[c]);
    place.first_ns = scanner.first_ns();
    std::vector<std::unique_ptr<ChromeShare>> shares;
    std::vector<analysis::EventConsumer*> consumers;
    for (size_t i = 0; i < scanner.shares(); ++i) {
      shares.push_back(std::make_unique<ChromeShare>(context, place, &total, opt.max_output));
      shares.back()->first_ = i == 0;
      shares.back()->filter_ = scanner.filter();  // the job's window on this capture's clock
      consumers.push_back(shares.back().get());
    }
    if (c == 0 && !shares.empty()) shares.front()->spool.become(opt.output_path, head);
    std::string why;
    const bool ran = scanner.run(consumers, &why);
    const auto over = [&] { return std::any_of(shares.begin(), shares.end(), [](const auto& sh) { return sh->spool.over(); }); };
    if (!ran && !over()) {
      if (why_not) *why_not = about_capture(paths, c, why);
      return false;
    }
    if (over()) {
      result->over = true;
      return true;
    }
    std::map<std::pair<uint32_t, uint32_t>, RecentLanes> lanes;
    for (auto& sh : shares) sh->place_held(lanes);
    shares.back()->ranges();
    std::set<uint32_t> devices;
    TrackNames tracks;
    for (const auto& sh : shares) {
      devices.insert(sh->devices.begin(), sh->devices.end());
      tracks.insert(sh->tracks.begin(), sh->tracks.end());
    }
    // The processes' names and sort indexes: the first host's name went first, in the head.
    std::string names;
    metadata(names, "process", place.host_pid(), nullptr, host_name(capture), kHostSortIndex + c);
    if (c == 0) names.erase(0, names.find("},\n") + 1);
    tail += names;
    for (uint32_t d : devices) {
      std::string name = (several ? "capture " + std::to_string(c) + " " : std::string()) + "GPU " + std::to_string(d);
      if (const auto* info = capture.device(d)) name += " (" + info->name() + ")";
      metadata(tail, "process", place.device_pid(d), nullptr, name, place.device_pid(d));
    }
    for (const auto& [key, name] : tracks) metadata(tail, "thread", key.first, &key.second, name, key.second);
    if (!end_capture(*job, c, kept, shares, result)) return true;
  }
  tail += "\n]}\n";
  if (opt.max_output != 0 && total + tail.size() > opt.max_output) {
    result->over = true;
    return true;
  }
  deliver(spools_of(kept), head, tail, open_output);
  result->bytes = total + tail.size();
  return true;
}

}  // namespace gantt::exporting
