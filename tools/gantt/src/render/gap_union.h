// The idle-gap flag's activity union for a streamed chart (stream_render.h); internal to
// libgantt. Implemented in stream_flags.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

namespace gantt::streamed {

// A device's activity for the idle-gap flag (annotate.cpp): the union of its events, where
// spans less than `tolerance` apart are one. A gap is flagged only when longer than the
// threshold, which is at least the tolerance, so the flagged gaps are those of the plain
// union; and the spans are bounded by the window over the tolerance, not by the events.
// Each span keeps its first event by (start, file order): the one that ended the gap before it.
class GapUnion {
 public:
  struct First {
    uint64_t start = 0, seq = 0;
    uint32_t corr = 0;
    bool operator<(const First& o) const { return std::tie(start, seq) < std::tie(o.start, o.seq); }
  };
  struct Span {
    uint64_t end = 0;
    First first;
  };
  // `tolerance`: spans at most this far apart are merged; with `grow`, it may grow (never
  // past an fiftieth of the spans' extent, hence of the window) to keep the spans few.
  explicit GapUnion(uint64_t tolerance = 0, bool grow = false) : tolerance_(tolerance), grow_(grow) {}
  void add(uint64_t b, uint64_t e, const First& first);
  void absorb(const GapUnion& other);
  uint64_t tolerance() const { return tolerance_; }
  size_t size() const { return spans_.size(); }
  const std::map<uint64_t, Span>& spans() const { return spans_; }
  static constexpr size_t kFewSpans = 4096;  // past this, a growing tolerance grows

 private:
  void merge(uint64_t b, Span s);
  void grow();
  uint64_t tolerance_;
  bool grow_;
  std::map<uint64_t, Span> spans_;  // by begin
};

}  // namespace gantt::streamed
