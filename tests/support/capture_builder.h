// CaptureBuilder: the one way tests, fixtures and benchmarks fabricate a capture record by
// record, written through the real CaptureWriter (to a file, or to memory with no file), names
// interned as the hook interns them. Fabricated data: no figure computed from it is a GPU figure.
//
// Each helper sets the fields every caller wants and returns the record still open, for the
// fields one caller wants more:
//   b.api("cudaLaunchKernel", tid, start_ns, end_ns, corr)->set_cbid(211);
//   auto k = b.kernel("gemm", stream, corr, start_ns, end_ns, {216, 256, 32});
//   k->set_queued_ns(q);
// An open record is written when the next record is begun, or when its handle goes (at the
// end of the statement, for a temporary), or at flush()/close(): the records reach the file in
// the order they were begun. intern() writes no record of the builder's own (the writer queues
// the StringDef at once), so a name interned while a record is open lands before that record,
// as it does when a caller interns and then writes.
// Times are absolute ns; a time of 0 is unknown and stays unset, as the hook writes it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <gpuhook/capture.h>

namespace gpuhook::test {

class CaptureBuilder;

// A record begun and not written yet; see CaptureBuilder.
class OpenRecord {
 public:
  OpenRecord(OpenRecord&& from) noexcept;
  OpenRecord& operator=(OpenRecord&&) = delete;
  ~OpenRecord();
  v1::Record& record();
  // The record, no longer the builder's to write: for one the caller writes later with write(),
  // or drops (a launch call written long after its kernel, or never).
  v1::Record take();

 protected:
  explicit OpenRecord(CaptureBuilder* builder);
  CaptureBuilder* builder_;
  v1::Record record_;
  friend class CaptureBuilder;
};

template <class M>
class Open : public OpenRecord {
 public:
  Open(Open&& from) noexcept : OpenRecord(std::move(from)), make_(from.make_) {}
  M* operator->() { return &get(); }
  M& operator*() { return get(); }

 private:
  friend class CaptureBuilder;
  Open(CaptureBuilder* builder, M* (v1::Record::*make)()) : OpenRecord(builder), make_(make) { (record_.*make_)(); }
  M& get() { return *(record().*make_)(); }  // record() aborts once written: a field set then would be lost
  M* (v1::Record::*make_)();
};

// The launch configuration of a kernel: grid_x x 1 x 1 blocks of block_x x 1 x 1 threads.
// 0s leave the fields unset, as for a kernel whose shape the test does not care about.
struct Shape {
  int32_t grid_x = 0;
  int32_t block_x = 0;
  uint32_t registers_per_thread = 0;
};

class CaptureBuilder {
 public:
  // Writes a new file at `path` (CaptureWriter::create: never overwrites). ok() says whether it opened.
  explicit CaptureBuilder(const std::string& path, const WriterOptions& options = {});
  // No file: the chunks are kept in memory, frames() after close().
  CaptureBuilder();
  ~CaptureBuilder();  // as CaptureWriter's: without close() the file has no index
  CaptureBuilder(const CaptureBuilder&) = delete;
  CaptureBuilder& operator=(const CaptureBuilder&) = delete;

  bool ok() const { return writer_ != nullptr; }
  const std::string& error() const;
  CaptureWriter& writer() { return *writer_; }

  // Also hands each record written, interned names as StringDefs, to `tap` (a model builder).
  void tap(std::function<void(const v1::Record&)> tap) { tap_ = std::move(tap); }

  uint32_t intern(std::string_view s);
  // A StringDef with a chosen id, written as a record (tests that name ids as constants).
  void string_def(uint32_t id, const std::string& value);
  bool write(const v1::Record& record);
  bool flush();
  bool close();
  const std::vector<ChunkFrame>& frames() const;

  // Format version kFormatVersion; with host, pid, start and features when non-zero, and the
  // clock domain CLOCK_MONOTONIC_RAW with a start.
  Open<v1::Header> header(const std::string& host_name = "", uint32_t pid = 0, uint64_t start_monotonic_raw_ns = 0,
                          uint64_t features = 0);
  Open<v1::DeviceInfo> device(uint32_t ordinal, const std::string& name);
  // An A100 (cc_major 8) or H100 (9) with the limits cudaGetDeviceProperties reports.
  Open<v1::DeviceInfo> sm_device(uint32_t ordinal, uint32_t cc_major);
  // The A100-like "Fixture GPU" of the CLI tests: only the limits occupancy and waves use.
  Open<v1::DeviceInfo> fixture_gpu();
  Open<v1::ThreadInfo> thread(uint64_t thread_id, const std::string& name);
  // A runtime API call.
  Open<v1::ApiCall> api(const std::string& name, uint64_t thread_id, uint64_t start_ns, uint64_t end_ns,
                        uint32_t correlation_id);
  Open<v1::Kernel> kernel(const std::string& name, uint32_t stream, uint32_t correlation_id, uint64_t start_ns,
                          uint64_t end_ns, const Shape& shape = {});
  Open<v1::Memcpy> copy(v1::CopyKind kind, uint64_t bytes, uint32_t stream, uint32_t correlation_id,
                        uint64_t start_ns, uint64_t end_ns);
  Open<v1::Memset> memset(uint64_t bytes, uint32_t stream, uint32_t correlation_id, uint64_t start_ns,
                          uint64_t end_ns);
  Open<v1::Synchronization> sync(v1::SyncType type, uint32_t stream, uint32_t correlation_id, uint64_t start_ns,
                                 uint64_t end_ns);
  // An NVTX push/pop (or mark): an empty name sets none, as a pop has.
  Open<v1::Range> range(v1::RangeType type, const std::string& name, uint64_t thread_id, uint64_t time_ns);
  Open<v1::NcclCall> nccl(v1::NcclOp op, const std::string& name, uint64_t thread_id, uint64_t start_ns,
                          uint64_t end_ns);
  // An allocation or a free of device memory.
  Open<v1::Memory> memory(v1::MemoryOp op, uint64_t address, uint64_t bytes, uint64_t time_ns);
  Open<v1::MetricSample> metric(uint32_t device, uint64_t time_ns, v1::GpuMetric metric, uint64_t value);
  Open<v1::ClockSync> clock_sync(int64_t host_ns, int64_t gpu_ns);
  // CUPTI's record that the call with `correlation_id` was made under the hook's `external_id`.
  Open<v1::ExternalCorrelation> external(uint64_t external_id, uint32_t correlation_id);
  // Any other kind: b.add(&v1::Record::mutable_footer)->set_clean(true).
  template <class M>
  Open<M> add(M* (v1::Record::*make)()) {
    begin();
    return Open<M>(this, make);
  }

 private:
  friend class OpenRecord;
  void begin();  // writes the open record, if any
  void write_open(OpenRecord* r);
  // A record with a name: the record before goes first, then this one's new name's StringDef.
  template <class M>
  Open<M> named(M* (v1::Record::*make)(), const std::string& name) {
    begin();
    const uint32_t name_id = intern(name);
    auto r = add(make);
    r->set_name_id(name_id);
    return r;
  }

  std::unique_ptr<CaptureWriter> writer_;
  std::unique_ptr<FrameSink> memory_;
  std::string error_;
  OpenRecord* open_ = nullptr;
  std::function<void(const v1::Record&)> tap_;
  std::unordered_set<uint32_t> tapped_ids_;
};

}  // namespace gpuhook::test
