// The flags of a streamed chart (stream_render.h, AnnotateOptions::streamed): the idle gaps'
// activity union, the gaps, the copies overlapped and the assembly of what the two reads
// found into annotate()'s Annotations.
#include <algorithm>
#include <string>

#include "gantt/render/annotate.h"
#include "stream_read.h"

namespace gantt::streamed {

namespace {
uint64_t saturating_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
}  // namespace

void GapUnion::merge(uint64_t b, Span s) {
  // The spans that start at most a tolerance after it ends, back to the first that ends more
  // than a tolerance before it starts.
  auto it = spans_.upper_bound(saturating_add(s.end, tolerance_));
  while (it != spans_.begin()) {
    auto prev = std::prev(it);
    if (saturating_add(prev->second.end, tolerance_) < b) break;
    b = std::min(b, prev->first);
    s.end = std::max(s.end, prev->second.end);
    s.first = std::min(s.first, prev->second.first);
    it = spans_.erase(prev);
  }
  spans_.emplace_hint(it, b, s);
}

void GapUnion::add(uint64_t b, uint64_t e, const First& first) {
  if (!spans_.empty()) {  // most events come in start order: at or after the last span
    auto last = std::prev(spans_.end());
    if (b >= last->first) {
      if (b <= saturating_add(last->second.end, tolerance_)) {
        last->second.end = std::max(last->second.end, e);
        last->second.first = std::min(last->second.first, first);
      } else {
        spans_.emplace_hint(spans_.end(), b, Span{e, first});
        if (grow_ && spans_.size() > kFewSpans) grow();
      }
      return;
    }
  }
  merge(b, Span{e, first});
  if (grow_ && spans_.size() > kFewSpans) grow();
}

void GapUnion::grow() {
  const uint64_t extent = spans_.rbegin()->second.end - spans_.begin()->first;
  tolerance_ = std::max(tolerance_, extent / 50);
  std::map<uint64_t, Span> old;
  old.swap(spans_);
  for (const auto& [b, s] : old) merge(b, s);
}

void GapUnion::absorb(const GapUnion& other) {
  grow_ = grow_ || other.grow_;
  if (other.tolerance_ > tolerance_) {  // its own spans merged at the larger tolerance first
    tolerance_ = other.tolerance_;
    std::map<uint64_t, Span> old;
    old.swap(spans_);
    for (const auto& [b, s] : old) merge(b, s);
  }
  for (const auto& [b, s] : other.spans_) merge(b, s);
  if (grow_ && spans_.size() > kFewSpans) grow();
}

bool idle_gaps(const std::vector<Scan>& scans, const Selection& sel, const AnnotateOptions& o, std::vector<IdleGap>* out) {
  std::map<uint32_t, GapUnion> activity;
  for (const Scan& sc : scans)
    for (const auto& [device, u] : sc.activity) activity[device].absorb(u);
  const int64_t idle_ns = idle_gap_threshold_ns(o, sel.window_end_ns - sel.window_start_ns);
  for (const auto& [device, u] : activity) {
    if (u.tolerance() > static_cast<uint64_t>(idle_ns)) return false;
    std::vector<IdleGap> gaps;
    std::vector<uint64_t> lengths;
    uint64_t prev_end = 0;
    bool first = true;
    for (const auto& [b, span] : u.spans()) {
      if (!first && static_cast<int64_t>(b - prev_end) > idle_ns) {
        gaps.push_back({device, prev_end, b, span.first, false});
        lengths.push_back(b - prev_end);
      }
      prev_end = span.end;
      first = false;
    }
    const std::vector<bool> explain = explained_gaps(lengths);
    for (size_t i = 0; i < gaps.size(); ++i) gaps[i].explain = explain[i];
    out->insert(out->end(), gaps.begin(), gaps.end());
  }
  return true;
}

namespace {

// annotate()'s copies overlapped with compute: every copy against its device's compute union,
// in annotate()'s order (by device, then start); the drawn ones flagged while among the first
// kMaxAnnotationsPerKind. False when a share kept too many copies to tell.
bool overlapped_copies(const std::vector<Fold>& folds, const BusyUnions& busy, const std::map<uint64_t, uint32_t>& held_event,
                       Annotations* out) {
  std::vector<Fold::Copy> copies;
  for (const Fold& fo : folds) {
    if (fo.too_many_copies) return false;
    copies.insert(copies.end(), fo.copies.begin(), fo.copies.end());
  }
  std::sort(copies.begin(), copies.end(), [](const Fold::Copy& a, const Fold::Copy& b) {
    return std::tie(a.device, a.start, a.seq) < std::tie(b.device, b.start, b.seq);
  });
  const SpanUnion none;
  uint64_t& count = out->count[static_cast<size_t>(AnnotationKind::kOverlap)];
  for (const Fold::Copy& c : copies) {
    auto it = busy.find({c.device, BusyClass::kCompute});
    const std::vector<SpanUnion::Span>& compute = (it == busy.end() ? none : it->second).spans();
    // annotate.cpp overlap_with(): the disjoint spans from the first that ends after the copy starts.
    uint64_t ov = 0;
    auto s = std::upper_bound(compute.begin(), compute.end(), c.start,
                              [](uint64_t t, const SpanUnion::Span& span) { return t < span.first; });
    if (s != compute.begin() && std::prev(s)->second > c.start) --s;
    for (; s != compute.end() && s->first < c.end; ++s) ov += std::min(c.end, s->second) - std::max(c.start, s->first);
    if (ov == 0) continue;
    if (count++ >= kMaxAnnotationsPerKind) continue;
    auto e = held_event.find(c.seq);
    if (e == held_event.end()) continue;  // drawn as coverage: counted only
    out->items.push_back({AnnotationKind::kOverlap, e->second, 0, c.device, c.start, c.end, overlap_label(ov, c.start, c.end)});
  }
  return true;
}

}  // namespace

Annotations streamed_annotations(const Model& held, const Selection& drawn, const AnnotateOptions& o,
                                 const std::vector<uint64_t>& seq_of_event, const std::vector<analysis::WaitSplit>& waits,
                                 const std::vector<Fold>& folds, const BusyUnions& busy, const std::vector<IdleGap>& idle) {
  const Annotations of_held = annotate(held, drawn, o, kMaxAnnotationsPerKind, &waits);
  Annotations out;
  std::map<uint64_t, uint32_t> held_event;  // seq -> event of the held model
  for (uint32_t e : drawn.events) held_event.emplace(seq_of_event[e], e);
  out.not_counted |= 1u << static_cast<unsigned>(AnnotationKind::kMissedOverlap);
  if (!overlapped_copies(folds, busy, held_event, &out)) out.not_counted |= 1u << static_cast<unsigned>(AnnotationKind::kOverlap);
  out.count[static_cast<size_t>(AnnotationKind::kQueueDelay)] = of_held.count[static_cast<size_t>(AnnotationKind::kQueueDelay)];
  std::vector<Order> low;
  uint64_t& low_count = out.count[static_cast<size_t>(AnnotationKind::kLowOccupancy)];
  for (const Fold& fo : folds) {
    low_count += fo.low_occupied;
    low.insert(low.end(), fo.low_first.begin(), fo.low_first.end());
  }
  std::sort(low.begin(), low.end());
  for (const Annotation& a : of_held.items) {
    if (a.kind == AnnotationKind::kQueueDelay) out.items.push_back(a);
    if (a.kind != AnnotationKind::kLowOccupancy) continue;
    const Order at = order_of(event_begin_ns(held, a.event), seq_of_event[a.event]);
    if (low_count <= kMaxAnnotationsPerKind || at <= low[kMaxAnnotationsPerKind - 1]) out.items.push_back(a);
  }
  out.count[static_cast<size_t>(AnnotationKind::kIdleGap)] = idle.size();
  for (size_t i = 0; i < idle.size() && i < kMaxAnnotationsPerKind; ++i) {
    const IdleGap& g = idle[i];
    std::string why;
    if (g.explain) {
      // The launch call of the event that ended the gap: the last with its id in the file.
      const Fold::Call* launch = nullptr;
      for (const Fold& fo : folds)
        if (auto it = fo.gap_launches.find(g.next.corr); it != fo.gap_launches.end() && (!launch || it->second.seq > launch->seq))
          launch = &it->second;
      GapHost h;
      const Fold::Cover* best = nullptr;
      if (g.next.corr != 0 && launch) {
        h.launch_known = true;
        h.launch_start = launch->start;
        for (const Fold& fo : folds)
          if (auto it = fo.gap_calls[g.label].find(launch->thread);
              it != fo.gap_calls[g.label].end() && (!best || it->second.better_than(*best)))
            best = &it->second;
      }
      if (best) {
        h.found = true;
        h.best_call = best->name;
        h.best_cover = best->cover;
      }
      why = gap_host_text(h, g.begin, g.end);
    }
    out.items.push_back({AnnotationKind::kIdleGap, kNone, 0, g.device, g.begin, g.end,
                         idle_gap_label(g.begin, g.end, why)});
  }
  sort_items(out.items);
  return out;
}

}  // namespace gantt::streamed
