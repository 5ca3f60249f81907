// GPU memory over time (analysis/memory.h).
#include "gantt/analysis/memory.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "gantt/analysis/table.h"
#include "gantt/model/json.h"
#include "gantt/model/text.h"

namespace gantt::analysis {

namespace {

namespace v1 = gpuhook::v1;

// The innermost range open on the allocating call's thread when it was made.
class RangeFinder {
 public:
  explicit RangeFinder(const Model& m) : m_(m) {
    for (uint32_t r = 0; r < m.ranges.size(); ++r)
      if (m.ranges.kind[r] != RangeKind::kMark && m.ranges.start_ns[r]) by_thread_[m.ranges.thread[r]].push_back(r);
    for (auto& [thread, rows] : by_thread_)
      std::sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return m.ranges.start_ns[a] < m.ranges.start_ns[b]; });
  }
  uint32_t at(uint32_t thread, uint64_t t) const {
    auto it = by_thread_.find(thread);
    if (it == by_thread_.end()) return kNone;
    const auto& rows = it->second;
    auto pos = std::upper_bound(rows.begin(), rows.end(), t, [&](uint64_t v, uint32_t r) { return v < m_.ranges.start_ns[r]; });
    // Ranges nest: the last one started before t that is still open then is the innermost.
    for (int n = 0; pos != rows.begin() && n < 256; ++n) {
      const uint32_t r = *--pos;
      if (m_.ranges.end_ns[r] == 0 || m_.ranges.end_ns[r] > t) return r;
    }
    return kNone;
  }

 private:
  const Model& m_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> by_thread_;
};

std::string device_name(const Model& m, const DeviceMemory& d) { return device_label(m.captures.size(), d.capture, d.device); }

}  // namespace

const char* to_string(MemoryClass c) {
  switch (c) {
    case MemoryClass::kDevice: return "device";
    case MemoryClass::kPool: return "pool";
    case MemoryClass::kPinnedHost: return "pinned host";
    case MemoryClass::kManaged: return "managed";
    case MemoryClass::kOther: return "other";
  }
  return "?";
}

MemoryClass memory_class(uint8_t kind, bool pool) {
  switch (static_cast<v1::MemoryKind>(kind)) {
    case v1::MEMORY_DEVICE: return pool ? MemoryClass::kPool : MemoryClass::kDevice;
    case v1::MEMORY_PINNED: return MemoryClass::kPinnedHost;
    case v1::MEMORY_MANAGED: return MemoryClass::kManaged;
    default: return pool ? MemoryClass::kPool : MemoryClass::kOther;
  }
}

std::vector<DeviceMemory> memory_report(const Model& m) {
  const MemoryTable& mt = m.memory;
  std::vector<uint32_t> rows;
  for (uint32_t i = 0; i < mt.size(); ++i)
    if (mt.time_ns[i] && (mt.op[i] == v1::MEMORY_OP_ALLOC || mt.op[i] == v1::MEMORY_OP_FREE)) rows.push_back(i);
  std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) {
    if (mt.capture[a] != mt.capture[b]) return mt.capture[a] < mt.capture[b];
    return mt.time_ns[a] < mt.time_ns[b];
  });
  const RangeFinder ranges(m);
  auto where = [&](uint32_t row) -> std::string {
    const uint32_t a = row < mt.api.size() ? mt.api[row] : kNone;
    if (a == kNone) return {};
    const uint32_t r = ranges.at(m.api.thread[a], m.api.start_ns[a]);
    return r == kNone ? std::string() : m.range_path_of_range(r);
  };
  auto category = [&](uint32_t row) -> std::string {
    if (row < mt.category.size() && mt.category[row] != 0) return std::string(m.string(mt.category[row]));
    const std::string w = where(row);
    return w.empty() ? "(no range)" : "range " + w.substr(0, w.find('/'));
  };
  std::map<std::pair<uint16_t, uint32_t>, DeviceMemory> out;
  // The category layers, shared by all devices: with a list per device, a category met first on
  // one device and third on another was layer 0 there and layer 2 here, and the chart's one
  // legend gave one of them the wrong colour. A program's own "other" takes the overflow too,
  // rather than a second layer of that name.
  std::vector<std::string> layers;
  auto layer_for = [&](const std::string& name) {
    auto known = std::find(layers.begin(), layers.end(), name);
    if (known == layers.end() && layers.size() < kMemoryCategories - 1) known = layers.insert(layers.end(), name);
    if (known == layers.end()) known = std::find(layers.begin(), layers.end(), "other");
    if (known == layers.end()) known = layers.insert(layers.end(), "other");
    return static_cast<uint8_t>(known - layers.begin());
  };
  std::unordered_map<uint32_t, uint8_t> layer_of;  // allocation row -> its category's layer
  // Live allocations per capture by address: a free takes away exactly what its allocation
  // added, on the allocation's device and class.
  std::map<std::pair<uint16_t, uint64_t>, uint32_t> live;
  std::unordered_map<uint32_t, uint64_t> freed_at;  // allocation row -> its free's time
  for (uint32_t row : rows) {
    const uint16_t capture = mt.capture[row];
    uint32_t alloc_row = row;
    if (mt.op[row] == v1::MEMORY_OP_FREE) {
      auto it = live.find({capture, mt.address[row]});
      if (it == live.end()) continue;  // allocated before the capture began
      alloc_row = it->second;
      freed_at[alloc_row] = mt.time_ns[row];
      live.erase(it);
    } else {
      if (mt.bytes[row] == 0) continue;
      if (!live.emplace(std::make_pair(capture, mt.address[row]), row).second) continue;  // a duplicate: keep the first
    }
    DeviceMemory& d = out[{capture, mt.device[alloc_row]}];
    d.capture = capture;
    d.device = mt.device[alloc_row];
    const size_t cls = static_cast<size_t>(memory_class(mt.kind[alloc_row], alloc_row < mt.pool.size() && mt.pool[alloc_row]));
    std::array<uint64_t, kMemoryClasses> now = d.in_use.empty() ? std::array<uint64_t, kMemoryClasses>{} : d.in_use.back();
    std::array<uint64_t, kMemoryCategories> by_category =
        d.in_use_by_category.empty() ? std::array<uint64_t, kMemoryCategories>{} : d.in_use_by_category.back();
    if (mt.op[row] == v1::MEMORY_OP_FREE) {
      const uint64_t bytes = mt.bytes[alloc_row];
      now[cls] -= std::min(now[cls], bytes);
      uint64_t& layer = by_category[layer_of[alloc_row]];
      layer -= std::min(layer, bytes);
      layer_of.erase(alloc_row);
      ++d.frees;
    } else {
      if (row < mt.category.size() && mt.category[row] != 0) d.tagged = true;
      const uint8_t layer = layer_for(category(row));
      layer_of[row] = layer;
      now[cls] = saturating_add(now[cls], mt.bytes[row]);
      by_category[layer] = saturating_add(by_category[layer], mt.bytes[row]);
      ++d.allocations;
    }
    if (!d.t.empty() && d.t.back() == mt.time_ns[row]) {
      d.in_use.back() = now;
      d.in_use_by_category.back() = by_category;
    } else {
      d.t.push_back(mt.time_ns[row]);
      d.in_use.push_back(now);
      d.in_use_by_category.push_back(by_category);
    }
    const uint64_t total = d.total(d.in_use.size() - 1);
    if (total > d.peak_bytes)
      d.peak_bytes = total, d.peak_ns = mt.time_ns[row], d.peak_by_class = now, d.peak_by_category = by_category;
  }
  // What was live at each device's peak: replay up to it.
  std::map<std::pair<uint16_t, uint32_t>, std::map<uint64_t, uint32_t>> live_at;  // device -> address -> row
  for (uint32_t row : rows) {
    const uint16_t capture = mt.capture[row];
    if (mt.op[row] == v1::MEMORY_OP_ALLOC) {
      auto d = out.find({capture, mt.device[row]});
      if (d == out.end() || mt.time_ns[row] > d->second.peak_ns) continue;
      live_at[d->first].emplace(mt.address[row], row);
    } else {
      for (auto& [key, addrs] : live_at) {
        if (key.first != capture) continue;
        auto it = addrs.find(mt.address[row]);
        if (it != addrs.end() && mt.time_ns[row] <= out[key].peak_ns && mt.time_ns[row] >= mt.time_ns[it->second])
          addrs.erase(it);
      }
    }
  }
  std::vector<DeviceMemory> result;
  for (auto& [key, d] : out) {
    d.categories = layers;
    std::map<std::string, uint64_t> by_range;
    std::map<std::string, PeakGroup> by_path;
    std::vector<LiveAllocation> all, unused;
    d.uses_recorded = m.captures[d.capture].memory_uses != 0;
    const uint64_t capture_end = m.captures[d.capture].last_ns;
    for (const auto& [addr, row] : live_at[key]) {
      LiveAllocation a;
      a.row = row;
      a.bytes = mt.bytes[row];
      a.cls = memory_class(mt.kind[row], row < mt.pool.size() && mt.pool[row]);
      a.alloc_ns = mt.time_ns[row];
      a.where = where(row);
      a.category = category(row);
      if (auto f = freed_at.find(row); f != freed_at.end()) a.freed_ns = f->second;
      if (d.uses_recorded && row < mt.last_use_ns.size()) {
        a.first_use_ns = mt.first_use_ns[row];
        a.last_use_ns = mt.last_use_ns[row];
        a.uses = mt.uses[row];
        a.last_use_correlation = mt.last_use_correlation[row];
        const uint64_t idle_from = std::max(a.alloc_ns, a.last_use_ns);
        const uint64_t idle_to = a.freed_ns != 0 ? a.freed_ns : std::max(capture_end, idle_from);
        a.idle_ns = idle_to - std::min(idle_to, idle_from);
        if (a.last_use_ns <= d.peak_ns && a.cls != MemoryClass::kPinnedHost && a.cls != MemoryClass::kOther) {
          d.unused_after_peak_bytes = saturating_add(d.unused_after_peak_bytes, a.bytes);
          unused.push_back(a);
        }
      }
      const std::string top = a.where.empty() ? "(no range)" : a.where.substr(0, a.where.find('/'));
      by_range[top] = saturating_add(by_range[top], a.bytes);
      PeakGroup& g = by_path[a.where];
      g.path = a.where;
      g.bytes = saturating_add(g.bytes, a.bytes);
      ++g.count;
      if (a.freed_ns > d.peak_ns) g.freed_later_bytes = saturating_add(g.freed_later_bytes, a.bytes);
      all.push_back(std::move(a));
    }
    std::stable_sort(all.begin(), all.end(), [](const LiveAllocation& a, const LiveAllocation& b) { return a.bytes > b.bytes; });
    if (all.size() > kPeakList) all.resize(kPeakList);
    d.at_peak = std::move(all);
    std::stable_sort(unused.begin(), unused.end(), [](const LiveAllocation& a, const LiveAllocation& b) { return a.bytes > b.bytes; });
    if (unused.size() > kPeakList) unused.resize(kPeakList);
    d.unused_after_peak = std::move(unused);
    for (auto& [path, g] : by_path) d.peak_by_path.push_back(std::move(g));
    std::stable_sort(d.peak_by_path.begin(), d.peak_by_path.end(), [](const PeakGroup& a, const PeakGroup& b) { return a.bytes > b.bytes; });
    d.peak_by_range.assign(by_range.begin(), by_range.end());
    std::stable_sort(d.peak_by_range.begin(), d.peak_by_range.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    d.live_at_end_bytes = d.in_use.empty() ? 0 : d.total(d.in_use.size() - 1);
    result.push_back(std::move(d));
  }
  return result;
}

std::string format_memory_stats(const Model& m, const std::vector<DeviceMemory>& report, const std::string& format) {
  if (format == "json") {
    std::string o = "{\"devices\":[";
    for (size_t i = 0; i < report.size(); ++i) {
      const DeviceMemory& d = report[i];
      o += (i ? "," : "") + std::string("{\"device\":") + json::quoted(device_name(m, d)) +
           ",\"peak_bytes\":" + std::to_string(d.peak_bytes) + ",\"peak_ns\":" + std::to_string(d.peak_ns) +
           ",\"allocations\":" + std::to_string(d.allocations) + ",\"frees\":" + std::to_string(d.frees) +
           ",\"live_at_end_bytes\":" + std::to_string(d.live_at_end_bytes) + ",\"peak_by_class\":{";
      for (size_t c = 0; c < kMemoryClasses; ++c)
        o += (c ? "," : "") + json::quoted(to_string(static_cast<MemoryClass>(c))) + ":" + std::to_string(d.peak_by_class[c]);
      o += "},\"peak_by_category\":{";
      for (size_t c = 0; c < d.categories.size(); ++c)
        o += (c ? "," : "") + json::quoted(d.categories[c]) + ":" + std::to_string(d.peak_by_category[c]);
      o += "},\"at_peak\":[";
      for (size_t a = 0; a < d.at_peak.size(); ++a)
        o += (a ? "," : "") + std::string("{\"bytes\":") + std::to_string(d.at_peak[a].bytes) + ",\"class\":" +
             json::quoted(to_string(d.at_peak[a].cls)) + ",\"category\":" + json::quoted(d.at_peak[a].category) +
             ",\"where\":" + json::quoted(d.at_peak[a].where) +
             ",\"age_ns\":" + std::to_string(d.peak_ns - d.at_peak[a].alloc_ns) +
             (d.uses_recorded ? ",\"uses\":" + std::to_string(d.at_peak[a].uses) +
                                    ",\"last_use_ns\":" + std::to_string(d.at_peak[a].last_use_ns) +
                                    ",\"idle_ns\":" + std::to_string(d.at_peak[a].idle_ns)
                              : std::string()) +
             "}";
      o += "]";
      if (d.uses_recorded) o += ",\"unused_after_peak_bytes\":" + std::to_string(d.unused_after_peak_bytes);
      o += "}";
    }
    return o + "]}\n";
  }
  if (report.empty() && format != "csv") {
    const std::string imported = m.imported_format();
    return "no allocations recorded in the capture(s) (" +
           (imported.empty() ? std::string("GPUHOOK_API without alloc?") : "not read from " + imported + "s") + ")\n";
  }
  Table t;
  t.header = {"device", "peak", "peak_at_us", "device_mem", "pool", "pinned_host", "managed", "allocations", "frees",
              "live_at_end", "largest_range_at_peak"};
  t.right = {false, true, true, true, true, true, true, true, true, true, false};
  const uint64_t first = m.first_ns();
  for (const DeviceMemory& d : report) {
    std::string top = d.peak_by_range.empty() ? "-"
                                              : d.peak_by_range[0].first + " (" + bytes_text(d.peak_by_range[0].second) + ")";
    t.rows.push_back({device_name(m, d), bytes_text(d.peak_bytes), us(static_cast<int64_t>(d.peak_ns - std::min(first, d.peak_ns))),
                      bytes_text(d.peak_by_class[0]), bytes_text(d.peak_by_class[1]), bytes_text(d.peak_by_class[2]),
                      bytes_text(d.peak_by_class[3]), std::to_string(d.allocations), std::to_string(d.frees),
                      bytes_text(d.live_at_end_bytes), top});
  }
  Table categories;
  categories.header = {"device", "category", "at_peak", "share"};
  categories.right = {false, false, true, true};
  for (const DeviceMemory& d : report)
    for (size_t c = 0; c < d.categories.size(); ++c)
      if (d.peak_by_category[c])
        categories.rows.push_back({device_name(m, d), d.categories[c], bytes_text(d.peak_by_category[c]),
                                   fixed(100.0 * static_cast<double>(d.peak_by_category[c]) / static_cast<double>(d.peak_bytes), 1) + "%"});
  Table live;
  live.header = {"device", "bytes", "class", "category", "allocated_in", "age_at_peak_us"};
  live.right = {false, true, false, false, false, true};
  // GPUHOOK_MEM_USE: when each was last given to a call, and how long it was then held unused.
  const bool uses = std::any_of(report.begin(), report.end(), [](const DeviceMemory& d) { return d.uses_recorded; });
  if (uses) {
    live.header.insert(live.header.end(), {"uses", "last_used_at_us", "then_unused_us"});
    live.right.insert(live.right.end(), {true, true, true});
  }
  for (const DeviceMemory& d : report)
    for (const LiveAllocation& a : d.at_peak) {
      live.rows.push_back({device_name(m, d), bytes_text(a.bytes), to_string(a.cls), a.category,
                           a.where.empty() ? "(no range)" : a.where, us(static_cast<int64_t>(d.peak_ns - a.alloc_ns))});
      if (!uses) continue;
      if (!d.uses_recorded) {
        live.rows.back().insert(live.rows.back().end(), {"-", "-", "-"});
        continue;
      }
      live.rows.back().insert(live.rows.back().end(),
                              {std::to_string(a.uses),
                               a.uses == 0 ? "never" : us(static_cast<int64_t>(a.last_use_ns - std::min(first, a.last_use_ns))),
                               us(static_cast<int64_t>(a.idle_ns))});
    }
  if (format == "csv") return to_csv(t) + "\n" + to_csv(categories) + "\n" + to_csv(live);
  if (format == "md") return to_markdown(t) + "\n" + to_markdown(categories) + "\n" + to_markdown(live);
  std::string bounds;
  for (const CaptureInfo& c : m.captures) {
    if (c.memory_tags_ignored != 0)
      bounds += "\n" + c.path + ": " + std::to_string(c.memory_tags_ignored) +
                " gpuhook_mem_tag() tags past the first 1048576 were not read\n";
    if (c.memory_uses_ignored != 0)
      bounds += "\n" + c.path + ": " + std::to_string(c.memory_uses_ignored) +
                " memory uses past the first 4194304 were not read: last uses may be later than shown\n";
  }
  return "GPU memory in use (from the recorded allocations and frees):\n" + to_text(t) +
         "\nwhat it was for at each peak (gpuhook_mem_tag(), else the NVTX range it was allocated in):\n" +
         to_text(categories) + "\nlargest allocations live at each peak:\n" + to_text(live) + bounds;
}

}  // namespace gantt::analysis
