// Reading one capture on several threads (stream_stats.h, stream_render.h): each thread reads
// a contiguous share of the chunk index, and joins GPU records to their launches by
// correlation id over a window of recent ids. Internal to libgantt.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <gpuhook/capture.h>

#include "gantt/model/model.h"

namespace gantt {
class ModelBuilder;
}

namespace gantt::analysis {

// API start times by correlation id over a window of ids, for joining kernels to their
// launches. CUPTI numbers a process's API calls 1, 2, 3, ... and a kernel's record comes
// soon after its launch's; the window slides with the ids (`sliding`) or keeps the first
// ids a share saw (a launch whose kernel the share before it read). Ids it had to let go
// (slid past, or outside a fixed window) are remembered as a span: a join that finds nothing
// knows whether the launch may exist after all (maybe_lost).
class CorrWindow {
 public:
  static constexpr uint32_t kIds = 1u << 18;  // 2 MB of times
  // Set on a time whose call returns once its copy is queued (async_copy_call(), for
  // copy_host_wait()). Recorded times are far below 2^63 ns; a hostile one only miscounts.
  static constexpr uint64_t kAsyncCallBit = uint64_t{1} << 63;
  explicit CorrWindow(bool sliding) : sliding_(sliding) {}
  CorrWindow(const CorrWindow& other);
  CorrWindow& operator=(const CorrWindow& other);
  CorrWindow(CorrWindow&&) noexcept = default;
  CorrWindow& operator=(CorrWindow&&) noexcept = default;

  void set(uint32_t corr, uint64_t start_ns);
  uint64_t get(uint32_t corr) const {
    if (!slots_ || corr < base_ || uint64_t{corr} >= uint64_t{base_} + kIds) return 0;
    return slots_[corr % kIds];
  }
  bool maybe_lost(uint32_t corr) const { return corr >= lost_lo_ && corr <= lost_hi_; }

 private:
  void lose(uint64_t lo, uint64_t hi);
  bool sliding_;
  uint32_t base_ = 0;
  uint32_t lost_lo_ = UINT32_MAX, lost_hi_ = 0;
  // From calloc(): the kernel's zero pages, touched only where ids fall. Zeroing 2 MB for each
  // window of each share cost a job of 8 small captures with --range 1 s of its 1.04.
  struct Free {
    void operator()(uint64_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint64_t[], Free> slots_;
};

// A share's two windows over one value per correlation id (a launch's start, its range
// path): the ids read last, and the share's first ids, whose work the share before it may
// have read. 0: not read (yet).
class CorrWindows {
 public:
  void set(uint32_t corr, uint64_t value) {
    recent_.set(corr, value);
    earliest_.set(corr, value);
  }
  uint64_t get(uint32_t corr) const {
    const uint64_t v = recent_.get(corr);
    return v != 0 ? v : earliest_.get(corr);
  }
  bool maybe_lost(uint32_t corr) const { return recent_.maybe_lost(corr) || earliest_.maybe_lost(corr); }

 private:
  CorrWindow recent_{true}, earliest_{false};
};

// A value of `corr` read in another share than the work that names it (`of(share)`: 0 when
// that share has none): the last share's that has it, which read furthest into the file,
// leaving out share `self`. False when none has it and a share's windows may have let it go
// (Share::maybe_lost): then it cannot be told.
template <class Share, class Of>
bool value_across(const std::vector<Share>& shares, size_t self, uint32_t corr, Of&& of, uint64_t* value) {
  *value = 0;
  for (size_t j = shares.size(); j-- > 0 && *value == 0;)
    if (j != self) *value = of(shares[j]);
  if (*value != 0) return true;
  return std::none_of(shares.begin(), shares.end(), [corr](const Share& s) { return s.maybe_lost(corr); });
}

// A set of correlation ids, looked up once per kernel: a bit per id while the ids are
// small (CUPTI counts them up from 1), a hash set for the ones a hostile file makes huge.
class CorrSet {
 public:
  void insert(uint32_t corr) {
    if (corr >= kDense) {
      sparse_.insert(corr);
    } else {
      if (corr / 64 >= bits_.size()) bits_.resize(corr / 64 + 1, 0);
      bits_[corr / 64] |= uint64_t{1} << (corr % 64);
    }
    ++size_;
  }
  bool contains(uint32_t corr) const {
    if (corr >= kDense) return sparse_.count(corr) != 0;
    return corr / 64 < bits_.size() && (bits_[corr / 64] >> (corr % 64) & 1) != 0;
  }
  bool empty() const { return size_ == 0; }
  // Ids too large for the bits, each kept in the hash set.
  size_t sparse_size() const { return sparse_.size(); }
  bool intersects(const CorrSet& other) const {
    for (size_t i = 0; i < std::min(bits_.size(), other.bits_.size()); ++i)
      if (bits_[i] & other.bits_[i]) return true;
    const auto& [small, large] = sparse_.size() < other.sparse_.size() ? std::tie(sparse_, other.sparse_)
                                                                       : std::tie(other.sparse_, sparse_);
    return std::any_of(small.begin(), small.end(), [&](uint32_t id) { return large.count(id) != 0; });
  }
  void absorb(const CorrSet& other) {
    if (other.bits_.size() > bits_.size()) bits_.resize(other.bits_.size(), 0);
    for (size_t i = 0; i < other.bits_.size(); ++i) bits_[i] |= other.bits_[i];
    sparse_.insert(other.sparse_.begin(), other.sparse_.end());
    size_ += other.size_;
  }

 private:
  static constexpr uint32_t kDense = 1u << 27;  // 16 MB of bits at most
  std::vector<uint64_t> bits_;
  std::unordered_set<uint32_t> sparse_;
  size_t size_ = 0;
};

// A yes or no about a string's text (a call is an asynchronous copy call, a kernel is
// NCCL's), worked out once per string id: every launch and kernel asks. Ids past 2^24, which
// only a hostile file has, are worked out each time.
class NameFlags {
 public:
  template <class F>
  bool test(const gpuhook::CaptureReader& reader, uint32_t id, F&& of_text) {
    if (id >= kCached) return of_text(reader.string(id));
    if (id >= flags_.size()) flags_.resize(id + 1, -1);
    if (flags_[id] < 0) flags_[id] = of_text(reader.string(id)) ? 1 : 0;
    return flags_[id] == 1;
  }

 private:
  static constexpr uint32_t kCached = 1u << 24;
  std::vector<int8_t> flags_;  // per string id: -1 not worked out yet, 0 no, 1 yes
};

// The kernels NCCL may have launched, for the loader's NCCL join run on only the records it
// needs (ModelBuilder::Impl::join_nccl_by_external_id): those under a correlation id one of
// the hook's external ids names, or named nccl*. A few per collective, not per kernel.
class NcclKernelFilter {
 public:
  void under_external(uint32_t corr) { corr_.insert(corr); }
  // `records_read`: the share's records so far. Its first kernels may belong to calls the
  // share before it read: for a lead-in, kernels named nccl* are kept before it has an
  // external id of its own; without any there is nothing to join by (the capture is loaded).
  bool maybe(const gpuhook::CaptureReader& reader, uint32_t correlation_id, uint32_t name_id, uint64_t records_read);

 private:
  static constexpr uint64_t kLeadIn = uint64_t{1} << 16;
  CorrSet corr_;
  NameFlags named_;  // named nccl*
};

// The NCCL join as a share reads it (ModelBuilder::Impl::join_nccl_by_external_id), settled
// at once where it is simple: an ungrouped call under one of the hook's external ids, and the
// kernels launched under that id. The first such kernel takes the call; later ones are NCCL's
// without its bytes. What it cannot settle (grouped calls, kernels read before their call or
// their external id) the share holds for the loader's join at the end, which then sees only
// that. So a scan holds a few records per unsettled collective, not per collective.
class NcclSettler {
 public:
  // An NCCL call record (r.nccl()). False when the share keeps it for the final join itself.
  bool call(const gpuhook::v1::Record& r);
  // A CUDA call made inside an NCCL call: an ExternalCorrelation of the hook's kind.
  void external(uint32_t corr, uint64_t external_id);
  enum class Verdict : uint8_t {
    kCall,  // the kernel takes the call moved into *call
    kNccl,  // NCCL's, its call taken by an earlier kernel
    kHeld,  // the share holds it for the final join, with *external_id (0: not read yet)
  };
  // A kernel NCCL may have run (NcclKernelFilter::maybe). `may_settle` false: hold it even
  // if its call is here (the share cannot fold it yet); the call then waits for the final join.
  Verdict kernel(uint32_t corr, bool may_settle, gpuhook::v1::Record* call, uint64_t* external_id);
  // The external id of a CUDA call, 0 when not read; maybe_lost() as CorrWindow's.
  uint64_t external_of(uint32_t corr) const { return external_.get(corr); }
  bool maybe_lost(uint32_t corr) const { return external_.maybe_lost(corr); }
  bool any_external() const { return any_external_; }
  size_t held() const { return simple_.size() + held_.size() + held_without_external_.size(); }
  // The calls no kernel took, for the final join.
  template <class F>
  void for_each_call(F&& f) const {
    for (const auto& [id, r] : simple_) f(r);
  }

 private:
  std::unordered_map<uint64_t, gpuhook::v1::Record> simple_;  // by external id, not yet taken
  CorrWindows external_;                                      // correlation id -> external id
  CorrWindow taken_{true};                                    // external ids whose call a kernel took
  std::unordered_set<uint64_t> held_;                         // external ids with a kernel held
  std::unordered_set<uint32_t> held_without_external_;        // held kernels' correlation ids
  bool any_external_ = false;
};

// The external id of a kernel a share's NCCL join holds, where it was not read before the
// kernel (`*id` 0): read after it, or in another share, the last settler (`settler_of(share)`)
// that has it. False when none has it and a share's window may have let it go (kTooFar).
template <class Shares, class SettlerOf>
bool held_external(const Shares& shares, SettlerOf&& settler_of, uint32_t corr, uint64_t* id) {
  for (size_t j = shares.size(); j-- > 0 && *id == 0;) *id = settler_of(shares[j]).external_of(corr);
  return *id != 0 ||
         std::none_of(shares.begin(), shares.end(), [&](const auto& sh) { return settler_of(sh).maybe_lost(corr); });
}

// The record of a held kernel's external id in the final join's model, as the hook's
// ExternalCorrelation gave it (0: none, nothing added).
void add_held_external(ModelBuilder& builder, uint32_t corr, uint64_t id);

// A share: the index entries [first_chunk, end_chunk) one thread reads; 0,0 is the whole file.
struct ChunkRange {
  uint64_t first_chunk = 0, end_chunk = 0;
};

// GPU records (or launch paths) one share holds while it waits for what joins them: past it,
// the capture is loaded.
inline constexpr size_t kMaxWaiting = size_t{1} << 20;

// Why a capture is loaded after all: GPU records whose launch calls a join's window let go.
inline constexpr const char* kTooFar = "GPU records written too far from their launch calls to join them in a stream";
// Why a capture is loaded after all: index_within_guard() said no.
inline constexpr const char* kOverGuard = "more records than --max-records-per-byte allows";

// False when the index counts more records than the whole file may decode to (the load's
// AmplificationGuard): shares read side by side, each counting its own, would fail later and
// elsewhere than the loader, which then reports it.
bool index_within_guard(const gpuhook::CaptureReader& probe, const LoadOptions& load);

// Contiguous runs of the index's chunks with about equal records each, at most `thread_count`;
// one share of the whole file without an index.
std::vector<ChunkRange> plan_chunk_ranges(const std::optional<gpuhook::v1::ChunkIndex>& index,
                                          unsigned thread_count);

// The file's context and NVTX range records, in its order, into *out (a model without events):
// the shares' chunks read side by side, every other record stepped over unparsed, a damaged
// file read as one share as the loader reads it. False when they are more than `max_ranges`.
// `headers`, when given: the Header records read (more than one: a merged file).
bool read_range_model(const std::string& path, const LoadOptions& load, const std::vector<ChunkRange>& shares,
                      size_t max_ranges, Model* out, size_t* headers = nullptr);

// `work` on every share, the first on this thread. An exception is kept in the share's
// `error` and sets `stop`, so the other shares end early; the caller rethrows in file order.
template <class S, class F>
void run_shares(std::vector<S>& shares, std::atomic<bool>& stop, F&& work) {
  const auto run = [&](S& sh) {
    try {
      work(sh);
    } catch (...) {
      sh.error = std::current_exception();
      stop = true;
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < shares.size(); ++i) threads.emplace_back(run, std::ref(shares[i]));
  run(shares.front());
  for (std::thread& t : threads) t.join();
}

// The integrity a reader of the whole file reports: the first share's, ending where the last
// one ended.
template <class S>
gpuhook::Integrity file_integrity(const std::vector<S>& shares) {
  gpuhook::Integrity integrity = shares.front().integrity;
  integrity.error = shares.back().integrity.error;
  integrity.truncated = shares.back().integrity.truncated;
  integrity.truncated_at = shares.back().integrity.truncated_at;
  integrity.truncated_bytes = shares.back().integrity.truncated_bytes;
  return integrity;
}

// The capture's context (header, devices, threads, strings) from the shares' `context`
// records in file order.
template <class S>
Model context_model(const std::string& path, const std::vector<S>& shares, const gpuhook::Integrity& integrity) {
  Model context;
  ModelBuilder builder(context);
  builder.begin_capture(path);
  for (const S& sh : shares)
    for (const gpuhook::v1::Record& r : sh.context) builder.add(r);
  builder.end_capture(integrity);
  return context;
}

}  // namespace gantt::analysis
