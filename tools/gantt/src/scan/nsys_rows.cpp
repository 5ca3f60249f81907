// The rows of an Nsight Systems SQLite export (TRACE-FORMATS.md, part B): the kernel, memcpy,
// memset, CUDA API, synchronisation and NVTX tables, each read ORDER BY start and merged by
// start, with the StringIds look-ups they need. What the report holds, the header and the
// devices are nsys_import.cpp, whose top says how several processes are kept apart.
#include <gpuhook/capture.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gantt/scan/trace_import.h"
#include "nsys_importer.h"
#include "nsys_schema.h"
#include "nsys_sqlite.h"

namespace gantt::scan::nsys {

// ---- strings ----

// StringIds[id], interned in the capture. nullopt for a missing id <= 0 (older exports write 0
// for "none"); a dangling positive id is an error.
std::optional<uint32_t> Importer::string_id(const Query& q, int c, int64_t id) {
  if (const auto it = strings_.find(id); it != strings_.end()) return it->second;
  const std::optional<std::string> value = lookup(q, c, id);
  if (!value) {
    if (id <= 0) return std::nullopt;
    q.bad_column(c, "refers to string " + std::to_string(id) + ", which StringIds does not hold");
  }
  return strings_[id] = out_.intern(*value);
}

std::optional<std::string> Importer::lookup(const Query& q, int c, int64_t id) {
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
uint32_t Importer::api_name(const Query& q, int c, int64_t id, std::string* text) {
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

int64_t Importer::absolute(const Query& q, int c, int64_t rel) const {
  if (rel < 0 || rel > kMaxTimeNs) q.bad_column(c, "is " + std::to_string(rel) + ": not a time between 0 and 2^62 ns");
  if (rel > kMaxTimeNs - base_ns_) q.bad_column(c, "is past 2^62 ns once the session start is added");
  return base_ns_ + rel;
}

int64_t Importer::time_ns(const Query& q, int c) const {
  const std::optional<int64_t> rel = q.integer(c);
  if (!rel) q.bad_column(c, "is NULL: the row has no time");
  return absolute(q, c, *rel);
}

int64_t Importer::end_ns(const Query& q, int c, int64_t start_ns) {
  const int64_t end = time_ns(q, c);
  if (end < start_ns) {
    q.bad("end (" + std::to_string(end - base_ns_) + ") is before start (" + std::to_string(start_ns - base_ns_) + ")");
  }
  last_ns_ = std::max(last_ns_, end);
  return end;
}

// Correlation ids are per process (B3): with several processes, id * processes + index keeps
// them apart. An id that does not fit is dropped (the launch is then not joined) and counted.
uint32_t Importer::correlation(int64_t pid, std::optional<int64_t> id) {
  if (!id || *id <= 0 || *id > UINT32_MAX) return 0;
  if (procs_.size() == 1) return static_cast<uint32_t>(*id);
  const uint64_t renumbered = static_cast<uint64_t>(*id) * procs_.size() + process_index(pid);
  if (renumbered > UINT32_MAX) {
    ++correlations_dropped_;
    return 0;
  }
  return static_cast<uint32_t>(renumbered);
}

void Importer::kernel(const Query& q, int64_t start) {
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

void Importer::copy(const Query& q, int64_t start) {
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
  place<C>(q, pid, start, m);
  const std::optional<int64_t> src = q.integer(C::srcDeviceId), dst = q.integer(C::dstDeviceId);
  m->set_src_device(src ? device_of(pid, static_cast<uint32_t>(*src)) : m->device());
  m->set_dst_device(dst ? device_of(pid, static_cast<uint32_t>(*dst)) : m->device());
  m->set_graph_node_id(q.u64(C::graphNodeId));
  out_.write(r);
}

void Importer::fill(const Query& q, int64_t start) {
  using C = MemsetCol;
  const int64_t pid = pid_of(q.integer(C::globalPid));
  v1::Record r;
  v1::Memset* m = r.mutable_memset();
  m->set_value(q.u32(C::value));
  m->set_bytes(q.u64(C::bytes));
  place<C>(q, pid, start, m);
  const std::optional<int64_t> kind = q.has(C::memKind) ? q.integer(C::memKind) : q.integer(C::memoryKind);
  m->set_memory_kind(
      static_cast<v1::MemoryKind>(enum_value(memory_enum_, kind, v1::MEMORY_MANAGED_STATIC, kMemoryPatterns)));
  m->set_graph_node_id(q.u64(C::graphNodeId));
  out_.write(r);
}

void Importer::api(const Query& q, int64_t start, bool driver_table) {
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

void Importer::runtime_call(const Query& q, int64_t start) { api(q, start, false); }

void Importer::driver_call(const Query& q, int64_t start) { api(q, start, true); }

void Importer::sync(const Query& q, int64_t start) {
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
  place<C>(q, pid, start, s);
  s->set_event_id(q.u32(C::eventId));
  out_.write(r);
}

// ---- NVTX ----

uint32_t Importer::nvtx_text(const Query& q) {
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
void Importer::read_domains() {
  if (t_.nvtx.empty()) return;
  Query d(db_, t_.nvtx, NvtxCol::names(), "\"eventType\" = " + std::to_string(kNvtxDomain), "");
  if (!d.has(NvtxCol::domainId)) return;
  for (size_t n = 0; n < kMaxSmallTableRows && d.step(); ++n) {
    const std::optional<int64_t> id = d.integer(NvtxCol::domainId);
    if (id) domains_[{pid_of(d.integer(NvtxCol::globalTid)), *id}] = nvtx_text(d);
  }
}

void Importer::emit_range(v1::RangeType type, uint64_t thread, int64_t time, uint32_t name, uint32_t domain,
                          uint64_t range_id, uint32_t category, uint32_t color) {
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

void Importer::close_until(const StackKey& key, std::vector<int64_t>& open, int64_t t) {
  while (!open.empty() && open.back() <= t) {
    emit_range(v1::RANGE_POP, key.first, open.back(), 0, key.second, 0, 0, 0);
    open.pop_back();
  }
}

void Importer::nvtx(const Query& q, int64_t start) {
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

int64_t Importer::trace_end_ns() const { return std::max(last_ns_, absolute_or_base(last_rel_ns_)); }

// ---- the merge ----

void Importer::add_source(std::vector<Source>& sources, const std::string& table,
                          const std::vector<std::string_view>& names, Convert convert, const std::string& where,
                          const std::string& order, std::initializer_list<std::initializer_list<int>> required) {
  if (table.empty()) return;
  Source s;
  s.query = std::make_unique<Query>(db_, table, names, where, order);
  for (const auto& any_of : required) require(*s.query, any_of, names);
  s.convert = convert;
  sources.push_back(std::move(s));
}

void Importer::advance(Source& s) {
  s.live = s.query->step();
  if (s.live) s.start_ns = time_ns(*s.query, 0);
}

void Importer::merge() {
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
}  // namespace gantt::scan::nsys
