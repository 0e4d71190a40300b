#pragma once
// Timing for benchmarks: the median and spread of repeated runs, because the machine is shared
// and noisy and a mean would follow the outliers.
#include <functional>
#include <vector>

namespace tunecnn {

struct TimingStats {
  double median_s = 0, min_s = 0, max_s = 0;
  int runs = 0;
};

// Calls fn `warmup` times untimed, then `repeats` times timed.
TimingStats time_repeated(const std::function<void()>& fn, int warmup, int repeats);

}  // namespace tunecnn
