// Writing the prediction: every record of the input, in its order, with the replayed times.
// Records the replay did not time (ranges, memory, notices) move with the host calls around
// them; a removed call and its records are left out; lanes the changes added get StreamInfo.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include <gpuhook/capture.h>
#include <gpuhook/record_times.h>

#include "gantt/model/record_strings.h"
#include "whatif_internal.h"

namespace gantt::whatif::detail {

namespace {

// CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 (cupti_runtime_cbid.h).
constexpr uint32_t kCbidGraphLaunch = 311;
// Graph ids of graphs whatif made, apart from any the program made.
constexpr uint64_t kPredictedGraphIdBase = uint64_t{1} << 48;

// Maps a time of the capture to the replayed timeline by the nearest host call before it.
class TimeMap {
 public:
  void add(uint64_t orig, uint64_t now) {
    if (orig != 0) anchors_.push_back({orig, now});
  }
  void seal() { std::sort(anchors_.begin(), anchors_.end()); }
  uint64_t operator()(uint64_t t) const {
    if (t == 0 || anchors_.empty()) return t;
    auto it = std::upper_bound(anchors_.begin(), anchors_.end(), std::make_pair(t, UINT64_MAX));
    const auto& a = it == anchors_.begin() ? anchors_.front() : *(it - 1);
    return a.second + (t - a.first);
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> anchors_;
};

// queued and submitted are stamped at launch: they move with the launching call (or, without
// one, with the kernel), never past the kernel's start, never below 1 (0 means unknown).
void move_launch_stamps(v1::Kernel* k, uint64_t start, int64_t delta) {
  auto move = [&](int64_t v) {
    const int64_t moved = delta > 0 ? (v > INT64_MAX - delta ? INT64_MAX : v + delta) : std::max<int64_t>(v + delta, 1);
    return std::min<int64_t>(moved, static_cast<int64_t>(start));
  };
  if (k->queued_ns() > 0) k->set_queued_ns(move(k->queued_ns()));
  if (k->submitted_ns() > 0) k->set_submitted_ns(move(k->submitted_ns()));
}

// A replayed time as the format stores it (sint64): saturated, never wrapped negative.
int64_t as_time(uint64_t t) { return t > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(t); }

}  // namespace

uint64_t write(const Built& b, const std::vector<Change>& changes, const std::string& output) {
  const Graph& g = b.graph;
  std::string error;
  auto writer = gpuhook::CaptureWriter::create(output, gpuhook::WriterOptions{}, &error);
  if (!writer) throw std::runtime_error("whatif: " + error);
  uint64_t written = 0;
  auto put = [&](const v1::Record& r) {
    if (writer->write(r)) ++written;
    writer->maybe_flush(0);
  };
  std::vector<std::vector<uint32_t>> calls_of(b.sections.size()), ops_of(b.sections.size());
  for (uint32_t c = 0; c < g.calls.size(); ++c) calls_of[g.threads[g.calls[c].thread].capture].push_back(c);
  for (uint32_t o = 0; o < g.ops.size(); ++o) ops_of[g.ops[o].capture].push_back(o);
  for (uint16_t s = 0; s < b.sections.size(); ++s) {
    const Section& sec = b.sections[s];
    const auto& places = b.places[s];
    TimeMap global;
    std::unordered_map<uint64_t, TimeMap> per_thread;
    // The correlation id of each call record (not its synchronisation's), where a change made
    // graph nodes: they take their launch's.
    std::vector<uint32_t> call_correlation;
    v1::Record r;
    if (!b.op_graph.empty()) {
      call_correlation.assign(g.calls.size(), 0);
      for (uint32_t i = 0; i < places.size(); ++i) {
        if (places[i].kind != RecordPlace::Kind::kCall || places[i].index >= g.calls.size()) continue;
        sec.records.get(i, &r);
        if (r.kind_case() != v1::Record::kSync) call_correlation[places[i].index] = r.has_api() ? r.api().correlation_id() : 0;
      }
    }
    for (uint32_t ci : calls_of[s]) {
      const HostCall& c = g.calls[ci];
      const Thread& t = g.threads[c.thread];
      global.add(c.orig_start_ns, c.start_ns), global.add(c.orig_end_ns, c.end_ns);
      per_thread[t.thread_id].add(c.orig_start_ns, c.start_ns), per_thread[t.thread_id].add(c.orig_end_ns, c.end_ns);
    }
    global.seal();
    uint64_t latest = 0;
    for (uint32_t c : calls_of[s])
      if (!g.calls[c].removed) latest = std::max(latest, g.calls[c].end_ns);
    for (uint32_t o : ops_of[s]) latest = std::max(latest, g.ops[o].end_ns);
    for (auto& [tid, m] : per_thread) m.seal();
    std::unordered_map<uint32_t, uint32_t> ids;
    auto remap = [&](uint32_t id) -> uint32_t {
      if (id == 0) return 0;
      auto it = ids.find(id);
      if (it != ids.end()) return it->second;
      return ids.emplace(id, writer->intern(sec.string(id))).first->second;
    };
    // A record the replay did not time moves with the host calls before it.
    auto move_with_calls = [&](v1::Record& r) {
      const TimeMap* map = &global;
      if (r.has_range()) {
        auto it = per_thread.find(r.range().thread_id());
        if (it != per_thread.end()) map = &it->second;
      }
      // The record's first time is mapped and the others keep their distance to it: mapped
      // one by one, a start and an end could land on two threads' timelines out of order.
      const bool clock_sync = r.has_clock_sync();
      int index = 0;
      bool first = true;
      int64_t delta = 0;
      gpuhook::visit_times(r, [&](bool& has, int64_t& v) {
        const int field = index++;
        if (clock_sync && field != gpuhook::kClockSyncHostTime) return;
        if (!has || v <= 0) return;
        if (first) {
          delta = as_time((*map)(static_cast<uint64_t>(v))) - v;
          first = false;
        }
        v = delta > 0 ? (v > INT64_MAX - delta ? INT64_MAX : v + delta) : std::max<int64_t>(v + delta, 1);
      });
    };
    // What a memory change added, in the section's times: before its footer.
    bool added_written = false;
    auto write_added = [&] {
      if (s >= b.memory_edits.size()) return;
      for (v1::Record added : b.memory_edits[s].added) {
        move_with_calls(added);
        remap_strings(added, remap);
        put(added);
      }
    };
    // An API record made inside host call `c` (a driver launch inside ncclSend) at its place in
    // the replayed call: `offset` from its start, its own duration, never past the call's end.
    auto place_inside = [&](v1::Record& r, const HostCall& c, int64_t offset) {
      const int64_t d = r.api().end_ns() - r.api().start_ns();
      const int64_t start = std::min<int64_t>(as_time(c.start_ns + static_cast<uint64_t>(offset)), as_time(c.end_ns));
      r.mutable_api()->set_start_ns(start);
      r.mutable_api()->set_end_ns(std::min<int64_t>(d > 0 && start <= INT64_MAX - d ? start + d : start, as_time(c.end_ns)));
    };
    // A kernel, copy, memset or host function record at op `index`'s replayed times (a graph
    // node's member at `offset` from its block's start).
    auto retime = [&](v1::Record& r, uint32_t index, RecordPlace::Kind kind, int64_t offset) {
      const GpuOp& op = g.ops[index];
      const Built::GraphNode node = index < b.op_graph.size() ? b.op_graph[index] : Built::GraphNode{};
      uint64_t start = op.start_ns, end = op.end_ns;
      if (kind == RecordPlace::Kind::kMember) {
        start = op.start_ns + static_cast<uint64_t>(offset);
        end = 0;  // below: the member's own duration
      }
      auto own_end = [&](int64_t a, int64_t z) { return start + static_cast<uint64_t>(z > a ? z - a : 0); };
      const uint32_t stream = g.lanes[op.lane].stream;
      uint32_t correlation_id = 0;
      if (node.call != kNone && node.call < call_correlation.size()) correlation_id = call_correlation[node.call];
      const uint64_t graph_id = node.call != kNone ? kPredictedGraphIdBase + node.graph_id : 0;
      if (r.has_kernel()) {
        auto* k = r.mutable_kernel();
        if (end == 0) end = own_end(k->start_ns(), k->end_ns());
        const int64_t delta = op.call != kNone
                                  ? static_cast<int64_t>(g.calls[op.call].start_ns) -
                                        static_cast<int64_t>(g.calls[op.call].orig_start_ns)
                                  : static_cast<int64_t>(start) - k->start_ns();
        move_launch_stamps(k, start, delta);
        k->set_start_ns(as_time(start)), k->set_end_ns(as_time(end));
        if (kind == RecordPlace::Kind::kOp) k->set_stream(stream);
        if (const auto shape = b.op_shape.find(index); kind == RecordPlace::Kind::kOp && shape != b.op_shape.end())
          k->set_grid_x(static_cast<int32_t>(shape->second.first)), k->set_block_x(static_cast<int32_t>(shape->second.second));
        if (graph_id) k->set_graph_id(graph_id), k->set_graph_node_id(node.node_id), k->set_correlation_id(correlation_id);
      } else if (r.has_memcpy()) {
        auto* m = r.mutable_memcpy();
        if (end == 0) end = own_end(m->start_ns(), m->end_ns());
        m->set_start_ns(as_time(start)), m->set_end_ns(as_time(end));
        if (kind == RecordPlace::Kind::kOp) {
          m->set_stream(stream);
          if (!op.pageable) {  // pin-copies
            if (m->src_kind() == v1::MEMORY_PAGEABLE) m->set_src_kind(v1::MEMORY_PINNED);
            if (m->dst_kind() == v1::MEMORY_PAGEABLE) m->set_dst_kind(v1::MEMORY_PINNED);
          }
          if (!op.call_waits) m->set_async(true);  // issued by an asynchronous call (analysis::copy_host_wait)
        }
        if (graph_id) m->set_graph_id(graph_id), m->set_graph_node_id(node.node_id), m->set_correlation_id(correlation_id);
      } else if (r.has_memset()) {
        auto* m = r.mutable_memset();
        if (end == 0) end = own_end(m->start_ns(), m->end_ns());
        m->set_start_ns(as_time(start)), m->set_end_ns(as_time(end));
        if (kind == RecordPlace::Kind::kOp) m->set_stream(stream);
        if (graph_id) m->set_graph_id(graph_id), m->set_graph_node_id(node.node_id), m->set_correlation_id(correlation_id);
      } else if (r.has_host_function()) {
        r.mutable_host_function()->set_start_ns(as_time(start));
        r.mutable_host_function()->set_end_ns(as_time(end));
      }
    };
    // The ops a change added, by the op whose record they copy.
    std::unordered_map<uint32_t, std::vector<uint32_t>> clones;
    for (uint32_t o = 0; o < b.op_source.size(); ++o)
      if (b.op_source[o] != kNone && g.ops[o].capture == s) clones[b.op_source[o]].push_back(o);
    // An added transfer kernel is launched under NCCL calls of its own: fresh correlation and
    // external ids (past the section's), its calls copied from a recorded one of its stage.
    uint32_t next_correlation = 0;
    uint64_t next_external = 0, next_p2p_sequence = 0;
    std::unordered_map<uint32_t, uint32_t> record_of_call, launch_of_call;  // call -> its record, its inner launch's
    if (!b.added_transfers.empty()) {
      v1::Record x;
      for (uint32_t i = 0; i < sec.records.size(); ++i) {
        if (places[i].kind == RecordPlace::Kind::kCall) record_of_call.emplace(places[i].index, i);
        if (places[i].kind == RecordPlace::Kind::kInnerCall) launch_of_call.emplace(places[i].index, i);
        sec.records.get(i, &x);
        if (x.has_api()) next_correlation = std::max(next_correlation, x.api().correlation_id());
        if (x.has_external_correlation()) next_external = std::max(next_external, x.external_correlation().external_id());
        if (x.has_nccl()) {
          next_external = std::max(next_external, x.nccl().external_id());
          next_p2p_sequence = std::max(next_p2p_sequence, x.nccl().p2p_sequence());
        }
      }
    }
    // The NCCL calls of added transfer kernel `op`, then the link to its launch; returns the
    // kernel's correlation id (0: none added).
    auto write_added_calls = [&](uint32_t op) -> uint32_t {
      const auto added = b.added_transfers.find(op);
      if (added == b.added_transfers.end() || next_correlation == UINT32_MAX) return 0;
      const auto rec = record_of_call.find(added->second.template_call);
      if (rec == record_of_call.end()) return 0;
      v1::Record model;
      sec.records.get(rec->second, &model);
      if (!model.has_nccl()) return 0;
      const HostCall& c = g.calls[added->second.template_call];
      const uint32_t correlation = ++next_correlation;
      const uint64_t external = ++next_external;
      const bool group = added->second.ends.size() > 1;
      auto call = [&](v1::NcclOp kind, const char* name, uint32_t depth, const P2pEnd* end) {
        v1::Record n = model;
        remap_strings(n, remap);
        v1::NcclCall* nc = n.mutable_nccl();
        nc->set_op(kind);
        nc->set_name_id(writer->intern(name));
        nc->set_group_depth(depth);
        nc->set_start_ns(as_time(c.start_ns)), nc->set_end_ns(as_time(c.end_ns));
        nc->set_external_id(depth == 0 ? external : 0);
        nc->clear_p2p_sequence();
        if (end != nullptr) {
          nc->set_root_or_peer(end->send ? end->dst : end->src);
          nc->set_bytes(end->bytes);
          const uint64_t size = nc->count() > 0 && model.nccl().bytes() > 0 ? model.nccl().bytes() / nc->count() : 0;
          nc->set_count(size > 0 ? end->bytes / size : 0);
          nc->set_p2p_sequence(++next_p2p_sequence);
        } else {
          nc->set_root_or_peer(-1), nc->set_bytes(0), nc->set_count(0);
        }
        put(n);
      };
      if (group) call(v1::NCCL_GROUP_START, "ncclGroupStart", 0, nullptr);
      for (const P2pEnd& e : added->second.ends)
        call(e.send ? v1::NCCL_SEND : v1::NCCL_RECV, e.send ? "ncclSend" : "ncclRecv", group ? 1 : 0, &e);
      if (group) call(v1::NCCL_GROUP_END, "ncclGroupEnd", 0, nullptr);
      // Its launch inside the calls, as the recorded one was (the range it falls in is the kernel's).
      if (const auto inner = launch_of_call.find(added->second.template_call); inner != launch_of_call.end()) {
        v1::Record launch;
        sec.records.get(inner->second, &launch);
        if (launch.has_api()) {
          place_inside(launch, c, places[inner->second].offset_ns);
          launch.mutable_api()->set_correlation_id(correlation);
          remap_strings(launch, remap);
          put(launch);
        }
      }
      v1::Record link;
      link.mutable_external_correlation()->set_kind(5);  // CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, as the hook's
      link.mutable_external_correlation()->set_external_id(external);
      link.mutable_external_correlation()->set_correlation_id(correlation);
      put(link);
      return correlation;
    };
    bool header_seen = false;
    auto stream_infos = [&] {
      for (const Lane& l : g.lanes) {
        if (l.capture != s || !l.added) continue;  // (lanes: a few per stream of the capture)
        v1::Record r;
        r.mutable_stream()->set_context(l.device + 1);
        r.mutable_stream()->set_stream(l.stream);
        r.mutable_stream()->set_priority(-l.priority);
        r.mutable_stream()->set_flags(StreamTable::kNonBlocking);
        put(r);
      }
    };
    for (uint32_t i = 0; i < sec.records.size(); ++i) {
      sec.records.get(i, &r);
      if (r.kind_case() == v1::Record::kStringDef) continue;  // the writer defines its own
      // A metric sample (NVML, PM sampling) measured the run that was recorded: moved onto the
      // predicted timeline it would describe work that is no longer there (and stretch the
      // prediction's span to the measured one's), so the prediction has none.
      if (r.kind_case() == v1::Record::kMetricSample) continue;
      const RecordPlace& place = places[i];
      switch (place.kind) {
        case RecordPlace::Kind::kCall: {
          const HostCall& c = g.calls[place.index];
          if (c.removed) continue;
          if (r.has_nccl() && place.index < b.nccl_record_dropped.size() && b.nccl_record_dropped[place.index]) continue;
          const int64_t start = as_time(c.start_ns), end = as_time(c.end_ns);
          if (r.has_api()) {
            r.mutable_api()->set_start_ns(start), r.mutable_api()->set_end_ns(end);
            if (b.call_is_graph_launch[place.index]) {
              r.mutable_api()->set_cbid(kCbidGraphLaunch);
              remap_strings(r, remap);
              r.mutable_api()->set_name_id(writer->intern("cudaGraphLaunch"));
              put(r);
              continue;
            }
          } else if (r.has_nccl()) {
            r.mutable_nccl()->set_start_ns(start), r.mutable_nccl()->set_end_ns(end);
          } else if (r.has_sync()) {
            r.mutable_sync()->set_start_ns(start), r.mutable_sync()->set_end_ns(end);
          }
          break;
        }
        case RecordPlace::Kind::kInnerCall: {
          const HostCall& c = g.calls[place.index];
          if (c.removed || !r.has_api()) continue;
          place_inside(r, c, place.offset_ns);
          break;
        }
        case RecordPlace::Kind::kOp:
        case RecordPlace::Kind::kMember: {
          if (place.kind == RecordPlace::Kind::kOp) {
            // Ops a change made in its place (pipeline=1f1b) are written as copies of it first.
            if (const auto made = clones.find(place.index); made != clones.end()) {
              for (uint32_t clone : made->second) {
                v1::Record copy = r;
                retime(copy, clone, RecordPlace::Kind::kOp, 0);
                if (const uint32_t correlation = write_added_calls(clone); correlation != 0 && copy.has_kernel())
                  copy.mutable_kernel()->set_correlation_id(correlation);
                remap_strings(copy, remap);
                put(copy);
              }
            }
            if (place.index < b.op_fused_away.size() && b.op_fused_away[place.index]) continue;  // its work is elsewhere
          }
          retime(r, place.index, place.kind, place.offset_ns);
          break;
        }
        case RecordPlace::Kind::kOther: {
          if (r.has_header()) {
            auto* h = r.mutable_header();
            h->set_predicted_from(sec.name);
            h->clear_predicted_change();
            for (const Change& ch : changes) h->add_predicted_change(ch.text);
            h->set_start_monotonic_raw_ns(global(h->start_monotonic_raw_ns()));
            std::string note = h->note();
            h->set_note(note + (note.empty() ? "" : "; ") + "predicted by gantt-cli whatif: not a measurement");
            remap_strings(r, remap);
            put(r);
            if (!header_seen) stream_infos();
            header_seen = true;
            continue;
          }
          if (r.has_footer()) {  // after everything predicted, as the real one is
            write_added();
            added_written = true;
            r.mutable_footer()->set_end_monotonic_raw_ns(std::max(global(r.footer().end_monotonic_raw_ns()), latest));
            break;
          }
          if (r.has_memory() && s < b.memory_edits.size()) {
            const auto moved = b.memory_edits[s].moved.find(i);
            if (moved != b.memory_edits[s].moved.end()) r.mutable_memory()->set_time_ns(moved->second);
          }
          move_with_calls(r);
          break;
        }
      }
      remap_strings(r, remap);
      put(r);
    }
    if (!header_seen) stream_infos();
    if (!added_written) write_added();
  }
  if (!writer->close()) throw std::runtime_error(output + ": " + writer->last_error());
  return written;
}

}  // namespace gantt::whatif::detail
