#pragma once
// When to stop timing one solver: warm-up calls first, then timed calls until the median settles,
// a time cap is spent or a run count is reached. Big layers take 100+ ms a call, small ones a few
// microseconds, so a fixed repeat count is either too slow or too noisy.
#include <functional>
#include <string>
#include <vector>

#include "apps/bench/step_timer.h"

namespace tunecnn {

struct RepeatPolicy {
  int warmup = 1;          // untimed calls; fewer when one call alone exceeds the time cap
  int min_repeats = 5;     // timed calls before the median may count as settled
  int max_repeats = 50;    // stop here even if the median still moves
  double max_seconds = 1;  // cap on the timed calls' total time; at least one call always runs
  double settle = 0.02;  // settled: the last kSettleLookback calls moved the median less than this
};

inline constexpr int kSettleLookback = 2;

// Pure stopping rule over the times (seconds) measured so far.
bool repeats_done(const RepeatPolicy& policy, const std::vector<double>& times);
double median_of(std::vector<double> values);      // 0 for none
double seconds_of(const std::function<void()>& fn);  // one call's wall time, steady clock
std::string describe(const RepeatPolicy& policy);  // one line for the bench's header
// Runs fn under the policy and returns the median and spread of the timed calls, in seconds of
// `clock` (autotune/device_clock.h; empty: the steady clock).
TimingStats time_until_settled(const std::function<void()>& fn, const RepeatPolicy& policy,
                               const std::function<double()>& clock = {});

}  // namespace tunecnn
