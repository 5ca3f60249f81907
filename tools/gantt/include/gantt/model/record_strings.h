// The string-id fields of a record, in one place: code that copies records from one capture
// into another (merge, whatif) rewrites them to the output's ids through here.
#pragma once

#include <gpuhook/v1/capture.pb.h>

namespace gantt {

// Rewrites the capture-local string ids of a record with `remap(id) -> output id`.
template <typename Remap>
void remap_strings(gpuhook::v1::Record& r, Remap remap) {
  namespace v1 = gpuhook::v1;
  switch (r.kind_case()) {
    case v1::Record::kApi: r.mutable_api()->set_name_id(remap(r.api().name_id())); break;
    case v1::Record::kKernel: r.mutable_kernel()->set_name_id(remap(r.kernel().name_id())); break;
    case v1::Record::kNccl: r.mutable_nccl()->set_name_id(remap(r.nccl().name_id())); break;
    case v1::Record::kHostFunction: r.mutable_host_function()->set_name_id(remap(r.host_function().name_id())); break;
    case v1::Record::kThread: r.mutable_thread()->set_name_id(remap(r.thread().name_id())); break;
    case v1::Record::kMemoryTag: r.mutable_memory_tag()->set_category_id(remap(r.memory_tag().category_id())); break;
    case v1::Record::kRange:
      r.mutable_range()->set_name_id(remap(r.range().name_id()));
      r.mutable_range()->set_domain_id(remap(r.range().domain_id()));
      break;
    default: break;
  }
}

}  // namespace gantt
