// SQLite: the whole capture as one database, so that people ask their own questions in SQL
// (as they do with Nsight Systems' export). Built in memory and written out whole
// (sqlite3_serialize), so it goes to a file or a pipe alike. Times are integer nanoseconds
// on the capture's host clock; an unknown time is NULL, never 0. The schema is kSchema below
// and docs/export.md's table; strings are ids into `strings`, so a kernel name is stored once.
#include <sqlite3.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "gantt/analysis/metrics.h"
#include "gantt/export/export.h"
#include "gantt/model/text.h"

namespace gantt {

namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE captures(id INTEGER PRIMARY KEY, path TEXT, host TEXT, pid INTEGER, rank INTEGER,
                      job_id TEXT, start_realtime_ns INTEGER);
CREATE TABLE devices(capture INTEGER, ordinal INTEGER, name TEXT, sm_count INTEGER, cc_major INTEGER,
                     cc_minor INTEGER, PRIMARY KEY(capture, ordinal));
CREATE TABLE threads(id INTEGER PRIMARY KEY, capture INTEGER, tid INTEGER, name_id INTEGER);
CREATE TABLE kernels(id INTEGER PRIMARY KEY, capture INTEGER, device INTEGER, stream INTEGER, priority INTEGER,
                     name_id INTEGER, demangled_id INTEGER, nccl INTEGER, correlation_id INTEGER, api_id INTEGER,
                     nvtx_id INTEGER, launch_ns INTEGER, queued_ns INTEGER, submitted_ns INTEGER, start_ns INTEGER,
                     end_ns INTEGER, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER,
                     block_y INTEGER, block_z INTEGER, registers_per_thread INTEGER, static_smem_bytes INTEGER,
                     dynamic_smem_bytes INTEGER, occupancy REAL, graph_id INTEGER, graph_node_id INTEGER,
                     bytes INTEGER);
CREATE TABLE copies(id INTEGER PRIMARY KEY, capture INTEGER, device INTEGER, stream INTEGER, kind TEXT,
                    bytes INTEGER, name_id INTEGER, correlation_id INTEGER, api_id INTEGER, nvtx_id INTEGER,
                    launch_ns INTEGER, start_ns INTEGER, end_ns INTEGER, src_device INTEGER, dst_device INTEGER,
                    graph_id INTEGER, graph_node_id INTEGER);
CREATE TABLE syncs(id INTEGER PRIMARY KEY, capture INTEGER, device INTEGER, stream INTEGER, type INTEGER,
                   name_id INTEGER, correlation_id INTEGER, api_id INTEGER, start_ns INTEGER, end_ns INTEGER);
CREATE TABLE host_functions(id INTEGER PRIMARY KEY, capture INTEGER, device INTEGER, stream INTEGER,
                            name_id INTEGER, start_ns INTEGER, end_ns INTEGER);
CREATE TABLE api(id INTEGER PRIMARY KEY, capture INTEGER, thread_id INTEGER, domain INTEGER, cbid INTEGER,
                 name_id INTEGER, start_ns INTEGER, end_ns INTEGER, correlation_id INTEGER, return_value INTEGER);
CREATE TABLE nvtx(id INTEGER PRIMARY KEY, capture INTEGER, thread_id INTEGER, kind TEXT, name_id INTEGER,
                  domain_id INTEGER, start_ns INTEGER, end_ns INTEGER, parent_id INTEGER, depth INTEGER,
                  color INTEGER, category INTEGER);
CREATE TABLE memory(id INTEGER PRIMARY KEY, capture INTEGER, device INTEGER, op TEXT, kind INTEGER,
                    address INTEGER, bytes INTEGER, time_ns INTEGER);
CREATE TABLE nccl(id INTEGER PRIMARY KEY, capture INTEGER, thread_id INTEGER, op INTEGER, name_id INTEGER,
                  count INTEGER, datatype INTEGER, bytes INTEGER, reduce_op INTEGER, root_or_peer INTEGER,
                  comm_id INTEGER, rank INTEGER, nranks INTEGER, sequence INTEGER, device INTEGER,
                  start_ns INTEGER, end_ns INTEGER, return_value INTEGER, kernel_id INTEGER);
CREATE TABLE metrics(capture INTEGER, device INTEGER, counter TEXT, time_ns INTEGER, value REAL);
)sql";

constexpr const char* kIndices = R"sql(
CREATE INDEX kernels_start ON kernels(start_ns);
CREATE INDEX kernels_name ON kernels(demangled_id);
CREATE INDEX kernels_correlation ON kernels(capture, correlation_id);
CREATE INDEX copies_start ON copies(start_ns);
CREATE INDEX api_correlation ON api(capture, correlation_id);
CREATE INDEX api_start ON api(start_ns);
CREATE INDEX nvtx_start ON nvtx(start_ns);
CREATE INDEX nccl_comm ON nccl(comm_id, sequence);
CREATE INDEX metrics_series ON metrics(capture, device, counter, time_ns);
)sql";

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct StmtCloser {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};

void check(sqlite3* db, int rc, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
    throw std::runtime_error(std::string("sqlite export: ") + what + ": " + sqlite3_errmsg(db));
}

// One prepared INSERT, bound column by column: bind(...) then row().
class Insert {
 public:
  Insert(sqlite3* db, const char* sql) : db_(db) {
    sqlite3_stmt* s = nullptr;
    check(db, sqlite3_prepare_v2(db, sql, -1, &s, nullptr), sql);
    stmt_.reset(s);
  }
  Insert& i(int64_t v) { return at(sqlite3_bind_int64(stmt_.get(), ++col_, v)); }
  Insert& u(uint64_t v) { return i(static_cast<int64_t>(v)); }  // ids and counts: SQLite integers are signed 64-bit
  Insert& time(uint64_t ns) { return ns ? u(ns) : null(); }     // 0 = unknown = NULL
  Insert& id(uint32_t row) { return row == kNone ? null() : u(row); }
  Insert& real(double v) { return v == v ? at(sqlite3_bind_double(stmt_.get(), ++col_, v)) : null(); }
  Insert& text(std::string_view s) {
    const std::string clean = utf8_clean(s);
    return at(sqlite3_bind_text(stmt_.get(), ++col_, clean.data(), static_cast<int>(clean.size()), SQLITE_TRANSIENT));
  }
  Insert& null() { return at(sqlite3_bind_null(stmt_.get(), ++col_)); }
  void row() {
    check(db_, sqlite3_step(stmt_.get()), "insert");
    sqlite3_reset(stmt_.get());
    col_ = 0;
  }

 private:
  Insert& at(int rc) {
    check(db_, rc, "bind");
    return *this;
  }
  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, StmtCloser> stmt_;
  int col_ = 0;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    const std::string what = err ? err : "?";
    sqlite3_free(err);
    throw std::runtime_error("sqlite export: " + what);
  }
}

const char* range_kind(RangeKind k) {
  switch (k) {
    case RangeKind::kPushPop: return "push_pop";
    case RangeKind::kStartEnd: return "start_end";
    case RangeKind::kMark: return "mark";
  }
  return "?";
}

class SqliteExporter final : public Exporter {
 public:
  std::string_view format() const override { return "sqlite"; }
  std::string_view description() const override {
    return "one SQLite database: kernels, copies, syncs, api, nvtx, nccl, memory, devices, threads, strings (ask in SQL)";
  }

  void write(const Model& m, const Selection& sel, const ExportOptions&, std::ostream& os) const override {
    sqlite3* raw = nullptr;
    if (sqlite3_open(":memory:", &raw) != SQLITE_OK) {
      sqlite3_close(raw);
      throw std::runtime_error("sqlite export: cannot open an in-memory database");
    }
    std::unique_ptr<sqlite3, DbCloser> db(raw);
    exec(raw, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;");
    exec(raw, kSchema);
    {
      Insert meta(raw, "INSERT INTO meta VALUES(?,?)");
      meta.text("schema_version").text("1").row();
      meta.text("time_unit").text("ns, host CLOCK_MONOTONIC_RAW of each capture (merged ranks: the first's)").row();
      meta.text("selection").text(sel.description).row();
    }
    Insert strings(raw, "INSERT INTO strings VALUES(?,?)");
    for (size_t i = 0; i < m.strings.size(); ++i) strings.u(i).text(m.strings[i]).row();
    Insert captures(raw, "INSERT INTO captures VALUES(?,?,?,?,?,?,?)");
    Insert devices(raw, "INSERT OR IGNORE INTO devices VALUES(?,?,?,?,?,?)");
    for (size_t c = 0; c < m.captures.size(); ++c) {
      const CaptureInfo& ci = m.captures[c];
      captures.u(c).text(ci.path).text(ci.header.host_name()).u(ci.header.pid());
      if (ci.header.has_rank()) captures.i(ci.header.rank());
      else captures.null();
      captures.text(ci.header.job_id()).time(ci.header.start_realtime_ns()).row();
      for (const auto& d : ci.devices)
        devices.u(c).u(d.ordinal()).text(d.name()).u(d.sm_count()).u(d.cc_major()).u(d.cc_minor()).row();
    }
    Insert threads(raw, "INSERT INTO threads VALUES(?,?,?,?)");
    for (size_t t = 0; t < m.threads.size(); ++t)
      threads.u(t).u(m.threads.capture[t]).u(m.threads.thread_id[t]).u(m.threads.name[t]).row();

    const EventTable& e = m.events;
    Insert kernels(raw, "INSERT INTO kernels VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    Insert copies(raw, "INSERT INTO copies VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    Insert syncs(raw, "INSERT INTO syncs VALUES(?,?,?,?,?,?,?,?,?,?)");
    Insert host_functions(raw, "INSERT INTO host_functions VALUES(?,?,?,?,?,?,?)");
    for (uint32_t i : sel.events) {
      switch (e.kind[i]) {
        case EventKind::kKernel:
        case EventKind::kNccl: {
          const uint32_t name = e.name[i];
          const uint32_t shown = name < m.demangled.size() && m.demangled[name] != kNone ? m.demangled[name] : name;
          kernels.u(i).u(e.capture[i]).u(e.device[i]).u(e.stream[i]).i(e.priority[i]).u(name).u(shown)
              .i(e.kind[i] == EventKind::kNccl ? 1 : 0).u(e.correlation_id[i]).id(e.api[i]).id(e.range[i])
              .time(m.launch_ns(i)).time(e.queued_ns[i]).time(e.submitted_ns[i]).time(e.start_ns[i]).time(e.end_ns[i]);
          for (int32_t v : e.grid[i]) kernels.i(v);
          for (int32_t v : e.block[i]) kernels.i(v);
          kernels.u(e.registers_per_thread[i]).u(e.static_smem_bytes[i]).u(e.dynamic_smem_bytes[i]).real(e.occupancy[i])
              .u(e.graph_id[i]).u(e.graph_node_id[i]).u(e.bytes[i]).row();
          break;
        }
        case EventKind::kMemcpy:
        case EventKind::kMemset:
          copies.u(i).u(e.capture[i]).u(e.device[i]).u(e.stream[i])
              .text(e.kind[i] == EventKind::kMemset ? "memset" : copy_kind_name(e.copy_kind[i])).u(e.bytes[i])
              .u(e.name[i]).u(e.correlation_id[i]).id(e.api[i]).id(e.range[i]).time(m.launch_ns(i))
              .time(e.start_ns[i]).time(e.end_ns[i]).id(e.src_device[i]).id(e.dst_device[i]).u(e.graph_id[i])
              .u(e.graph_node_id[i]).row();
          break;
        case EventKind::kSync:
          syncs.u(i).u(e.capture[i]).u(e.device[i]).u(e.stream[i]).u(e.copy_kind[i]).u(e.name[i])
              .u(e.correlation_id[i]).id(e.api[i]).time(e.start_ns[i]).time(e.end_ns[i]).row();
          break;
        case EventKind::kHostFunc:
          host_functions.u(i).u(e.capture[i]).u(e.device[i]).u(e.stream[i]).u(e.name[i]).time(e.start_ns[i])
              .time(e.end_ns[i]).row();
          break;
      }
    }
    // Host records whole: a window or filter selects GPU events, not the host's context.
    Insert api(raw, "INSERT INTO api VALUES(?,?,?,?,?,?,?,?,?,?)");
    for (uint32_t a = 0; a < m.api.size(); ++a)
      api.u(a).u(m.api.capture[a]).u(m.threads.thread_id[m.api.thread[a]]).u(m.api.domain[a]).u(m.api.cbid[a])
          .u(m.api.name[a]).time(m.api.start_ns[a]).time(m.api.end_ns[a]).u(m.api.correlation_id[a])
          .i(m.api.return_value[a]).row();
    Insert nvtx(raw, "INSERT INTO nvtx VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
    const RangeTable& r = m.ranges;
    for (uint32_t g = 0; g < r.size(); ++g) {
      nvtx.u(g).u(r.capture[g]).u(m.threads.thread_id[r.thread[g]]).text(range_kind(r.kind[g])).u(r.name[g])
          .u(r.domain[g]).time(r.start_ns[g]).time(r.end_ns[g]).id(r.parent[g]).u(r.depth[g]);
      if (r.color[g]) nvtx.u(r.color[g]);  // ARGB as the program gave it
      else nvtx.null();
      if (r.category[g]) nvtx.u(r.category[g]);
      else nvtx.null();
      nvtx.row();
    }
    Insert nccl(raw, "INSERT INTO nccl VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    const NcclTable& n = m.nccl;
    for (uint32_t c = 0; c < n.size(); ++c)
      nccl.u(c).u(n.capture[c]).u(m.threads.thread_id[n.thread[c]]).u(n.op[c]).u(n.name[c]).u(n.count[c])
          .i(n.datatype[c]).u(n.bytes[c]).i(n.reduce_op[c]).i(n.root_or_peer[c]).u(n.comm_id[c]).i(n.rank[c])
          .i(n.nranks[c]).u(n.sequence[c]).i(n.device[c]).time(n.start_ns[c]).time(n.end_ns[c]).i(n.return_value[c])
          .id(n.event[c]).row();
    Insert memory(raw, "INSERT INTO memory VALUES(?,?,?,?,?,?,?,?)");
    const MemoryTable& mt = m.memory;
    for (uint32_t i = 0; i < mt.size(); ++i)
      memory.u(i).u(mt.capture[i]).u(mt.device[i]).text(mt.op[i] == gpuhook::v1::MEMORY_OP_FREE ? "free" : "alloc")
          .u(mt.kind[i]).u(mt.address[i]).u(mt.bytes[i]).time(mt.time_ns[i]).row();
    // The GPU's own counters (NVML), in the unit the counter's name says (power_w, sm_clock_mhz).
    Insert metrics(raw, "INSERT INTO metrics VALUES(?,?,?,?,?)");
    for (const analysis::MetricSeries& series : analysis::metric_series(m)) {
      const analysis::MetricInfo* info = analysis::metric_info(series.metric);
      if (info == nullptr) continue;
      for (size_t i = series.begin; i < series.end; ++i)
        metrics.u(series.capture).u(series.device).text(info->key).time(m.metrics.time_ns[i])
            .real(static_cast<double>(m.metrics.value[i]) * info->scale).row();
    }
    exec(raw, kIndices);
    exec(raw, "COMMIT;");

    sqlite3_int64 size = 0;
    unsigned char* bytes = sqlite3_serialize(raw, "main", &size, 0);
    if (!bytes) throw std::runtime_error("sqlite export: the database could not be serialised (out of memory?)");
    os.write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(size));
    sqlite3_free(bytes);
  }
};

}  // namespace

std::unique_ptr<Exporter> make_sqlite_exporter() { return std::make_unique<SqliteExporter>(); }

}  // namespace gantt
