// Model accessors: derived stages, names, range paths. The loading is in model_builder.cpp.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "gantt/model/model.h"
#include "gantt/scan/trace_import.h"
#include "gantt/model/text.h"

namespace gantt {

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kKernel: return "kernel";
    case EventKind::kMemcpy: return "memcpy";
    case EventKind::kMemset: return "memset";
    case EventKind::kSync: return "sync";
    case EventKind::kNccl: return "nccl";
    case EventKind::kHostFunc: return "host function";
  }
  return "unknown";
}

std::string unjoined_name(EventKind kind, uint8_t copy_kind) {
  return kind == EventKind::kMemcpy ? std::string("memcpy ") + copy_kind_name(copy_kind) : std::string(to_string(kind));
}

const char* copy_kind_name(uint8_t copy_kind) {
  static const char* const names[] = {"", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return copy_kind < std::size(names) ? names[copy_kind] : "?";
}

const gpuhook::v1::DeviceInfo* CaptureInfo::device(uint32_t ordinal) const {
  for (const auto& d : devices)
    if (d.ordinal() == ordinal) return &d;
  return nullptr;
}

std::string demangle(std::string_view mangled) {
  // The demangler recurses on its input; kernel names come from the program (untrusted
  // captures), so absurd lengths are shown as recorded rather than risked.
  if (mangled.size() < 3 || mangled.size() > 4096 || mangled.substr(0, 2) != "_Z") return std::string(mangled);
  std::string input(mangled);
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status),
                                                   &std::free);
  if (status != 0 || !out) return input;
  return std::string(out.get());
}

uint64_t dim3_count(const std::array<int32_t, 3>& d) {
  if (d[0] <= 0 || d[1] <= 0 || d[2] <= 0) return 0;
  uint64_t n = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(d[0]), static_cast<uint64_t>(d[1]), &n) ||
      __builtin_mul_overflow(n, static_cast<uint64_t>(d[2]), &n))
    return UINT64_MAX;
  return n;
}

std::string Model::imported_format() const {
  std::string format;
  for (const CaptureInfo& c : captures) {
    const std::string& tool = c.header.tool_version();
    if (!scan::is_imported(tool)) return "";
    format = tool.substr(0, tool.find(scan::kImportedMarker));
  }
  return format;
}

uint32_t Model::find_string(std::string_view s) const {
  for (uint32_t id = 1; id < strings.size(); ++id)
    if (strings[id] == s) return id;
  return kNone;
}

std::string_view Model::display_name(uint32_t event) const {
  const uint32_t id = events.name[event];
  if (id < demangled.size() && demangled[id] != kNone) return string(demangled[id]);
  if (events.kind[event] == EventKind::kMemcpy || events.kind[event] == EventKind::kMemset ||
      events.kind[event] == EventKind::kSync)
    return api_display_name(string(id));  // named after the API call that issued them
  return string(id);
}

uint64_t Model::launch_ns(uint32_t event) const {
  const uint32_t a = events.api[event];
  return a == kNone ? 0 : api.start_ns[a];
}

uint64_t Model::launch_thread_id(uint32_t event) const {
  const uint32_t a = events.api[event];
  return a == kNone ? 0 : threads.thread_id[api.thread[a]];
}

namespace {
std::optional<int64_t> diff(uint64_t from, uint64_t to) {
  if (from == 0 || to == 0) return std::nullopt;
  return static_cast<int64_t>(to - from);
}
}  // namespace

Stages Model::stages(uint32_t e) const {
  Stages s;
  const uint64_t launch = launch_ns(e);
  const uint64_t q = events.queued_ns[e], sub = events.submitted_ns[e], st = events.start_ns[e], en = events.end_ns[e];
  s.launch_to_queued_ns = diff(launch, q);
  s.queued_to_submitted_ns = diff(q, sub);
  s.submitted_to_start_ns = diff(sub, st);
  s.queued_to_start_ns = diff(q, st);
  s.exec_ns = diff(st, en);
  s.total_ns = diff(launch, en);
  return s;
}

std::string Model::range_path_of_range(uint32_t r) const {
  std::vector<uint32_t> chain;
  for (uint32_t i = r; i != kNone && chain.size() < 256; i = ranges.parent[i]) chain.push_back(i);
  std::string path;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!path.empty()) path += '/';
    path += string(ranges.name[*it]);
  }
  return path;
}

std::string Model::range_path(uint32_t event) const {
  const uint32_t r = events.range[event];
  return r == kNone ? std::string() : range_path_of_range(r);
}

std::vector<uint32_t> Model::nccl_call_of_events() const {
  std::vector<uint32_t> call(events.size(), kNone);
  for (const bool group_end : {false, true})
    for (uint32_t n = 0; n < nccl.size(); ++n) {
      const uint32_t e = nccl.event[n];
      if (e < call.size() && call[e] == kNone && (nccl.op[n] == gpuhook::v1::NCCL_GROUP_END) == group_end) call[e] = n;
    }
  return call;
}

uint64_t Model::first_ns() const {
  uint64_t t = 0;
  for (const auto& c : captures)
    if (c.first_ns && (t == 0 || c.first_ns < t)) t = c.first_ns;
  return t;
}

uint64_t Model::last_ns() const {
  uint64_t t = 0;
  for (const auto& c : captures) t = std::max(t, c.last_ns);
  return t;
}

}  // namespace gantt
