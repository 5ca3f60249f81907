// The data block of the HTML page (html.h): lanes, packed events, names, the level-of-detail
// pyramids, the utilisation per device and the annotations, as one JSON object.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>

#include "gantt/analysis/memory.h"
#include "gantt/analysis/table.h"
#include "gantt/analysis/timeline.h"
#include "gantt/analysis/waits.h"
#include "gantt/annotate.h"
#include "gantt/colors.h"
#include "gantt/html.h"
#include "gantt/json.h"
#include "gantt/lod.h"
#include "gantt/ranks.h"
#include "gantt/text.h"
#include "render_builder.h"
#include "render_internal.h"

namespace gantt::html {

void append_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::string base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16 |
                       static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8 | static_cast<uint8_t>(in[i + 2]);
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (const size_t rest = in.size() - i) {
    uint32_t v = static_cast<uint32_t>(static_cast<uint8_t>(in[i])) << 16;
    if (rest == 2) v |= static_cast<uint32_t>(static_cast<uint8_t>(in[i + 1])) << 8;
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], rest == 2 ? kAlphabet[(v >> 6) & 63] : '=', '='};
  }
  return out;
}

void append_script_string(std::string& out, std::string_view bytes) {
  std::string s;
  json::append_string(s, bytes);
  // Inside <script>, "</script" ends the element and "<!--" changes how it is parsed, whatever
  // JSON says; '&' is escaped too so the text means the same parsed as HTML or as JSON.
  for (char c : s) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out.push_back(c);
  }
}

size_t lod_buckets(size_t events) {
  return std::clamp<size_t>(std::bit_ceil(std::max<size_t>(events / 2, 1)), kMinBuckets, kMaxBuckets);
}

std::string lod_levels(const std::vector<double>& finest, size_t min_buckets) {
  std::string out;
  std::vector<double> level = finest;
  for (;;) {
    for (double v : level)
      out.push_back(static_cast<char>(v <= 0 ? 0 : std::clamp<long>(std::lround(v * 255), 1, 255)));
    if (level.size() <= min_buckets || level.size() < 2) break;
    std::vector<double> coarser(level.size() / 2);
    for (size_t i = 0; i < coarser.size(); ++i) coarser[i] = (level[2 * i] + level[2 * i + 1]) / 2;
    level = std::move(coarser);
  }
  return out;
}

namespace {

std::string hex(Color c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

struct PageLane {
  LaneKey key;
  std::vector<uint32_t> events;  // start order
  int32_t priority = 0;
  size_t section = 0;
};

struct Section {
  uint16_t capture = 0;
  uint32_t device = kNone;  // kNone: lanes that are not per device (--lanes thread)
  std::vector<size_t> lanes;
};

class DataWriter {
 public:
  DataWriter(const Model& m, const Selection& sel, const RenderOptions& o, HtmlStats& st)
      : m_(m), sel_(sel), o_(o), st_(st) {}

  std::string build();

 private:
  void bucket_lanes();
  void write_strings();
  void write_sections();
  void write_lanes();
  void write_annotations();
  void write_collectives();
  void pick_ranges();
  void write_ranges();
  uint32_t label_of(uint32_t e);
  uint32_t call_of(uint32_t e);
  int64_t rel(uint64_t t) const { return static_cast<int64_t>(t - t0_); }

  const Model& m_;
  const Selection& sel_;
  const RenderOptions& o_;
  HtmlStats& st_;
  std::string j_;
  uint64_t t0_ = 0, t1_ = 0;
  std::map<LaneKey, PageLane> by_key_;
  std::vector<PageLane*> lanes_;
  std::vector<Section> sections_;
  // Events point into these: (name, kind, copy kind) -> display name, kind, colour; the host
  // call that launched it -> "cudaLaunchKernel, tid 100".
  std::map<std::tuple<uint32_t, EventKind, uint8_t>, uint32_t> label_ids_;
  std::vector<uint32_t> label_event_;  // an event that has the label
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> call_ids_;
  std::vector<uint32_t> call_api_{kNone};  // an API row with the call; [0] = none
  std::vector<uint32_t> lane_of_, index_of_;  // event -> lane and its place in it, kNone where not on one
  // NVTX ranges on the host thread lanes: the ranges in page order (start, then depth, so a
  // parent comes before its children) and each range's place in it (kNone: not on the page).
  std::vector<uint32_t> page_ranges_;
  std::vector<uint32_t> range_index_;
};

// Ranges the page carries: every depth (the page nests them all, and a kernel's range path
// needs its innermost range), up to this many; past it, the earliest, and events launched in
// a range left out have no range on the page.
constexpr size_t kMaxPageRanges = 200000;

uint32_t DataWriter::label_of(uint32_t e) {
  const auto key = std::make_tuple(m_.events.name[e], m_.events.kind[e], m_.events.copy_kind[e]);
  auto [it, added] = label_ids_.emplace(key, static_cast<uint32_t>(label_event_.size()));
  if (added) label_event_.push_back(e);
  return it->second;
}

uint32_t DataWriter::call_of(uint32_t e) {
  const uint32_t a = m_.events.api[e];
  if (a == kNone) return 0;
  auto [it, added] = call_ids_.emplace(std::make_pair(m_.api.name[a], m_.api.thread[a]), static_cast<uint32_t>(call_api_.size()));
  if (added) call_api_.push_back(a);
  return it->second;
}

void DataWriter::bucket_lanes() {
  // As build_scene: synchronisations are the host waiting, not work on a lane; an event
  // without both times has no place on one (unknown stays unknown).
  for (uint32_t e : sel_.events) {
    if (m_.events.kind[e] == EventKind::kSync) { ++st_.syncs; continue; }
    const uint64_t b = m_.events.start_ns[e], en = m_.events.end_ns[e];
    if (!b || en < b) { ++st_.events_untimed; continue; }
    PageLane& lane = by_key_[lane_key(m_, e, o_.lanes)];
    lane.events.push_back(e);
    if (lane.priority == 0) lane.priority = m_.events.priority[e];
  }
  // Sections as build_scene's: a device's lanes under its header and utilisation strip; with
  // --lanes rank a capture's lane under its last device; --lanes thread, one section of lanes.
  std::map<uint16_t, uint32_t> last_device;
  for (const auto& [key, lane] : by_key_)
    for (uint32_t e : lane.events) last_device[key.capture] = std::max(last_device[key.capture], m_.events.device[e]);
  const auto section_key = [&](const LaneKey& key) {
    if (o_.lanes == LaneMode::kThread) return std::make_pair(uint16_t{0}, kNone);
    return std::make_pair(key.capture, o_.lanes == LaneMode::kRank ? last_device[key.capture] : key.device);
  };
  std::map<std::pair<uint16_t, uint32_t>, size_t> section_of;
  for (const auto& [key, lane] : by_key_) section_of.emplace(section_key(key), 0);
  for (auto& [skey, index] : section_of) {
    index = sections_.size();
    sections_.push_back({skey.first, skey.second, {}});
  }
  for (auto& [key, lane] : by_key_) {
    lane.key = key;
    lane.section = section_of[section_key(key)];
    sections_[lane.section].lanes.push_back(lanes_.size());
    lanes_.push_back(&lane);
  }
  // Lanes in the order the page stacks them: section by section.
  std::vector<PageLane*> ordered;
  for (const Section& s : sections_)
    for (size_t i : s.lanes) ordered.push_back(lanes_[i]);
  lanes_ = std::move(ordered);
  size_t i = 0;
  for (Section& s : sections_)
    for (size_t& l : s.lanes) l = i++;
  lane_of_.assign(m_.events.size(), kNone);
  index_of_.assign(m_.events.size(), kNone);
  for (size_t l = 0; l < lanes_.size(); ++l) {
    std::vector<uint32_t>& ev = lanes_[l]->events;
    // Start order (the selection's already; stable keeps its tie order).
    std::stable_sort(ev.begin(), ev.end(),
                     [&](uint32_t a, uint32_t b) { return m_.events.start_ns[a] < m_.events.start_ns[b]; });
    for (size_t k = 0; k < ev.size(); ++k) {
      lane_of_[ev[k]] = static_cast<uint32_t>(l);
      index_of_[ev[k]] = static_cast<uint32_t>(k);
    }
    st_.events += ev.size();
  }
  st_.lanes = lanes_.size();
}

void DataWriter::write_sections() {
  // The utilisation strip per device: analysis::utilisation_timeline at the finest level's
  // bucket, halved up to the coarsest.
  std::map<std::pair<uint16_t, uint32_t>, size_t> device_events;
  for (const PageLane* l : lanes_)
    for (uint32_t e : l->events) ++device_events[{m_.events.capture[e], m_.events.device[e]}];
  size_t most = 0;
  for (const auto& [k, n] : device_events) most = std::max(most, n);
  const size_t buckets = lod_buckets(most);
  const uint64_t span = std::max<uint64_t>(t1_ - t0_, 1);
  const uint64_t bucket_ns = std::max<uint64_t>((span + buckets - 1) / buckets, 1);
  analysis::Timeline tl;
  if (!lanes_.empty()) tl = analysis::utilisation_timeline(m_, sel_, bucket_ns);
  // --memory-strip: memory in use per device, the step function of analysis::memory_report
  // (all classes together; the PNG chart splits them by class or category).
  std::map<std::pair<uint16_t, uint32_t>, analysis::DeviceMemory> memory;
  if (o_.memory_strip && !lanes_.empty())
    for (analysis::DeviceMemory& d : analysis::memory_report(m_)) memory.emplace(std::make_pair(d.capture, d.device), std::move(d));
  j_ += ",\"util_buckets\":" + std::to_string(buckets) + ",\"util_bucket_ns\":" + std::to_string(bucket_ns);
  j_ += ",\"sections\":[";
  for (size_t i = 0; i < sections_.size(); ++i) {
    const Section& s = sections_[i];
    if (i) j_ += ',';
    j_ += "{\"label\":";
    std::string label = s.device == kNone ? "GPU lanes by launching thread" : device_section_label(m_, s.capture, s.device);
    if (m_.captures.size() > 1 && s.device != kNone) label = utf8_clean(rank_lane_label(m_, s.capture)) + " \xC2\xB7 " + label;
    append_script_string(j_, label);
    j_ += ",\"capture\":" + std::to_string(s.capture);
    j_ += ",\"lanes\":[";
    for (size_t k = 0; k < s.lanes.size(); ++k) j_ += (k ? "," : "") + std::to_string(s.lanes[k]);
    j_ += ']';
    for (const analysis::DeviceTimeline& d : tl.devices) {
      if (s.device == kNone || d.capture != s.capture || d.device != s.device) continue;
      std::vector<double> compute(buckets, 0.0), copy(buckets, 0.0);
      for (size_t b = 0; b < d.compute.size() && b < buckets; ++b) compute[b] = d.compute[b], copy[b] = d.copy[b];
      double compute_ns = 0, copy_ns = 0;
      for (size_t b = 0; b < d.compute.size(); ++b) compute_ns += d.compute[b], copy_ns += d.copy[b];
      j_ += ",\"compute\":\"" + base64(lod_levels(compute, kMinBuckets)) + "\"";
      j_ += ",\"copy\":\"" + base64(lod_levels(copy, kMinBuckets)) + "\"";
      // The strip's label, as build_scene's: share of the window.
      const double scale = static_cast<double>(bucket_ns) / static_cast<double>(span);
      j_ += ",\"busy_label\":";
      append_script_string(j_, "busy: compute " + std::to_string(std::lround(100 * compute_ns * scale)) + "%, copy " +
                                   std::to_string(std::lround(100 * copy_ns * scale)) + "%");
    }
    if (auto mem = memory.find({s.capture, s.device}); s.device != kNone && mem != memory.end()) {
      // One varint run: per change, its time as a delta from the one before (zigzag, ns from
      // the window's start), then the bytes in use after it (viewer_draw.js drawMemory).
      const analysis::DeviceMemory& d = mem->second;
      std::string packed;
      int64_t prev = 0;
      for (size_t i = 0; i < d.t.size(); ++i) {
        const int64_t t = rel(d.t[i]);
        append_varint(packed, zigzag(t - prev));
        prev = t;
        append_varint(packed, d.total(i));
      }
      j_ += ",\"memory\":{\"n\":" + std::to_string(d.t.size()) + ",\"peak_bytes\":" + std::to_string(d.peak_bytes) +
            ",\"peak_ns\":" + std::to_string(rel(d.peak_ns)) + ",\"steps\":\"" + base64(packed) + "\",\"label\":";
      append_script_string(j_, "memory: peak " + analysis::bytes_text(d.peak_bytes));
      j_ += '}';
    }
    j_ += '}';
  }
  j_ += ']';
}

void DataWriter::write_lanes() {
  const uint64_t span = std::max<uint64_t>(t1_ - t0_, 1);
  j_ += ",\"lanes\":[";
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const PageLane& lane = *lanes_[l];
    if (l) j_ += ',';
    j_ += "{\"label\":";
    append_script_string(j_, lane_label(m_, lane.key, o_.lanes, lane.priority));
    j_ += ",\"section\":" + std::to_string(lane.section) + ",\"n\":" + std::to_string(lane.events.size());
    const std::vector<int> rows = overlap_rows(m_, lane.events, detail::kMaxOverlapRows);
    const int max_row = rows.empty() ? 0 : *std::max_element(rows.begin(), rows.end());
    j_ += ",\"rows\":" + std::to_string(max_row + 1);
    // The events: one varint run, fields per event in this order (viewer.js decodeLane).
    std::string packed;
    packed.reserve(lane.events.size() * 12);
    const size_t buckets = lod_buckets(lane.events.size());
    Coverage cov(static_cast<int>(buckets));
    const double per_ns = static_cast<double>(buckets) / static_cast<double>(span);
    int64_t prev = 0, prev_range = 0;
    const EventTable& ev = m_.events;
    for (size_t k = 0; k < lane.events.size(); ++k) {
      const uint32_t e = lane.events[k];
      const int64_t start = rel(ev.start_ns[e]);
      append_varint(packed, zigzag(start - prev));
      prev = start;
      append_varint(packed, ev.end_ns[e] - ev.start_ns[e]);
      append_varint(packed, static_cast<uint64_t>(rows[k]));
      append_varint(packed, label_of(e));
      for (const uint64_t t : {ev.queued_ns[e], ev.submitted_ns[e], m_.launch_ns(e)})
        append_varint(packed, t ? zigzag(static_cast<int64_t>(ev.start_ns[e] - t)) + 1 : 0);
      const uint32_t call = call_of(e);
      append_varint(packed, call);
      if (call) {
        const uint32_t a = ev.api[e];
        append_varint(packed, m_.api.end_ns[a] > m_.api.start_ns[a] ? m_.api.end_ns[a] - m_.api.start_ns[a] : 0);
      }
      // Only where the page has ranges: a capture without NVTX pays nothing for them. As a
      // delta from the event before's (zigzag): neighbours on a lane mostly share a range or
      // come from the next one, a byte where the index itself takes up to three.
      if (!page_ranges_.empty()) {
        const uint32_t r = ev.range[e];
        const int64_t range = r < range_index_.size() && range_index_[r] != kNone ? int64_t{range_index_[r]} + 1 : 0;
        append_varint(packed, zigzag(range - prev_range));
        prev_range = range;
      }
      cov.add(static_cast<double>(start) * per_ns, static_cast<double>(rel(ev.end_ns[e])) * per_ns);
    }
    j_ += ",\"events\":\"" + base64(packed) + "\"";
    std::vector<double> finest(buckets);
    for (size_t b = 0; b < buckets; ++b) finest[b] = cov.busy(static_cast<int>(b));
    j_ += ",\"lod_buckets\":" + std::to_string(buckets) + ",\"lod\":\"" + base64(lod_levels(finest, kMinBuckets)) + "\"}";
  }
  j_ += ']';
}

void DataWriter::pick_ranges() {
  range_index_.assign(m_.ranges.size(), kNone);
  if (!o_.host_lanes) return;
  for (uint32_t r = 0; r < m_.ranges.size(); ++r) {
    const uint64_t b = m_.ranges.start_ns[r], e = m_.ranges.end_ns[r] ? m_.ranges.end_ns[r] : t1_;
    if (b && b <= t1_ && e >= t0_ && m_.ranges.thread[r] < m_.threads.size()) page_ranges_.push_back(r);
  }
  std::stable_sort(page_ranges_.begin(), page_ranges_.end(), [&](uint32_t a, uint32_t b) {
    return std::make_pair(m_.ranges.start_ns[a], m_.ranges.depth[a]) < std::make_pair(m_.ranges.start_ns[b], m_.ranges.depth[b]);
  });
  if (page_ranges_.size() > kMaxPageRanges) {
    st_.ranges_left_out = page_ranges_.size() - kMaxPageRanges;
    page_ranges_.resize(kMaxPageRanges);
  }
  for (size_t i = 0; i < page_ranges_.size(); ++i) range_index_[page_ranges_[i]] = static_cast<uint32_t>(i);
  st_.ranges = page_ranges_.size();
}

void DataWriter::write_ranges() {
  // Host thread lanes, (capture, tid) order as build_scene's, each the ranges of one thread.
  std::map<std::pair<uint16_t, uint64_t>, uint32_t> threads;
  for (uint32_t r : page_ranges_) {
    const uint32_t t = m_.ranges.thread[r];
    threads.emplace(std::make_pair(m_.threads.capture[t], m_.threads.thread_id[t]), t);
  }
  std::map<uint32_t, uint32_t> lane_of_thread;
  std::vector<int> depth(threads.size(), 0);
  j_ += ",\"host_lanes\":[";
  for (const auto& [key, t] : threads) {
    if (!lane_of_thread.empty()) j_ += ',';
    const uint32_t lane = static_cast<uint32_t>(lane_of_thread.size());
    lane_of_thread[t] = lane;
    std::string label = "tid " + std::to_string(key.second);
    if (m_.threads.name[t]) label += " " + utf8_clean(m_.string(m_.threads.name[t]));
    if (m_.captures.size() > 1) label = "#" + std::to_string(key.first) + " " + label;
    append_script_string(j_, label);
  }
  // The ranges: one varint run, fields per range in this order (viewer_host.js decodeRanges):
  // host lane, start delta (zigzag), end as end - start + 1 (0 = never closed), depth, parent
  // as page index + 1 (0 = none), name, colour.
  std::map<uint32_t, uint32_t> name_ids, colour_ids;
  std::string names = "[", colours = "[", packed;
  int64_t prev = 0;
  for (uint32_t r : page_ranges_) {
    const RangeTable& R = m_.ranges;
    append_varint(packed, lane_of_thread[R.thread[r]]);
    const int64_t start = rel(R.start_ns[r]);
    append_varint(packed, zigzag(start - prev));
    prev = start;
    append_varint(packed, R.end_ns[r] >= R.start_ns[r] ? R.end_ns[r] - R.start_ns[r] + 1 : 0);
    append_varint(packed, R.depth[r]);
    const uint32_t parent = R.parent[r] < range_index_.size() ? range_index_[R.parent[r]] : kNone;
    append_varint(packed, parent == kNone ? 0 : uint64_t{parent} + 1);
    auto [n, new_name] = name_ids.emplace(R.name[r], static_cast<uint32_t>(name_ids.size()));
    if (new_name) {
      if (n->second) names += ',';
      append_script_string(names, utf8_clean(m_.string(R.name[r])));
    }
    append_varint(packed, n->second);
    auto [c, new_colour] = colour_ids.emplace(R.color[r], static_cast<uint32_t>(colour_ids.size()));
    if (new_colour) colours += std::string(c->second ? "," : "") + "\"" + hex(range_color(R.color[r])) + "\"";
    append_varint(packed, c->second);
  }
  j_ += "],\"ranges\":{\"n\":" + std::to_string(page_ranges_.size()) + ",\"packed\":\"" + base64(packed) +
        "\",\"names\":" + names + "],\"colours\":" + colours + "],\"left_out\":" + std::to_string(st_.ranges_left_out) + "}";
}

// Several ranks: each collective matched across them (collective_links, the same the chart
// links and outlines), its ranks' kernels on the page and the last to arrive. One varint run,
// fields per collective in this order (viewer_ranks.js decodeCollectives): first start delta
// (zigzag, ns from the window's start), end - first start, last rank + 1, spread (last - first
// arrival), how many of its kernels are on the page, then per kernel its lane and index, then
// which of them arrived last (its place in that list + 1, 0 = not on the page).
void DataWriter::write_collectives() {
  std::string packed;
  size_t n = 0;
  int64_t prev = 0;
  if (o_.collective_links && m_.captures.size() > 1) {
    for (const CollectiveLink& l : collective_links(m_)) {
      std::vector<uint32_t> on_page;
      uint64_t first = UINT64_MAX;
      for (uint32_t e : l.events) {
        if (e >= lane_of_.size() || lane_of_[e] == kNone) continue;
        on_page.push_back(e);
        first = std::min(first, m_.events.start_ns[e]);
      }
      if (on_page.empty()) continue;
      const int64_t start = rel(first);
      append_varint(packed, zigzag(start - prev));
      prev = start;
      append_varint(packed, l.end_ns > first ? l.end_ns - first : 0);
      append_varint(packed, static_cast<uint64_t>(std::max(l.last_rank, -1) + 1));
      append_varint(packed, l.spread_ns);
      append_varint(packed, on_page.size());
      size_t last = 0;
      for (size_t k = 0; k < on_page.size(); ++k) {
        append_varint(packed, lane_of_[on_page[k]]);
        append_varint(packed, index_of_[on_page[k]]);
        if (on_page[k] == l.last_event) last = k + 1;
      }
      append_varint(packed, last);
      ++n;
    }
  }
  st_.collectives = n;
  j_ += ",\"collectives\":{\"n\":" + std::to_string(n) + ",\"packed\":\"" + base64(packed) + "\"}";
}

void DataWriter::write_strings() {
  j_ += ",\"labels\":[";
  for (size_t i = 0; i < label_event_.size(); ++i) {
    const uint32_t e = label_event_[i];
    if (i) j_ += ',';
    j_ += '[';
    append_script_string(j_, ellipsize(m_.display_name(e), 2000));
    j_ += ',';
    std::string kind = to_string(m_.events.kind[e]);
    if (m_.events.kind[e] == EventKind::kMemcpy) kind += std::string(" ") + copy_kind_name(m_.events.copy_kind[e]);
    append_script_string(j_, kind);
    j_ += ",\"" + hex(exec_color(m_, e)) + "\"]";
  }
  j_ += "],\"calls\":[\"\"";
  for (size_t i = 1; i < call_api_.size(); ++i) {
    const uint32_t a = call_api_[i];
    std::string c(api_display_name(m_.string(m_.api.name[a])));
    const uint32_t t = m_.api.thread[a];
    if (t < m_.threads.size()) {
      c += ", tid " + std::to_string(m_.threads.thread_id[t]);
      if (m_.threads.name[t]) c += " (" + std::string(m_.string(m_.threads.name[t])) + ")";
    }
    j_ += ',';
    append_script_string(j_, c);
  }
  j_ += ']';
}

void DataWriter::write_annotations() {
  Annotations ann;
  if (o_.annotate.enabled && !lanes_.empty()) ann = annotate(m_, sel_, o_.annotate);
  // Columns: kind (AnnotationKind), lane and index of the event (-1: a device's idle gap,
  // drawn on its section's strip), section, start and end (ns from t0), label.
  std::string kind, lane, index, section, start, end, label;
  size_t n = 0;
  for (const Annotation& a : ann.items) {
    int64_t l = -1, i = -1, s = -1;
    if (a.kind == AnnotationKind::kIdleGap) {
      for (size_t k = 0; k < sections_.size(); ++k)
        if (sections_[k].capture == a.capture && sections_[k].device == a.device) s = static_cast<int64_t>(k);
      if (s < 0) continue;
    } else {
      if (a.event == kNone || a.event >= lane_of_.size() || lane_of_[a.event] == kNone) continue;
      l = lane_of_[a.event];
      i = index_of_[a.event];
      s = static_cast<int64_t>(lanes_[static_cast<size_t>(l)]->section);
    }
    const char* sep = n ? "," : "";
    kind += sep + std::to_string(static_cast<int>(a.kind));
    lane += sep + std::to_string(l);
    index += sep + std::to_string(i);
    section += sep + std::to_string(s);
    start += sep + std::to_string(rel(a.start_ns));
    end += sep + std::to_string(rel(a.end_ns));
    label += sep;
    append_script_string(label, a.label);
    ++n;
  }
  st_.annotations = n;
  j_ += ",\"annotations\":{\"kind\":[" + kind + "],\"lane\":[" + lane + "],\"index\":[" + index + "],\"section\":[" +
        section + "],\"start\":[" + start + "],\"end\":[" + end + "],\"label\":[" + label + "]}";
  RenderStats rs;
  rs.events_selected = st_.events;
  rs.events_individual = st_.events;
  rs.syncs_on_host_lanes = st_.syncs;
  j_ += ",\"footer\":[";
  std::vector<std::string> lines = detail::footer_lines(m_, sel_, o_, rs, ann);
  // The chart's event line counts what one picture drew; the page draws per view.
  std::string events_line = "events: " + std::to_string(st_.events) + " on " + std::to_string(st_.lanes) +
                            " lanes, drawn one by one where they fit in view, else as busy coverage";
  if (st_.syncs) events_line += "; " + std::to_string(st_.syncs) + " synchronisations (host waits) not on the lanes";
  if (st_.events_untimed) events_line += "; " + std::to_string(st_.events_untimed) + " without start or end not drawn";
  for (std::string& l : lines) {
    const size_t at = l.starts_with("events: ") ? 0 : l.find(" \xC2\xB7 events: ");
    if (at != std::string::npos) l = l.substr(0, at) + (at ? " \xC2\xB7 " : "") + events_line;
  }
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k) j_ += ',';
    append_script_string(j_, lines[k]);
  }
  j_ += ']';
}

std::string DataWriter::build() {
  t0_ = sel_.window_start_ns;
  t1_ = std::max(sel_.window_end_ns, t0_ + 1);
  bucket_lanes();
  pick_ranges();
  const uint64_t origin = sel_.origin_ns ? sel_.origin_ns : m_.first_ns();
  j_ = "{\"format\":1,\"title\":";
  append_script_string(j_, detail::title_of(m_));
  j_ += ",\"span_ns\":" + std::to_string(t1_ - t0_);
  // Absolute, as dump prints it; a string, as it may pass 2^53.
  j_ += ",\"window_start_ns\":\"" + std::to_string(t0_) + "\"";
  // The axis counts from the origin (capture start, or the --range occurrence), as the chart's.
  j_ += ",\"origin_ns\":" + std::to_string(static_cast<int64_t>(origin - t0_));
  j_ += ",\"origin_name\":";
  append_script_string(j_, sel_.origin_name);
  j_ += ",\"events_in_capture\":" + std::to_string(m_.events.size());
  j_ += ",\"geometry\":{\"label_width\":" + std::to_string(detail::kLabelWidth) + ",\"lane\":" + std::to_string(detail::kLaneHeight) + ",\"row\":" + std::to_string(detail::kOverlapRow) +
        ",\"util\":" + std::to_string(detail::kUtilHeight) + "}";
  j_ += ",\"palette\":{";
  const std::pair<const char*, Color> colours[] = {
      {"launch_to_queued", palette::kLaunchToQueued}, {"queued_to_start", palette::kQueuedToStart},
      {"compute", palette::kComputeUtil},            {"copy", palette::kCopyUtil},
      {"queue_delay", palette::kQueueDelay},         {"low_occupancy", palette::kLowOccupancy},
      {"overlap", palette::kOverlap},                {"missed_overlap", palette::kMissedOverlap},
      {"idle", palette::kIdle},                      {"band", palette::kLaneBand},
      {"grid", palette::kGrid},                      {"text", palette::kText},
      {"muted", palette::kMuted}};
  for (size_t i = 0; i < std::size(colours); ++i)
    j_ += std::string(i ? "," : "") + "\"" + colours[i].first + "\":\"" + hex(colours[i].second) + "\"";
  j_ += '}';
  write_sections();
  write_lanes();
  write_strings();
  write_ranges();
  write_annotations();
  write_collectives();
  j_ += '}';
  st_.data_bytes = j_.size();
  return std::move(j_);
}

}  // namespace

std::string data_json(const Model& model, const Selection& selection, const RenderOptions& options, HtmlStats* stats) {
  HtmlStats local;
  DataWriter w(model, selection, options, stats ? *stats : local);
  return w.build();
}

}  // namespace gantt::html
