#include "apps/bench/step_timer.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace tunecnn {

TimingStats time_repeated(const std::function<void()>& fn, int warmup, int repeats) {
  TUNECNN_CHECK(repeats > 0, "time_repeated needs at least one timed run");
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  const std::size_t mid = times.size() / 2;
  const double median = times.size() % 2 ? times[mid] : 0.5 * (times[mid - 1] + times[mid]);
  return {median, times.front(), times.back(), repeats};
}

}  // namespace tunecnn
