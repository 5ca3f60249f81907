// CSV: one row per GanttEvent, then one per host API call and NVTX range (kind "api", "nvtx"),
// RFC 4180 quoting, UTF-8. Times are absolute nanoseconds in the capture's host clock plus
// *_rel_ns from the capture start; unknown is an empty cell, never 0, so a spreadsheet average
// does not silently include invented values. Every row names its capture's rank, host and
// pid; a kernel an NCCL call ran carries the call's op, communicator, sequence, peer and bytes.
//
// Both ways of reading write their rows with the same functions below: a loaded model's
// events (several captures, filters) and a capture scanned (analysis/event_scan.h), which
// writes a share's GPU and API rows in file order as it reads them, the NVTX rows after.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <unordered_map>

#include "gantt/analysis/event_scan.h"
#include "gantt/export/export.h"
#include "gantt/model/occupancy.h"
#include "gantt/model/range_lookup.h"
#include "gantt/ranks/collectives.h"
#include "gantt/model/text.h"
#include "row_writer.h"
#include "scan_job.h"
#include "scan_spool.h"

namespace gantt {

namespace {

constexpr std::string_view kColumns =
    "capture,device,stream,priority,kind,name,copy_kind,bytes,correlation_id,thread_id,"
    "launch_ns,queued_ns,submitted_ns,start_ns,end_ns,start_rel_ns,end_rel_ns,"
    "launch_to_queued_ns,queued_to_submitted_ns,submitted_to_start_ns,queued_to_start_ns,exec_ns,total_ns,"
    "grid,block,registers_per_thread,shared_memory_bytes,occupancy,occupancy_limit,range,"
    "rank,host,pid,nccl_op,nccl_comm,nccl_seq,nccl_peer,nccl_bytes\n";

using exporting::RowWriter;

void time_cell(RowWriter& w, uint64_t v) {
  if (v) w << v;
  w << ',';
}
void opt_cell(RowWriter& w, const std::optional<int64_t>& v) {
  if (v) w << *v;
  w << ',';
}
void dim3(RowWriter& w, const std::array<int32_t, 3>& d) { w << d[0] << 'x' << d[1] << 'x' << d[2]; }

// One GPU operation's cells, from either way of reading.
struct EventRow {
  uint16_t capture = 0;
  uint32_t device = 0, stream = 0, correlation_id = 0;
  int32_t priority = 0;
  EventKind kind = EventKind::kKernel;
  std::string_view name_cell;  // the name as a CSV cell (append_csv_field)
  uint8_t copy_kind = 0;
  uint64_t bytes = 0, thread_id = 0;
  uint64_t launch_ns = 0, queued_ns = 0, submitted_ns = 0, start_ns = 0, end_ns = 0;
  std::array<int32_t, 3> grid{}, block{};
  uint64_t registers_per_thread = 0, shared_memory_bytes = 0;
  float occupancy = std::numeric_limits<float>::quiet_NaN();
  OccupancyLimit occupancy_limit = OccupancyLimit::kUnknown;
  std::string_view range;
  const analysis::ScannedNccl* nccl = nullptr;
};

std::optional<int64_t> stage(uint64_t from, uint64_t to) {  // Model::stages()
  if (from == 0 || to == 0) return std::nullopt;
  return static_cast<int64_t>(to - from);
}

// rank, host, pid: the same on every row of a capture.
void capture_cells(std::string& out, const gpuhook::v1::Header& h) {
  if (h.has_rank()) out += std::to_string(h.rank());
  out += ',';
  append_csv_field(out, h.host_name());
  out += ',' + std::to_string(h.pid()) + ',';
}

// `t0`: *_rel_ns are from capture start, whatever the window.
// `cells`: capture_cells() of the event's capture.
void event_row(std::string& out, const EventRow& r, uint64_t t0, std::string_view cells) {
  RowWriter w(out);
  w << uint64_t{r.capture} << ',' << r.device << ',' << r.stream << ',' << r.priority << ',' << to_string(r.kind) << ','
    << r.name_cell << ',';
  if (r.kind == EventKind::kMemcpy) w << copy_kind_name(r.copy_kind);
  w << ',' << r.bytes << ',' << r.correlation_id << ',';
  if (r.thread_id) w << r.thread_id;
  w << ',';
  time_cell(w, r.launch_ns);
  time_cell(w, r.queued_ns);
  time_cell(w, r.submitted_ns);
  time_cell(w, r.start_ns);
  time_cell(w, r.end_ns);
  if (r.start_ns) w << static_cast<int64_t>(r.start_ns - t0);
  w << ',';
  if (r.end_ns) w << static_cast<int64_t>(r.end_ns - t0);
  w << ',';
  opt_cell(w, stage(r.launch_ns, r.queued_ns));
  opt_cell(w, stage(r.queued_ns, r.submitted_ns));
  opt_cell(w, stage(r.submitted_ns, r.start_ns));
  opt_cell(w, stage(r.queued_ns, r.start_ns));
  opt_cell(w, stage(r.start_ns, r.end_ns));
  opt_cell(w, stage(r.launch_ns, r.end_ns));
  const bool is_kernel = r.kind == EventKind::kKernel || r.kind == EventKind::kNccl;
  if (is_kernel) dim3(w, r.grid);
  w << ',';
  if (is_kernel) dim3(w, r.block);
  w << ',';
  if (is_kernel) w << r.registers_per_thread;
  w << ',';
  if (is_kernel) w << r.shared_memory_bytes;
  w << ',';
  if (!std::isnan(r.occupancy)) {
    char buf[16];
    auto res = std::to_chars(buf, buf + sizeof buf, std::round(r.occupancy * 10000.0f) / 10000.0f, std::chars_format::fixed);
    w << std::string_view(buf, static_cast<size_t>(res.ptr - buf)) << ',' << to_string(r.occupancy_limit);
  } else {
    w << ',';
  }
  w << ',';
  if (!r.range.empty()) {
    std::string range;
    append_csv_field(range, r.range);
    w << range;
  }
  w << ',' << cells;
  if (const analysis::ScannedNccl* n = r.nccl) {
    char comm[24];
    std::snprintf(comm, sizeof comm, "0x%016llx", static_cast<unsigned long long>(n->comm_id));
    w << nccl_op_name(n->op) << ',' << comm << ',' << n->sequence << ',' << n->root_or_peer << ',' << n->bytes;
  } else {
    w << ",,,,";
  }
  w << '\n';
}

// An API call or NVTX range: the columns that mean the same for them are filled, the GPU
// ones left empty. `name_cell`: its name as a CSV cell.
void host_row(std::string& out, const char* kind, uint16_t c, std::string_view name_cell, uint32_t corr, uint64_t thread_id,
              bool has_thread, uint64_t s, uint64_t e, std::string_view range, uint64_t t0, std::string_view cells) {
  RowWriter w(out);
  w << uint64_t{c} << ",,,," << kind << ',' << name_cell << ",,,";  // device, stream, priority; copy_kind, bytes
  if (corr) w << corr;
  w << ',';
  if (has_thread) w << thread_id;
  w << ",,,,";  // launch, queued, submitted
  time_cell(w, s);
  time_cell(w, e);
  if (s) w << static_cast<int64_t>(s - t0);
  w << ',';
  if (e) w << static_cast<int64_t>(e - t0);
  w << ",,,,,";  // stages
  if (s && e >= s) w << static_cast<int64_t>(e - s);
  w << ",,,,,,,,";  // total, grid, block, registers, shared memory, occupancy, limit
  if (!range.empty()) {
    std::string cell;
    append_csv_field(cell, range);
    w << cell;
  }
  w << ',' << cells << ",,,,\n";
}

void flush(std::string& out, std::ostream& os) {
  if (out.size() > (1u << 20)) {
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
    out.clear();
  }
}

std::string cells_of(const Model& m, uint16_t c) {
  std::string cells;
  capture_cells(cells, m.captures[c].header);
  return cells;
}

// The NVTX rows of a model's ranges inside the window (all of them when none was asked for).
// `os` null: held in `out`. A scanned capture's context: `as` is its place in a job of
// several and `offset` what puts its times on the job's clock (scan_job.h).
struct CaptureShift {
  int32_t as = -1;  // -1: the capture the model numbers it
  int64_t offset = 0;
};
template <class InWindow>
void range_rows(const Model& m, uint64_t t0, InWindow&& in_window, std::string& out, std::ostream* os,
                CaptureShift shift = {}) {
  for (uint32_t r = 0; r < m.ranges.size(); ++r) {
    if (!in_window(m.ranges.start_ns[r], m.ranges.end_ns[r] ? m.ranges.end_ns[r] : UINT64_MAX)) continue;
    const uint32_t th = m.ranges.thread[r];
    std::string name;
    append_csv_field(name, m.string(m.ranges.name[r]));
    const uint16_t c = m.ranges.capture[r];
    host_row(out, "nvtx", shift.as < 0 ? c : static_cast<uint16_t>(shift.as), name, 0,
             th < m.threads.size() ? m.threads.thread_id[th] : 0, th < m.threads.size(),
             exporting::shifted(m.ranges.start_ns[r], shift.offset), exporting::shifted(m.ranges.end_ns[r], shift.offset),
             m.range_path_of_range(r), t0, cells_of(m, c));
    if (os) flush(out, *os);
  }
}

// One share of a scanned capture: its GPU and API rows as it reads them.
class CsvShare final : public analysis::EventConsumer {
 public:
  CsvShare(const analysis::EventScanner& scanner, uint64_t t0, CaptureShift shift, const exporting::LaunchRanges* ranges,
           std::atomic<uint64_t>* total, uint64_t limit)
      : spool(total, limit), context_(scanner.context()), t0_(t0), shift_(shift), ranges_(ranges),
        occupancy_(context_.captures.front().devices), cells_(cells_of(context_, 0)) {}

  void event(const analysis::ScannedEvent& e, const gpuhook::CaptureReader& reader) override {
    EventRow r;
    r.capture = static_cast<uint16_t>(shift_.as);
    r.device = e.device;
    r.stream = e.stream;
    r.correlation_id = e.correlation_id;
    r.priority = e.priority;
    r.kind = e.kind;
    r.copy_kind = e.copy_kind;
    r.bytes = e.bytes;
    r.launch_ns = exporting::shifted(e.launch_ns, shift_.offset);
    r.queued_ns = exporting::shifted(e.queued_ns, shift_.offset);
    r.submitted_ns = exporting::shifted(e.submitted_ns, shift_.offset);
    r.start_ns = exporting::shifted(e.start_ns, shift_.offset);
    r.end_ns = exporting::shifted(e.end_ns, shift_.offset);
    r.grid = e.grid;
    r.block = e.block;
    r.registers_per_thread = e.registers_per_thread;
    r.shared_memory_bytes = e.shared_memory_bytes;
    r.nccl = e.nccl;
    r.thread_id = e.launch_thread_id;
    r.name_cell = name_of(e, reader);
    if ((e.kind == EventKind::kKernel || e.kind == EventKind::kNccl) && occupancy_.any_device()) {
      const Occupancy& o = occupancy_.of(e.device, e.block, e.registers_per_thread, e.shared_memory_bytes);
      if (o.limit != OccupancyLimit::kUnknown) {
        r.occupancy = static_cast<float>(o.fraction);
        r.occupancy_limit = o.limit;
      }
    }
    std::string range;
    if (const uint32_t row = ranges_->of(e); row != kNone) range = context_.range_path_of_range(row);
    r.range = range;
    event_row(spool.text, r, t0_, cells_);
    ++events;
    spool.maybe_flush();
  }
  void api(const gpuhook::ApiFields& a, const gpuhook::CaptureReader& reader) override {
    if (filter && !filter->host_in_window(builder_known(a.start_ns), builder_known(a.end_ns))) return;
    std::string_view name;
    if (a.name_id < kCachedNames) {
      auto [it, fresh] = api_cells_.try_emplace(a.name_id);
      if (fresh) append_csv_field(it->second, api_display_name(reader.string(a.name_id)));
      name = it->second;
    } else {
      scratch_.clear();
      append_csv_field(scratch_, api_display_name(reader.string(a.name_id)));
      name = scratch_;
    }
    host_row(spool.text, "api", static_cast<uint16_t>(shift_.as), name, a.correlation_id, a.thread_id, true,
             exporting::shifted(builder_known(a.start_ns), shift_.offset), exporting::shifted(builder_known(a.end_ns), shift_.offset),
             "", t0_, cells_);
    spool.maybe_flush();
  }
  bool stopped() const override { return spool.over(); }

  exporting::Spool spool;
  uint64_t events = 0;
  const analysis::ScanFilter* filter = nullptr;  // the API calls' window; null: all

 private:
  static uint64_t builder_known(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }
  // Model::display_name() of the event as a CSV cell: a kernel's demangled name, a copy's,
  // memset's or synchronisation's call's (ModelBuilder's join), named by kind without a call.
  std::string_view name_of(const analysis::ScannedEvent& e, const gpuhook::CaptureReader& reader) {
    uint32_t id = e.name_id;
    if (id == 0) id = e.launch_name_id;
    const bool by_call = e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset || e.kind == EventKind::kSync;
    const auto cell = [&](std::string& out) {
      out.clear();
      if (id == 0) {
        append_csv_field(out, unjoined_name(e.kind, e.copy_kind));
        return;
      }
      const std::string_view text = reader.string(id);
      const std::string d = demangle(text);
      append_csv_field(out, d != text || !by_call ? std::string_view(d) : api_display_name(text));
    };
    // Worked out once per name: a large capture has millions of launches of a few kernels.
    if (id == 0 || id >= kCachedNames) {
      cell(scratch_);
      return scratch_;
    }
    auto [it, fresh] = cells_of_name_.try_emplace((uint64_t{id} << 1) | (by_call ? 1 : 0));
    if (fresh) cell(it->second);
    return it->second;
  }
  static constexpr uint32_t kCachedNames = 1u << 20;

  const Model& context_;
  uint64_t t0_;
  CaptureShift shift_;  // its place in the job and its clock's shift
  const exporting::LaunchRanges* ranges_;
  KernelOccupancy occupancy_;
  std::string cells_;  // rank, host, pid
  std::unordered_map<uint64_t, std::string> cells_of_name_;  // (name id, by call) -> its cell
  std::unordered_map<uint32_t, std::string> api_cells_;      // an API call's name id -> its cell
  std::string scratch_;
};

class CsvExporter final : public Exporter {
 public:
  std::string_view format() const override { return "csv"; }
  std::string_view description() const override { return "one row per GanttEvent (spreadsheets, pandas)"; }

  void write(const Model& m, const Selection& sel, const ExportOptions&, std::ostream& os) const override {
    std::string out;
    out.reserve(1 << 20);
    out += kColumns;
    const EventTable& ev = m.events;
    const uint64_t t0 = m.first_ns();
    const std::vector<uint32_t> call_of = m.nccl_call_of_events();  // the NCCL call behind a kernel
    std::vector<std::string> cells(m.captures.size());
    for (uint16_t c = 0; c < m.captures.size(); ++c) cells[c] = cells_of(m, c);
    std::string name_cell;
    for (uint32_t e : sel.events) {
      EventRow r;
      r.capture = ev.capture[e];
      r.device = ev.device[e];
      r.stream = ev.stream[e];
      r.correlation_id = ev.correlation_id[e];
      r.priority = ev.priority[e];
      r.kind = ev.kind[e];
      name_cell.clear();
      append_csv_field(name_cell, m.display_name(e));
      r.name_cell = name_cell;
      r.copy_kind = ev.copy_kind[e];
      r.bytes = ev.bytes[e];
      r.thread_id = m.launch_thread_id(e);
      r.launch_ns = m.launch_ns(e);
      r.queued_ns = ev.queued_ns[e];
      r.submitted_ns = ev.submitted_ns[e];
      r.start_ns = ev.start_ns[e];
      r.end_ns = ev.end_ns[e];
      r.grid = ev.grid[e];
      r.block = ev.block[e];
      r.registers_per_thread = ev.registers_per_thread[e];
      r.shared_memory_bytes = uint64_t{ev.static_smem_bytes[e]} + ev.dynamic_smem_bytes[e];
      r.occupancy = ev.occupancy[e];
      r.occupancy_limit = ev.occupancy_limit[e];
      const std::string range = ev.range[e] != kNone ? m.range_path(e) : std::string();
      r.range = range;
      analysis::ScannedNccl call;
      if (const uint32_t n = call_of[e]; n != kNone) {
        call = {m.nccl.op[n], m.nccl.comm_id[n], m.nccl.sequence[n], m.nccl.bytes[n], m.nccl.root_or_peer[n]};
        r.nccl = &call;
      }
      event_row(out, r, t0, cells[r.capture]);
      flush(out, os);
    }
    const uint64_t w0 = sel.window_start_ns, w1 = sel.window_end_ns;
    const auto in_window = [&](uint64_t s, uint64_t e) { return w1 == 0 || sel.window_fitted || (e >= w0 && s <= w1); };
    for (uint32_t a = 0; a < m.api.size(); ++a) {
      if (!in_window(m.api.start_ns[a], m.api.end_ns[a])) continue;
      const uint32_t th = m.api.thread[a];
      name_cell.clear();
      append_csv_field(name_cell, api_display_name(m.string(m.api.name[a])));
      host_row(out, "api", m.api.capture[a], name_cell, m.api.correlation_id[a],
               th < m.threads.size() ? m.threads.thread_id[th] : 0, th < m.threads.size(), m.api.start_ns[a],
               m.api.end_ns[a], "", t0, cells[m.api.capture[a]]);
      flush(out, os);
    }
    range_rows(m, t0, in_window, out, &os);
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
  }

  bool scans() const override { return true; }
  // Capture by capture, each on every thread; in a job of several, each capture's spools then go
  // into the first one, so that it holds one file (exporting::end_capture), and its scanner is
  // let go.
  bool write_scanned(const std::vector<std::string>& paths, const ScanExportOptions& o, const OpenOutput& open_output,
                     ScannedExport* result, std::string* why_not) const override {
    analysis::EventScanOptions so;
    so.load = o.load;
    so.threads = o.threads;
    so.join_nccl = true;  // the nccl_* columns
    std::optional<exporting::ScanJob> job = exporting::open_scan_job(paths, so, o.filter, why_not);
    if (!job) return false;
    const uint64_t t0 = job->first_ns;
    std::atomic<uint64_t> total{kColumns.size()};
    std::vector<std::unique_ptr<CsvShare>> kept;  // the shares whose spools make the output (end_capture)
    std::string tail;
    for (size_t c = 0; c < job->scanners.size(); ++c) {
      analysis::EventScanner& scanner = *job->scanners[c];
      const Model& context = scanner.context();
      const CaptureShift shift{static_cast<int32_t>(c), job->offsets[c]};
      const analysis::ScanFilter* filter = scanner.filter();  // the job's window on this capture's clock
      const exporting::LaunchRanges ranges(context);
      std::vector<std::unique_ptr<CsvShare>> shares;
      std::vector<analysis::EventConsumer*> consumers;
      for (size_t i = 0; i < scanner.shares(); ++i) {
        shares.push_back(std::make_unique<CsvShare>(scanner, t0, shift, &ranges, &total, o.max_output));
        shares.back()->filter = filter;
        consumers.push_back(shares.back().get());
      }
      if (c == 0 && !shares.empty()) shares.front()->spool.become(o.output_path, kColumns);
      std::string why;
      if (!scanner.run(consumers, &why)) {
        if (std::any_of(shares.begin(), shares.end(), [](const auto& sh) { return sh->spool.over(); })) {
          result->over = true;
          return true;
        }
        if (why_not) *why_not = exporting::about_capture(paths, c, why);
        return false;
      }
      range_rows(context, t0, [filter](uint64_t s, uint64_t e) { return !filter || filter->host_in_window(s, e); }, tail, nullptr,
                 shift);
      if (!exporting::end_capture(*job, c, kept, shares, result)) return true;
    }
    if (o.max_output != 0 && total + tail.size() > o.max_output) {
      result->over = true;
      return true;
    }
    exporting::deliver(exporting::spools_of(kept), kColumns, tail, open_output);
    result->bytes = total + tail.size();
    return true;
  }
};

}  // namespace

std::unique_ptr<Exporter> make_csv_exporter() { return std::make_unique<CsvExporter>(); }

}  // namespace gantt
