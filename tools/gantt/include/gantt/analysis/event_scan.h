// One capture scanned event by event: the shares of its chunk index decoded on threads
// (stream_shares.h), each GPU operation joined to its launch call by correlation id inside a
// bounded window (CorrWindows), and handed to the share's consumer with the call's start,
// thread and name. Written for consumers that write as they read (export): memory grows with
// the ids a window holds, the records waiting for a call, and the NCCL kernels held for the
// loader's NCCL join, never with the events.
//
// Before the shares, one pass over only the context, NVTX range and stream records
// (read_range_model) gives the capture's header, devices, threads, ranges and stream
// priorities, so a consumer knows them before the first event.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpuhook/capture.h>

#include "gantt/analysis/scan_select.h"
#include "gantt/model/model.h"

namespace gantt::analysis {

// The NCCL call that ran a kernel (the loader's join by external id).
struct ScannedNccl {
  uint8_t op = 0;  // v1::NcclOp
  uint64_t comm_id = 0, sequence = 0, bytes = 0;
  int32_t root_or_peer = 0;
  // What matching a collective across ranks reads (ranks/collectives.h RankCollectiveCall).
  int32_t rank = 0, nranks = 0, datatype = 0;
  uint64_t count = 0;
  // The collective calls the join gave this kernel: more than one where a group launched fewer
  // kernels than it had collectives (a load's collective_calls() lists each of them).
  uint32_t collective_calls = 0;
};

// One GPU operation as the loaded model has it (EventTable), with its launch call.
struct ScannedEvent {
  EventKind kind = EventKind::kKernel;  // kNccl once the NCCL join claims it
  uint32_t device = 0, stream = 0, correlation_id = 0;
  uint32_t name_id = 0;   // a kernel's name in the share reader's strings; 0: named after its call
  uint8_t copy_kind = 0;  // memcpy: v1::CopyKind
  uint8_t copy_flags = 0;  // memcpy: CopyFlag bits (model.h)
  uint64_t graph_id = 0;   // the CUDA graph whose launch ran it; 0: none
  int32_t priority = 0;   // the record's, else its stream's (ModelBuilder)
  uint64_t bytes = 0;
  uint64_t queued_ns = 0, submitted_ns = 0, start_ns = 0, end_ns = 0;  // 0: unknown
  std::array<int32_t, 3> grid{}, block{};
  uint32_t registers_per_thread = 0;
  uint64_t shared_memory_bytes = 0;  // static + dynamic
  bool maybe_nccl = false;           // NcclKernelFilter kept it (named nccl* or under an external id)
  // The launch call (the last with its correlation id, NCCL's own calls left out).
  bool launched = false;
  uint64_t launch_ns = 0, launch_thread_id = 0;  // 0: unknown
  uint64_t launch_end_ns = 0;                    // with EventScanOptions::launch_ends; 0: unknown
  uint32_t launch_name_id = 0;
  const ScannedNccl* nccl = nullptr;  // with EventScanOptions::join_nccl, the call that ran it
};

// What a share hands on. Called on the share's thread, in file order, except the events whose
// calls another share read and the NCCL kernels held for the join: those come after every
// share has ended, on the calling thread, share by share. `reader` resolves the share's name
// ids (every string of the file).
class EventConsumer {
 public:
  virtual ~EventConsumer() = default;
  virtual void event(const ScannedEvent& e, const gpuhook::CaptureReader& reader) = 0;
  // An event the selection (EventScanOptions::select) left out: what a load would still hold
  // of it beside the selected ones (its times count toward the capture's span).
  virtual void unselected(const ScannedEvent&) {}
  virtual void api(const gpuhook::ApiFields&, const gpuhook::CaptureReader&) {}
  // NCCL calls, memory records, GPU counter samples, ...: the kinds neither events nor calls
  // nor context (the context and ranges are EventScanner::context()).
  virtual void record(const gpuhook::v1::Record&, const gpuhook::CaptureReader&) {}
  // True to end the scan early (an output over its limit); the scan then returns nothing.
  virtual bool stopped() const { return false; }
};

struct EventScanOptions {
  LoadOptions load;
  unsigned threads = 0;    // 0: default_scan_threads()
  bool join_nccl = false;  // hold the kernels NCCL may have run until the loader's join has named them
  // False: a kernel with a name is handed on as it is read, with its launch only when that was
  // read before it (a consumer that wants events in file order, and the call only for the
  // names of copies, memsets and synchronisations, which still wait for theirs).
  bool join_launches = true;
  // select_events()' filters (scan_select.h), applied before an event is handed on; null: all.
  // With --kernel, a kernel without a name or a call whose name the pattern matches makes the
  // capture one to load (run() says so).
  const ScanSelector* select = nullptr;
  // ScannedEvent::launch_end_ns (the launch call's duration: stats --by graph); one more window
  // of the calls' correlation ids per share.
  bool launch_ends = false;
};

class EventScanner {
 public:
  // Reads the index and the context, ranges and stream records. Throws gpuhook::CaptureError as
  // load() does; refused() says why a scan cannot serve this capture.
  EventScanner(std::string path, EventScanOptions options);
  ~EventScanner();
  EventScanner(const EventScanner&) = delete;
  EventScanner& operator=(const EventScanner&) = delete;

  // Why the capture must be loaded instead ("" when it can be scanned): a merged file, more
  // NVTX ranges than a scan keeps, more records than --max-records-per-byte allows.
  const std::string& refused() const { return refused_; }
  // The header, devices, threads, NVTX ranges and stream records; no events.
  const Model& context() const { return context_; }
  // The earliest and latest times the index knows (0 without an index): an origin and an end
  // known before the events.
  uint64_t index_first_ns() const { return index_first_ns_; }
  uint64_t index_last_ns() const { return index_last_ns_; }
  size_t shares() const { return shares_.size(); }
  // The priority of a stream's events that record none (ModelBuilder: the last StreamInfo wins).
  int32_t stream_priority(uint32_t stream) const;

  // Selects the events run() hands on as select_events() selects them (scan_select.h), the
  // window counted from the capture's first time (its header's start, unless the index knows an
  // earlier one). False with *why_not when a scan cannot select as the load does: a capture
  // without an index (its end), a --kernel pattern a copy's name could match. Throws
  // std::invalid_argument as select_events() does.
  bool select(const EventFilter& filter, std::string* why_not);
  // The same with the window counted on a job's clock: `first_ns` and `last_ns` are the job's
  // first and last times, as this capture's clock reads them (a capture among the ranks of a job,
  // whose loaded window counts from the job's start), and `range` the window of a --range found
  // among the job's captures (JobClock::local_range), which this capture's own ranges may lack.
  bool select(const EventFilter& filter, uint64_t first_ns, uint64_t last_ns, std::string* why_not,
              const std::optional<std::pair<uint64_t, uint64_t>>& range = {});
  // After select(): the filter, with the window for the records a consumer writes beside the
  // events (API calls, NVTX ranges, counters); null without one.
  const ScanFilter* filter() const { return filter_.get(); }
  // The capture's first time as Model::first_ns() has it, as far as it is known before the
  // events: its header's start and its NVTX ranges, unless the index knows an earlier time.
  uint64_t first_ns() const;

  // Scans the shares, share i into *consumers[i] (shares() of them). False with *why_not when the
  // capture turned out to need loading (a record a scan cannot join) or a consumer stopped.
  bool run(const std::vector<EventConsumer*>& consumers, std::string* why_not);
  // After run(): the GPU events read (the loaded EventTable's rows) and those the selection
  // handed on, as restrict_to_filter() counts them.
  uint64_t events_read() const;
  uint64_t events_selected() const;
  // After run(): what load_captures() would print, and whether the file was damaged.
  const std::vector<std::string>& warnings() const { return warnings_; }
  bool corrupt() const { return corrupt_; }

  struct Share;  // event_scan.cpp

 private:
  std::string path_;
  EventScanOptions options_;
  std::string refused_;
  Model context_;
  uint64_t index_first_ns_ = 0, index_last_ns_ = 0;
  std::vector<std::unique_ptr<Share>> shares_;
  std::vector<std::pair<uint32_t, int32_t>> stream_priority_;  // sorted by stream
  std::unique_ptr<ScanFilter> filter_;
  std::vector<std::string> warnings_;
  bool corrupt_ = false;
};

}  // namespace gantt::analysis
