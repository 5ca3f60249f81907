// KernelFields / ApiFields <-> the proto messages (include/gpuhook/capture.h).
#include <gpuhook/capture.h>

namespace gpuhook {

KernelFields kernel_fields(const v1::Kernel& k) {
  KernelFields f;
  f.name_id = k.name_id();
  f.device = k.device();
  f.context = k.context();
  f.stream = k.stream();
  f.correlation_id = k.correlation_id();
  f.queued_ns = k.queued_ns();
  f.submitted_ns = k.submitted_ns();
  f.start_ns = k.start_ns();
  f.end_ns = k.end_ns();
  f.grid_x = k.grid_x();
  f.grid_y = k.grid_y();
  f.grid_z = k.grid_z();
  f.block_x = k.block_x();
  f.block_y = k.block_y();
  f.block_z = k.block_z();
  f.registers_per_thread = k.registers_per_thread();
  f.static_shared_memory_bytes = k.static_shared_memory_bytes();
  f.dynamic_shared_memory_bytes = k.dynamic_shared_memory_bytes();
  f.local_memory_per_thread_bytes = k.local_memory_per_thread_bytes();
  f.graph_id = k.graph_id();
  f.graph_node_id = k.graph_node_id();
  f.launch_type = k.launch_type();
  f.channel_id = k.channel_id();
  f.stream_priority = k.stream_priority();
  f.device_launched = k.device_launched();
  return f;
}

ApiFields api_fields(const v1::ApiCall& a) {
  ApiFields f;
  f.domain = a.domain();
  f.cbid = a.cbid();
  f.name_id = a.name_id();
  f.thread_id = a.thread_id();
  f.start_ns = a.start_ns();
  f.end_ns = a.end_ns();
  f.correlation_id = a.correlation_id();
  f.return_value = a.return_value();
  return f;
}

v1::Record to_record(const KernelFields& f) {
  v1::Record r;
  auto* k = r.mutable_kernel();
  k->set_name_id(f.name_id);
  k->set_device(f.device);
  k->set_context(f.context);
  k->set_stream(f.stream);
  k->set_correlation_id(f.correlation_id);
  // 0 is unknown: left unset, as the reader returns it.
  if (f.queued_ns != 0) k->set_queued_ns(f.queued_ns);
  if (f.submitted_ns != 0) k->set_submitted_ns(f.submitted_ns);
  if (f.start_ns != 0) k->set_start_ns(f.start_ns);
  if (f.end_ns != 0) k->set_end_ns(f.end_ns);
  k->set_grid_x(f.grid_x);
  k->set_grid_y(f.grid_y);
  k->set_grid_z(f.grid_z);
  k->set_block_x(f.block_x);
  k->set_block_y(f.block_y);
  k->set_block_z(f.block_z);
  k->set_registers_per_thread(f.registers_per_thread);
  k->set_static_shared_memory_bytes(f.static_shared_memory_bytes);
  k->set_dynamic_shared_memory_bytes(f.dynamic_shared_memory_bytes);
  k->set_local_memory_per_thread_bytes(f.local_memory_per_thread_bytes);
  k->set_graph_id(f.graph_id);
  k->set_graph_node_id(f.graph_node_id);
  k->set_launch_type(static_cast<v1::LaunchType>(f.launch_type));
  k->set_channel_id(f.channel_id);
  k->set_stream_priority(f.stream_priority);
  k->set_device_launched(f.device_launched);
  return r;
}

v1::Record to_record(const ApiFields& f) {
  v1::Record r;
  auto* a = r.mutable_api();
  a->set_domain(static_cast<v1::ApiDomain>(f.domain));
  a->set_cbid(f.cbid);
  a->set_name_id(f.name_id);
  a->set_thread_id(f.thread_id);
  if (f.start_ns != 0) a->set_start_ns(f.start_ns);
  if (f.end_ns != 0) a->set_end_ns(f.end_ns);
  a->set_correlation_id(f.correlation_id);
  a->set_return_value(f.return_value);
  return r;
}

}  // namespace gpuhook
