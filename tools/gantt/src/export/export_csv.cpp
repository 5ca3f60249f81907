// CSV: one row per GanttEvent, then one per host API call and NVTX range (kind "api", "nvtx"),
// RFC 4180 quoting, UTF-8. Times are absolute nanoseconds in the capture's host clock plus
// *_rel_ns from the capture start; unknown is an empty cell, never 0, so a spreadsheet average
// does not silently include invented values. Every row names its capture's rank, host and
// pid; a kernel an NCCL call ran carries the call's op, communicator, sequence, peer and bytes.
#include <charconv>
#include <cmath>
#include <cstdio>

#include "gantt/export/export.h"
#include "gantt/ranks/collectives.h"
#include "gantt/model/text.h"

namespace gantt {

namespace {

constexpr std::string_view kColumns =
    "capture,device,stream,priority,kind,name,copy_kind,bytes,correlation_id,thread_id,"
    "launch_ns,queued_ns,submitted_ns,start_ns,end_ns,start_rel_ns,end_rel_ns,"
    "launch_to_queued_ns,queued_to_submitted_ns,submitted_to_start_ns,queued_to_start_ns,exec_ns,total_ns,"
    "grid,block,registers_per_thread,shared_memory_bytes,occupancy,occupancy_limit,range,"
    "rank,host,pid,nccl_op,nccl_comm,nccl_seq,nccl_peer,nccl_bytes\n";

void num(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}
void inum(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}
void time_cell(std::string& out, uint64_t v) {
  if (v) num(out, v);
  out += ',';
}
void opt_cell(std::string& out, const std::optional<int64_t>& v) {
  if (v) inum(out, *v);
  out += ',';
}
void dim3(std::string& out, const std::array<int32_t, 3>& d) {
  inum(out, d[0]);
  out += 'x';
  inum(out, d[1]);
  out += 'x';
  inum(out, d[2]);
}

class CsvExporter final : public Exporter {
 public:
  std::string_view format() const override { return "csv"; }
  std::string_view description() const override { return "one row per GanttEvent (spreadsheets, pandas)"; }

  void write(const Model& m, const Selection& sel, const ExportOptions&, std::ostream& os) const override {
    std::string out;
    out.reserve(1 << 20);
    out += kColumns;
    const EventTable& ev = m.events;
    const uint64_t t0 = m.first_ns();  // *_rel_ns: from capture start, whatever the window
    std::vector<uint32_t> nccl_of(ev.size(), kNone);  // the NCCL call behind a kernel
    for (uint32_t n = 0; n < m.nccl.size(); ++n)
      if (m.nccl.event[n] < nccl_of.size() && nccl_of[m.nccl.event[n]] == kNone) nccl_of[m.nccl.event[n]] = n;
    for (uint32_t e : sel.events) {
      num(out, ev.capture[e]); out += ',';
      num(out, ev.device[e]); out += ',';
      num(out, ev.stream[e]); out += ',';
      inum(out, ev.priority[e]); out += ',';
      out += to_string(ev.kind[e]); out += ',';
      append_csv_field(out, m.display_name(e)); out += ',';
      if (ev.kind[e] == EventKind::kMemcpy) out += copy_kind_name(ev.copy_kind[e]);
      out += ',';
      num(out, ev.bytes[e]); out += ',';
      num(out, ev.correlation_id[e]); out += ',';
      if (const uint64_t tid = m.launch_thread_id(e)) num(out, tid);
      out += ',';
      time_cell(out, m.launch_ns(e));
      time_cell(out, ev.queued_ns[e]);
      time_cell(out, ev.submitted_ns[e]);
      time_cell(out, ev.start_ns[e]);
      time_cell(out, ev.end_ns[e]);
      if (ev.start_ns[e]) inum(out, static_cast<int64_t>(ev.start_ns[e] - t0));
      out += ',';
      if (ev.end_ns[e]) inum(out, static_cast<int64_t>(ev.end_ns[e] - t0));
      out += ',';
      const Stages s = m.stages(e);
      opt_cell(out, s.launch_to_queued_ns);
      opt_cell(out, s.queued_to_submitted_ns);
      opt_cell(out, s.submitted_to_start_ns);
      opt_cell(out, s.queued_to_start_ns);
      opt_cell(out, s.exec_ns);
      opt_cell(out, s.total_ns);
      const bool is_kernel = ev.kind[e] == EventKind::kKernel || ev.kind[e] == EventKind::kNccl;
      if (is_kernel) dim3(out, ev.grid[e]);
      out += ',';
      if (is_kernel) dim3(out, ev.block[e]);
      out += ',';
      if (is_kernel) num(out, ev.registers_per_thread[e]);
      out += ',';
      if (is_kernel) num(out, uint64_t{ev.static_smem_bytes[e]} + ev.dynamic_smem_bytes[e]);
      out += ',';
      if (!std::isnan(ev.occupancy[e])) {
        char buf[16];
        auto r = std::to_chars(buf, buf + sizeof buf, std::round(ev.occupancy[e] * 10000.0f) / 10000.0f,
                               std::chars_format::fixed);
        out.append(buf, r.ptr);
        out += ',';
        out += to_string(ev.occupancy_limit[e]);
      } else {
        out += ',';
      }
      out += ',';
      if (ev.range[e] != kNone) append_csv_field(out, m.range_path(e));
      out += ',';
      capture_cells(out, m, ev.capture[e]);
      if (const uint32_t n = nccl_of[e]; n != kNone) {
        const NcclTable& nc = m.nccl;
        out += nccl_op_name(nc.op[n]);
        out += ',';
        char comm[24];
        std::snprintf(comm, sizeof comm, "0x%016llx", static_cast<unsigned long long>(nc.comm_id[n]));
        out += comm;
        out += ',';
        num(out, nc.sequence[n]);
        out += ',';
        inum(out, nc.root_or_peer[n]);
        out += ',';
        num(out, nc.bytes[n]);
      } else {
        out += ",,,,";
      }
      out += '\n';
      flush(out, os);
    }
    host_rows(m, sel, t0, out, os);
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
  }

 private:
  static void flush(std::string& out, std::ostream& os) {
    if (out.size() > (1u << 20)) {
      os.write(out.data(), static_cast<std::streamsize>(out.size()));
      out.clear();
    }
  }
  static void capture_cells(std::string& out, const Model& m, uint16_t c) {
    const auto& h = m.captures[c].header;
    if (h.has_rank()) inum(out, h.rank());
    out += ',';
    append_csv_field(out, h.host_name());
    out += ',';
    num(out, h.pid());
    out += ',';
  }
  // API calls and NVTX ranges inside the window (all of them when none was asked for): the
  // columns that mean the same for them are filled, the GPU ones left empty.
  static void host_rows(const Model& m, const Selection& sel, uint64_t t0, std::string& out, std::ostream& os) {
    const uint64_t w0 = sel.window_start_ns, w1 = sel.window_end_ns;
    const auto in_window = [&](uint64_t s, uint64_t e) { return w1 == 0 || sel.window_fitted || (e >= w0 && s <= w1); };
    const auto row = [&](const char* kind, uint16_t c, std::string_view name, uint32_t corr, uint32_t thread,
                         uint64_t s, uint64_t e, std::string_view range) {
      num(out, c);
      out += ",,,,";  // device, stream, priority
      out += kind;
      out += ',';
      append_csv_field(out, name);
      out += ",,,";  // copy_kind, bytes
      if (corr) num(out, corr);
      out += ',';
      if (thread < m.threads.size()) num(out, m.threads.thread_id[thread]);
      out += ",,,,";  // launch, queued, submitted
      time_cell(out, s);
      time_cell(out, e);
      if (s) inum(out, static_cast<int64_t>(s - t0));
      out += ',';
      if (e) inum(out, static_cast<int64_t>(e - t0));
      out += ",,,,,";  // stages
      if (s && e >= s) inum(out, static_cast<int64_t>(e - s));
      out += ",,,,,,,,";  // total, grid, block, registers, shared memory, occupancy, limit
      append_csv_field(out, range);
      out += ',';
      capture_cells(out, m, c);
      out += ",,,,\n";
      flush(out, os);
    };
    for (uint32_t a = 0; a < m.api.size(); ++a)
      if (in_window(m.api.start_ns[a], m.api.end_ns[a]))
        row("api", m.api.capture[a], api_display_name(m.string(m.api.name[a])), m.api.correlation_id[a], m.api.thread[a],
            m.api.start_ns[a], m.api.end_ns[a], "");
    for (uint32_t r = 0; r < m.ranges.size(); ++r)
      if (in_window(m.ranges.start_ns[r], m.ranges.end_ns[r] ? m.ranges.end_ns[r] : UINT64_MAX))
        row("nvtx", m.ranges.capture[r], m.string(m.ranges.name[r]), 0, m.ranges.thread[r], m.ranges.start_ns[r],
            m.ranges.end_ns[r], m.range_path_of_range(r));
  }
};

}  // namespace

std::unique_ptr<Exporter> make_csv_exporter() { return std::make_unique<CsvExporter>(); }

}  // namespace gantt
