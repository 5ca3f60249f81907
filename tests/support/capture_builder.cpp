#include "capture_builder.h"

#include <cstdio>
#include <cstdlib>

#include "fake_device.h"

namespace gpuhook::test {

namespace {

class KeepFrames : public FrameSink {
 public:
  void frame(ChunkFrame&& f) override { frames.push_back(std::move(f)); }
  std::vector<ChunkFrame> frames;
};

int64_t ns(uint64_t t) { return static_cast<int64_t>(t); }

// The times of a record that has them; 0 is unknown and stays unset.
template <class M>
void set_times(M& m, uint64_t start_ns, uint64_t end_ns) {
  if (start_ns != 0) m.set_start_ns(ns(start_ns));
  if (end_ns != 0) m.set_end_ns(ns(end_ns));
}

// Where a GPU activity ran and the call that queued it.
template <class M>
void set_activity(M& m, uint32_t stream, uint32_t correlation_id, uint64_t start_ns, uint64_t end_ns) {
  m.set_stream(stream);
  m.set_correlation_id(correlation_id);
  set_times(m, start_ns, end_ns);
}

}  // namespace

OpenRecord::OpenRecord(CaptureBuilder* builder) : builder_(builder) { builder_->open_ = this; }

OpenRecord::OpenRecord(OpenRecord&& from) noexcept : builder_(from.builder_), record_(std::move(from.record_)) {
  if (builder_ != nullptr && builder_->open_ == &from) builder_->open_ = this;
  from.builder_ = nullptr;
}

OpenRecord::~OpenRecord() {
  if (builder_ != nullptr && builder_->open_ == this) builder_->write_open(this);
}

v1::Record& OpenRecord::record() {
  if (builder_ == nullptr || builder_->open_ != this) {
    std::fprintf(stderr, "CaptureBuilder: a field set on a record already written\n");
    std::abort();
  }
  return record_;
}

v1::Record OpenRecord::take() {
  v1::Record r = std::move(record());
  builder_->open_ = nullptr;
  builder_ = nullptr;
  return r;
}

CaptureBuilder::CaptureBuilder(const std::string& path, const WriterOptions& options) {
  writer_ = CaptureWriter::create(path, options, &error_);
}

CaptureBuilder::CaptureBuilder() {
  memory_ = std::make_unique<KeepFrames>();
  WriterOptions o;
  o.sink = memory_.get();
  writer_ = CaptureWriter::in_memory(o, &error_);
}

CaptureBuilder::~CaptureBuilder() { begin(); }

const std::string& CaptureBuilder::error() const { return writer_ ? writer_->last_error() : error_; }

const std::vector<ChunkFrame>& CaptureBuilder::frames() const {
  static const std::vector<ChunkFrame> none;
  return memory_ ? static_cast<const KeepFrames&>(*memory_).frames : none;
}

void CaptureBuilder::begin() {
  if (open_ != nullptr) write_open(open_);
}

void CaptureBuilder::write_open(OpenRecord* r) {
  open_ = nullptr;
  write(r->record_);
}

uint32_t CaptureBuilder::intern(std::string_view s) {
  if (!writer_) return 0;
  const uint32_t id = writer_->intern(s);
  if (tap_ && id != 0 && tapped_ids_.insert(id).second) {
    v1::Record def;
    def.mutable_string_def()->set_id(id);
    def.mutable_string_def()->set_value(std::string(s));
    tap_(def);
  }
  return id;
}

void CaptureBuilder::string_def(uint32_t id, const std::string& value) {
  v1::Record r;
  r.mutable_string_def()->set_id(id);
  r.mutable_string_def()->set_value(value);
  write(r);
}

bool CaptureBuilder::write(const v1::Record& record) {
  begin();
  if (tap_) tap_(record);
  return writer_ && writer_->write(record);
}

bool CaptureBuilder::flush() {
  begin();
  return writer_ && writer_->flush();
}

bool CaptureBuilder::close() {
  begin();
  return writer_ && writer_->close();
}

Open<v1::Header> CaptureBuilder::header(const std::string& host_name, uint32_t pid, uint64_t start_monotonic_raw_ns,
                                        uint64_t features) {
  auto r = add(&v1::Record::mutable_header);
  r->set_format_version(kFormatVersion);
  r->set_host_name(host_name);
  r->set_pid(pid);
  r->set_start_monotonic_raw_ns(start_monotonic_raw_ns);
  if (start_monotonic_raw_ns != 0) r->set_clock_domain("CLOCK_MONOTONIC_RAW");
  r->set_features(features);
  return r;
}

Open<v1::DeviceInfo> CaptureBuilder::device(uint32_t ordinal, const std::string& name) {
  auto r = add(&v1::Record::mutable_device);
  r->set_ordinal(ordinal);
  r->set_name(name);
  return r;
}

Open<v1::DeviceInfo> CaptureBuilder::sm_device(uint32_t ordinal, uint32_t cc_major) {
  auto r = device(ordinal, cc_major >= 9 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-80GB");
  set_sm_limits(&*r, cc_major);
  r->set_shared_memory_per_block_optin_bytes(cc_major >= 9 ? 232448 : 166912);
  r->set_reserved_shared_memory_per_block_bytes(1024);
  r->set_warp_size(32);
  return r;
}

Open<v1::DeviceInfo> CaptureBuilder::fixture_gpu() {
  auto r = device(0, "Fixture GPU");
  r->set_sm_count(108);
  r->set_max_threads_per_sm(2048);
  r->set_max_warps_per_sm(64);
  r->set_max_blocks_per_sm(32);
  r->set_registers_per_sm(65536);
  r->set_shared_memory_per_sm_bytes(167936);
  r->set_warp_size(32);
  return r;
}

Open<v1::ThreadInfo> CaptureBuilder::thread(uint64_t thread_id, const std::string& name) {
  auto r = named(&v1::Record::mutable_thread, name);
  r->set_thread_id(thread_id);
  return r;
}

Open<v1::ApiCall> CaptureBuilder::api(const std::string& name, uint64_t thread_id, uint64_t start_ns,
                                      uint64_t end_ns, uint32_t correlation_id) {
  auto r = named(&v1::Record::mutable_api, name);
  r->set_domain(v1::API_DOMAIN_RUNTIME);
  r->set_thread_id(thread_id);
  set_times(*r, start_ns, end_ns);
  r->set_correlation_id(correlation_id);
  return r;
}

Open<v1::Kernel> CaptureBuilder::kernel(const std::string& name, uint32_t stream, uint32_t correlation_id,
                                        uint64_t start_ns, uint64_t end_ns, const Shape& shape) {
  auto r = named(&v1::Record::mutable_kernel, name);
  set_activity(*r, stream, correlation_id, start_ns, end_ns);
  if (shape.grid_x != 0) {
    r->set_grid_x(shape.grid_x);
    r->set_grid_y(1);
    r->set_grid_z(1);
  }
  if (shape.block_x != 0) {
    r->set_block_x(shape.block_x);
    r->set_block_y(1);
    r->set_block_z(1);
  }
  r->set_registers_per_thread(shape.registers_per_thread);
  return r;
}

Open<v1::Memcpy> CaptureBuilder::copy(v1::CopyKind kind, uint64_t bytes, uint32_t stream, uint32_t correlation_id,
                                      uint64_t start_ns, uint64_t end_ns) {
  auto r = add(&v1::Record::mutable_memcpy);
  r->set_copy_kind(kind);
  r->set_bytes(bytes);
  set_activity(*r, stream, correlation_id, start_ns, end_ns);
  return r;
}

Open<v1::Memset> CaptureBuilder::memset(uint64_t bytes, uint32_t stream, uint32_t correlation_id, uint64_t start_ns,
                                        uint64_t end_ns) {
  auto r = add(&v1::Record::mutable_memset);
  r->set_bytes(bytes);
  set_activity(*r, stream, correlation_id, start_ns, end_ns);
  return r;
}

Open<v1::Synchronization> CaptureBuilder::sync(v1::SyncType type, uint32_t stream, uint32_t correlation_id,
                                               uint64_t start_ns, uint64_t end_ns) {
  auto r = add(&v1::Record::mutable_sync);
  r->set_type(type);
  set_activity(*r, stream, correlation_id, start_ns, end_ns);
  return r;
}

Open<v1::Range> CaptureBuilder::range(v1::RangeType type, const std::string& name, uint64_t thread_id,
                                      uint64_t time_ns) {
  auto r = named(&v1::Record::mutable_range, name);
  r->set_type(type);
  r->set_thread_id(thread_id);
  if (time_ns != 0) r->set_time_ns(ns(time_ns));
  return r;
}

Open<v1::NcclCall> CaptureBuilder::nccl(v1::NcclOp op, const std::string& name, uint64_t thread_id,
                                        uint64_t start_ns, uint64_t end_ns) {
  auto r = named(&v1::Record::mutable_nccl, name);
  r->set_op(op);
  r->set_thread_id(thread_id);
  set_times(*r, start_ns, end_ns);
  return r;
}

Open<v1::Memory> CaptureBuilder::memory(v1::MemoryOp op, uint64_t address, uint64_t bytes, uint64_t time_ns) {
  auto r = add(&v1::Record::mutable_memory);
  r->set_op(op);
  r->set_address(address);
  r->set_bytes(bytes);
  if (time_ns != 0) r->set_time_ns(ns(time_ns));
  r->set_memory_kind(v1::MEMORY_DEVICE);
  return r;
}

Open<v1::MetricSample> CaptureBuilder::metric(uint32_t device, uint64_t time_ns, v1::GpuMetric metric,
                                              uint64_t value) {
  auto r = add(&v1::Record::mutable_metric_sample);
  r->set_device(device);
  if (time_ns != 0) r->set_time_ns(ns(time_ns));
  r->set_metric(metric);
  r->set_value(value);
  return r;
}

Open<v1::ClockSync> CaptureBuilder::clock_sync(int64_t host_ns, int64_t gpu_ns) {
  auto r = add(&v1::Record::mutable_clock_sync);
  r->set_host_ns(host_ns);
  r->set_gpu_ns(gpu_ns);
  return r;
}

Open<v1::ExternalCorrelation> CaptureBuilder::external(uint64_t external_id, uint32_t correlation_id) {
  auto r = add(&v1::Record::mutable_external_correlation);
  r->set_kind(5);  // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, the kind the hook pushes
  r->set_external_id(external_id);
  r->set_correlation_id(correlation_id);
  return r;
}

}  // namespace gpuhook::test
