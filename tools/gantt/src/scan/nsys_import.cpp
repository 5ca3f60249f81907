// Nsight Systems SQLite exports (`nsys export --type sqlite`) as capture records
// (TRACE-FORMATS.md, part B).
//
// Tables are created lazily and their columns change between versions (B1, B5), so every
// table and column is looked up by name: a missing table is no data of that kind, a missing
// optional column is an unknown value, and what the report lacks is said once in a notice.
// Row order is not guaranteed (2025.6 release notes): each table is read ORDER BY start, the
// tables merged by start, so each chunk of the capture covers a short stretch of time.
// Nothing is held per row except the open NVTX ranges of each thread and the strings used.
//
// A report may hold several processes (CUDA correlation ids are per process, B3). All of them
// are written, not only the one with most GPU work: a multi-process job's kernels would
// otherwise vanish from the chart, and the header names that busiest process. The capture
// keys launches by correlation id alone, so with several processes each id becomes
// id * processes + process index, and each process's CUDA ordinal becomes the report's GPU id
// (TARGET_INFO_CUDA_DEVICE), since two processes given different CUDA_VISIBLE_DEVICES each
// call their GPU device 0.
//
// This file is the entry point and everything written before and after the rows: the survey
// of the report, the header, devices, streams, threads, notices and footer. The rows and their
// merge are nsys_rows.cpp; the state both share is nsys_importer.h.
#include <gpuhook/capture.h>
#include <gpuhook/version.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gantt/scan/trace_import.h"
#include "nsys_importer.h"
#include "nsys_schema.h"
#include "nsys_sqlite.h"

namespace gantt::scan::nsys {

using gpuhook::CaptureError;
using gpuhook::CaptureErrorKind;

void Importer::run() {
  find_tables();
  read_session();
  survey();
  copy_enum_ = read_enum("ENUM_CUDA_MEMCPY_OPER");
  memory_enum_ = read_enum("ENUM_CUDA_MEM_KIND");
  sync_enum_ = read_enum("ENUM_CUPTI_SYNC_TYPE");
  launch_enum_ = read_enum("ENUM_CUDA_KERNEL_LAUNCH_TYPE");
  write_header();
  write_devices();
  write_streams();
  write_threads();
  read_domains();
  merge();
  write_footer();
}

void Importer::bad_table(const std::string& table, const std::string& what) const {
  throw CaptureError(CaptureErrorKind::kBadRecord, db_.path(), 0, "table " + table + ": " + what);
}

void Importer::require(const Query& q, std::initializer_list<int> any_of, const std::vector<std::string_view>& names) {
  for (int c : any_of) {
    if (q.has(c)) return;
  }
  std::string list;
  for (int c : any_of) list += (list.empty() ? "" : " or ") + std::string(names[c]);
  throw CaptureError(CaptureErrorKind::kBadRecord, q.path(), 0,
                     "table " + q.table() + ": no column " + list + ", which every nsys version writes");
}

// ---- what the report holds ----

void Importer::find_tables() {
  t_.kernel = db_.table("CUPTI_ACTIVITY_KIND_KERNEL");
  t_.memcpy = db_.table("CUPTI_ACTIVITY_KIND_MEMCPY");
  t_.memset = db_.table("CUPTI_ACTIVITY_KIND_MEMSET");
  t_.runtime = db_.table("CUPTI_ACTIVITY_KIND_RUNTIME");
  t_.driver = db_.table("CUPTI_ACTIVITY_KIND_DRIVER");
  t_.sync = db_.table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION");
  t_.nvtx = db_.table("NVTX_EVENTS");
  t_.strings = db_.table("StringIds");
  t_.gpu = db_.table("TARGET_INFO_GPU");
  t_.cuda_device = db_.table("TARGET_INFO_CUDA_DEVICE");
  t_.session = db_.table("TARGET_INFO_SESSION_START_TIME");
  t_.env = db_.table("TARGET_INFO_SYSTEM_ENV");
  t_.threads = db_.table("ThreadNames");
  t_.streams = db_.table("TARGET_INFO_CUDA_STREAM");
  t_.graph_trace = db_.table("CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
  if (t_.kernel.empty() && t_.memcpy.empty() && t_.memset.empty() && t_.runtime.empty() && t_.driver.empty() &&
      t_.sync.empty() && t_.nvtx.empty() && t_.strings.empty()) {
    throw CaptureError(CaptureErrorKind::kNotACapture, db_.path(), 0,
                       "an SQLite database without Nsight Systems tables (no StringIds, CUPTI_ACTIVITY_KIND_* or "
                       "NVTX_EVENTS): not an `nsys export --type sqlite` file, nor a gpuhook capture");
  }
  // `nsys export --lazy=false` creates every table, empty ones too: an empty table is no data.
  for (std::string* t : {&t_.kernel, &t_.memcpy, &t_.memset, &t_.runtime, &t_.driver, &t_.sync, &t_.nvtx, &t_.gpu,
                         &t_.cuda_device, &t_.session, &t_.env, &t_.threads, &t_.streams, &t_.graph_trace}) {
    bool rows = false;
    if (!t->empty()) each("SELECT 1 FROM " + quoted(*t) + " LIMIT 1", *t, [&](sqlite3_stmt*) { rows = true; });
    if (!rows) t->clear();
  }
}

// Relative times become wall-clock ns with the session's UTC start (B1); without it they stay
// relative and the header says so.
void Importer::read_session() {
  if (!t_.session.empty()) {
    Query q(db_, t_.session, {"utcEpochNs"}, "", "");
    if (q.step()) {
      if (const std::optional<int64_t> base = q.integer(0)) {
        if (*base < 0 || *base > kMaxTimeNs) q.bad_column(0, "is " + std::to_string(*base) + ": not a time in ns");
        base_ns_ = *base;
        has_base_ = true;
      }
    }
  }
  if (!t_.env.empty()) {
    Query q(db_, t_.env, {"name", "value"}, "", "");
    for (size_t n = 0; n < kMaxSmallTableRows && q.step(); ++n) {
      if (iequals(q.text(0).value_or(""), "Hostname")) host_name_ = q.text(1).value_or("");
    }
  }
}

// Per process, GPU and API rows (for the header's pid and the correlation keys), and the
// time span: one aggregate pass per table, no row kept.
void Importer::survey() {
  struct Kind {
    const std::string* table;
    const char* global;  // the column that holds the process
    bool gpu;
  };
  const Kind kinds[] = {{&t_.kernel, "globalPid", true},  {&t_.memcpy, "globalPid", true},
                        {&t_.memset, "globalPid", true},  {&t_.runtime, "globalTid", false},
                        {&t_.driver, "globalTid", false}, {&t_.sync, "globalPid", false}};
  std::map<int64_t, std::pair<uint64_t, uint64_t>> rows;  // pid -> (GPU rows, API rows)
  for (const Kind& k : kinds) {
    if (k.table->empty()) continue;
    const std::vector<std::string> cols = columns_with(*k.table, {"start", "end"});
    auto has = [&](std::string_view c) {
      return std::any_of(cols.begin(), cols.end(), [&](const std::string& s) { return iequals(s, c); });
    };
    if (k.table == &t_.kernel) has_latency_ = has("queued") && has("submitted");
    const std::string pid = has(k.global) ? "(" + quoted(k.global) + " >> 24) & 16777215" : "NULL";
    each("SELECT " + pid + ", COUNT(*), MIN(\"start\"), MAX(\"end\") FROM " + quoted(*k.table) + " GROUP BY 1",
         *k.table, [&](sqlite3_stmt* st) {
           see_span(st, 2, 3);
           if (sqlite3_column_type(st, 0) != SQLITE_INTEGER) return;
           if (rows.size() >= kMaxProcesses && rows.count(sqlite3_column_int64(st, 0)) == 0) {
             bad_table(*k.table, "more than " + std::to_string(kMaxProcesses) + " processes");
           }
           auto& r = rows[sqlite3_column_int64(st, 0)];
           (k.gpu ? r.first : r.second) += static_cast<uint64_t>(sqlite3_column_int64(st, 1));
         });
  }
  if (!t_.nvtx.empty()) {
    columns_with(t_.nvtx, {"start", "end", "eventType"});
    each("SELECT MIN(\"start\"), MAX(\"start\"), MAX(\"end\") FROM " + quoted(t_.nvtx) + " WHERE " + nvtx_kinds(),
         t_.nvtx, [&](sqlite3_stmt* st) {
           see_span(st, 0, 1);
           see_span(st, 0, 2);
         });
  }
  // The busiest process by GPU rows, then API rows, then the lowest pid.
  std::pair<uint64_t, uint64_t> most{0, 0};
  for (const auto& [pid, r] : rows) {
    procs_.push_back(pid);
    if (procs_.size() == 1 || r > most) {
      most = r;
      main_pid_ = pid;
    }
  }
  if (procs_.empty()) procs_.push_back(main_pid_);
  main_index_ = process_index(main_pid_);
}

// The table's columns, after checking that it has those every nsys version writes.
std::vector<std::string> Importer::columns_with(const std::string& table,
                                                std::initializer_list<const char*> required) const {
  std::vector<std::string> cols = db_.columns(table);
  for (const char* c : required) {
    if (std::none_of(cols.begin(), cols.end(), [&](const std::string& s) { return iequals(s, c); })) {
      bad_table(table, std::string("no column ") + c + ", which every nsys version writes");
    }
  }
  return cols;
}

// The NVTX rows written: marks and ranges (domain and category definitions are names only).
std::string Importer::nvtx_kinds() {
  return "\"eventType\" IN (" + std::to_string(kNvtxMark) + ", " + std::to_string(kNvtxPushPop) + ", " +
         std::to_string(kNvtxStartEnd) + ")";
}

// MIN/MAX of a survey query; values that are no time are left to the row pass, which names the row.
void Importer::see_span(sqlite3_stmt* st, int min_col, int max_col) {
  auto value = [&](int c) -> std::optional<int64_t> {
    if (sqlite3_column_type(st, c) != SQLITE_INTEGER) return std::nullopt;
    const int64_t v = sqlite3_column_int64(st, c);
    return std::clamp<int64_t>(v, 0, kMaxTimeNs - base_ns_);
  };
  if (const auto lo = value(min_col)) first_rel_ns_ = std::min(first_rel_ns_.value_or(*lo), *lo);
  if (const auto hi = value(max_col)) last_rel_ns_ = std::max(last_rel_ns_.value_or(*hi), *hi);
}

template <class F>
void Importer::each(const std::string& sql, const std::string& table, F&& row) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &st, nullptr) != SQLITE_OK) db_.fail("table " + table);
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> hold(st, &sqlite3_finalize);
  int rc = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(st);
  if (rc != SQLITE_DONE) db_.fail("table " + table);
}

EnumText Importer::read_enum(std::string_view name) {
  EnumText e;
  const std::string table = db_.table(name);
  if (table.empty()) return e;
  Query q(db_, table, EnumCol::names(), "", "");
  require(q, {EnumCol::id}, EnumCol::names());
  for (size_t n = 0; n < kMaxSmallTableRows && q.step(); ++n) {
    if (const std::optional<int64_t> id = q.integer(EnumCol::id)) {
      e[*id] = {q.text(EnumCol::name).value_or(""), q.text(EnumCol::label).value_or("")};
    }
  }
  return e;
}

size_t Importer::process_index(int64_t pid) const {
  const auto it = std::lower_bound(procs_.begin(), procs_.end(), pid);
  return it != procs_.end() && *it == pid ? static_cast<size_t>(it - procs_.begin()) : main_index_;
}

// ---- header, devices, streams, threads ----

int64_t Importer::absolute_or_base(const std::optional<int64_t>& rel) const { return base_ns_ + rel.value_or(0); }

void Importer::write_header() {
  const uint64_t start = static_cast<uint64_t>(absolute_or_base(first_rel_ns_));
  v1::Record r;
  v1::Header* h = r.mutable_header();
  h->set_format_version(gpuhook::kFormatVersion);
  // ", read by gantt-cli" marks an imported trace for the loaders (load.cpp).
  h->set_tool_version(std::string("Nsight Systems SQLite export, read by gantt-cli ") + GPUHOOK_VERSION);
  h->set_host_name(host_name_);
  h->set_pid(clamp_u32(main_pid_));
  h->set_start_monotonic_raw_ns(start);
  h->set_start_realtime_ns(start);
  // nsys puts host and GPU times on one session timeline.
  h->set_clock_domain(has_base_ ? "CLOCK_REALTIME (nsys)" : "ns from the nsys session start");
  uint64_t features = v1::FEATURE_HOST_CLOCK_CALLBACK | v1::FEATURE_SYSTEM_THREAD_IDS;
  if (!t_.nvtx.empty()) features |= v1::FEATURE_NVTX;
  if (has_latency_) features |= v1::FEATURE_LATENCY_TIMESTAMPS;
  h->set_features(features);
  out_.write(r);
  if (!has_latency_) {
    notice(
        "read from an Nsight Systems export: queued and submitted times are unknown (the kernel table has no "
        "such columns), so launch-to-start is not split into queue and submit stages");
  }
  if (!has_base_) {
    notice(
        "the report has no TARGET_INFO_SESSION_START_TIME: times are ns from the session start, not wall-clock "
        "time");
  }
  if (t_.runtime.empty() && t_.driver.empty()) {
    notice(
        "the report has no CUDA API table (CUPTI_ACTIVITY_KIND_RUNTIME): launch times and what the host "
        "threads waited in are unknown");
  } else if (t_.sync.empty()) {
    notice(
        "the report has no CUPTI_ACTIVITY_KIND_SYNCHRONIZATION table: synchronisation is taken from the "
        "blocking CUDA calls, without their streams");
  }
  if (!t_.graph_trace.empty()) {
    notice(
        "CUDA graphs were traced whole (nsys --cuda-graph-trace=graph): the kernels inside graph launches are "
        "not in the report");
  }
  if (procs_.size() > 1) {
    std::string pids;
    for (size_t i = 0; i < procs_.size() && i < 16; ++i) pids += (i == 0 ? "" : ", ") + std::to_string(procs_[i]);
    if (procs_.size() > 16) pids += ", ...";
    notice("the report holds " + std::to_string(procs_.size()) + " processes (" + pids +
           "), all read into this capture: correlation ids are renumbered per process and devices are the "
           "report's GPU ids; the header names pid " +
           std::to_string(main_pid_) + ", the one with most GPU work");
  }
}

void Importer::notice(const std::string& text) {
  v1::Record r;
  r.mutable_notice()->set_kind(v1::NOTICE_UNKNOWN);
  r.mutable_notice()->set_time_ns(absolute_or_base(first_rel_ns_));
  r.mutable_notice()->set_text(text);
  out_.write(r);
}

v1::DeviceInfo Importer::device_info_of(const Query& q) {
  using C = GpuCol;
  v1::DeviceInfo d;
  d.set_name(q.text(C::name).value_or(""));
  d.set_uuid(q.text(C::uuid).value_or(""));
  d.set_sm_count(clamp_u32(q.integer_or(C::smCount, 0)));
  d.set_cc_major(clamp_u32(q.integer_or(C::computeMajor, 0)));
  d.set_cc_minor(clamp_u32(q.integer_or(C::computeMinor, 0)));
  const uint32_t warp = clamp_u32(q.integer_or(C::threadsPerWarp, 0));
  d.set_warp_size(warp);
  d.set_max_warps_per_sm(clamp_u32(q.integer_or(C::maxWarpsPerSm, 0)));
  d.set_max_threads_per_sm(clamp_u32(int64_t{d.max_warps_per_sm()} * warp));
  d.set_max_blocks_per_sm(clamp_u32(q.integer_or(C::maxBlocksPerSm, 0)));
  d.set_max_threads_per_block(clamp_u32(q.integer_or(C::maxThreadsPerBlock, 0)));
  d.set_registers_per_sm(clamp_u32(q.integer_or(C::maxRegistersPerSm, 0)));
  d.set_registers_per_block(clamp_u32(q.integer_or(C::maxRegistersPerBlock, 0)));
  d.set_shared_memory_per_sm_bytes(q.u64(C::maxShmemPerSm));
  d.set_shared_memory_per_block_bytes(q.u64(C::maxShmemPerBlock));
  d.set_shared_memory_per_block_optin_bytes(q.u64(C::maxShmemPerBlockOptin));
  d.set_global_memory_bytes(q.u64(C::totalMemory));
  d.set_core_clock_khz(clamp_u32(q.integer_or(C::clockRate, 0) / 1000));  // nsys gives Hz
  d.set_async_engine_count(clamp_u32(q.integer_or(C::asyncEngines, 0)));
  d.set_pci_bus_id(pci_bus_of(q.text(C::busLocation).value_or("")));
  return d;
}

// One DeviceInfo per CUDA ordinal (TARGET_INFO_CUDA_DEVICE.cudaId = the activities' deviceId),
// or per report GPU id when several processes are read (see the top of the file).
void Importer::write_devices() {
  std::map<int64_t, v1::DeviceInfo> gpus;  // TARGET_INFO_GPU.id ->
  std::map<int64_t, int64_t> cu_device;    // TARGET_INFO_GPU.id -> cuDevice, when given
  if (!t_.gpu.empty()) {
    Query q(db_, t_.gpu, GpuCol::names(), "", "");
    for (size_t n = 0; n < kMaxSmallTableRows && q.step(); ++n) {
      const std::optional<int64_t> id = q.integer(GpuCol::id);
      if (!id) continue;
      gpus[*id] = device_info_of(q);
      if (const std::optional<int64_t> cu = q.integer(GpuCol::cuDevice)) cu_device[*id] = *cu;
    }
  }
  std::set<uint32_t> written;
  auto write = [&](int64_t ordinal, v1::DeviceInfo d) {
    if (!written.insert(clamp_u32(ordinal)).second) return;
    d.set_ordinal(clamp_u32(ordinal));
    v1::Record r;
    *r.mutable_device() = std::move(d);
    out_.write(r);
  };
  if (!t_.cuda_device.empty()) {
    struct Row {
      bool main;
      int64_t pid, gpu, cuda;
      v1::DeviceInfo info;
    };
    std::vector<Row> rows;
    Query q(db_, t_.cuda_device, CudaDeviceCol::names(), "", "");
    for (size_t n = 0; n < kMaxSmallTableRows && q.step(); ++n) {
      using C = CudaDeviceCol;
      const std::optional<int64_t> cuda = q.integer(C::cudaId);
      if (!cuda) continue;
      int64_t pid = q.integer_or(C::pid, kUnknownPid);
      if (pid > 0xFFFFFF) pid = pid_of(pid);  // a globalPid rather than the plain pid
      const std::optional<int64_t> gpu = q.integer(C::gpuId);
      Row row{pid == main_pid_, pid, gpu.value_or(*cuda), *cuda, {}};
      if (const auto it = gpu ? gpus.find(*gpu) : gpus.end(); it != gpus.end()) row.info = it->second;
      if (row.info.sm_count() == 0) row.info.set_sm_count(clamp_u32(q.integer_or(C::numMultiprocessors, 0)));
      if (row.info.uuid().empty()) row.info.set_uuid(q.text(C::uuid).value_or(""));
      rows.push_back(std::move(row));
    }
    // The header's process first: with one process read, its ordinals are the ones used.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.main > b.main; });
    for (const Row& row : rows) {
      if (procs_.size() > 1) gpu_of_[{row.pid, row.cuda}] = row.gpu;
      write(procs_.size() > 1 ? row.gpu : row.cuda, row.info);
    }
  } else {
    for (const auto& [id, info] : gpus) {
      const auto cu = cu_device.find(id);
      write(cu != cu_device.end() ? cu->second : id, info);
    }
  }
  if (written.empty() && (!t_.kernel.empty() || !t_.memcpy.empty() || !t_.memset.empty())) {
    notice("the report describes no GPU (no TARGET_INFO_GPU or TARGET_INFO_CUDA_DEVICE): occupancy is unknown");
  }
}

uint32_t Importer::device_of(int64_t pid, uint32_t device) const {
  if (gpu_of_.empty()) return device;
  const auto it = gpu_of_.find({pid == kUnknownPid ? main_pid_ : pid, device});
  return it != gpu_of_.end() ? clamp_u32(it->second) : device;
}

void Importer::write_streams() {
  if (t_.streams.empty()) return;
  Query q(db_, t_.streams, StreamCol::names(), "", "");
  for (size_t n = 0; n < kMaxSmallTableRows && q.step(); ++n) {
    if (!q.integer(StreamCol::streamId)) continue;
    v1::Record r;
    v1::StreamInfo* s = r.mutable_stream();
    s->set_context(q.u32(StreamCol::contextId));
    s->set_stream(q.u32(StreamCol::streamId));
    s->set_priority(q.i32(StreamCol::priority));
    s->set_flags(q.u32(StreamCol::flag));
    out_.write(r);
  }
}

void Importer::write_threads() {
  if (t_.threads.empty()) return;
  Query q(db_, t_.threads, ThreadCol::names(), "", "");
  require(q, {ThreadCol::globalTid}, ThreadCol::names());
  std::set<uint64_t> named;
  for (size_t n = 0; n < kMaxSmallTableRows && q.step(); ++n) {
    const std::optional<int64_t> g = q.integer(ThreadCol::globalTid);
    const std::optional<int64_t> name = q.integer(ThreadCol::nameId);
    if (!g || !name || !named.insert(tid_of(g)).second) continue;
    v1::Record r;
    r.mutable_thread()->set_thread_id(tid_of(g));
    r.mutable_thread()->set_name_id(string_id(q, ThreadCol::nameId, *name).value_or(0));
    out_.write(r);
  }
}

void Importer::write_footer() {
  if (correlations_dropped_ != 0) {
    notice(std::to_string(correlations_dropped_) +
           " rows kept no correlation id: renumbered per process, their ids "
           "did not fit in 32 bits, so they are not joined with their launches");
  }
  v1::Record r;
  const uint64_t end = static_cast<uint64_t>(std::max(trace_end_ns(), absolute_or_base(first_rel_ns_)));
  r.mutable_footer()->set_end_monotonic_raw_ns(end);
  r.mutable_footer()->set_end_realtime_ns(end);
  r.mutable_footer()->set_records(out_.stats().records);
  r.mutable_footer()->set_clean(true);
  out_.write(r);
}
}  // namespace gantt::scan::nsys

namespace gantt::scan {

void import_nsys(const std::string& path, gpuhook::CaptureWriter& out) { nsys::Importer(path, out).run(); }

}  // namespace gantt::scan
