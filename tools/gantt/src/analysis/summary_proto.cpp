// Summaries to and from their file message (gpuhook/v1/summary.proto). from_proto treats the
// message as untrusted: counts that disagree, buckets no value falls in, indices out of range
// and another sketch error are refused with what was wrong.
#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include <gpuhook/summary_file.h>
#include <gpuhook/v1/summary.pb.h>

#include "gantt/analysis/summary.h"
#include "gantt/model/text.h"

namespace gantt::analysis {

namespace v1 = gpuhook::v1;

namespace {

void digest_to_proto(const DurationDigest& d, v1::Digest* out) {
  out->set_count(d.count());
  out->set_total_ns(d.total_ns());
  out->set_min_ns(d.min_ns());
  out->set_max_ns(d.max_ns());
  out->set_sketched(!d.exact());
  if (d.exact()) {
    for (int64_t v : d.samples()) out->add_samples(v);
    return;
  }
  for (const auto& [i, n] : d.sketch().positive()) {
    out->add_positive_index(i);
    out->add_positive_count(n);
  }
  for (const auto& [i, n] : d.sketch().negative()) {
    out->add_negative_index(i);
    out->add_negative_count(n);
  }
  out->set_zeros(d.sketch().zeros());
}

DurationDigest digest_from_proto(const v1::Digest& in, const std::string& where) {
  const auto bad = [&where](const std::string& what) { return std::invalid_argument(where + ": " + what); };
  if (in.count() == 0) return {};
  if (!in.sketched()) {
    if (static_cast<uint64_t>(in.samples_size()) != in.count() || in.count() > DurationDigest::kExactSamples)
      throw bad("exact digest of " + std::to_string(in.count()) + " values holds " + std::to_string(in.samples_size()));
    return DurationDigest::from_parts(in.count(), in.total_ns(), in.min_ns(), in.max_ns(),
                                      {in.samples().begin(), in.samples().end()}, nullptr);
  }
  if (in.positive_index_size() != in.positive_count_size() || in.negative_index_size() != in.negative_count_size())
    throw bad("sketch buckets and counts differ in number");
  QuantileSketch sk;
  const auto take = [&](const auto& index, const auto& count, bool negative) {
    for (int i = 0; i < index.size(); ++i)
      if (!sk.add_bucket(index[i], negative, count[i]))
        throw bad("sketch bucket " + std::to_string(index[i]) + " holds no int64 value");
  };
  take(in.positive_index(), in.positive_count(), false);
  take(in.negative_index(), in.negative_count(), true);
  sk.add(0, in.zeros());
  if (sk.count() != in.count()) throw bad("sketch counts add up to " + std::to_string(sk.count()) + ", not " + std::to_string(in.count()));
  return DurationDigest::from_parts(in.count(), in.total_ns(), in.min_ns(), in.max_ns(), {}, &sk);
}

}  // namespace

void to_proto(const StatsSummary& s, v1::StatsSummary* out) {
  out->Clear();
  // A merge with a version 1 summary lacks what version 2 adds, and says so.
  out->set_version(s.has_diagnose ? gpuhook::kSummaryVersion : 1);
  out->set_relative_error(kSketchRelativeError);
  out->set_exact_samples(DurationDigest::kExactSamples);
  for (const SummaryCapture& c : s.captures) {
    auto* p = out->add_capture();
    p->set_path(c.path);
    p->set_host(c.host);
    p->set_pid(c.pid);
    p->set_rank(c.rank);
    p->set_busy_ns_without_nccl(c.busy_ns_without_nccl);
  }
  out->set_events(s.events);
  out->set_gpu_time_ns(s.gpu_time_ns);
  out->set_first_ns(s.first_ns);
  out->set_last_ns(s.last_ns);
  using Field = google::protobuf::RepeatedPtrField<v1::SummaryGroup>* (v1::StatsSummary::*)();
  const std::array<Field, kSummaryGroupings> fields = {&v1::StatsSummary::mutable_by_kernel, &v1::StatsSummary::mutable_by_stream,
                                                &v1::StatsSummary::mutable_by_device, &v1::StatsSummary::mutable_by_range};
  for (size_t g = 0; g < kSummaryGroupings; ++g) {
    if (!s.grouped[g]) continue;
    auto* rows = (out->*fields[g])();
    for (const SummaryGroup& row : s.groups[g]) {
      auto* p = rows->Add();
      p->set_key(row.key);
      p->set_capture(row.capture);
      p->set_device(row.device);
      p->set_stream(row.stream);
      digest_to_proto(row.exec, p->mutable_exec());
      p->set_bytes(row.bytes);
      p->set_kernels(row.kernels);
      p->set_kernel_ns(row.kernel_ns);
      p->set_kernel_first_start_ns(row.kernel_span.first_ns);
      p->set_kernel_last_end_ns(row.kernel_span.last_ns);
    }
  }
  digest_to_proto(s.launch_to_queued, out->mutable_launch_to_queued());
  digest_to_proto(s.queued_to_start, out->mutable_queued_to_start());
  digest_to_proto(s.exec, out->mutable_exec());
  for (const DeviceRow& d : s.devices) {
    auto* p = out->add_device();
    p->set_capture(d.capture);
    p->set_device(d.device);
    p->set_span_ns(d.span_ns);
    p->set_busy_ns(d.busy_ns);
    p->set_compute_ns(d.compute_ns);
    p->set_copy_ns(d.copy_ns);
    p->set_overlap_ns(d.overlap_ns);
    p->set_idle_ns(d.idle_ns);
    p->set_copies(d.copies);
    p->set_copy_bytes(d.copy_bytes);
    p->set_sync_copies(d.sync_copies);
    p->set_busy_ns_without_nccl(d.busy_ns_without_nccl);
    for (const IdleGap& g : d.gaps) {
      auto* q = p->add_gap();
      q->set_start_ns(g.start_ns);
      q->set_end_ns(g.end_ns);
      q->set_host(g.host);
    }
  }
  for (const NcclRow& n : s.nccl) {
    auto* p = out->add_nccl();
    p->set_op(n.op);
    p->set_calls(n.calls);
    p->set_time_ns(n.time_ns);
    p->set_bytes(n.bytes);
  }
  out->set_gaps_kept(static_cast<uint32_t>(s.gaps_kept));
  out->set_merged(s.merged);
  out->set_has_matches(s.has_matches);
  for (const auto& [key, row] : s.matches) {
    auto* p = out->add_match();
    p->set_name(row.name);
    p->set_range(row.range);
    p->set_graph_node(row.graph_node);
    digest_to_proto(row.exec, p->mutable_exec());
    digest_to_proto(row.queue, p->mutable_queue());
  }
  for (const auto& [name, d] : s.top_ranges) {
    auto* p = out->add_top_range();
    p->set_name(name);
    digest_to_proto(d, p->mutable_duration());
  }
}

StatsSummary from_proto(const v1::StatsSummary& in) {
  if (in.relative_error() != kSketchRelativeError)
    throw std::invalid_argument("made with sketch error " + std::to_string(in.relative_error()) +
                                ", this build merges only " + std::to_string(kSketchRelativeError));
  if (in.capture_size() == 0 || in.capture_size() > 65535)
    throw std::invalid_argument(std::to_string(in.capture_size()) + " captures (1 to 65535 expected)");
  StatsSummary s;
  for (const auto& c : in.capture()) s.captures.push_back({c.path(), c.host(), c.pid(), c.rank(), c.busy_ns_without_nccl()});
  s.has_diagnose = in.version() >= 2;
  const auto captures = static_cast<uint32_t>(in.capture_size());
  s.events = in.events();
  s.gpu_time_ns = in.gpu_time_ns();
  s.first_ns = in.first_ns();
  s.last_ns = in.last_ns();
  using Rows = const google::protobuf::RepeatedPtrField<v1::SummaryGroup>& (v1::StatsSummary::*)() const;
  const std::array<Rows, kSummaryGroupings> fields = {&v1::StatsSummary::by_kernel, &v1::StatsSummary::by_stream,
                                               &v1::StatsSummary::by_device, &v1::StatsSummary::by_range};
  for (size_t g = 0; g < kSummaryGroupings; ++g) {
    const auto& rows = (in.*fields[g])();
    s.grouped[g] = !rows.empty() || in.events() == 0;
    for (const v1::SummaryGroup& p : rows) {
      if (p.capture() >= captures) throw std::invalid_argument("a group names capture " + std::to_string(p.capture()));
      SummaryGroup row;
      row.key = p.key();
      row.capture = p.capture();
      row.device = p.device();
      row.stream = p.stream();
      row.exec = digest_from_proto(p.exec(), "group '" + ellipsize(p.key(), 80) + "'");
      row.bytes = p.bytes();
      row.kernels = p.kernels();
      row.kernel_ns = p.kernel_ns();
      if (row.kernels > row.exec.count() || row.kernel_ns > row.exec.total_ns())
        throw std::invalid_argument("a group's kernels (" + std::to_string(row.kernels) + ", " +
                                    std::to_string(row.kernel_ns) + " ns) exceed its instances");
      row.kernel_span = {p.kernel_first_start_ns(), p.kernel_last_end_ns()};
      if ((row.kernel_span.first_ns == 0) != (row.kernel_span.last_ns == 0) || row.kernel_span.last_ns < row.kernel_span.first_ns)
        throw std::invalid_argument("a group's kernels end (" + std::to_string(row.kernel_span.last_ns) +
                                    " ns) before they start (" + std::to_string(row.kernel_span.first_ns) + " ns)");
      s.groups[g].push_back(std::move(row));
    }
  }
  s.launch_to_queued = digest_from_proto(in.launch_to_queued(), "launch->queued");
  s.queued_to_start = digest_from_proto(in.queued_to_start(), "queued->start");
  s.exec = digest_from_proto(in.exec(), "exec");
  for (const v1::SummaryDevice& p : in.device()) {
    if (p.capture() >= captures) throw std::invalid_argument("a device names capture " + std::to_string(p.capture()));
    DeviceRow d;
    d.capture = static_cast<uint16_t>(p.capture());
    d.device = p.device();
    d.span_ns = p.span_ns();
    d.busy_ns = p.busy_ns();
    d.compute_ns = p.compute_ns();
    d.copy_ns = p.copy_ns();
    d.overlap_ns = p.overlap_ns();
    d.idle_ns = p.idle_ns();
    d.copies = p.copies();
    d.copy_bytes = p.copy_bytes();
    d.sync_copies = p.sync_copies();
    d.busy_ns_without_nccl = p.has_busy_ns_without_nccl() ? p.busy_ns_without_nccl() : d.busy_ns;
    if (d.busy_ns_without_nccl > d.busy_ns)
      throw std::invalid_argument("a device is busy " + std::to_string(d.busy_ns_without_nccl) +
                                  " ns without NCCL kernels of " + std::to_string(d.busy_ns) + " ns with them");
    if (d.sync_copies > d.copies)
      throw std::invalid_argument("a device has " + std::to_string(d.sync_copies) + " synchronous copies of " +
                                  std::to_string(d.copies));
    for (const v1::SummaryGap& g : p.gap()) d.gaps.push_back({g.start_ns(), g.end_ns(), g.host()});
    s.devices.push_back(std::move(d));
  }
  for (const v1::SummaryNccl& p : in.nccl()) s.nccl.push_back({p.op(), p.calls(), p.time_ns(), p.bytes()});
  s.gaps_kept = in.gaps_kept();
  s.merged = in.merged();
  s.has_matches = in.has_matches();
  for (const v1::MatchGroup& p : in.match()) {
    SummaryMatch row;
    row.name = p.name();
    row.range = p.range();
    row.graph_node = p.graph_node();
    row.exec = digest_from_proto(p.exec(), "match '" + ellipsize(p.name(), 80) + "'");
    row.queue = digest_from_proto(p.queue(), "match '" + ellipsize(p.name(), 80) + "' queue");
    const std::string key = match_key(row.range, row.name, row.graph_node);
    auto [it, fresh] = s.matches.try_emplace(key, row);
    if (!fresh) {  // a file that lists a match twice: both count
      it->second.exec.merge(row.exec);
      it->second.queue.merge(row.queue);
    }
  }
  for (const v1::TopRange& p : in.top_range())
    s.top_ranges[p.name()].merge(digest_from_proto(p.duration(), "range '" + ellipsize(p.name(), 80) + "'"));
  return s;
}

}  // namespace gantt::analysis
