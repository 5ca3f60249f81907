// thread_wake: how long one thread takes to wake another and be woken back (a condition
// variable ping-pong), the median of 9 batches of 2,000 round trips, printed in microseconds.
// The simulator's stream workers are threads that the launching thread wakes for every
// operation: the timing tests that compare its spans with a model's skip themselves where this
// costs far more than on a usual machine (a paravirtualised VM measured 23 us; bare metal and
// KVM guests a few), since the spans would then measure the machine, not the schedule.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

namespace {

double round_trip_us(int trips) {
  std::mutex m;
  std::condition_variable cv;
  int turn = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::thread other([&] {
    for (int i = 0; i < trips; ++i) {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return turn == 1; });
      turn = 0;
      cv.notify_all();
    }
  });
  for (int i = 0; i < trips; ++i) {
    std::unique_lock lock(m);
    turn = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return turn == 0; });
  }
  other.join();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / trips;
}

}  // namespace

int main() {
  std::vector<double> batches;
  for (int b = 0; b < 9; ++b) batches.push_back(round_trip_us(2000));
  std::nth_element(batches.begin(), batches.begin() + 4, batches.end());
  std::printf("%.1f\n", batches[4]);
  return 0;
}
