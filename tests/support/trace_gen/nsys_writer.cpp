// A Run as an Nsight Systems SQLite export (`nsys export --type sqlite`), with the tables and
// columns of the schema reference (shared/TRACE-FORMATS.md, B2): times in ns relative to the
// session start (TARGET_INFO_SESSION_START_TIME.utcEpochNs = run.base_ns), names in StringIds,
// processes and threads as serialized global ids (B3). Rows go in shuffled, as nsys 2025.6
// does not promise any order; the shuffle is seeded, so the same Run gives the same file.
#include <sqlite3.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "trace_gen.h"

namespace tracegen {

namespace {

// The schema's columns for what a Run holds; the rest of each nsys table is left out, as a
// reader must expect of older versions.
constexpr const char* kSchema = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INTEGER, devStateName TEXT NOT NULL, name TEXT NOT NULL,
  nameEnum INTEGER NOT NULL, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT, systemClockNs INTEGER);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, totalMemory INTEGER, clockRate INTEGER, smCount INTEGER, uuid TEXT, chipName TEXT,
  cuDevice INTEGER, maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER,
  maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER, threadsPerWarp INTEGER, asyncEngines INTEGER,
  maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER, maxThreadsPerBlock INTEGER, computeMajor INTEGER,
  computeMinor INTEGER);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL, uuid TEXT,
  numMultiprocessors INTEGER);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
  cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  graphId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER,
  srcDeviceId INTEGER, srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
  callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER);
)sql";

// CUpti_ActivityMemcpyKind, as ENUM_CUDA_MEMCPY_OPER spells it.
const std::pair<const char*, const char*> kCopyKinds[] = {
    {"CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"},       {"CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"},
    {"CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"},   {"CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"},
    {"CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"},    {"CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"},
    {"CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"},  {"CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"},
    {"CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"}, {"CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"},
    {"CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"}};

constexpr int64_t kContextId = 1;
constexpr int64_t kNvtxPushPop = 59;
constexpr int64_t kEventClassCudaRuntime = 0;  // a value; the reader does not use it

using Value = std::variant<std::nullptr_t, int64_t, std::string>;
using Row = std::vector<Value>;

class Db {
 public:
  explicit Db(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
      const std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("write_nsys: cannot create " + path + ": " + why);
    }
  }
  ~Db() { sqlite3_close(db_); }

  void exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string why = error != nullptr ? error : "unknown error";
      sqlite3_free(error);
      throw std::runtime_error("write_nsys: " + path_ + ": " + why);
    }
  }

  void insert(const std::string& table, const std::vector<Row>& rows) {
    if (rows.empty()) return;
    std::string sql = "INSERT INTO " + table + " VALUES (";
    for (size_t i = 0; i < rows[0].size(); ++i) sql += i == 0 ? "?" : ", ?";
    sql += ")";
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) fail(sql);
    for (const Row& row : rows) {
      sqlite3_reset(st);
      for (size_t i = 0; i < row.size(); ++i) {
        const int c = static_cast<int>(i) + 1;
        if (const auto* v = std::get_if<int64_t>(&row[i])) {
          sqlite3_bind_int64(st, c, *v);
        } else if (const auto* s = std::get_if<std::string>(&row[i])) {
          sqlite3_bind_text(st, c, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
        } else {
          sqlite3_bind_null(st, c);
        }
      }
      if (sqlite3_step(st) != SQLITE_DONE) {
        sqlite3_finalize(st);
        fail(sql);
      }
    }
    sqlite3_finalize(st);
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw std::runtime_error("write_nsys: " + path_ + ": " + what + ": " + sqlite3_errmsg(db_));
  }
  std::string path_;
  sqlite3* db_ = nullptr;
};

// Fisher-Yates over mt19937's own outputs: the same order with every standard library
// (std::shuffle's use of the generator is left to the implementation).
void shuffle(std::vector<Row>& rows, std::mt19937& rng) {
  for (size_t i = rows.size(); i > 1; --i) std::swap(rows[i - 1], rows[rng() % i]);
}

// The base name, as nsys's shortName gives it: no template arguments, no parameters.
std::string short_name(const std::string& name) {
  const size_t cut = name.find_first_of("<(");
  return cut == std::string::npos ? name : name.substr(0, cut);
}

// utcTime as nsys writes it, from the epoch ns.
std::string utc_text(int64_t epoch_ns) {
  const time_t seconds = static_cast<time_t>(epoch_ns / 1'000'000'000);
  struct tm utc {};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// CUPTI's function names carry the version of the signature (B3).
std::string cupti_name(const std::string& name) { return name + (name == "cudaLaunchKernel" ? "_v7000" : "_v3020"); }

}  // namespace

void write_nsys(const Run& run, const std::string& path) {
  std::remove(path.c_str());
  Db db(path);
  db.exec("BEGIN");
  db.exec(kSchema);

  std::map<std::string, int64_t> ids;
  std::vector<Row> strings;
  auto sid = [&](const std::string& s) {
    const auto [it, added] = ids.emplace(s, static_cast<int64_t>(ids.size()) + 1);
    if (added) strings.push_back({it->second, s});
    return it->second;
  };
  const int64_t pid = run.pid;
  // B3: PID in bits 24-47, TID in bits 0-23; bits 48-55 look like a host id, kept non-zero so
  // that a reader has to mask.
  auto global_tid = [&](uint64_t tid) {
    return (int64_t{1} << 48) | (pid << 24) | static_cast<int64_t>(tid & 0xFFFFFF);
  };
  const int64_t global_pid = (int64_t{1} << 48) | (pid << 24);
  auto rel = [&](int64_t t) { return t - run.base_ns; };

  std::vector<Row> kernels, copies, fills, calls, syncs, nvtx, gpus, cuda_devices, threads, copy_kinds;
  for (const Kernel& k : run.kernels) {
    kernels.push_back({rel(k.start_ns),
                       rel(k.end_ns),
                       int64_t{k.device},
                       kContextId,
                       int64_t{k.stream},
                       int64_t{k.correlation_id},
                       global_pid,
                       sid(k.name),
                       sid(short_name(k.name)),
                       nullptr,
                       int64_t{0},
                       int64_t{0},
                       int64_t{k.registers_per_thread},
                       int64_t{k.grid[0]},
                       int64_t{k.grid[1]},
                       int64_t{k.grid[2]},
                       int64_t{k.block[0]},
                       int64_t{k.block[1]},
                       int64_t{k.block[2]},
                       int64_t{k.shared_memory_bytes},
                       int64_t{0},
                       int64_t{0},
                       int64_t{0},
                       int64_t{k.correlation_id},
                       int64_t{k.shared_memory_bytes},
                       nullptr,
                       nullptr});
  }
  for (const Copy& c : run.copies) {
    copies.push_back({rel(c.start_ns), rel(c.end_ns), int64_t{c.device}, kContextId, int64_t{c.stream},
                      int64_t{c.correlation_id}, global_pid, static_cast<int64_t>(c.bytes), int64_t{c.copy_kind},
                      nullptr, int64_t{c.src_kind}, int64_t{c.dst_kind}, int64_t{c.device}, kContextId,
                      int64_t{c.device}, kContextId, nullptr, nullptr});
  }
  for (const Fill& f : run.fills) {
    fills.push_back({rel(f.start_ns), rel(f.end_ns), int64_t{f.device}, kContextId, int64_t{f.stream},
                     int64_t{f.correlation_id}, global_pid, int64_t{0}, static_cast<int64_t>(f.bytes), nullptr,
                     int64_t{f.memory_kind}});
  }
  std::set<uint64_t> tids;
  for (const ApiCall& a : run.calls) {
    tids.insert(a.thread_id);
    calls.push_back({rel(a.start_ns), rel(a.end_ns), kEventClassCudaRuntime, global_tid(a.thread_id),
                     a.correlation_id != 0 ? Value{int64_t{a.correlation_id}} : Value{nullptr}, sid(cupti_name(a.name)),
                     int64_t{0}, nullptr});
  }
  for (const Sync& s : run.syncs) {
    syncs.push_back({rel(s.start_ns), rel(s.end_ns), int64_t{s.device}, kContextId, int64_t{s.stream},
                     int64_t{s.correlation_id}, global_pid, int64_t{s.type}, int64_t{0}});
  }
  for (const Range& r : run.ranges) {
    tids.insert(r.thread_id);
    // Newer exports name registered strings by textId and leave text NULL (B5.2).
    nvtx.push_back({rel(r.start_ns), rel(r.end_ns), kNvtxPushPop, nullptr, nullptr, nullptr, nullptr,
                    global_tid(r.thread_id), global_tid(r.thread_id), sid(r.name), int64_t{0}});
  }
  for (const Device& d : run.devices) {
    const std::string uuid = "GPU-00000000-0000-0000-0000-00000000000" + std::to_string(d.ordinal % 10);
    gpus.push_back({int64_t{0},
                    int64_t{d.ordinal},
                    d.name,
                    "0000:" + std::to_string(10 + d.ordinal) + ":00.0",
                    int64_t{1},
                    static_cast<int64_t>(d.global_memory_bytes),
                    int64_t{1980000000},
                    int64_t{d.sm_count},
                    uuid,
                    "GH100",
                    int64_t{d.ordinal},
                    int64_t{d.registers_per_block},
                    static_cast<int64_t>(d.shared_memory_per_block_bytes),
                    static_cast<int64_t>(d.shared_memory_per_block_optin_bytes),
                    static_cast<int64_t>(d.shared_memory_per_sm_bytes),
                    int64_t{d.registers_per_sm},
                    int64_t{d.warp_size},
                    int64_t{3},
                    int64_t{d.max_threads_per_sm / d.warp_size},
                    int64_t{32},
                    int64_t{d.max_threads_per_block},
                    int64_t{d.cc_major},
                    int64_t{d.cc_minor}});
    cuda_devices.push_back({int64_t{d.ordinal}, int64_t{d.ordinal}, pid, uuid, int64_t{d.sm_count}});
  }
  // The Run names no threads: the main thread is the process's, the others numbered.
  for (uint64_t tid : tids) {
    const std::string name = tid == run.pid ? "python3" : "thread " + std::to_string(tid);
    threads.push_back({sid(name), int64_t{0}, global_tid(tid)});
  }
  for (size_t i = 0; i < std::size(kCopyKinds); ++i) {
    copy_kinds.push_back(
        {static_cast<int64_t>(i), std::string(kCopyKinds[i].first), std::string(kCopyKinds[i].second)});
  }

  std::mt19937 rng(20250601);
  for (std::vector<Row>* rows : {&kernels, &copies, &fills, &calls, &syncs, &nvtx}) shuffle(*rows, rng);
  db.insert("StringIds", strings);
  db.insert("ThreadNames", threads);
  db.insert("TARGET_INFO_SYSTEM_ENV",
            {{int64_t{0}, std::string("Host"), std::string("Hostname"), int64_t{1}, run.host_name}});
  db.insert("TARGET_INFO_SESSION_START_TIME",
            {{run.base_ns, utc_text(run.base_ns), utc_text(run.base_ns), int64_t{0}}});
  db.insert("TARGET_INFO_GPU", gpus);
  db.insert("TARGET_INFO_CUDA_DEVICE", cuda_devices);
  db.insert("ENUM_CUDA_MEMCPY_OPER", copy_kinds);
  db.insert("CUPTI_ACTIVITY_KIND_KERNEL", kernels);
  db.insert("CUPTI_ACTIVITY_KIND_MEMCPY", copies);
  db.insert("CUPTI_ACTIVITY_KIND_MEMSET", fills);
  db.insert("CUPTI_ACTIVITY_KIND_RUNTIME", calls);
  db.insert("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", syncs);
  db.insert("NVTX_EVENTS", nvtx);
  db.exec("COMMIT");
}

}  // namespace tracegen
