// GPUHOOK_RANGE=nvtx:NAME%N / ~P driven from several threads: which windows open and close,
// seen through the callbacks the writer would get.
#include "nvtx_range_window.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "recorder.h"

namespace gpuhook::hook {
namespace {

std::mutex g_mutex;
std::vector<std::string> g_edges;  // "open 0", "close 0", ...

void on_set(uint64_t, uint64_t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_edges.push_back("set");
}
void on_open(uint64_t number, uint64_t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_edges.push_back("open " + std::to_string(number));
}
void on_close(uint64_t number, uint64_t) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_edges.push_back("close " + std::to_string(number));
}

// A thread of its own (its own t_state, as an application thread has) that runs one step at a
// time, when told, so that steps on two threads interleave in a chosen order.
class AppThread {
 public:
  AppThread() : thread_([this] { loop(); }) {}
  ~AppThread() {
    run({});
    thread_.join();
  }
  void run(std::function<void()> step) {
    std::unique_lock<std::mutex> lock(mutex_);
    step_ = std::move(step);
    quit_ = !step_;
    pending_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return !pending_; });
  }

 private:
  void loop() {
    t_state.close_depth = -1;
    for (;;) {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return pending_; });
      if (quit_) {
        pending_ = false;
        cv_.notify_all();
        return;
      }
      step_();
      pending_ = false;
      cv_.notify_all();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::function<void()> step_;
  bool pending_ = false, quit_ = false;
  std::thread thread_;
};

// Two worker threads each push "step": their occurrences overlap, and the program ran one
// stretch of steps that the file must hold whole. A window is opened by the first occurrence
// in flight and closed by the last to end, whichever threads they are on; before, the second
// push opened a window of its own and the first pop to come closed the newest window, so
// everything the longer occurrence did after the shorter one ended was dropped.
TEST(NvtxRangeWindow, OccurrencesInFlightOnSeveralThreadsShareOneWindow) {
  static CaptureRange range = *settings::parse_range("nvtx:step%1");
  window_after_fork();  // windows numbered from 0, whatever another test of this process pushed
  const uint64_t seen = window_occurrences(), drawn = window_recorded();
  window_configure(&range, &on_set, &on_open, &on_close, 1);
  AppThread a, b;
  auto push = [](AppThread& t) { t.run([] { nvtx_window_push("step", 0); }); };
  auto pop = [](AppThread& t) { t.run([] { nvtx_window_pop(0); }); };
  push(a);  // A's occurrence opens window 0
  push(b);  // B's joins it
  pop(b);   // B ends first: A is still in flight
  pop(a);
  push(b);  // alone: window 1
  pop(b);
  push(a);  // window 2, from A to B
  push(b);
  pop(a);
  pop(b);
  b.run([] {  // a nested push of the same name stays inside its thread's occurrence
    nvtx_window_push("step", 0);
    nvtx_window_push("step", 1);
    nvtx_window_pop(1);
    nvtx_window_pop(0);
  });
  std::lock_guard<std::mutex> lock(g_mutex);
  EXPECT_EQ(g_edges, (std::vector<std::string>{"open 0", "close 0", "open 1", "close 1", "open 2", "close 2", "open 3",
                                               "close 3"}));
  EXPECT_EQ(window_occurrences() - seen, 7u);
  EXPECT_EQ(window_recorded() - drawn, 6u);  // the nested push is counted, not drawn
}

}  // namespace
}  // namespace gpuhook::hook
