// The data block of the HTML page (html.h): lanes, packed events, names, the level-of-detail
// pyramids, the utilisation per device and the annotations, as one JSON object; the host
// lanes and what several ranks or runs add are written by html_host_data.cpp and
// html_runs_data.cpp (html_data_writer.h).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "gantt/analysis/flame.h"
#include "gantt/analysis/memory.h"
#include "gantt/analysis/table.h"
#include "gantt/analysis/timeline.h"
#include "gantt/analysis/waits.h"
#include "gantt/render/annotate.h"
#include "gantt/render/colors.h"
#include "gantt/render/html.h"
#include "gantt/model/json.h"
#include "gantt/render/lod.h"
#include "gantt/ranks/ranks.h"
#include "gantt/render/rank_links.h"
#include "gantt/model/text.h"
#include "html_data_writer.h"
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

namespace writer {

std::string hex(Color c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

DataWriter::DataWriter(const std::vector<HtmlRun>& runs, const RenderOptions& o, const HtmlDiff* diff, HtmlStats& st,
                       const ChartRest* rest)
    : o_(o), diff_(diff), st_(st), rest_(rest) {
  if (rest_ && runs.size() != 1) throw std::invalid_argument("html::data_json: a scanned page holds one run");
  if (rest_) {
    for (const auto& [key, lane] : rest_->lanes) rest_columns_ = std::max<size_t>(rest_columns_, static_cast<size_t>(lane.exec.columns()));
    for (const auto& [key, d] : rest_->devices) rest_columns_ = std::max<size_t>(rest_columns_, static_cast<size_t>(d.compute.columns()));
    // The viewer's pyramids halve down from the finest level: a power of two (stream_chart_parts
    // makes it one), at least kMinBuckets.
    if (rest_columns_ && (!std::has_single_bit(rest_columns_) || rest_columns_ < kMinBuckets))
      throw std::invalid_argument("html::data_json: the folded coverage's columns are not a power of two of at least 64");
  }
  // Each run's origin (its capture start, or the range occurrence it is aligned on) at the same
  // page time: as far into the page as the run with the most before its origin needs.
  uint64_t before = 0, after = 1;
  for (const HtmlRun& h : runs) {
    const Selection& s = h.selection;
    const uint64_t end = std::max(s.window_end_ns, s.window_start_ns + 1);
    const uint64_t origin = std::clamp(s.origin_ns, s.window_start_ns, end);
    before = std::max(before, origin - s.window_start_ns);
    after = std::max(after, end - origin);
  }
  span_ = before + after;
  for (const HtmlRun& h : runs) {
    Run r;
    r.m = h.model;
    r.sel = h.selection;
    r.label = h.label;
    const uint64_t origin = std::clamp(h.selection.origin_ns, h.selection.window_start_ns,
                                       std::max(h.selection.window_end_ns, h.selection.window_start_ns + 1));
    // A clock that starts later than the other run's lead-in cannot go below 0: that run then
    // starts at the page's zero, its origin that much later than the other's.
    r.t0 = runs.size() == 1 ? h.selection.window_start_ns : origin - std::min(origin, before);
    r.page_sel = h.selection;
    r.page_sel.window_start_ns = r.t0;
    r.page_sel.window_end_ns = r.t0 + span_;
    runs_.push_back(std::move(r));
  }
}

uint32_t DataWriter::label_of(size_t run, uint32_t e) {
  const Model& mm = m(run);
  const auto key = std::make_tuple(run, mm.events.name[e], mm.events.kind[e], mm.events.copy_kind[e]);
  auto [it, added] = label_ids_.emplace(key, static_cast<uint32_t>(label_event_.size()));
  if (added) label_event_.emplace_back(run, e);
  return it->second;
}

uint32_t DataWriter::call_of(size_t run, uint32_t e) {
  const Model& mm = m(run);
  const uint32_t a = mm.events.api[e];
  if (a == kNone) return 0;
  auto [it, added] = call_ids_.emplace(std::make_tuple(run, mm.api.name[a], mm.api.thread[a]), static_cast<uint32_t>(call_api_.size()));
  if (added) call_api_.emplace_back(run, a);
  return it->second;
}

void DataWriter::bucket_lanes() {
  // As build_scene: synchronisations are the host waiting, not work on a lane; an event
  // without both times has no place on one (unknown stays unknown).
  for (size_t r = 0; r < runs_.size(); ++r) {
    const Model& mm = m(r);
    for (uint32_t e : runs_[r].sel.events) {
      if (mm.events.kind[e] == EventKind::kSync) { ++runs_[r].syncs; continue; }
      const uint64_t b = mm.events.start_ns[e], en = mm.events.end_ns[e];
      if (!b || en < b) { ++runs_[r].untimed; continue; }
      PageLane& lane = by_key_[{r, lane_key(mm, e, o_.lanes)}];
      lane.run = r;
      lane.events.push_back(e);
      if (lane.priority == 0) lane.priority = mm.events.priority[e];
    }
  }
  // A scanned page: every lane read, those whose events are all folded too, with the priority
  // the scan found first in start order (Builder::bucket_lanes()).
  if (rest_)
    for (const auto& [key, folded] : rest_->lanes) {
      PageLane& lane = by_key_[{0, key}];
      lane.run = 0;
      lane.rest = &folded;
      lane.priority = folded.priority;
      runs_[0].folded += folded.aggregated;
    }
  // Sections as build_scene's: a device's lanes under its header and utilisation strip; with
  // --lanes rank a capture's lane under its last device; --lanes thread, one section of lanes
  // (per run).
  std::map<std::pair<size_t, uint16_t>, uint32_t> last_device;
  for (const auto& [key, lane] : by_key_)
    for (uint32_t e : lane.events) {
      uint32_t& d = last_device[{key.first, key.second.capture}];
      d = std::max(d, m(key.first).events.device[e]);
    }
  if (rest_)  // scanned: the devices of the folded events too, each with its busy strip
    for (const auto& [dev, busy] : rest_->devices) {
      uint32_t& d = last_device[{0, dev.first}];
      d = std::max(d, dev.second);
    }
  const auto section_key = [&](size_t run, const LaneKey& key) {
    if (o_.lanes == LaneMode::kThread) return std::make_tuple(run, uint16_t{0}, kNone);
    return std::make_tuple(run, key.capture, o_.lanes == LaneMode::kRank ? last_device[{run, key.capture}] : key.device);
  };
  std::map<std::tuple<size_t, uint16_t, uint32_t>, size_t> section_of;
  for (const auto& [key, lane] : by_key_) section_of.emplace(section_key(key.first, key.second), 0);
  for (auto& [skey, index] : section_of) {
    index = sections_.size();
    sections_.push_back({std::get<0>(skey), std::get<1>(skey), std::get<2>(skey), {}});
  }
  for (auto& [key, lane] : by_key_) {
    lane.key = key.second;
    lane.section = section_of[section_key(key.first, key.second)];
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
  lane_of_.resize(runs_.size());
  index_of_.resize(runs_.size());
  for (size_t r = 0; r < runs_.size(); ++r) {
    lane_of_[r].assign(m(r).events.size(), kNone);
    index_of_[r].assign(m(r).events.size(), kNone);
  }
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const size_t r = lanes_[l]->run;
    const Model& mm = m(r);
    std::vector<uint32_t>& ev = lanes_[l]->events;
    // Start order (the selection's already; stable keeps its tie order).
    std::stable_sort(ev.begin(), ev.end(),
                     [&](uint32_t a, uint32_t b) { return mm.events.start_ns[a] < mm.events.start_ns[b]; });
    for (size_t k = 0; k < ev.size(); ++k) {
      lane_of_[r][ev[k]] = static_cast<uint32_t>(l);
      index_of_[r][ev[k]] = static_cast<uint32_t>(k);
    }
    runs_[r].events += ev.size();
    ++runs_[r].lanes;
  }
  for (const Run& r : runs_) {
    st_.events += r.events + r.folded;
    st_.events_folded += r.folded;
    st_.syncs += r.syncs;
    st_.events_untimed += r.untimed;
  }
  st_.lanes = lanes_.size();
}

void DataWriter::write_sections() {
  // The utilisation strip per device: analysis::utilisation_timeline at the finest level's
  // bucket, halved up to the coarsest.
  std::map<std::tuple<size_t, uint16_t, uint32_t>, size_t> device_events;
  for (const PageLane* l : lanes_)
    for (uint32_t e : l->events) ++device_events[{l->run, m(l->run).events.capture[e], m(l->run).events.device[e]}];
  size_t most = 0;
  for (const auto& [k, n] : device_events) most = std::max(most, n);
  const size_t buckets = rest_columns_ ? rest_columns_ : lod_buckets(most);
  const uint64_t bucket_ns = std::max<uint64_t>((span_ + buckets - 1) / buckets, 1);
  std::vector<analysis::Timeline> tl(runs_.size());
  // --memory-strip: memory in use per device, the step function of analysis::memory_report
  // (all classes together; the PNG chart splits them by class or category).
  std::map<std::tuple<size_t, uint16_t, uint32_t>, analysis::DeviceMemory> memory;
  for (size_t r = 0; r < runs_.size(); ++r) {
    if (!runs_[r].lanes) continue;
    // A scanned page's model holds only the events written one by one: the devices' busy
    // unions are the scan's (ChartRest::devices), written below.
    if (rest_) continue;
    tl[r] = analysis::utilisation_timeline(m(r), runs_[r].page_sel, bucket_ns);
    if (o_.memory_strip)
      for (analysis::DeviceMemory& d : analysis::memory_report(m(r))) memory.emplace(std::make_tuple(r, d.capture, d.device), std::move(d));
  }
  j_ += ",\"util_buckets\":" + std::to_string(buckets) + ",\"util_bucket_ns\":" + std::to_string(bucket_ns);
  j_ += ",\"sections\":[";
  for (size_t i = 0; i < sections_.size(); ++i) {
    const Section& s = sections_[i];
    const Model& mm = m(s.run);
    if (i) j_ += ',';
    j_ += "{\"label\":";
    std::string label = s.device == kNone ? "GPU lanes by launching thread" : device_section_label(mm, s.capture, s.device);
    if (mm.captures.size() > 1 && s.device != kNone) label = utf8_clean(rank_lane_label(mm, s.capture)) + " \xC2\xB7 " + label;
    append_script_string(j_, in_run(s.run, label, " \xC2\xB7 "));
    j_ += ",\"capture\":" + std::to_string(s.capture);
    j_ += ",\"lanes\":[";
    for (size_t k = 0; k < s.lanes.size(); ++k) j_ += (k ? "," : "") + std::to_string(s.lanes[k]);
    j_ += ']';
    for (const analysis::DeviceTimeline& d : tl[s.run].devices) {
      if (s.device == kNone || d.capture != s.capture || d.device != s.device) continue;
      std::vector<double> compute(buckets, 0.0), copy(buckets, 0.0);
      for (size_t b = 0; b < d.compute.size() && b < buckets; ++b) compute[b] = d.compute[b], copy[b] = d.copy[b];
      double compute_ns = 0, copy_ns = 0;
      for (size_t b = 0; b < d.compute.size(); ++b) compute_ns += d.compute[b], copy_ns += d.copy[b];
      j_ += ",\"compute\":\"" + base64(lod_levels(compute, kMinBuckets)) + "\"";
      j_ += ",\"copy\":\"" + base64(lod_levels(copy, kMinBuckets)) + "\"";
      // The strip's label, as build_scene's: share of the window.
      const double scale = static_cast<double>(bucket_ns) / static_cast<double>(span_);
      j_ += ",\"busy_label\":";
      append_script_string(j_, "busy: compute " + std::to_string(std::lround(100 * compute_ns * scale)) + "%, copy " +
                                   std::to_string(std::lround(100 * copy_ns * scale)) + "%");
    }
    if (rest_ && s.device != kNone) {
      // As Builder::draw_utilization() draws a scanned chart's strip: the scan's busy unions.
      if (auto it = rest_->devices.find({s.capture, s.device}); it != rest_->devices.end() && it->second.compute.columns()) {
        const ChartRest::Device& d = it->second;
        std::vector<double> compute(buckets, 0.0), copy(buckets, 0.0);
        for (size_t b = 0; b < buckets && b < static_cast<size_t>(d.compute.columns()); ++b)
          compute[b] = d.compute.busy(static_cast<int>(b)), copy[b] = d.copy.busy(static_cast<int>(b));
        j_ += ",\"compute\":\"" + base64(lod_levels(compute, kMinBuckets)) + "\"";
        j_ += ",\"copy\":\"" + base64(lod_levels(copy, kMinBuckets)) + "\"";
        const double span = static_cast<double>(span_);
        j_ += ",\"busy_label\":";
        append_script_string(j_, "busy: compute " + std::to_string(std::lround(100 * static_cast<double>(d.compute_ns) / span)) +
                                     "%, copy " + std::to_string(std::lround(100 * static_cast<double>(d.copy_ns) / span)) + "%");
      }
    }
    if (auto mem = memory.find({s.run, s.capture, s.device}); s.device != kNone && mem != memory.end()) {
      // One varint run: per change, its time as a delta from the one before (zigzag, ns from
      // the window's start), then the bytes in use after it (viewer_draw.js drawMemory).
      const analysis::DeviceMemory& d = mem->second;
      std::string packed;
      int64_t prev = 0;
      for (size_t k = 0; k < d.t.size(); ++k) {
        const int64_t t = rel(s.run, d.t[k]);
        append_varint(packed, zigzag(t - prev));
        prev = t;
        append_varint(packed, d.total(k));
      }
      j_ += ",\"memory\":{\"n\":" + std::to_string(d.t.size()) + ",\"peak_bytes\":" + std::to_string(d.peak_bytes) +
            ",\"peak_ns\":" + std::to_string(rel(s.run, d.peak_ns)) + ",\"steps\":\"" + base64(packed) + "\",\"label\":";
      append_script_string(j_, "memory: peak " + analysis::bytes_text(d.peak_bytes));
      j_ += '}';
    }
    j_ += '}';
  }
  j_ += ']';
}

void DataWriter::write_lanes() {
  j_ += ",\"lanes\":[";
  for (size_t l = 0; l < lanes_.size(); ++l) {
    const PageLane& lane = *lanes_[l];
    const size_t r = lane.run;
    const Model& mm = m(r);
    if (l) j_ += ',';
    j_ += "{\"label\":";
    append_script_string(j_, lane_label(mm, lane.key, o_.lanes, lane.priority));
    j_ += ",\"section\":" + std::to_string(lane.section) + ",\"n\":" + std::to_string(lane.events.size());
    const std::vector<int> rows = overlap_rows(mm, lane.events, detail::kMaxOverlapRows);
    const int max_row = rows.empty() ? 0 : *std::max_element(rows.begin(), rows.end());
    j_ += ",\"rows\":" + std::to_string(max_row + 1);
    // The events: one varint run, fields per event in this order (viewer.js decodeLane).
    std::string packed;
    packed.reserve(lane.events.size() * 12);
    const size_t buckets = rest_columns_ ? rest_columns_ : lod_buckets(lane.events.size());
    Coverage cov(static_cast<int>(buckets));
    const double per_ns = static_cast<double>(buckets) / static_cast<double>(span_);
    int64_t prev = 0, prev_range = 0;
    const EventTable& ev = mm.events;
    const std::vector<uint32_t>& range_index = range_index_[r];
    for (size_t k = 0; k < lane.events.size(); ++k) {
      const uint32_t e = lane.events[k];
      const int64_t start = rel(r, ev.start_ns[e]);
      append_varint(packed, zigzag(start - prev));
      prev = start;
      append_varint(packed, ev.end_ns[e] - ev.start_ns[e]);
      append_varint(packed, static_cast<uint64_t>(rows[k]));
      append_varint(packed, label_of(r, e));
      for (const uint64_t t : {ev.queued_ns[e], ev.submitted_ns[e], mm.launch_ns(e)})
        append_varint(packed, t ? zigzag(static_cast<int64_t>(ev.start_ns[e] - t)) + 1 : 0);
      const uint32_t call = call_of(r, e);
      append_varint(packed, call);
      if (call) {
        const uint32_t a = ev.api[e];
        append_varint(packed, mm.api.end_ns[a] > mm.api.start_ns[a] ? mm.api.end_ns[a] - mm.api.start_ns[a] : 0);
      }
      // Only where the page has ranges: a capture without NVTX pays nothing for them. As a
      // delta from the event before's (zigzag): neighbours on a lane mostly share a range or
      // come from the next one, a byte where the index itself takes up to three.
      if (!page_ranges_.empty()) {
        const uint32_t rg = ev.range[e];
        const int64_t range = rg < range_index.size() && range_index[rg] != kNone ? int64_t{range_index[rg]} + 1 : 0;
        append_varint(packed, zigzag(range - prev_range));
        prev_range = range;
      }
      cov.add(static_cast<double>(start) * per_ns, static_cast<double>(rel(r, ev.end_ns[e])) * per_ns);
    }
    j_ += ",\"events\":\"" + base64(packed) + "\"";
    std::vector<double> finest(buckets);
    if (lane.rest && lane.rest->aggregated) {
      // The events folded by the scan: the lane's pyramid covers them too, and the viewer
      // draws them as coverage where it draws the written ones one by one, and names them:
      // their own pyramid and, per finest bucket, how many touched it (an event counts in
      // each bucket it spans), a varint each.
      const Coverage& folded = lane.rest->exec;
      cov.merge(folded);
      std::string counts;
      for (size_t b = 0; b < buckets; ++b) {
        finest[b] = folded.busy(static_cast<int>(b));
        append_varint(counts, folded.count(static_cast<int>(b)));
      }
      j_ += ",\"folded\":" + std::to_string(lane.rest->aggregated) + ",\"fold\":\"" + base64(lod_levels(finest, kMinBuckets)) +
            "\",\"fold_n\":\"" + base64(counts) + "\"";
    }
    for (size_t b = 0; b < buckets; ++b) finest[b] = cov.busy(static_cast<int>(b));
    j_ += ",\"lod_buckets\":" + std::to_string(buckets) + ",\"lod\":\"" + base64(lod_levels(finest, kMinBuckets)) + "\"}";
  }
  j_ += ']';
}

void DataWriter::write_strings() {
  j_ += ",\"labels\":[";
  for (size_t i = 0; i < label_event_.size(); ++i) {
    const auto [run, e] = label_event_[i];
    const Model& mm = m(run);
    if (i) j_ += ',';
    j_ += '[';
    append_script_string(j_, ellipsize(mm.display_name(e), 2000));
    j_ += ',';
    std::string kind = to_string(mm.events.kind[e]);
    if (mm.events.kind[e] == EventKind::kMemcpy) kind += std::string(" ") + copy_kind_name(mm.events.copy_kind[e]);
    // On a diff page the stats table has a row per name and run.
    if (!runs_[run].label.empty()) kind += " (" + runs_[run].label + ")";
    append_script_string(j_, kind);
    j_ += ",\"" + hex(exec_color(mm, e)) + "\"]";
  }
  j_ += "],\"calls\":[\"\"";
  for (size_t i = 1; i < call_api_.size(); ++i) {
    const auto [run, a] = call_api_[i];
    const Model& mm = m(run);
    std::string c(api_display_name(mm.string(mm.api.name[a])));
    const uint32_t t = mm.api.thread[a];
    if (t < mm.threads.size()) {
      c += ", tid " + std::to_string(mm.threads.thread_id[t]);
      if (mm.threads.name[t]) c += " (" + std::string(mm.string(mm.threads.name[t])) + ")";
    }
    j_ += ',';
    append_script_string(j_, c);
  }
  // Per call: its host lane (-1: none on the page) and whether the host blocks in it.
  std::string lanes = "-1", blocking = "0";
  for (size_t i = 1; i < call_api_.size(); ++i) {
    const auto [run, a] = call_api_[i];
    const auto it = host_lane_.find({run, m(run).api.thread[a]});
    lanes += "," + (it == host_lane_.end() ? std::string("-1") : std::to_string(it->second));
    blocking += is_blocking_call(m(run).string(m(run).api.name[a])) ? ",1" : ",0";
  }
  j_ += "],\"call_lane\":[" + lanes + "],\"call_blocking\":[" + blocking + "]";
}

void DataWriter::write_annotations() {
  // Columns: kind (AnnotationKind), lane and index of the event (-1: a device's idle gap,
  // drawn on its section's strip), section, start and end (ns from t0), label.
  std::string kind, lane, index, section, start, end, label;
  size_t n = 0;
  std::vector<std::string> footer;
  for (size_t run = 0; run < runs_.size(); ++run) {
    const Run& R = runs_[run];
    Annotations ann;
    // A scanned page's model holds only the events written one by one: its flags are the
    // scan's (AnnotateOptions::streamed), or none.
    if (rest_) ann = rest_->annotations.value_or(Annotations{});
    else if (o_.annotate.enabled && R.lanes) ann = annotate(*R.m, R.sel, o_.annotate);
    for (const Annotation& a : ann.items) {
      int64_t l = -1, i = -1, s = -1;
      if (a.kind == AnnotationKind::kIdleGap) {
        for (size_t k = 0; k < sections_.size(); ++k)
          if (sections_[k].run == run && sections_[k].capture == a.capture && sections_[k].device == a.device) s = static_cast<int64_t>(k);
        if (s < 0) continue;
      } else {
        if (a.event == kNone || a.event >= lane_of_[run].size() || lane_of_[run][a.event] == kNone) continue;
        l = lane_of_[run][a.event];
        i = index_of_[run][a.event];
        s = static_cast<int64_t>(lanes_[static_cast<size_t>(l)]->section);
      }
      const char* sep = n ? "," : "";
      kind += sep + std::to_string(static_cast<int>(a.kind));
      lane += sep + std::to_string(l);
      index += sep + std::to_string(i);
      section += sep + std::to_string(s);
      start += sep + std::to_string(rel(run, a.start_ns));
      end += sep + std::to_string(rel(run, a.end_ns));
      label += sep;
      append_script_string(label, a.label);
      ++n;
    }
    RenderStats rs;
    rs.events_selected = R.events + R.folded;
    rs.events_individual = R.events;
    rs.events_aggregated = R.folded;
    rs.syncs_on_host_lanes = R.syncs;
    std::vector<std::string> lines = detail::footer_lines(*R.m, R.sel, o_, rs, ann);
    // The chart's event line counts what one picture drew; the page draws per view.
    std::string events_line = "events: " + std::to_string(R.events) + " on " + std::to_string(R.lanes) +
                              " lanes, drawn one by one where they fit in view, else as busy coverage";
    if (R.folded)
      events_line = "events: " + std::to_string(R.events + R.folded) + " on " + std::to_string(R.lanes) + " lanes: the " +
                    std::to_string(R.events) + " widest written one by one, " + std::to_string(R.folded) +
                    " folded into the lanes' coverage (render with --from/--to for them one by one)";
    if (R.syncs) events_line += "; " + std::to_string(R.syncs) + " synchronisations (host waits) not on the lanes";
    if (R.untimed) events_line += "; " + std::to_string(R.untimed) + " without start or end not drawn";
    for (std::string& line : lines) {
      const size_t at = line.starts_with("events: ") ? 0 : line.find(" \xC2\xB7 events: ");
      if (at != std::string::npos) line = line.substr(0, at) + (at ? " \xC2\xB7 " : "") + events_line;
      footer.push_back(in_run(run, line, ": "));
    }
  }
  st_.annotations = n;
  j_ += ",\"annotations\":{\"kind\":[" + kind + "],\"lane\":[" + lane + "],\"index\":[" + index + "],\"section\":[" +
        section + "],\"start\":[" + start + "],\"end\":[" + end + "],\"label\":[" + label + "]}";
  j_ += ",\"footer\":[";
  for (size_t k = 0; k < footer.size(); ++k) {
    if (k) j_ += ',';
    append_script_string(j_, footer[k]);
  }
  j_ += ']';
}

std::string DataWriter::build() {
  bucket_lanes();
  pick_ranges();
  const Run& r0 = runs_.front();
  j_ = "{\"format\":1,\"title\":";
  append_script_string(j_, diff_ ? diff_->title : detail::title_of(*r0.m));
  j_ += ",\"span_ns\":" + std::to_string(span_);
  // Absolute, as dump prints it (the first run's clock); a string, as it may pass 2^53.
  j_ += ",\"window_start_ns\":\"" + std::to_string(r0.t0) + "\"";
  // The axis counts from the origin (capture start, or the --range occurrence), as the chart's;
  // on a page of two runs both origins are there.
  const uint64_t origin = r0.sel.origin_ns ? r0.sel.origin_ns : r0.m->first_ns();
  j_ += ",\"origin_ns\":" + std::to_string(rel(0, origin));
  j_ += ",\"origin_name\":";
  append_script_string(j_, r0.sel.origin_name);
  uint64_t in_captures = 0;
  for (const Run& r : runs_) in_captures += rest_ ? rest_->in_capture : r.m->events.size();
  j_ += ",\"events_in_capture\":" + std::to_string(in_captures);
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
      {"muted", palette::kMuted},                    {"api", palette::kApi},
      {"blocking", palette::kBlocking},              {"launch_tick", palette::kLaunchTick},
      {"nccl", palette::kNccl}};
  for (size_t i = 0; i < std::size(colours); ++i)
    j_ += std::string(i ? "," : "") + "\"" + colours[i].first + "\":\"" + hex(colours[i].second) + "\"";
  j_ += '}';
  write_sections();
  write_lanes();
  pick_host_lanes();
  write_strings();
  write_ranges();
  write_annotations();
  write_collectives();
  write_diff();
  j_ += '}';
  st_.data_bytes = j_.size();
  return std::move(j_);
}

}  // namespace writer

std::string data_json(const std::vector<HtmlRun>& runs, const RenderOptions& options, const HtmlDiff* diff,
                      HtmlStats* stats) {
  if (runs.empty()) throw std::invalid_argument("html::data_json: no run to show");
  HtmlStats local;
  writer::DataWriter w(runs, options, diff, stats ? *stats : local);
  return w.build();
}

std::string data_json(const Model& model, const Selection& selection, const RenderOptions& options, HtmlStats* stats) {
  return data_json({HtmlRun{&model, selection, ""}}, options, nullptr, stats);
}

std::string data_json(const Model& model, const Selection& selection, const RenderOptions& options, const ChartRest& rest,
                      HtmlStats* stats) {
  HtmlStats local;
  writer::DataWriter w({HtmlRun{&model, selection, ""}}, options, nullptr, stats ? *stats : local, &rest);
  return w.build();
}

}  // namespace gantt::html
