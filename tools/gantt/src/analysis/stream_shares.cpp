// Shares of a capture's chunk index, and the correlation-id window (stream_shares.h).
#include "gantt/analysis/stream_shares.h"

#include <cstdlib>
#include <new>
#include "gantt/model/model_builder.h"
#include "gantt/model/record_spool.h"
#include "gantt/scan/open.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

namespace gantt::analysis {

namespace v1 = gpuhook::v1;

void CorrWindow::lose(uint64_t lo, uint64_t hi) {
  lost_lo_ = std::min<uint64_t>(lost_lo_, lo);
  lost_hi_ = static_cast<uint32_t>(std::max<uint64_t>(lost_hi_, std::min<uint64_t>(hi, UINT32_MAX)));
}

CorrWindow::CorrWindow(const CorrWindow& other) { *this = other; }

CorrWindow& CorrWindow::operator=(const CorrWindow& other) {
  if (this == &other) return *this;
  sliding_ = other.sliding_;
  base_ = other.base_;
  lost_lo_ = other.lost_lo_;
  lost_hi_ = other.lost_hi_;
  slots_.reset();
  if (other.slots_) {
    slots_.reset(static_cast<uint64_t*>(std::malloc(kIds * sizeof(uint64_t))));
    if (!slots_) throw std::bad_alloc();
    std::memcpy(slots_.get(), other.slots_.get(), kIds * sizeof(uint64_t));
  }
  return *this;
}

void CorrWindow::set(uint32_t corr, uint64_t start_ns) {
  if (!slots_) {
    // Centred on the first id: launches written after their kernels come with lower ids.
    slots_.reset(static_cast<uint64_t*>(std::calloc(kIds, sizeof(uint64_t))));
    if (!slots_) throw std::bad_alloc();
    base_ = corr > kIds / 2 ? corr - kIds / 2 : 0;
  }
  if (corr < base_) {
    lose(corr, corr);
    return;
  }
  if (uint64_t{corr} >= uint64_t{base_} + kIds) {
    if (!sliding_) {
      lose(corr, corr);
      return;
    }
    const uint32_t next = corr - kIds / 2;
    const uint64_t cleared_end = std::min<uint64_t>(next, uint64_t{base_} + kIds);
    lose(base_, cleared_end - 1);
    for (uint64_t c = base_; c < cleared_end; ++c) slots_[c % kIds] = 0;
    base_ = next;
  }
  slots_[corr % kIds] = start_ns;
}

bool NcclKernelFilter::maybe(const gpuhook::CaptureReader& reader, uint32_t correlation_id, uint32_t id,
                             uint64_t records_read) {
  if (corr_.empty() && records_read > kLeadIn) return false;
  if (corr_.contains(correlation_id)) return true;
  if (id >= (1u << 24)) return false;
  return named_.test(reader, id, [](std::string_view text) {
    std::string name(text);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    return name.find("nccl") != std::string::npos;
  });
}

bool NcclSettler::call(const v1::Record& r) {
  const auto& n = r.nccl();
  const uint64_t id = n.external_id();
  const bool simple = n.group_depth() == 0 && id != 0 && id <= UINT32_MAX && n.op() != v1::NCCL_GROUP_START &&
                      n.op() != v1::NCCL_GROUP_END && n.op() != v1::NCCL_COMM_INIT && n.op() != v1::NCCL_COMM_DESTROY;
  // A second call under an id, or one whose kernel is held already: the final join's, whole.
  if (!simple || held_.count(id) != 0 || taken_.get(static_cast<uint32_t>(id)) != 0) return false;
  return simple_.try_emplace(id, r).second;
}

void NcclSettler::external(uint32_t corr, uint64_t external_id) {
  any_external_ = true;
  external_.set(corr, external_id);
  // A kernel held before its id was read: its call joins it at the end.
  if (!held_without_external_.empty() && held_without_external_.erase(corr) != 0) held_.insert(external_id);
}

NcclSettler::Verdict NcclSettler::kernel(uint32_t corr, bool may_settle, v1::Record* call, uint64_t* external_id) {
  const uint64_t id = external_.get(corr);
  *external_id = id;
  if (id == 0) {
    held_without_external_.insert(corr);
    return Verdict::kHeld;
  }
  if (id <= UINT32_MAX && taken_.get(static_cast<uint32_t>(id)) != 0) return Verdict::kNccl;
  if (may_settle && held_.count(id) == 0) {
    if (auto it = simple_.find(id); it != simple_.end()) {
      *call = std::move(it->second);
      simple_.erase(it);
      taken_.set(static_cast<uint32_t>(id), 1);
      return Verdict::kCall;
    }
  }
  held_.insert(id);
  return Verdict::kHeld;
}

void add_held_external(ModelBuilder& builder, uint32_t corr, uint64_t id) {
  if (id == 0) return;
  v1::Record x;
  auto* ext = x.mutable_external_correlation();
  ext->set_kind(builder::kHookExternalKind);
  ext->set_external_id(id);
  ext->set_correlation_id(corr);
  builder.add(x);
}

bool index_within_guard(const gpuhook::CaptureReader& probe, const LoadOptions& load) {
  if (!probe.index()) return true;
  uint64_t records = 0;
  for (const auto& chunk : probe.index()->chunk()) records += std::min<uint64_t>(chunk.records(), uint64_t{1} << 40);
  return AmplificationGuard(probe, load).allows(records);
}

std::vector<ChunkRange> plan_chunk_ranges(const std::optional<gpuhook::v1::ChunkIndex>& index, unsigned thread_count) {
  if (!index || thread_count <= 1 || index->chunk_size() < 2) return std::vector<ChunkRange>(1);
  const size_t n = static_cast<size_t>(index->chunk_size());
  std::vector<uint64_t> before(n + 1, 0);  // records in the chunks before each
  for (size_t i = 0; i < n; ++i)
    before[i + 1] = before[i] + std::min<uint64_t>(index->chunk(static_cast<int>(i)).records(), 1u << 30);
  const size_t parts = std::min<size_t>(thread_count, n);
  std::vector<ChunkRange> shares(parts);
  size_t at = 0;
  for (size_t p = 0; p < parts; ++p) {
    const uint64_t goal = before[n] / parts * (p + 1);
    size_t end = p + 1 == parts ? n : static_cast<size_t>(std::lower_bound(before.begin(), before.end(), goal) - before.begin());
    end = std::clamp(end, at + 1, n - (parts - p - 1));
    shares[p].first_chunk = at;
    shares[p].end_chunk = end;
    at = end;
  }
  return shares;
}

bool read_range_model(const std::string& path, const LoadOptions& load, const std::vector<ChunkRange>& shares,
                      size_t max_ranges, Model* out, size_t* headers) {
  // Each share's records, serialized (about 20 bytes a range), then given to one ModelBuilder
  // in file order, as one reader would.
  struct Part {
    ChunkRange range;
    RecordSpool records;
    size_t ranges = 0;
    gpuhook::Integrity integrity;
    std::exception_ptr error;
  };
  std::vector<Part> parts(shares.size());
  for (size_t i = 0; i < parts.size(); ++i) parts[i].range = shares[i];
  std::atomic<bool> stop{false}, over{false};
  run_shares(parts, stop, [&](Part& p) {
    gpuhook::ReaderOptions ro;
    ro.strict = load.strict;
    ro.from_ns = load.from_ns;
    ro.to_ns = load.to_ns;
    ro.first_chunk = p.range.first_chunk;
    ro.end_chunk = p.range.end_chunk;
    ro.outside_strings_only = true;
    ro.only_kinds = uint64_t{1} << v1::Record::kRange;
    const std::unique_ptr<gpuhook::CaptureReader> opened_reader = gantt::scan::open_capture(path, ro);
    gpuhook::CaptureReader& reader = *opened_reader;
    const AmplificationGuard guard(reader, load);
    v1::Record r;
    while (!stop.load(std::memory_order_relaxed) && reader.next(r)) {
      guard.check(reader);
      if (r.kind_case() == v1::Record::kRange && ++p.ranges > max_ranges) {
        over = stop = true;
        break;
      }
      p.records.add(r);
    }
    p.integrity = reader.integrity();
  });
  for (const Part& p : parts)
    if (p.error) std::rethrow_exception(p.error);
  if (over) return false;
  size_t ranges = 0;
  for (const Part& p : parts) ranges += p.ranges;
  if (ranges > max_ranges) return false;
  // A damaged file: one reader stops at the damage, the shares after it would not. Read it
  // as one share, the whole file.
  if (parts.size() > 1 &&
      std::any_of(parts.begin(), parts.end(), [](const Part& p) { return static_cast<bool>(p.integrity.error); }))
    return read_range_model(path, load, {ChunkRange{}}, max_ranges, out, headers);
  ModelBuilder builder(*out);
  builder.begin_capture(path);
  for (const Part& p : parts)
    p.records.for_each([&](const v1::Record& r) {
      if (headers && r.kind_case() == v1::Record::kHeader) ++*headers;
      builder.add(r);
    });
  builder.end_capture(file_integrity(parts));
  return true;
}

}  // namespace gantt::analysis
