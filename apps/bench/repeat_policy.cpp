#include "apps/bench/repeat_policy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <sstream>

#include "core/error.h"

namespace tunecnn {

double seconds_of(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::string describe(const RepeatPolicy& p) {
  std::ostringstream out;
  out << p.warmup << " warm-up call(s), then ";
  if (std::isinf(p.max_seconds) && p.min_repeats == p.max_repeats) {
    out << "exactly " << p.max_repeats << " timed calls";
  } else {
    out << p.min_repeats << "-" << p.max_repeats << " timed calls, stopping once the last "
        << kSettleLookback << " moved the median < " << 100 * p.settle << "% or after "
        << p.max_seconds << " s of calls";
  }
  out << "; the median is reported";
  return out.str();
}

bool repeats_done(const RepeatPolicy& policy, const std::vector<double>& times) {
  const int runs = static_cast<int>(times.size());
  if (runs == 0) return false;
  if (runs >= policy.max_repeats) return true;
  if (std::accumulate(times.begin(), times.end(), 0.0) >= policy.max_seconds) return true;
  if (runs < std::max(policy.min_repeats, kSettleLookback + 1)) return false;
  const double now = median_of(times);
  const double before = median_of({times.begin(), times.end() - kSettleLookback});
  return std::abs(now - before) <= policy.settle * now;
}

TimingStats time_until_settled(const std::function<void()>& fn, const RepeatPolicy& policy,
                               const std::function<double()>& clock) {
  TUNECNN_CHECK(policy.max_repeats > 0, "the repeat policy needs at least one timed run");
  const auto call_seconds = [&] {
    if (!clock) return seconds_of(fn);
    const double start = clock();
    fn();
    return clock() - start;
  };
  // A call slower than the whole cap has warmed up enough after one untimed run.
  for (int i = 0; i < policy.warmup; ++i)
    if (call_seconds() > policy.max_seconds) break;
  std::vector<double> times;
  while (!repeats_done(policy, times)) times.push_back(call_seconds());
  const auto [min, max] = std::minmax_element(times.begin(), times.end());
  return {median_of(times), *min, *max, static_cast<int>(times.size())};
}

}  // namespace tunecnn
