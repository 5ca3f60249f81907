// The Nsight Systems importer's state, shared by its two halves (TRACE-FORMATS.md, part B):
// nsys_import.cpp surveys the report and writes its header, devices, streams, threads,
// notices and footer; nsys_rows.cpp reads the activity, API, sync and NVTX rows and merges
// them in start order. Used by those two files only.
#pragma once

#include <gpuhook/capture.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nsys_schema.h"
#include "nsys_sqlite.h"

namespace gantt::scan::nsys {

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

  void run();

 private:
  using Convert = void (Importer::*)(const Query&, int64_t);
  struct Source {
    std::unique_ptr<Query> query;
    Convert convert = nullptr;
    int64_t start_ns = 0;
    bool live = false;
  };

  [[noreturn]] void bad_table(const std::string& table, const std::string& what) const;
  static void require(const Query& q, std::initializer_list<int> any_of, const std::vector<std::string_view>& names);

  // ---- what the report holds (nsys_import.cpp) ----
  void find_tables();
  void read_session();
  void survey();
  std::vector<std::string> columns_with(const std::string& table, std::initializer_list<const char*> required) const;
  static std::string nvtx_kinds();
  void see_span(sqlite3_stmt* st, int min_col, int max_col);
  template <class F>
  void each(const std::string& sql, const std::string& table, F&& row);
  EnumText read_enum(std::string_view name);
  size_t process_index(int64_t pid) const;

  // ---- header, devices, streams, threads (nsys_import.cpp) ----
  int64_t absolute_or_base(const std::optional<int64_t>& rel) const;
  void write_header();
  void notice(const std::string& text);
  static v1::DeviceInfo device_info_of(const Query& q);
  void write_devices();
  uint32_t device_of(int64_t pid, uint32_t device) const;
  void write_streams();
  void write_threads();
  void write_footer();

  // ---- strings (nsys_rows.cpp) ----
  std::optional<uint32_t> string_id(const Query& q, int c, int64_t id);
  std::optional<std::string> lookup(const Query& q, int c, int64_t id);
  uint32_t api_name(const Query& q, int c, int64_t id, std::string* text);

  // ---- rows (nsys_rows.cpp) ----
  int64_t absolute(const Query& q, int c, int64_t rel) const;
  int64_t time_ns(const Query& q, int c) const;
  int64_t end_ns(const Query& q, int c, int64_t start_ns);
  uint32_t correlation(int64_t pid, std::optional<int64_t> id);
  // A copy's, a memset's or a sync's times and where it ran: the columns the three tables
  // share (Col: MemcpyCol, MemsetCol, SyncCol).
  template <class Col, class Activity>
  void place(const Query& q, int64_t pid, int64_t start, Activity* a) {
    a->set_start_ns(start);
    a->set_end_ns(end_ns(q, Col::end, start));
    a->set_device(device_of(pid, q.u32(Col::deviceId)));
    a->set_context(q.u32(Col::contextId));
    a->set_stream(q.u32(Col::streamId));
    a->set_correlation_id(correlation(pid, q.integer(Col::correlationId)));
  }
  void kernel(const Query& q, int64_t start);
  void copy(const Query& q, int64_t start);
  void fill(const Query& q, int64_t start);
  void api(const Query& q, int64_t start, bool driver_table);
  void runtime_call(const Query& q, int64_t start);
  void driver_call(const Query& q, int64_t start);
  void sync(const Query& q, int64_t start);

  // ---- NVTX (nsys_rows.cpp) ----
  uint32_t nvtx_text(const Query& q);
  void read_domains();
  void emit_range(v1::RangeType type, uint64_t thread, int64_t time, uint32_t name, uint32_t domain, uint64_t range_id,
                  uint32_t category, uint32_t color);
  using StackKey = std::pair<uint64_t, uint32_t>;  // (thread, domain): NVTX nests per thread per domain
  void close_until(const StackKey& key, std::vector<int64_t>& open, int64_t t);
  void nvtx(const Query& q, int64_t start);
  int64_t trace_end_ns() const;

  // ---- the merge (nsys_rows.cpp) ----
  void add_source(std::vector<Source>& sources, const std::string& table, const std::vector<std::string_view>& names,
                  Convert convert, const std::string& where, const std::string& order,
                  std::initializer_list<std::initializer_list<int>> required);
  void advance(Source& s);
  void merge();

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

}  // namespace gantt::scan::nsys
