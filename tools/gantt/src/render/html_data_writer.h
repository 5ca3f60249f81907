// The writer of the HTML page's data block (html.h), shared by the files that write its
// parts: html_data.cpp (lanes, events, sections, names, annotations, the whole block),
// html_host_data.cpp (the host thread lanes: NVTX ranges and host calls) and
// html_runs_data.cpp (what several ranks or runs add: collectives, the diff's stacks).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gantt/render/colors.h"
#include "gantt/model/filter.h"
#include "gantt/render/html.h"
#include "gantt/model/model.h"
#include "gantt/render/render.h"

namespace gantt::html::writer {

// "#rrggbb".
std::string hex(Color c);

// One run on the page (html.h HtmlRun), with the page's zero in its clock: a page of two runs
// (diff) stretches each run's window to the page's span, so `t0` may lie before its own.
struct Run {
  const Model* m = nullptr;
  Selection sel;       // as selected: annotations and the footer are the run's own
  Selection page_sel;  // the same events over the page's window in this run's clock
  std::string label;   // "" on a page of one run
  uint64_t t0 = 0;
  uint64_t events = 0, lanes = 0, syncs = 0, untimed = 0;
  uint64_t folded = 0;  // a scanned page's events folded into the lanes' coverage (ChartRest)
};

struct PageLane {
  size_t run = 0;
  LaneKey key;
  std::vector<uint32_t> events;  // start order
  int32_t priority = 0;
  size_t section = 0;
  const ChartRest::Lane* rest = nullptr;  // a scanned page: the lane's events not on it one by one
};

struct Section {
  size_t run = 0;
  uint16_t capture = 0;
  uint32_t device = kNone;  // kNone: lanes that are not per device (--lanes thread)
  std::vector<size_t> lanes;
};

class DataWriter {
 public:
  // `rest`: a scanned page of one run (html.h write_html with a ChartRest).
  DataWriter(const std::vector<HtmlRun>& runs, const RenderOptions& o, const HtmlDiff* diff, HtmlStats& st,
             const ChartRest* rest = nullptr);

  std::string build();

 private:
  void bucket_lanes();
  void write_strings();
  void write_sections();
  void write_lanes();
  void write_annotations();
  void write_collectives();
  void write_diff();
  void pick_ranges();
  void pick_host_lanes();
  void write_ranges();
  uint32_t label_of(size_t run, uint32_t e);
  uint32_t call_of(size_t run, uint32_t e);
  const Model& m(size_t run) const { return *runs_[run].m; }
  int64_t rel(size_t run, uint64_t t) const { return static_cast<int64_t>(t - runs_[run].t0); }
  // A label with the run's name in front, on a page of several runs.
  std::string in_run(size_t run, std::string text, const char* sep) const {
    return runs_[run].label.empty() ? text : runs_[run].label + sep + text;
  }

  std::vector<Run> runs_;
  const RenderOptions& o_;
  const HtmlDiff* diff_;
  HtmlStats& st_;
  const ChartRest* rest_ = nullptr;
  size_t rest_columns_ = 0;  // the columns of rest_'s coverage: the finest buckets of a scanned page
  std::string j_;
  uint64_t span_ = 1;
  std::map<std::pair<size_t, LaneKey>, PageLane> by_key_;
  std::vector<PageLane*> lanes_;
  std::vector<Section> sections_;
  // Events point into these: (run, name, kind, copy kind) -> display name, kind, colour; the
  // host call that launched it -> "cudaLaunchKernel, tid 100".
  std::map<std::tuple<size_t, uint32_t, EventKind, uint8_t>, uint32_t> label_ids_;
  std::vector<std::pair<size_t, uint32_t>> label_event_;  // an event that has the label
  std::map<std::tuple<size_t, uint32_t, uint32_t>, uint32_t> call_ids_;
  std::vector<std::pair<size_t, uint32_t>> call_api_{{0, kNone}};  // an API row with the call; [0] = none
  // Per run: event -> lane and its place in it, kNone where not on one.
  std::vector<std::vector<uint32_t>> lane_of_, index_of_;
  // NVTX ranges on the host thread lanes: the ranges in page order (start, then depth, so a
  // parent comes before its children) and, per run, each range's place in it (kNone: not on
  // the page).
  std::vector<std::pair<size_t, uint32_t>> page_ranges_;
  std::vector<std::vector<uint32_t>> range_index_;
  // Host thread lanes: (run, thread row) -> lane, in (run, capture, tid) order. The host calls
  // on them: those that launched a GPU event on the page the viewer rebuilds from the events
  // (their call, launch time and duration are there already), so only the others are written:
  // (run, API row) in lane, then start order.
  std::map<std::pair<size_t, uint32_t>, uint32_t> host_lane_;
  std::vector<std::tuple<size_t, uint16_t, uint64_t, uint32_t>> host_threads_;  // run, capture, tid, thread row
  std::vector<std::pair<size_t, uint32_t>> other_calls_;
  std::vector<std::pair<size_t, uint32_t>> nccl_calls_;  // (run, NcclTable row), lane then start order
};

// Ranges the page carries: every depth (the page nests them all, and a kernel's range path
// needs its innermost range), up to this many; past it, the earliest, and events launched in
// a range left out have no range on the page.
constexpr size_t kMaxPageRanges = 200000;
// Host calls that launched nothing on the page (synchronisations, allocations, ...), written
// one by one up to this many; past it, the earliest.
constexpr size_t kMaxPageCalls = 500000;

}  // namespace gantt::html::writer
