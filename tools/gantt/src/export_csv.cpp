// CSV: one row per GanttEvent, RFC 4180 quoting, UTF-8. Times are absolute nanoseconds in
// the capture's host clock plus *_rel_ns from the capture start; unknown is an empty cell,
// never 0, so a spreadsheet average does not silently include invented values.
#include <charconv>
#include <cmath>

#include "gantt/export.h"
#include "gantt/text.h"

namespace gantt {

namespace {

constexpr std::string_view kColumns =
    "capture,device,stream,priority,kind,name,copy_kind,bytes,correlation_id,thread_id,"
    "launch_ns,queued_ns,submitted_ns,start_ns,end_ns,start_rel_ns,end_rel_ns,"
    "launch_to_queued_ns,queued_to_submitted_ns,submitted_to_start_ns,queued_to_start_ns,exec_ns,total_ns,"
    "grid,block,registers_per_thread,shared_memory_bytes,occupancy,occupancy_limit,range\n";

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
      out += '\n';
      if (out.size() > (1u << 20)) {
        os.write(out.data(), static_cast<std::streamsize>(out.size()));
        out.clear();
      }
    }
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
  }
};

}  // namespace

std::unique_ptr<Exporter> make_csv_exporter() { return std::make_unique<CsvExporter>(); }

}  // namespace gantt
