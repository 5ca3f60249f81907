// The memory changes: checkpoint and free-idle. They change when allocations are made and
// freed, not the graph: each decides, in the capture's own times, a Memory record's new time
// or a record to add (Built::memory_edits), and the writer moves those with the host calls
// around them as it moves every memory record (whatif_write.cpp).
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include <re2/re2.h>

#include "gantt/analysis/memory.h"
#include "gantt/analysis/table.h"
#include "gantt/model/text.h"
#include "whatif_internal.h"

namespace gantt::whatif::detail {

namespace {

// An allocation of a section, from its Memory records, with what its MemoryTag and MemoryUse
// records said about it.
struct Allocation {
  uint32_t alloc = kNone, free = kNone;  // record indexes (free: kNone when never freed)
  uint64_t address = 0, bytes = 0;
  int64_t alloc_ns = 0, free_ns = INT64_MAX;
  uint32_t device = 0;
  uint32_t category = 0;                 // the tag's string id, 0 = none
  uint32_t uses = 0;
  int64_t last_use_ns = 0;
  uint32_t first_use_correlation = 0;    // the call that was given it first (its writer)
};

struct SectionMemory {
  std::vector<Allocation> allocations;   // by when they were made
  int64_t first_ns = 0, last_ns = 0;     // the section's span, from the records' times
  uint64_t uses = 0;                     // MemoryUse records
  std::unordered_map<uint32_t, int64_t> kernel_ns;  // correlation id -> its kernel's duration
  std::vector<int64_t> graph_kernel_starts;          // kernels a CUDA graph ran
};

// Reads a section's allocations and gives each its tag and uses: a mark belongs to the
// allocation live over its address at its time (as the loader's apply_memory_marks decides).
SectionMemory read_memory(const Section& s) {
  SectionMemory out;
  struct Mark {
    uint64_t address;
    int64_t time_ns;
    uint32_t value;  // tag: category id; use: correlation id
    bool use;
  };
  std::vector<Mark> marks;
  struct Free {
    int64_t time_ns;
    uint32_t record;
    uint64_t address;
  };
  std::vector<Free> frees;
  v1::Record r;
  auto span = [&](int64_t t) {
    if (t <= 0) return;
    out.first_ns = out.first_ns == 0 ? t : std::min(out.first_ns, t);
    out.last_ns = std::max(out.last_ns, t);
  };
  for (uint32_t i = 0; i < s.records.size(); ++i) {
    s.records.get(i, &r);
    switch (r.kind_case()) {
      case v1::Record::kMemory: {
        const v1::Memory& m = r.memory();
        if (!m.has_time_ns() || m.time_ns() <= 0) break;
        span(m.time_ns());
        if (m.op() == v1::MEMORY_OP_ALLOC && m.bytes() != 0) {
          Allocation a;
          a.alloc = i, a.address = m.address(), a.bytes = m.bytes(), a.alloc_ns = m.time_ns(), a.device = m.device();
          out.allocations.push_back(a);
        } else if (m.op() == v1::MEMORY_OP_FREE) {
          frees.push_back({m.time_ns(), i, m.address()});
        }
        break;
      }
      case v1::Record::kMemoryTag:
        if (r.memory_tag().category_id() != 0 && r.memory_tag().time_ns() > 0)
          marks.push_back({r.memory_tag().address(), r.memory_tag().time_ns(), r.memory_tag().category_id(), false});
        break;
      case v1::Record::kMemoryUse:
        ++out.uses;
        if (r.memory_use().time_ns() > 0)
          marks.push_back({r.memory_use().address(), r.memory_use().time_ns(), r.memory_use().correlation_id(), true});
        break;
      case v1::Record::kKernel: {
        const v1::Kernel& k = r.kernel();
        if (k.start_ns() > 0 && k.end_ns() > k.start_ns()) {  // both positive: the difference fits
          out.kernel_ns[k.correlation_id()] = k.end_ns() - k.start_ns();
          if (k.graph_id() != 0) out.graph_kernel_starts.push_back(k.start_ns());
        }
        break;
      }
      case v1::Record::kApi: span(r.api().start_ns()), span(r.api().end_ns()); break;
      default: break;
    }
  }
  std::vector<Allocation>& all = out.allocations;
  auto by_time = [](const auto& x, const auto& y) { return x.time_ns < y.time_ns; };
  std::stable_sort(all.begin(), all.end(), [](const Allocation& x, const Allocation& y) { return x.alloc_ns < y.alloc_ns; });
  std::stable_sort(frees.begin(), frees.end(), by_time);
  std::stable_sort(marks.begin(), marks.end(), by_time);
  // One sweep in time order, allocations and frees at one time in the order they were recorded.
  std::map<uint64_t, uint32_t> live;  // address -> allocation
  size_t next_alloc = 0, next_free = 0;
  auto until = [&](int64_t t) {
    for (;;) {
      const bool alloc_due = next_alloc < all.size() && all[next_alloc].alloc_ns <= t;
      const bool free_due = next_free < frees.size() && frees[next_free].time_ns <= t;
      if (alloc_due && (!free_due || std::make_pair(all[next_alloc].alloc_ns, all[next_alloc].alloc) <
                                         std::make_pair(frees[next_free].time_ns, frees[next_free].record))) {
        live[all[next_alloc].address] = static_cast<uint32_t>(next_alloc);
        ++next_alloc;
      } else if (free_due) {
        const Free& f = frees[next_free++];
        if (auto it = live.find(f.address); it != live.end()) {
          all[it->second].free = f.record, all[it->second].free_ns = f.time_ns;
          live.erase(it);
        }
      } else {
        return;
      }
    }
  };
  for (const Mark& m : marks) {
    until(m.time_ns);
    auto it = live.upper_bound(m.address);
    if (it == live.begin()) continue;
    Allocation& a = all[(--it)->second];
    if (m.address - a.address >= a.bytes) continue;
    if (!m.use) {
      a.category = m.value;
    } else {
      if (a.uses == 0) a.first_use_correlation = m.value;
      ++a.uses;
      a.last_use_ns = m.time_ns;
    }
  }
  until(INT64_MAX);
  return out;
}

// As stats --by memory writes sizes; a sum of a hostile file's sizes past 2^64 as 2^64 - 1.
std::string bytes_text(double bytes) {
  return analysis::bytes_text(bytes >= 18446744073709551615.0 ? UINT64_MAX : static_cast<uint64_t>(bytes));
}

// t + d, held below INT64_MAX (a hostile file's times reach it).
int64_t after(int64_t t, int64_t d) { return t > INT64_MAX - d ? INT64_MAX : t + d; }

struct Peak {
  double bytes = 0;  // a sum of a file's sizes, which may pass any integer's range
  int64_t at_ns = 0;
};

// Each device's peak of live bytes and its time, with the edits made so far (allocations first
// at equal times: the larger figure).
std::map<uint32_t, Peak> peaks(const SectionMemory& mem, const MemoryEdits& edits) {
  struct Step {
    int64_t time_ns;
    double delta;
    uint32_t device;
  };
  std::vector<Step> steps;
  for (const Allocation& a : mem.allocations) {
    steps.push_back({a.alloc_ns, static_cast<double>(a.bytes), a.device});
    int64_t freed = a.free_ns;
    if (auto it = edits.moved.find(a.free); a.free != kNone && it != edits.moved.end()) freed = it->second;
    if (freed != INT64_MAX) steps.push_back({freed, -static_cast<double>(a.bytes), a.device});
  }
  for (const v1::Record& r : edits.added)
    if (r.has_memory() && r.memory().bytes() != 0)
      steps.push_back({r.memory().time_ns(),
                       r.memory().op() == v1::MEMORY_OP_ALLOC ? static_cast<double>(r.memory().bytes())
                                                              : -static_cast<double>(r.memory().bytes()),
                       r.memory().device()});
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    return a.time_ns != b.time_ns ? a.time_ns < b.time_ns : a.delta > b.delta;
  });
  std::map<uint32_t, double> live;
  std::map<uint32_t, Peak> out;
  for (const Step& s : steps) {
    const double now = live[s.device] += s.delta;
    Peak& p = out[s.device];
    if (now > p.bytes) p = {now, s.time_ns};
  }
  return out;
}

// The largest of the devices' peaks.
double peak_bytes(const SectionMemory& mem, const MemoryEdits& edits) {
  double most = 0;
  for (const auto& [device, p] : peaks(mem, edits)) most = std::max(most, p.bytes);
  return most;
}

// "peak BEFORE -> AFTER" for a change's note, the section named where there are several.
std::string peak_note(const Built& b, const Section& sec, double before, const SectionMemory& mem, const MemoryEdits& edits) {
  return (b.sections.size() > 1 ? sec.name + ": " : "") + "peak " + bytes_text(before) + " -> " + bytes_text(peak_bytes(mem, edits));
}

// An edit of record `index` to time `t`: the earlier of two changes' times wins.
void move_to(MemoryEdits& edits, uint32_t index, int64_t t) {
  auto [it, added] = edits.moved.emplace(index, t);
  if (!added) it->second = std::min(it->second, t);
}

// A copy of a section's Memory record at another time (and its bytes, which a free may omit).
v1::Record memory_record_at(const Section& s, uint32_t index, int64_t t, uint64_t bytes) {
  v1::Record r = s.records[index];
  r.mutable_memory()->set_time_ns(t);
  r.mutable_memory()->set_bytes(bytes);
  r.mutable_memory()->set_correlation_id(0);  // no call of the capture made it
  return r;
}

}  // namespace

// checkpoint=REGEX[:K]: activation checkpointing. A run of allocations tagged REGEX that the
// program makes one after another and frees in reverse (a forward pass's activations, freed by
// its backward pass) keeps every K-th (and the last) for the backward pass; each other one is
// freed once the next is made. When the backward pass reaches an allocation it dropped, its
// segment (back to the previous kept one) is made again from there, as the recompute would,
// and each is freed where it was. K defaults to the square root of the run's length.
void checkpoint(Built& b, const Change& ch) {
  const RE2 re(ch.name, RE2::Quiet);
  if (!re.ok()) throw std::invalid_argument("--change " + ch.text + ": " + re.error());
  b.memory_edits.resize(b.sections.size());
  size_t runs = 0, skipped = 0, remade = 0, matched = 0, k_used = 0;
  int64_t recompute_ns = 0;
  bool kernels_known = true;
  std::vector<std::string> notes;
  for (size_t s = 0; s < b.sections.size(); ++s) {
    const Section& sec = b.sections[s];
    const SectionMemory mem = read_memory(sec);
    MemoryEdits& edits = b.memory_edits[s];
    const double before = peak_bytes(mem, edits);
    std::map<uint32_t, std::vector<uint32_t>> by_device;  // device -> matched allocations, in order
    std::unordered_map<uint32_t, bool> category_matches;
    for (uint32_t i = 0; i < mem.allocations.size(); ++i) {
      const Allocation& a = mem.allocations[i];
      if (a.category == 0) continue;
      auto [it, added] = category_matches.emplace(a.category, false);
      if (added) it->second = RE2::PartialMatch(sec.string(a.category), re);
      if (it->second) by_device[a.device].push_back(i), ++matched;
    }
    for (const auto& [device, list] : by_device) {
      for (size_t first = 0; first < list.size();) {
        // A run: made one after another with none of them freed in between.
        size_t end = first + 1;
        int64_t earliest_free = mem.allocations[list[first]].free_ns;
        while (end < list.size() && mem.allocations[list[end]].alloc_ns < earliest_free) {
          earliest_free = std::min(earliest_free, mem.allocations[list[end]].free_ns);
          ++end;
        }
        std::vector<const Allocation*> run;
        for (size_t i = first; i < end; ++i) run.push_back(&mem.allocations[list[i]]);
        first = end;
        if (run.size() < 2) continue;
        // Freed in reverse, each after the last was made, with a gap before each free to make
        // a segment again in (one nanosecond an allocation).
        const size_t n = run.size();
        const size_t k = ch.every != 0 ? ch.every : std::max<size_t>(1, static_cast<size_t>(std::lround(std::sqrt(n))));
        bool stack = run[n - 1]->free != kNone && run[n - 1]->free_ns > run[n - 1]->alloc_ns;
        for (size_t i = 0; stack && i + 1 < n; ++i)
          stack = run[i]->free != kNone && run[i]->free_ns > after(run[i + 1]->free_ns, static_cast<int64_t>(k) + 1);
        if (!stack) {
          ++skipped;
          continue;
        }
        ++runs;
        k_used = k;
        auto kept = [&](size_t i) { return i % k == k - 1 || i == n - 1; };
        for (size_t i = 0; i + 1 < n; ++i)
          if (!kept(i)) move_to(edits, run[i]->free, after(run[i + 1]->alloc_ns, 1));
        std::vector<bool> again(n, false);
        for (size_t j = n - 1; j-- > 0;) {
          if (kept(j) || again[j]) continue;
          const size_t from = j / k * k;
          const int64_t at = after(run[j + 1]->free_ns, 1);  // the backward pass reaches j
          for (size_t i = from; i <= j; ++i) {
            const Allocation& a = *run[i];
            const int64_t t = after(at, static_cast<int64_t>(i - from));
            edits.added.push_back(memory_record_at(sec, a.alloc, t, a.bytes));
            v1::Record tag;
            tag.mutable_memory_tag()->set_address(a.address);
            tag.mutable_memory_tag()->set_category_id(a.category);
            tag.mutable_memory_tag()->set_time_ns(t);
            edits.added.push_back(tag);
            edits.added.push_back(memory_record_at(sec, a.free, a.free_ns, a.bytes));
            again[i] = true;
            ++remade;
            auto kernel = mem.kernel_ns.find(a.first_use_correlation);
            if (a.uses == 0 || kernel == mem.kernel_ns.end()) kernels_known = false;
            else recompute_ns = after(recompute_ns, kernel->second);
          }
        }
      }
    }
    if (!by_device.empty())
      notes.push_back(peak_note(b, sec, before, mem, edits));
  }
  if (matched == 0)
    throw std::invalid_argument("--change " + ch.text + ": no allocation is tagged with a category matching '" + ch.name +
                                "' (gpuhook_mem_tag(); `stats --by memory` lists the categories)");
  std::string note = ch.text + ": " + std::to_string(runs) + " run(s) of allocations freed in reverse";
  if (runs != 0) note += ", every " + std::to_string(k_used) + (ch.every ? "" : " (the square root of a run)") +
                         " kept; " + std::to_string(remade) + " made again in the backward pass";
  if (skipped != 0) note += "; " + std::to_string(skipped) + " run(s) not freed in reverse left as they were";
  for (const std::string& n : notes) note += "; " + n;
  if (remade != 0)
    note += kernels_known ? "; the recompute's kernels (their writers', measured: " +
                                std::to_string(recompute_ns / 1000) + " us in all) are not added to the timeline"
                          : "; the recompute's kernels are not added to the timeline (recorded with GPUHOOK_MEM_USE=1, "
                            "their time would be said)";
  b.graph.notes.push_back(note);
}

// free-idle: what diagnose memory-idle names. An allocation live at its device's memory peak
// (as recorded) that nothing was given from before the peak on, for at least half the capture,
// is freed right after its last use. Needs the uses (GPUHOOK_MEM_USE=1); one last used before a
// CUDA graph ran is kept (the graph's kernels' arguments are not recorded).
void free_idle(Built& b, const Change& ch) {
  b.memory_edits.resize(b.sections.size());
  uint64_t uses = 0, freed = 0, freed_bytes = 0, behind_graphs = 0;
  std::vector<std::string> notes;
  for (size_t s = 0; s < b.sections.size(); ++s) {
    const Section& sec = b.sections[s];
    const SectionMemory mem = read_memory(sec);
    uses += mem.uses;
    MemoryEdits& edits = b.memory_edits[s];
    const double before = peak_bytes(mem, edits);
    const std::map<uint32_t, Peak> peak = peaks(mem, MemoryEdits{});
    const int64_t span = mem.last_ns - mem.first_ns;
    const int64_t last_graph = mem.graph_kernel_starts.empty()
                                   ? 0
                                   : *std::max_element(mem.graph_kernel_starts.begin(), mem.graph_kernel_starts.end());
    size_t here = 0;
    for (const Allocation& a : mem.allocations) {
      const auto p = peak.find(a.device);
      if (a.uses == 0 || span <= 0 || p == peak.end()) continue;
      const int64_t at = p->second.at_ns;
      if (a.alloc_ns > at || a.free_ns <= at || a.last_use_ns >= at) continue;  // not held unused at the peak
      const int64_t until = std::min(a.free_ns, mem.last_ns);
      if (static_cast<double>(until - a.last_use_ns) < 0.5 * static_cast<double>(span)) continue;
      if (last_graph > a.last_use_ns) {
        ++behind_graphs;
        continue;
      }
      const int64_t t = after(a.last_use_ns, 1);
      if (a.free != kNone) move_to(edits, a.free, t);
      else edits.added.push_back(memory_record_at(sec, a.alloc, t, a.bytes)), edits.added.back().mutable_memory()->set_op(v1::MEMORY_OP_FREE);
      ++freed, ++here;
      freed_bytes = analysis::saturating_add(freed_bytes, a.bytes);
    }
    if (here != 0)
      notes.push_back(peak_note(b, sec, before, mem, edits));
  }
  if (uses == 0)
    throw std::invalid_argument("--change " + ch.text +
                                ": the capture has no memory uses to find the idle allocations by: record it with GPUHOOK_MEM_USE=1");
  std::string note = ch.text + ": " + std::to_string(freed) + " allocation(s) (" + bytes_text(static_cast<double>(freed_bytes)) +
                     ") held unused at the memory peak for at least half the capture freed after their last use";
  if (behind_graphs != 0) note += "; " + std::to_string(behind_graphs) + " last used before a CUDA graph ran kept";
  for (const std::string& n : notes) note += "; " + n;
  b.graph.notes.push_back(note);
}

}  // namespace gantt::whatif::detail
