// Utilisation over time: per device, the share of each time bucket with a kernel running
// (compute), with a copy running (copy) and with anything running (busy; idle = 1 - busy),
// from the unions of the selected events. `render --view utilisation` draws it and
// `stats --timeline BUCKET` writes it.
//
// A drop is a run of buckets whose busy share falls under half the median of the kDropWindow
// buckets before the run, where that median was at least kDropMinMedian, and after which the
// device gets busy again: the moments a steady run stalled, not its warm-up and not its end.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gantt/analysis/intervals.h"
#include "gantt/model/filter.h"
#include "gantt/model/model.h"

namespace gantt::analysis {

inline constexpr size_t kDropWindow = 15;
inline constexpr double kDropMinMedian = 0.2;
inline constexpr double kDropFraction = 0.5;
// Buckets a timeline holds at most: a 1 ns bucket over an hour would be 3.6e12 of them.
inline constexpr uint64_t kMaxBuckets = 1'000'000;

struct DeviceTimeline {
  uint16_t capture = 0;
  uint32_t device = 0;
  std::vector<double> compute, copy, busy;  // per bucket, 0..1
  struct Drop {
    size_t first = 0, buckets = 0;  // the run of low buckets
    double median = 0;              // the busy share before it
    double lowest = 0;              // the lowest busy share in it
  };
  std::vector<Drop> drops;
  bool in_drop(size_t bucket) const;
};

struct Timeline {
  uint64_t start_ns = 0;   // first bucket's start (absolute)
  uint64_t bucket_ns = 0;
  size_t buckets = 0;
  uint64_t events = 0;                  // the selected events it was made of
  std::vector<DeviceTimeline> devices;  // by (capture, device)
};

// The drops (as above) of one series of shares per bucket, 0..1: the timeline's busy share,
// or a node's GPU utilisation as DCGM sampled it (jobs --metrics).
std::vector<DeviceTimeline::Drop> find_drops(const std::vector<double>& share);

// A bucket that gives about `target` buckets over `span_ns`: 1, 2 or 5 times a power of ten ns.
uint64_t auto_bucket_ns(uint64_t span_ns, size_t target = 200);

// What an event adds to its device's timeline: nothing (waits, host work), the busy union
// only (memsets), and also the compute union (kernels, NCCL) or the copy union (copies).
enum class TimelineWork : uint8_t { kNone, kBusy, kCompute, kCopy };
TimelineWork timeline_work(EventKind kind);

// One device's unions of the selected events' [start, end), each merged (merge_intervals()).
struct DeviceUnions {
  std::vector<Interval> compute, copy, busy;
};
using UnionsByDevice = std::map<std::pair<uint16_t, uint32_t>, DeviceUnions>;  // by (capture, device)

// The timeline of `devices` over [window_start_ns, window_end_ns]: what utilisation_timeline()
// makes of a model's events, from their unions however they were gathered (a scan keeps the
// unions, not the events). bucket_ns 0 = auto_bucket_ns. Throws std::invalid_argument when the
// bucket would make more than kMaxBuckets buckets.
Timeline timeline_of(const UnionsByDevice& devices, uint64_t window_start_ns, uint64_t window_end_ns, uint64_t bucket_ns);

// Over the selection's window (timeline_of() of the selected events' unions).
Timeline utilisation_timeline(const Model& model, const Selection& selection, uint64_t bucket_ns);

// `stats --timeline`: one row per (bucket, device): start (us from start_ns), compute %, copy
// %, busy %, idle %, drop (1 inside a drop). `format`: csv, json, md or text.
std::string format_timeline(const Model& model, const Timeline& t, const std::string& format);

}  // namespace gantt::analysis
