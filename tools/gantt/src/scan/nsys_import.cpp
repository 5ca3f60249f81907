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
#include <gpuhook/capture.h>
#include <gpuhook/version.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gantt/scan/trace_import.h"
#include "nsys_schema.h"
#include "nsys_sqlite.h"

namespace gantt::scan {

namespace v1 = gpuhook::v1;
using gpuhook::CaptureError;
using gpuhook::CaptureErrorKind;
using namespace nsys;  // the SQLite access (nsys_sqlite.h), the schema's columns and decoders (nsys_schema.h)

namespace {

constexpr int64_t kMaxTimeNs = int64_t{1} << 62;
constexpr size_t kMaxProcesses = 4096;
constexpr size_t kMaxSmallTableRows = 65536;  // devices, streams, enums, thread names, NVTX domains
constexpr size_t kMaxNesting = 1000;          // as deep as the model keeps a push/pop stack

struct Tables {
  std::string kernel, memcpy, memset, runtime, driver, sync, nvtx, strings, gpu, cuda_device, session, env, threads,
      streams, graph_trace;
};

class Importer {
 public:
  Importer(const std::string& path, gpuhook::CaptureWriter& out) : db_(path), out_(out) {}

  void run() {
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

 private:
  using Convert = void (Importer::*)(const Query&, int64_t);
  struct Source {
    std::unique_ptr<Query> query;
    Convert convert = nullptr;
    int64_t start_ns = 0;
    bool live = false;
  };

  [[noreturn]] void bad_table(const std::string& table, const std::string& what) const {
    throw CaptureError(CaptureErrorKind::kBadRecord, db_.path(), 0, "table " + table + ": " + what);
  }
  static void require(const Query& q, std::initializer_list<int> any_of, const std::vector<std::string_view>& names) {
    for (int c : any_of) {
      if (q.has(c)) return;
    }
    std::string list;
    for (int c : any_of) list += (list.empty() ? "" : " or ") + std::string(names[c]);
    throw CaptureError(CaptureErrorKind::kBadRecord, q.path(), 0,
                       "table " + q.table() + ": no column " + list + ", which every nsys version writes");
  }

  // ---- what the report holds ----
  void find_tables() {
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
  void read_session() {
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
  void survey() {
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
  std::vector<std::string> columns_with(const std::string& table, std::initializer_list<const char*> required) const {
    std::vector<std::string> cols = db_.columns(table);
    for (const char* c : required) {
      if (std::none_of(cols.begin(), cols.end(), [&](const std::string& s) { return iequals(s, c); })) {
        bad_table(table, std::string("no column ") + c + ", which every nsys version writes");
      }
    }
    return cols;
  }

  // The NVTX rows written: marks and ranges (domain and category definitions are names only).
  static std::string nvtx_kinds() {
    return "\"eventType\" IN (" + std::to_string(kNvtxMark) + ", " + std::to_string(kNvtxPushPop) + ", " +
           std::to_string(kNvtxStartEnd) + ")";
  }

  // MIN/MAX of a survey query; values that are no time are left to the row pass, which names the row.
  void see_span(sqlite3_stmt* st, int min_col, int max_col) {
    auto value = [&](int c) -> std::optional<int64_t> {
      if (sqlite3_column_type(st, c) != SQLITE_INTEGER) return std::nullopt;
      const int64_t v = sqlite3_column_int64(st, c);
      return std::clamp<int64_t>(v, 0, kMaxTimeNs - base_ns_);
    };
    if (const auto lo = value(min_col)) first_rel_ns_ = std::min(first_rel_ns_.value_or(*lo), *lo);
    if (const auto hi = value(max_col)) last_rel_ns_ = std::max(last_rel_ns_.value_or(*hi), *hi);
  }

  template <class F>
  void each(const std::string& sql, const std::string& table, F&& row) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &st, nullptr) != SQLITE_OK) db_.fail("table " + table);
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> hold(st, &sqlite3_finalize);
    int rc = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) row(st);
    if (rc != SQLITE_DONE) db_.fail("table " + table);
  }

  EnumText read_enum(std::string_view name) {
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

  size_t process_index(int64_t pid) const {
    const auto it = std::lower_bound(procs_.begin(), procs_.end(), pid);
    return it != procs_.end() && *it == pid ? static_cast<size_t>(it - procs_.begin()) : main_index_;
  }

  // ---- header, devices, streams, threads ----
  int64_t absolute_or_base(const std::optional<int64_t>& rel) const { return base_ns_ + rel.value_or(0); }

  void write_header() {
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

  void notice(const std::string& text) {
    v1::Record r;
    r.mutable_notice()->set_kind(v1::NOTICE_UNKNOWN);
    r.mutable_notice()->set_time_ns(absolute_or_base(first_rel_ns_));
    r.mutable_notice()->set_text(text);
    out_.write(r);
  }

  static v1::DeviceInfo device_info_of(const Query& q) {
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
  void write_devices() {
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

  uint32_t device_of(int64_t pid, uint32_t device) const {
    if (gpu_of_.empty()) return device;
    const auto it = gpu_of_.find({pid == kUnknownPid ? main_pid_ : pid, device});
    return it != gpu_of_.end() ? clamp_u32(it->second) : device;
  }

  void write_streams() {
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

  void write_threads() {
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

  // ---- strings ----
  // StringIds[id], interned in the capture. nullopt for a missing id <= 0 (older exports write 0
  // for "none"); a dangling positive id is an error.
  std::optional<uint32_t> string_id(const Query& q, int c, int64_t id) {
    if (const auto it = strings_.find(id); it != strings_.end()) return it->second;
    const std::optional<std::string> value = lookup(q, c, id);
    if (!value) {
      if (id <= 0) return std::nullopt;
      q.bad_column(c, "refers to string " + std::to_string(id) + ", which StringIds does not hold");
    }
    return strings_[id] = out_.intern(*value);
  }

  std::optional<std::string> lookup(const Query& q, int c, int64_t id) {
    if (lookup_ == nullptr) {
      if (t_.strings.empty()) q.bad_column(c, "refers to StringIds, which the report does not have");
      sqlite3_stmt* st = nullptr;
      const std::string sql = "SELECT \"value\" FROM " + quoted(t_.strings) + " WHERE \"id\" = ?";
      if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &st, nullptr) != SQLITE_OK) db_.fail("table " + t_.strings);
      lookup_.reset(st);
    }
    sqlite3_stmt* st = lookup_.get();
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, id);
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) db_.fail("table " + t_.strings + ", id " + std::to_string(id));
    const void* bytes = sqlite3_column_blob(st, 0);
    return std::string(static_cast<const char*>(bytes), bytes != nullptr ? sqlite3_column_bytes(st, 0) : 0);
  }

  // The CUPTI name without its version suffix, interned once per StringIds id.
  uint32_t api_name(const Query& q, int c, int64_t id, std::string* text) {
    if (const auto it = api_names_.find(id); it != api_names_.end()) {
      *text = it->second.second;
      return it->second.first;
    }
    const std::optional<std::string> value = lookup(q, c, id);
    if (!value && id > 0) q.bad_column(c, "refers to string " + std::to_string(id) + ", which StringIds does not hold");
    *text = std::string(without_version(value.value_or("")));
    const uint32_t name = out_.intern(*text);
    api_names_[id] = {name, *text};
    return name;
  }

  // ---- rows ----
  int64_t absolute(const Query& q, int c, int64_t rel) const {
    if (rel < 0 || rel > kMaxTimeNs)
      q.bad_column(c, "is " + std::to_string(rel) + ": not a time between 0 and 2^62 ns");
    if (rel > kMaxTimeNs - base_ns_) q.bad_column(c, "is past 2^62 ns once the session start is added");
    return base_ns_ + rel;
  }
  int64_t time_ns(const Query& q, int c) const {
    const std::optional<int64_t> rel = q.integer(c);
    if (!rel) q.bad_column(c, "is NULL: the row has no time");
    return absolute(q, c, *rel);
  }
  int64_t end_ns(const Query& q, int c, int64_t start_ns) {
    const int64_t end = time_ns(q, c);
    if (end < start_ns) {
      q.bad("end (" + std::to_string(end - base_ns_) + ") is before start (" + std::to_string(start_ns - base_ns_) +
            ")");
    }
    last_ns_ = std::max(last_ns_, end);
    return end;
  }

  // Correlation ids are per process (B3): with several processes, id * processes + index keeps
  // them apart. An id that does not fit is dropped (the launch is then not joined) and counted.
  uint32_t correlation(int64_t pid, std::optional<int64_t> id) {
    if (!id || *id <= 0 || *id > UINT32_MAX) return 0;
    if (procs_.size() == 1) return static_cast<uint32_t>(*id);
    const uint64_t renumbered = static_cast<uint64_t>(*id) * procs_.size() + process_index(pid);
    if (renumbered > UINT32_MAX) {
      ++correlations_dropped_;
      return 0;
    }
    return static_cast<uint32_t>(renumbered);
  }

  void kernel(const Query& q, int64_t start) {
    using C = KernelCol;
    const int64_t pid = pid_of(q.integer(C::globalPid));
    gpuhook::KernelFields k;
    // The name with templates, else the base name, else the mangled one (B3).
    for (int c : {C::demangledName, C::shortName, C::mangledName}) {
      const std::optional<int64_t> id = q.integer(c);
      const std::optional<uint32_t> name = id ? string_id(q, c, *id) : std::nullopt;
      if (name) {
        k.name_id = *name;
        break;
      }
    }
    k.device = device_of(pid, q.u32(C::deviceId));
    k.context = q.u32(C::contextId);
    k.stream = q.u32(C::streamId);
    k.correlation_id = correlation(pid, q.integer(C::correlationId));
    k.start_ns = start;
    k.end_ns = end_ns(q, C::end, start);
    for (auto [c, out] : {std::pair{int{C::queued}, &k.queued_ns}, std::pair{int{C::submitted}, &k.submitted_ns}}) {
      const std::optional<int64_t> rel = q.integer(c);
      *out = rel && *rel > 0 ? absolute(q, c, *rel) : 0;  // CUPTI writes 0 when it has none
    }
    k.grid_x = q.i32(C::gridX);
    k.grid_y = q.i32(C::gridY);
    k.grid_z = q.i32(C::gridZ);
    k.block_x = q.i32(C::blockX);
    k.block_y = q.i32(C::blockY);
    k.block_z = q.i32(C::blockZ);
    k.registers_per_thread = q.u32(C::registersPerThread);
    k.static_shared_memory_bytes = q.u32(C::staticSharedMemory);
    k.dynamic_shared_memory_bytes = q.u32(C::dynamicSharedMemory);
    k.local_memory_per_thread_bytes = q.u32(C::localMemoryPerThread);
    k.graph_id = q.u64(C::graphId);
    k.graph_node_id = q.u64(C::graphNodeId);
    k.launch_type = enum_value(launch_enum_, q.integer(C::launchType), v1::LAUNCH_CBL, kLaunchPatterns);
    out_.write(k);
  }

  void copy(const Query& q, int64_t start) {
    using C = MemcpyCol;
    const int64_t pid = pid_of(q.integer(C::globalPid));
    v1::Record r;
    v1::Memcpy* m = r.mutable_memcpy();
    m->set_copy_kind(
        static_cast<v1::CopyKind>(enum_value(copy_enum_, q.integer(C::copyKind), v1::COPY_PTOP, kCopyPatterns)));
    m->set_src_kind(static_cast<v1::MemoryKind>(
        enum_value(memory_enum_, q.integer(C::srcKind), v1::MEMORY_MANAGED_STATIC, kMemoryPatterns)));
    m->set_dst_kind(static_cast<v1::MemoryKind>(
        enum_value(memory_enum_, q.integer(C::dstKind), v1::MEMORY_MANAGED_STATIC, kMemoryPatterns)));
    m->set_bytes(q.u64(C::bytes));
    m->set_start_ns(start);
    m->set_end_ns(end_ns(q, C::end, start));
    m->set_device(device_of(pid, q.u32(C::deviceId)));
    m->set_context(q.u32(C::contextId));
    m->set_stream(q.u32(C::streamId));
    m->set_correlation_id(correlation(pid, q.integer(C::correlationId)));
    const std::optional<int64_t> src = q.integer(C::srcDeviceId), dst = q.integer(C::dstDeviceId);
    m->set_src_device(src ? device_of(pid, static_cast<uint32_t>(*src)) : m->device());
    m->set_dst_device(dst ? device_of(pid, static_cast<uint32_t>(*dst)) : m->device());
    m->set_graph_node_id(q.u64(C::graphNodeId));
    out_.write(r);
  }

  void fill(const Query& q, int64_t start) {
    using C = MemsetCol;
    const int64_t pid = pid_of(q.integer(C::globalPid));
    v1::Record r;
    v1::Memset* m = r.mutable_memset();
    m->set_value(q.u32(C::value));
    m->set_bytes(q.u64(C::bytes));
    m->set_start_ns(start);
    m->set_end_ns(end_ns(q, C::end, start));
    m->set_device(device_of(pid, q.u32(C::deviceId)));
    m->set_context(q.u32(C::contextId));
    m->set_stream(q.u32(C::streamId));
    m->set_correlation_id(correlation(pid, q.integer(C::correlationId)));
    const std::optional<int64_t> kind = q.has(C::memKind) ? q.integer(C::memKind) : q.integer(C::memoryKind);
    m->set_memory_kind(
        static_cast<v1::MemoryKind>(enum_value(memory_enum_, kind, v1::MEMORY_MANAGED_STATIC, kMemoryPatterns)));
    m->set_graph_node_id(q.u64(C::graphNodeId));
    out_.write(r);
  }

  void api(const Query& q, int64_t start, bool driver_table) {
    using C = ApiCol;
    const std::optional<int64_t> g = q.integer(C::globalTid);
    const int64_t pid = pid_of(g);
    gpuhook::ApiFields a;
    std::string name;
    const std::optional<int64_t> name_id = q.integer(C::nameId);
    a.name_id = name_id ? api_name(q, C::nameId, *name_id, &name) : 0;
    // Recent nsys writes driver calls into the RUNTIME table too ([3p]): the name tells.
    const bool driver = driver_table || (name.compare(0, 2, "cu") == 0 && name.compare(0, 4, "cuda") != 0);
    a.domain = driver ? v1::API_DOMAIN_DRIVER : v1::API_DOMAIN_RUNTIME;
    a.thread_id = tid_of(g);
    a.start_ns = start;
    a.end_ns = end_ns(q, C::end, start);
    a.correlation_id = correlation(pid, q.integer(C::correlationId));
    a.return_value = q.i32(C::returnValue);
    out_.write(a);
    if (!t_.sync.empty()) return;
    const v1::SyncType type = sync_type_of_call(name);
    if (type == v1::SYNC_UNKNOWN) return;
    v1::Record r;
    v1::Synchronization* s = r.mutable_sync();
    s->set_type(type);
    s->set_start_ns(a.start_ns);
    s->set_end_ns(a.end_ns);
    s->set_correlation_id(a.correlation_id);
    s->set_return_value(a.return_value);
    out_.write(r);
  }
  void runtime_call(const Query& q, int64_t start) { api(q, start, false); }
  void driver_call(const Query& q, int64_t start) { api(q, start, true); }

  void sync(const Query& q, int64_t start) {
    using C = SyncCol;
    const int64_t pid = pid_of(q.integer(C::globalPid));
    v1::Record r;
    v1::Synchronization* s = r.mutable_sync();
    if (q.has(C::syncType)) {
      s->set_type(static_cast<v1::SyncType>(
          enum_value(sync_enum_, q.integer(C::syncType), v1::SYNC_CONTEXT_SYNCHRONIZE, kSyncPatterns)));
    } else {
      const std::optional<int64_t> raw = q.has(C::type) ? q.integer(C::type) : q.integer(C::deprecatedSyncType);
      s->set_type(static_cast<v1::SyncType>(enum_value({}, raw, v1::SYNC_CONTEXT_SYNCHRONIZE, {})));
    }
    s->set_start_ns(start);
    s->set_end_ns(end_ns(q, C::end, start));
    s->set_device(device_of(pid, q.u32(C::deviceId)));
    s->set_context(q.u32(C::contextId));
    s->set_stream(q.u32(C::streamId));
    s->set_event_id(q.u32(C::eventId));
    s->set_correlation_id(correlation(pid, q.integer(C::correlationId)));
    out_.write(r);
  }

  // ---- NVTX ----
  uint32_t nvtx_text(const Query& q) {
    if (std::optional<std::string> text = q.text(NvtxCol::text)) return out_.intern(step_range_name(*text));
    const std::optional<int64_t> id = q.integer(NvtxCol::textId);
    if (!id) return 0;
    if (const auto it = nvtx_names_.find(*id); it != nvtx_names_.end()) return it->second;
    const std::optional<std::string> value = lookup(q, NvtxCol::textId, *id);
    if (!value && *id > 0) {
      q.bad_column(NvtxCol::textId, "refers to string " + std::to_string(*id) + ", which StringIds does not hold");
    }
    return nvtx_names_[*id] = value ? out_.intern(step_range_name(*value)) : 0;
  }

  // eventType 75 rows name the domains (B3); domain ids are the process's own.
  void read_domains() {
    if (t_.nvtx.empty()) return;
    Query d(db_, t_.nvtx, NvtxCol::names(), "\"eventType\" = " + std::to_string(kNvtxDomain), "");
    if (!d.has(NvtxCol::domainId)) return;
    for (size_t n = 0; n < kMaxSmallTableRows && d.step(); ++n) {
      const std::optional<int64_t> id = d.integer(NvtxCol::domainId);
      if (id) domains_[{pid_of(d.integer(NvtxCol::globalTid)), *id}] = nvtx_text(d);
    }
  }

  void emit_range(v1::RangeType type, uint64_t thread, int64_t time, uint32_t name, uint32_t domain, uint64_t range_id,
                  uint32_t category, uint32_t color) {
    v1::Record r;
    v1::Range* g = r.mutable_range();
    g->set_type(type);
    g->set_thread_id(thread);
    g->set_time_ns(time);
    g->set_name_id(name);
    g->set_domain_id(domain);
    g->set_range_id(range_id);
    g->set_category(category);
    g->set_color(color);
    out_.write(r);
  }

  using StackKey = std::pair<uint64_t, uint32_t>;  // (thread, domain): NVTX nests per thread per domain
  void close_until(const StackKey& key, std::vector<int64_t>& open, int64_t t) {
    while (!open.empty() && open.back() <= t) {
      emit_range(v1::RANGE_POP, key.first, open.back(), 0, key.second, 0, 0, 0);
      open.pop_back();
    }
  }

  void nvtx(const Query& q, int64_t start) {
    using C = NvtxCol;
    const std::optional<int64_t> type = q.integer(C::eventType);
    const std::optional<int64_t> g = q.integer(C::globalTid);
    const uint64_t thread = tid_of(g);
    const uint32_t name = nvtx_text(q);
    uint32_t domain = 0;
    if (const std::optional<int64_t> id = q.integer(C::domainId)) {
      if (const auto it = domains_.find({pid_of(g), *id}); it != domains_.end()) domain = it->second;
    }
    const uint32_t category = q.u32(C::category), color = q.u32(C::color);
    if (type == kNvtxMark) return emit_range(v1::RANGE_MARK, thread, start, name, domain, 0, category, color);
    // An unfinished range has a NULL end: it lasts to the trace's end (B3).
    const int64_t end = q.integer(C::end) ? end_ns(q, C::end, start) : std::max(start, trace_end_ns());
    if (type == kNvtxStartEnd) {
      // One row holds both ends: both are written on the starting thread with an id of our own,
      // so the pair meets however the reader orders threads, and two processes' ids never clash.
      const uint64_t id = ++range_ids_;
      emit_range(v1::RANGE_START, thread, start, name, domain, id, category, color);
      emit_range(v1::RANGE_END, thread, end, 0, domain, id, 0, 0);
      return;
    }
    // Push/pop, in start order with the longer first at equal starts: a range that outlives the
    // one it starts in is cut at that one's end, as a stack of pushes and pops allows.
    const StackKey key{thread, domain};
    std::vector<int64_t>& open = stacks_[key];
    close_until(key, open, start);
    if (open.size() >= kMaxNesting) return;
    emit_range(v1::RANGE_PUSH, thread, start, name, domain, 0, category, color);
    open.push_back(open.empty() ? end : std::min(end, open.back()));
  }

  int64_t trace_end_ns() const { return std::max(last_ns_, absolute_or_base(last_rel_ns_)); }

  // ---- the merge ----
  void add_source(std::vector<Source>& sources, const std::string& table, const std::vector<std::string_view>& names,
                  Convert convert, const std::string& where, const std::string& order,
                  std::initializer_list<std::initializer_list<int>> required) {
    if (table.empty()) return;
    Source s;
    s.query = std::make_unique<Query>(db_, table, names, where, order);
    for (const auto& any_of : required) require(*s.query, any_of, names);
    s.convert = convert;
    sources.push_back(std::move(s));
  }

  void advance(Source& s) {
    s.live = s.query->step();
    if (s.live) s.start_ns = time_ns(*s.query, 0);
  }

  void merge() {
    std::vector<Source> sources;
    const std::string by_start = "\"start\"";
    add_source(sources, t_.kernel, KernelCol::names(), &Importer::kernel, "", by_start,
               {{KernelCol::end}, {KernelCol::demangledName, KernelCol::shortName, KernelCol::mangledName}});
    add_source(sources, t_.memcpy, MemcpyCol::names(), &Importer::copy, "", by_start, {{MemcpyCol::end}});
    add_source(sources, t_.memset, MemsetCol::names(), &Importer::fill, "", by_start, {{MemsetCol::end}});
    add_source(sources, t_.runtime, ApiCol::names(), &Importer::runtime_call, "", by_start,
               {{ApiCol::end}, {ApiCol::nameId}});
    add_source(sources, t_.driver, ApiCol::names(), &Importer::driver_call, "", by_start,
               {{ApiCol::end}, {ApiCol::nameId}});
    add_source(sources, t_.sync, SyncCol::names(), &Importer::sync, "", by_start, {{SyncCol::end}});
    add_source(sources, t_.nvtx, NvtxCol::names(), &Importer::nvtx, nvtx_kinds(),
               by_start + ", \"end\" IS NULL DESC, \"end\" DESC", {{NvtxCol::eventType}});
    for (Source& s : sources) advance(s);
    for (;;) {
      Source* next = nullptr;
      for (Source& s : sources) {
        if (s.live && (next == nullptr || s.start_ns < next->start_ns)) next = &s;
      }
      if (next == nullptr) break;
      last_ns_ = std::max(last_ns_, next->start_ns);
      (this->*(next->convert))(*next->query, next->start_ns);
      advance(*next);
    }
    for (auto& [key, open] : stacks_) close_until(key, open, INT64_MAX);
    stacks_.clear();
  }

  void write_footer() {
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

  Db db_;
  gpuhook::CaptureWriter& out_;
  Tables t_;
  int64_t base_ns_ = 0;
  bool has_base_ = false;
  bool has_latency_ = false;
  std::string host_name_;
  std::optional<int64_t> first_rel_ns_, last_rel_ns_;
  int64_t last_ns_ = 0;
  std::vector<int64_t> procs_;  // sorted
  int64_t main_pid_ = 0;
  size_t main_index_ = 0;
  EnumText copy_enum_, memory_enum_, sync_enum_, launch_enum_;
  std::map<std::pair<int64_t, int64_t>, int64_t> gpu_of_;    // (pid, CUDA ordinal) -> report GPU id
  std::map<std::pair<int64_t, int64_t>, uint32_t> domains_;  // (pid, domainId) -> name
  std::unordered_map<int64_t, uint32_t> strings_;            // StringIds id -> capture string id
  std::unordered_map<int64_t, uint32_t> nvtx_names_;        // StringIds id -> capture string id, steps named as one
  std::unordered_map<int64_t, std::pair<uint32_t, std::string>> api_names_;
  std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> lookup_{nullptr, &sqlite3_finalize};
  std::map<StackKey, std::vector<int64_t>> stacks_;  // open push/pop ranges' ends
  uint64_t range_ids_ = 0;
  uint64_t correlations_dropped_ = 0;
};

}  // namespace

void import_nsys(const std::string& path, gpuhook::CaptureWriter& out) { Importer(path, out).run(); }

}  // namespace gantt::scan
