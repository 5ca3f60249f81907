// What the whatif steps share beyond the public graph: the capture's records, and what they
// said about waits and events, kept in the capture's own terms (original streams, launch
// order) so that the waits can be found again after a change moves operations between lanes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <gpuhook/v1/capture.pb.h>

#include "gantt/whatif/whatif.h"

namespace gantt::whatif::detail {

namespace v1 = gpuhook::v1;

// A section's records, kept serialised and parsed again by each step that reads them: a parsed
// kernel record and its launch call took about 400 bytes of the replay's 1 KB an event, their
// bytes take about 90. Blocks of 16 MiB, so that holding 10 M events never copies them all to grow.
class RecordStore {
 public:
  void add(const v1::Record& r);
  size_t size() const { return at_.size(); }
  // Record i, parsed into *out (a message reused across calls keeps its allocations).
  void get(size_t i, v1::Record* out) const;
  v1::Record operator[](size_t i) const {
    v1::Record r;
    get(i, &r);
    return r;
  }

 private:
  static constexpr size_t kBlockBytes = size_t{16} << 20;
  struct At {
    uint32_t block, offset;
  };
  std::vector<std::string> blocks_;
  std::vector<At> at_;
};

// One capture (or one rank's section of a merged file), as read.
struct Section {
  std::string name;
  RecordStore records;  // without StringDefs; string ids are the input's
  // The input's strings, shared by its sections (a merged file interns across them).
  std::shared_ptr<const std::unordered_map<uint32_t, std::string>> strings;
  std::string string(uint32_t id) const {
    if (!strings) return {};
    auto it = strings->find(id);
    return it == strings->end() ? std::string() : it->second;
  }
};

// What a host call waits for, in the capture's terms.
struct WaitSpec {
  enum class Kind : uint8_t { kNone, kStream, kDevice, kCapture, kEvent };
  Kind kind = Kind::kNone;
  uint32_t orig_lane = kNone;   // kStream, kEvent (the stream the event was recorded on)
  uint32_t device = 0;          // kDevice
  uint64_t before_order = 0;    // kEvent: the record's launch order (work before it); else the call's own
  std::vector<uint32_t> ops;    // explicit: its own copy, copies a change made asynchronous
};

// cudaStreamWaitEvent: work of `waiting_lane` launched after `at_order` (or the one op
// `waiting_op`) starts after the work of `source_lane` launched before `source_order`, and
// after the explicit `source_ops`.
struct EventWait {
  uint32_t waiting_op = kNone;
  uint32_t waiting_lane = kNone;  // an original lane
  uint64_t at_order = 0;
  uint32_t source_lane = kNone;
  uint64_t source_order = 0;
  std::vector<uint32_t> source_ops;
};

// A record's place in the graph, for writing it back.
struct RecordPlace {
  enum class Kind : uint8_t { kOther, kCall, kInnerCall, kOp, kMember };
  Kind kind = Kind::kOther;
  uint32_t index = kNone;  // call or op
  int64_t offset_ns = 0;   // kInnerCall: from its outer call's start; kMember: from its block's start
};

// What the memory changes decided for a section, in the capture's own times: a Memory record's
// new time by its index, and the records they add (written before the section's footer).
struct MemoryEdits {
  std::unordered_map<uint32_t, int64_t> moved;
  std::vector<v1::Record> added;
};

// One side of a point-to-point transfer an op carries: ncclSend from src to dst, or ncclRecv
// at dst from src.
struct P2pEnd {
  uint64_t comm_id = 0;
  int32_t src = 0, dst = 0;
  bool send = false;
  uint32_t op = kNone;
  uint64_t call_start_ns = 0;  // when its call was issued: a channel's order
  uint64_t bytes = 0;
};

struct Built {
  Graph graph;
  std::vector<Section> sections;
  std::vector<WaitSpec> call_wait;        // per call
  std::vector<uint64_t> call_order;       // per call
  std::vector<EventWait> event_waits;
  std::vector<std::vector<RecordPlace>> places;  // per section, per record
  // Calls that launch work and wait for nothing, median duration per capture: the cost a
  // launch-like call is given when a change makes a waiting call asynchronous.
  std::vector<int64_t> launch_cost_ns;
  // Renames for the writer: a call now a cudaGraphLaunch, ops now nodes of a graph.
  struct GraphNode {
    uint32_t call = kNone;  // the graph launch call (its correlation id is the nodes'); kNone: not a node
    uint64_t graph_id = 0;
    uint64_t node_id = 0;
  };
  // Per op, once the graphs change made one a node (empty before: no op is one).
  std::vector<GraphNode> op_graph;
  std::vector<bool> call_is_graph_launch; // per call
  // Kernels block-size relaunched: op -> (blocks, threads a block), both 1-D.
  std::unordered_map<uint32_t, std::pair<uint32_t, uint32_t>> op_shape;
  // Per op, once fuse made one part of an earlier kernel (empty before): its record is not
  // written, and it takes no time after the kernel that does its work.
  std::vector<bool> op_fused_away;
  // Per section, once a memory change made one (empty before).
  std::vector<MemoryEdits> memory_edits;
  // Per op, once a change added one (empty before): the op whose record it is written as, with
  // its own times (kNone: an op of the capture's own records).
  std::vector<uint32_t> op_source;
  // Transfer kernels a change added (pipeline=1f1b), by op: the NCCL calls each stands for, written
  // with it as copies of `template_call`'s record (communicator, rank, stream), a group's start
  // and end around them when there are two.
  struct AddedTransfers {
    uint32_t template_call = kNone;
    std::vector<P2pEnd> ends;  // bytes as they are now
  };
  std::unordered_map<uint32_t, AddedTransfers> added_transfers;
  // Per call, once a change dropped one's NCCL record (its host time stays; empty before).
  std::vector<bool> nccl_record_dropped;
  // Every send and receive of every capture, matched into Graph::p2p by link_p2p().
  std::vector<P2pEnd> p2p_ends;
  // coalesce: sector counts by kernel name (Options::sectors_from, else the inputs'), and where
  // they came from, for its note.
  std::map<std::string, SectorCount> sectors;
  std::string sectors_source;
};

// The median of `v` (the upper one of an even count), 0 for none.
int64_t median(std::vector<int64_t> v);

Built build(std::vector<Section> sections);
// (Re)computes calls' waits and ops' `after` from the specs and the lanes as they are now.
void link(Built& b);
// Pairs the sends and receives of p2p_ends into Graph::p2p and sets the transfer of each op that
// has one: from its last peer's arrival to its end, as measured.
void link_p2p(Built& b);
void apply(Built& b, const std::vector<Change>& changes, const Options& options);
// The memory changes (whatif_memory.cpp): they fill Built::memory_edits, not the graph.
void checkpoint(Built& b, const Change& ch);
void free_idle(Built& b, const Change& ch);
// pipeline=1f1b[:M] (whatif_pipeline.cpp).
void one_f_one_b(Built& b, const Change& ch);
uint64_t write(const Built& b, const std::vector<Change>& changes, const std::string& output);

}  // namespace gantt::whatif::detail
