// The writer's host records: what the hook's own interposers put in the rings (NCCL calls,
// NVTX ranges and thread names, host functions) turned into capture records, with their
// names interned once the record is known to be inside the capture window. The writer's
// thread, file and window are writer.cpp.
#include <dlfcn.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "writer.h"

namespace gpuhook::hook {

uint32_t Writer::intern_pointer(const void* key, const char* s) {
  auto it = pointer_ids_.find(key);
  if (it != pointer_ids_.end()) return it->second;
  uint32_t id = file_->intern(s);
  pointer_ids_.emplace(key, id);
  return id;
}

// A program function's name: its dynamic symbol, else "<function at libfoo.so+0x1a2b>" (a
// static function has no dynamic symbol; the offset finds it with addr2line).
uint32_t Writer::intern_function(const void* function) {
  auto it = pointer_ids_.find(function);
  if (it != pointer_ids_.end()) return it->second;
  Dl_info info{};
  std::string name;
  if (dladdr(function, &info) != 0 && info.dli_sname != nullptr && info.dli_saddr == function) {
    name = info.dli_sname;
  } else {
    char text[64];
    const auto offset = reinterpret_cast<uintptr_t>(function) - reinterpret_cast<uintptr_t>(info.dli_fbase);
    std::snprintf(text, sizeof(text), "+0x%" PRIxPTR ">", info.dli_fbase != nullptr ? offset
                                                                                 : reinterpret_cast<uintptr_t>(function));
    const char* file = info.dli_fname != nullptr && info.dli_fbase != nullptr ? info.dli_fname : "";
    const char* base = std::strrchr(file, '/');
    name = std::string("<function at ") + (base != nullptr ? base + 1 : file) + text;
  }
  uint32_t id = file_->intern(name);
  pointer_ids_.emplace(function, id);
  return id;
}

// GPUHOOK_MEM_USE: one MemoryUse record per address the call was given.
void Writer::write_memory_uses(const HostRecord& r) {
  const MemoryUsePayload& p = r.memory_use;
  for (uint32_t i = 0; i < std::min<uint32_t>(p.count, kUsesPerRecord); ++i) {
    wire::Record rec;
    auto* u = rec.mutable_memory_use();
    u->set_address(p.address[i]);
    u->set_time_ns(static_cast<int64_t>(r.start_ns));
    u->set_correlation_id(p.correlation_id);
    u->set_thread_id(r.thread_id);
    if (!in_window(rec) || out_of_time() || !open_file()) return;
    file_->write(rec);
    after_emit();
  }
}

void Writer::write_host(const HostRecord& record) {
  // A name longer than one record: the head waits here for the kNameMore records behind it in
  // the same ring. The hook commits them in one step and a drain takes everything committed,
  // so they arrive together, in order, in one drain.
  if (record.kind == HostKind::kNameMore) {
    if (long_name_more_ == 0) return;  // a continuation without its head: nothing to join
    size_t total = long_name_head_.range.name_total_bytes;
    size_t left = total > long_name_.size() ? total - long_name_.size() : 0;
    long_name_.append(record.name_more.text, std::min(left, kMoreNameBytes));
    if (--long_name_more_ != 0) return;
  } else if ((record.kind == HostKind::kRange || record.kind == HostKind::kThreadName ||
              record.kind == HostKind::kMemoryTag) &&
             record.range.more_records != 0) {
    long_name_head_ = record;
    long_name_.assign(record.range.name, std::min<size_t>(record.range.name_bytes, kInlineNameBytes));
    long_name_more_ = record.range.more_records;
    return;
  } else {
    long_name_more_ = 0;
  }
  const HostRecord& r = record.kind == HostKind::kNameMore ? long_name_head_ : record;
  std::string_view name;
  if (r.kind == HostKind::kRange || r.kind == HostKind::kThreadName || r.kind == HostKind::kMemoryTag) {
    if (&r != &long_name_head_) long_name_.assign(r.range.name, std::min<size_t>(r.range.name_bytes, kInlineNameBytes));
    // A name the hook had to cut says so: it ends in "…" (docs/limits.md, NVTX names).
    if (r.range.name_truncated) long_name_ += kCutMarker;
    name = long_name_;
  }
  if (r.kind == HostKind::kMemoryUse) {
    write_memory_uses(r);
    return;
  }
  wire::Record rec;
  // Names are interned only after the window test, so the file holds no unused strings.
  if (r.kind == HostKind::kNccl) {
    auto* n = rec.mutable_nccl();
    const NcclPayload& p = r.nccl;
    n->set_op(static_cast<v1::NcclOp>(p.op));
    n->set_count(p.count);
    n->set_datatype(p.datatype);
    n->set_bytes(p.bytes);
    n->set_reduce_op(p.reduce_op);
    n->set_root_or_peer(p.root_or_peer);
    n->set_comm_id(p.comm_id);
    n->set_rank(p.rank);
    n->set_nranks(p.nranks);
    n->set_stream(p.stream);
    n->set_thread_id(r.thread_id);
    n->set_start_ns(static_cast<int64_t>(r.start_ns));
    n->set_end_ns(static_cast<int64_t>(r.end_ns));
    // Send and recv are numbered apart from the collectives (comm_map.h).
    if (p.op == v1::NCCL_SEND || p.op == v1::NCCL_RECV) n->set_p2p_sequence(p.sequence);
    else n->set_sequence(p.sequence);
    n->set_return_value(p.return_value);
    n->set_external_id(p.external_id);
    n->set_device(p.device);
    n->set_group_depth(p.group_depth);
    if (!in_window(rec) || out_of_time() || !open_file()) return;
    n->set_name_id(intern_pointer(p.function, p.function));
  } else if (r.kind == HostKind::kRange) {
    const RangePayload& p = r.range;
    // GPUHOOK_SLOW: the global domain's push/pop pairs, whatever the capture window.
    if (slow_.enabled() && p.domain == nullptr) {
      if (p.type == v1::RANGE_PUSH) {
        const std::string_view pushed =
            p.registered_name != nullptr ? std::string_view(*static_cast<const char* const*>(p.registered_name)) : name;
        slow_.push(r.thread_id, pushed, r.start_ns);
      } else if (p.type == v1::RANGE_POP) {
        std::string why;
        if (slow_.pop(r.thread_id, r.start_ns, &why)) request_dump(Trigger::kSlow, why.c_str(), r.start_ns);
      }
    }
    auto* g = rec.mutable_range();
    g->set_type(static_cast<v1::RangeType>(p.type));
    g->set_thread_id(r.thread_id);
    g->set_time_ns(static_cast<int64_t>(r.start_ns));
    g->set_range_id(p.range_id);
    g->set_category(p.category);
    g->set_color(p.color);
    g->set_source(p.source);
    if (!in_window(rec) || out_of_time() || !open_file()) return;
    if (summary_file_) {
      summarise_range(rec,
                      p.registered_name != nullptr ? std::string_view(*static_cast<const char* const*>(p.registered_name))
                                                   : name,
                      p.domain != nullptr ? std::string_view(*static_cast<const char* const*>(p.domain)) : std::string_view());
    }
    if (p.domain != nullptr) g->set_domain_id(intern_pointer(p.domain, *static_cast<const char* const*>(p.domain)));
    if (p.registered_name != nullptr) {
      g->set_name_id(intern_pointer(p.registered_name, *static_cast<const char* const*>(p.registered_name)));
    } else if (!name.empty()) {
      g->set_name_id(file_->intern(name));
    }
  } else if (r.kind == HostKind::kMemoryTag) {
    auto* g = rec.mutable_memory_tag();
    g->set_address(r.range.range_id);
    g->set_thread_id(r.thread_id);
    g->set_time_ns(static_cast<int64_t>(r.start_ns));
    if (!in_window(rec) || out_of_time() || !open_file()) return;
    g->set_category_id(file_->intern(name));
  } else if (r.kind == HostKind::kHostFunc) {
    auto* h = rec.mutable_host_function();
    const HostFuncPayload& p = r.host_func;
    h->set_thread_id(r.thread_id);
    h->set_start_ns(static_cast<int64_t>(r.start_ns));
    h->set_end_ns(static_cast<int64_t>(r.end_ns));
    h->set_stream(p.stream);
    h->set_external_id(p.external_id);
    h->set_launch_thread_id(p.launch_thread_id);
    h->set_api(static_cast<v1::HostFunctionApi>(p.api));
    if (!in_window(rec) || out_of_time() || !open_file()) return;
    h->set_name_id(intern_function(p.function));
  } else if (r.kind == HostKind::kGpuMetrics) {
    // One MetricSample per counter read, all at the read's time.
    const GpuMetricsPayload& p = r.metrics;
    for (uint32_t m = 1; m <= kGpuMetricSlots; ++m) {
      if ((p.present & (1u << m)) == 0) continue;
      wire::Record sample;
      auto* s = sample.mutable_metric_sample();
      s->set_device(p.device);
      s->set_time_ns(static_cast<int64_t>(r.start_ns));
      s->set_metric(static_cast<v1::GpuMetric>(m + p.metric_offset));
      s->set_value(p.value[m - 1]);
      if (!in_window(sample) || out_of_time() || !open_file()) return;
      file_->write(sample);
      after_emit();
    }
    return;
  } else if (r.kind == HostKind::kThreadName) {
    // A thread name alone never creates the file; names given before it exists (or before
    // the capture window opened) are written right after the header.
    if (!file_) {
      if (pending_thread_names_.size() < 4096) {
        pending_thread_names_.emplace_back(r.thread_id, std::string(name));
      }
      return;
    }
    write_thread_name(r.thread_id, name);
    return;
  } else {
    return;
  }
  file_->write(rec);
  after_emit();
}

}  // namespace gpuhook::hook
