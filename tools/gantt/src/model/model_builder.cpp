// Loading: records -> columns, then per capture: strings remapped, GPU clocks aligned,
// activities joined to API calls by correlation id, ranges nested and attached, NCCL calls
// joined to their kernels (those joins: model_join.cpp), occupancy computed, kernel names
// demangled.
#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>

#include "model_builder_impl.h"

namespace gantt {

void ModelBuilder::Impl::add(const v1::Record& r) {
  CaptureInfo& c = m.captures[cap];
  switch (r.kind_case()) {
    case v1::Record::kHeader:
      c.header = r.header();
      see(r.header().start_monotonic_raw_ns());
      break;
    case v1::Record::kDevice:
      if (c.devices.size() < 4096) c.devices.push_back(r.device());
      break;
    case v1::Record::kStringDef: {
      const uint32_t local = r.string_def().id();
      // Ids are dense from the writer; a huge id from a corrupt file is not allocated for.
      if (local == 0 || local >= (1u << 24)) break;
      if (local >= local_to_model.size()) local_to_model.resize(local + 1, kNone);
      local_to_model[local] = intern(r.string_def().value());
      break;
    }
    case v1::Record::kApi: add_api(gpuhook::api_fields(r.api())); break;
    case v1::Record::kKernel: add_kernel(gpuhook::kernel_fields(r.kernel())); break;
    case v1::Record::kMemcpy: {
      const auto& k = r.memcpy();
      push_event(EventKind::kMemcpy, 0, k.device(), k.stream(), 0, static_cast<uint8_t>(k.copy_kind()), k.bytes(), 0, 0,
                 t(k.has_start_ns(), k.start_ns()), t(k.has_end_ns(), k.end_ns()), k.correlation_id());
      m.events.graph_id.back() = k.graph_id();
      m.events.graph_node_id.back() = k.graph_node_id();
      m.events.copy_flags.back() =
          static_cast<uint8_t>((k.async() ? kCopyAsync : 0) |
                               (k.src_kind() == v1::MEMORY_PAGEABLE || k.dst_kind() == v1::MEMORY_PAGEABLE ? kCopyPageable : 0));
      if (k.copy_kind() == v1::COPY_PTOP) {
        m.events.src_device.back() = k.src_device();
        m.events.dst_device.back() = k.dst_device();
      }
      break;
    }
    case v1::Record::kMemset: {
      const auto& k = r.memset();
      push_event(EventKind::kMemset, 0, k.device(), k.stream(), 0, 0, k.bytes(), 0, 0, t(k.has_start_ns(), k.start_ns()),
                 t(k.has_end_ns(), k.end_ns()), k.correlation_id());
      m.events.graph_id.back() = k.graph_id();
      m.events.graph_node_id.back() = k.graph_node_id();
      break;
    }
    case v1::Record::kSync: {
      const auto& k = r.sync();
      if (k.type() == v1::SYNC_STREAM_WAIT_EVENT) {
        push(m.stream_waits.capture, cap);
        push(m.stream_waits.device, k.device());
        push(m.stream_waits.stream, k.stream());
        push(m.stream_waits.event_id, k.event_id());
        push(m.stream_waits.correlation_id, k.correlation_id());
        push(m.stream_waits.api, kNone);
      }
      // A query that found work pending (CUDA_ERROR_NOT_READY) returned at once: no wait to draw
      // or to blame (CUDA 13 writes SYNCHRONIZATION records for queries, with their returnValue).
      if (k.return_value() != 0) break;
      push_event(EventKind::kSync, 0, k.device(), k.stream(), 0, static_cast<uint8_t>(k.type()), 0, 0, 0,
                 t(k.has_start_ns(), k.start_ns()), t(k.has_end_ns(), k.end_ns()), k.correlation_id());
      break;
    }
    case v1::Record::kNccl: {
      const auto& n = r.nccl();
      NcclTable& nc = m.nccl;
      const uint64_t s = t(n.has_start_ns(), n.start_ns()), e = t(n.has_end_ns(), n.end_ns());
      push(nc.capture, cap);
      push(nc.op, static_cast<uint8_t>(n.op()));
      push(nc.name, n.name_id());
      push(nc.thread, thread_row(n.thread_id()));
      push(nc.count, n.count());
      push(nc.datatype, n.datatype());
      push(nc.bytes, n.bytes());
      push(nc.reduce_op, n.reduce_op());
      push(nc.root_or_peer, n.root_or_peer());
      push(nc.comm_id, n.comm_id());
      push(nc.rank, n.rank());
      push(nc.nranks, n.nranks());
      push(nc.sequence, n.sequence());
      push(nc.device, n.device());
      push(nc.cuda_stream_id, n.cuda_stream_id());
      push(nc.start_ns, s);
      push(nc.end_ns, e);
      push(nc.return_value, n.return_value());
      push(nc.event, kNone);
      push(nc.external_id, n.external_id());
      push(nc.group_depth, n.group_depth());
      see(s);
      see(e);
      break;
    }
    case v1::Record::kHostFunction: {
      const auto& h = r.host_function();
      const uint64_t s = t(h.has_start_ns(), h.start_ns()), e = t(h.has_end_ns(), h.end_ns());
      // The device is the stream's (join_host_functions); host times need no GPU clock mapping.
      push_event(EventKind::kHostFunc, h.name_id(), 0, h.stream(), 0, 0, 0, 0, 0, s, e, 0);
      if (h.external_id() != 0)
        push(host_func_external, std::make_pair(static_cast<uint32_t>(m.events.size() - 1), h.external_id()));
      see(s);
      see(e);
      break;
    }
    case v1::Record::kRange: {
      const auto& g = r.range();
      const uint64_t ts = t(g.has_time_ns(), g.time_ns());
      push(raw_ranges, RawRange{g.type(), g.domain_id(), g.name_id(), thread_row(g.thread_id()), ts, g.range_id(),
                                g.color(), g.category()});
      see(ts);
      break;
    }
    case v1::Record::kMemory: {
      const auto& x = r.memory();
      const uint64_t ts = t(x.has_time_ns(), x.time_ns());
      MemoryTable& mt = m.memory;
      uint64_t bytes = x.bytes();
      if (x.op() == v1::MEMORY_OP_ALLOC) {
        if (live_allocations.size() < (1u << 22)) live_allocations[x.address()] = bytes;
      } else if (auto it = live_allocations.find(x.address()); it != live_allocations.end()) {
        if (bytes == 0) bytes = it->second;
        live_allocations.erase(it);
      }
      push(mt.capture, cap);
      push(mt.device, x.device());
      push(mt.op, static_cast<uint8_t>(x.op()));
      push(mt.kind, static_cast<uint8_t>(x.memory_kind()));
      push(mt.address, x.address());
      push(mt.bytes, bytes);
      push(mt.time_ns, ts);  // not `see`n: an allocation's time is its API call's, already seen
      push(mt.api, kNone);
      push(mt.pool, static_cast<uint8_t>(x.async() || x.pool_address() != 0));
      push(mt.category, 0u);
      push(mt.first_use_ns, uint64_t{0});
      push(mt.last_use_ns, uint64_t{0});
      push(mt.uses, 0u);
      push(mt.last_use_correlation, 0u);
      push(memory_correlation, x.correlation_id());
      break;
    }
    case v1::Record::kMemoryTag: {
      const auto& g = r.memory_tag();
      // Bounded like the live allocations: a file of nothing but tags cannot grow this forever.
      if (g.category_id() == 0) break;
      if (memory_tags < (1u << 20)) {
        memory_marks.push_back({g.address(), t(g.has_time_ns(), g.time_ns()), g.category_id(), false});
        ++memory_tags;
      } else {
        ++c.memory_tags_ignored;  // said by stats --by memory
      }
      break;
    }
    case v1::Record::kMemoryUse: {
      const auto& u = r.memory_use();
      // Bounded too: past it the uses are counted, and the rule that reads them says so.
      if (c.memory_uses < kMaxMemoryUses) {
        if (u.has_time_ns() && u.time_ns() > 0)
          memory_marks.push_back({u.address(), t(true, u.time_ns()), u.correlation_id(), true});
      } else {
        ++c.memory_uses_ignored;
      }
      ++c.memory_uses;
      break;
    }
    case v1::Record::kMetricSample: {
      const auto& x = r.metric_sample();
      const uint64_t ts = t(x.has_time_ns(), x.time_ns());
      // A metric this reader does not know (a newer writer's), a device past what any host
      // holds, or an unknown time cannot be placed; a hostile file cannot grow this past the bound.
      const bool known = x.metric() > v1::GPU_METRIC_UNKNOWN && x.metric() <= v1::GPU_METRIC_NVLINK_TX_CENTIPCT;
      if (!known || x.device() >= 4096 || ts == 0 || m.metrics.size() - mt0 >= MetricTable::kMaxRowsPerCapture) {
        c.metric_samples_left_out++;
        break;
      }
      MetricTable& mt = m.metrics;
      push(mt.capture, cap);
      push(mt.device, x.device());
      push(mt.metric, static_cast<uint8_t>(x.metric()));
      push(mt.time_ns, ts);  // not `see`n: samples go on while nothing else happens
      // PM sampling's shares cannot pass the whole (10000 hundredths of a percent): a larger
      // value is a corrupt or hostile file's, kept at the bound so means and strips stay sane.
      push(mt.value, x.metric() >= v1::GPU_METRIC_GR_ACTIVE_CENTIPCT ? std::min<uint64_t>(x.value(), 10000) : x.value());
      break;
    }
    case v1::Record::kNotice:
      if (r.notice().kind() == v1::NOTICE_FLIGHT_DUMP) {
        if (c.flight_dumps.size() < 1000)
          c.flight_dumps.emplace_back(t(r.notice().has_time_ns(), r.notice().time_ns()), r.notice().text().substr(0, 512));
        break;
      }
      if (c.notices.size() < 16) c.notices.push_back(r.notice().text().substr(0, 512));
      break;
    case v1::Record::kStream:
      if (stream_priority.size() < (1u << 20)) {
        stream_priority[r.stream().stream()] = r.stream().priority();
        push(m.streams.capture, cap);
        push(m.streams.stream, r.stream().stream());
        push(m.streams.priority, r.stream().priority());
        push(m.streams.flags, r.stream().flags());
      }
      break;
    case v1::Record::kCudaEvent: {
      const auto& x = r.cuda_event();
      push(m.cuda_events.capture, cap);
      push(m.cuda_events.event_id, x.event_id());
      push(m.cuda_events.stream, x.stream());
      push(m.cuda_events.device, x.device());
      push(m.cuda_events.correlation_id, x.correlation_id());
      push(m.cuda_events.api, kNone);
      break;
    }
    case v1::Record::kExternalCorrelation: {
      const auto& x = r.external_correlation();
      if (x.kind() == kHookExternalKind && x.external_id() != 0 && x.correlation_id() != 0)
        push(raw_external, RawExternal{x.external_id(), x.correlation_id()});
      break;
    }
    case v1::Record::kThread: {
      const uint32_t row = thread_row(r.thread().thread_id());
      m.threads.name[row] = r.thread().name_id();
      break;
    }
    case v1::Record::kDrops: {
      const uint32_t src = static_cast<uint32_t>(r.drops().source());
      c.dropped_by_source[src < 8 ? src : 0] += r.drops().count();
      break;
    }
    case v1::Record::kFooter:
      c.footer = r.footer();
      break;
    default:
      break;  // overhead, chunk starts: not part of the chart
  }
}

void ModelBuilder::Impl::align() {
  CaptureInfo& c = m.captures[cap];
  c.alignment = clock_alignment(c.header.features());
  EventTable& e = m.events;
  for (size_t i = ev0; i < e.size(); ++i) {
    see(e.queued_ns[i]);
    see(e.start_ns[i]);
    see(e.end_ns[i]);
  }
}

// Rows of this capture by (device, metric, time): each series one sorted run. Written per
// read in time order, so this is close to sorted already.
void ModelBuilder::Impl::sort_metrics() {
  MetricTable& mt = m.metrics;
  const size_t n = mt.size() - mt0;
  if (n == 0) return;
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  auto key = [&](uint32_t i) { return std::make_tuple(mt.device[mt0 + i], mt.metric[mt0 + i], mt.time_ns[mt0 + i]); };
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  auto permute = [&](auto& column) {
    using T = typename std::decay_t<decltype(column)>::value_type;
    std::vector<T> sorted(n);
    for (size_t i = 0; i < n; ++i) sorted[i] = column[mt0 + order[i]];
    std::copy(sorted.begin(), sorted.end(), column.begin() + static_cast<std::ptrdiff_t>(mt0));
  };
  permute(mt.device);
  permute(mt.metric);
  permute(mt.time_ns);
  permute(mt.value);
}

void ModelBuilder::Impl::occupancy() {
  CaptureInfo& c = m.captures[cap];
  EventTable& e = m.events;
  KernelOccupancy kernels(c.devices, &c.device_problems);
  if (!kernels.any_device()) return;
  for (size_t i = ev0; i < e.size(); ++i) {
    if (e.kind[i] != EventKind::kKernel && e.kind[i] != EventKind::kNccl) continue;
    const Occupancy& o = kernels.of(e.device[i], e.block[i], e.registers_per_thread[i],
                                    uint64_t{e.static_smem_bytes[i]} + e.dynamic_smem_bytes[i]);
    if (o.limit == OccupancyLimit::kUnknown) continue;
    e.occupancy[i] = static_cast<float>(o.fraction);
    e.occupancy_limit[i] = o.limit;
  }
}

void ModelBuilder::Impl::demangle_names() {
  EventTable& e = m.events;
  std::vector<uint32_t> ids;
  for (size_t i = ev0; i < e.size(); ++i)
    if (e.kind[i] == EventKind::kKernel || e.kind[i] == EventKind::kNccl || e.kind[i] == EventKind::kHostFunc)
      ids.push_back(e.name[i]);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (uint32_t id : ids) {
    if (id < m.demangled.size() && m.demangled[id] != kNone) continue;
    const std::string d = demangle(m.strings[id]);
    const uint32_t did = d == m.strings[id] ? kNone : intern(d);
    if (m.demangled.size() <= id) m.demangled.resize(id + 1, kNone);
    m.demangled[id] = did;
  }
}

void ModelBuilder::Impl::finish(const gpuhook::Integrity& integrity) {
  CaptureInfo& c = m.captures[cap];
  c.integrity = integrity;
  // Strings first: every later step works on model ids.
  for (size_t i = ev0; i < m.events.size(); ++i) m.events.name[i] = remap(m.events.name[i]);
  for (size_t i = api0; i < m.api.size(); ++i) m.api.name[i] = remap(m.api.name[i]);
  for (size_t i = th0; i < m.threads.size(); ++i) m.threads.name[i] = remap(m.threads.name[i]);
  for (size_t i = nc0; i < m.nccl.size(); ++i) m.nccl.name[i] = remap(m.nccl.name[i]);
  if (!stream_priority.empty()) {
    for (size_t i = ev0; i < m.events.size(); ++i) {
      auto it = stream_priority.find(m.events.stream[i]);
      if (it != stream_priority.end() && m.events.priority[i] == 0) m.events.priority[i] = it->second;
    }
    stream_priority.clear();
  }
  align();
  sort_metrics();
  join_host_functions();
  apply_memory_marks();
  join();
  occupancy();
  demangle_names();
  local_to_model.clear();
  raw_external.clear();
  host_func_external.clear();
  thread_rows.clear();
  live_allocations.clear();
  memory_marks.clear();
  memory_tags = 0;
  open = false;
}

ModelBuilder::ModelBuilder(Model& model) : impl_(new Impl(model)) {}
ModelBuilder::~ModelBuilder() { delete impl_; }

uint16_t ModelBuilder::begin_capture(const std::string& path) {
  Impl& b = *impl_;
  if (b.open) end_capture({});
  if (b.m.captures.size() >= UINT16_MAX) throw std::runtime_error("too many captures");
  b.m.captures.emplace_back();
  b.m.captures.back().path = path;
  b.cap = static_cast<uint16_t>(b.m.captures.size() - 1);
  b.ev0 = b.m.events.size();
  b.api0 = b.m.api.size();
  b.th0 = b.m.threads.size();
  b.rg0 = b.m.ranges.size();
  b.nc0 = b.m.nccl.size();
  b.ce0 = b.m.cuda_events.size();
  b.sw0 = b.m.stream_waits.size();
  b.mem0 = b.m.memory.size();
  b.mt0 = b.m.metrics.size();
  b.open = true;
  return b.cap;
}

void ModelBuilder::Impl::add_api(const gpuhook::ApiFields& a) {
  ApiTable& api = m.api;
  const uint64_t s = known(a.start_ns), e = known(a.end_ns);
  push(api.capture, cap);
  push(api.domain, static_cast<uint8_t>(a.domain));
  push(api.cbid, static_cast<uint16_t>(std::min<uint32_t>(a.cbid, UINT16_MAX)));
  push(api.thread, thread_row(a.thread_id));
  push(api.name, a.name_id);
  push(api.start_ns, s);
  push(api.end_ns, e);
  push(api.correlation_id, a.correlation_id);
  push(api.return_value, a.return_value);
  see(s);
  see(e);
}

void ModelBuilder::Impl::add_kernel(const gpuhook::KernelFields& k) {
  const uint64_t q = known(k.queued_ns), sb = known(k.submitted_ns), s = known(k.start_ns), e = known(k.end_ns);
  push_event(EventKind::kKernel, k.name_id, k.device, k.stream, k.stream_priority, 0, 0, q, sb, s, e, k.correlation_id);
  EventTable& ev = m.events;
  ev.grid.back() = {k.grid_x, k.grid_y, k.grid_z};
  ev.block.back() = {k.block_x, k.block_y, k.block_z};
  ev.registers_per_thread.back() = static_cast<uint16_t>(std::min<uint32_t>(k.registers_per_thread, UINT16_MAX));
  ev.static_smem_bytes.back() = k.static_shared_memory_bytes;
  ev.dynamic_smem_bytes.back() = k.dynamic_shared_memory_bytes;
  ev.graph_id.back() = k.graph_id;
  ev.graph_node_id.back() = k.graph_node_id;
}

void ModelBuilder::define_string(uint32_t local, std::string_view value) {
  v1::Record r;
  r.mutable_string_def()->set_id(local);
  r.mutable_string_def()->set_value(std::string(value));
  impl_->add(r);
}

void ModelBuilder::add(const v1::Record& record) {
  if (!impl_->open) begin_capture("");
  impl_->add(record);
}

void ModelBuilder::add(const gpuhook::RecordView& record) {
  if (!impl_->open) begin_capture("");
  if (record.kind == v1::Record::kKernel) impl_->add_kernel(record.kernel);
  else if (record.kind == v1::Record::kApi) impl_->add_api(record.api);
  else impl_->add(*record.record);
}

void ModelBuilder::reserve_hint(uint64_t records) { reserve({records, records, 0, 0}); }

void ModelBuilder::reserve(const Rows& rows) {
  // The counts may come from an untrusted index: a table past what any real capture holds
  // is not reserved, and a reservation the system refuses only means growing as usual.
  Model& m = impl_->m;
  const auto more = [](uint64_t n) {
    return [n](auto& column, auto) {
      if (n != 0 && n <= (uint64_t{1} << 28)) column.reserve(column.size() + static_cast<size_t>(n));
    };
  };
  try {
    m.events.for_each_column(more(rows.events));
    m.api.for_each_column(more(rows.api));
    m.nccl.for_each_column(more(rows.nccl));
    more(rows.external)(impl_->raw_external, builder::RawExternal{});
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
}

void ModelBuilder::end_capture(const gpuhook::Integrity& integrity) {
  if (impl_->open) impl_->finish(integrity);
}

}  // namespace gantt
