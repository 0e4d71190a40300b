// The tuner's timing policy (time_calls): warm-up, timed calls until the median settles or the
// candidate cannot win, and the summary of those calls. The search drives the same steps one at a
// time (call_timing.h).
#include "autotune/call_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

namespace tunecnn {
namespace {

// A first timed call this many times slower than the best median so far ends a candidate's timing;
// so do two calls whose faster one is still beyond kLosingMargin of it. A scout's call is cold (no
// warm-up before it: fresh workspace pages, idle threads), so alone it ends the timing only when it
// is kColdHopelessFactor slower.
constexpr double kHopelessFactor = 1.15;
constexpr double kColdHopelessFactor = 2;
constexpr double kLosingMargin = 0.03;
// Calls longer than this need no separate warm-up.
constexpr double kLongCallSeconds = 0.05;
// A rival of the best so far is timed for at most this many of the best's calls (close pairs are
// settled by the playoff, in alternation, not by long solo runs).
constexpr double kRivalBudget = 2;
// Settled: adding each of the last this many calls moved the median less than `settle`.
constexpr int kSettleLookback = 2;

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool settled(const std::vector<double>& times, const TunerOptions& o) {
  if (static_cast<int>(times.size()) < std::max(o.min_repeats, kSettleLookback + 1)) return false;
  const double now = median_of(times);
  for (int back = 1; back <= kSettleLookback; ++back) {
    const std::vector<double> before(times.begin(), times.end() - back);
    if (std::abs(now - median_of(before)) > o.settle * now) return false;
  }
  return true;
}

// A candidate that cannot win: its median will be at least its fastest call, and that is already
// slower than the best median so far (`bound_s`) by more than the noise allows. One call decides
// only when it is far slower; two when it is close, so one unlucky call does not drop a rival.

bool hopeless(const CallSamples& s, double bound_s) {
  if (bound_s <= 0 || s.times.empty()) return false;
  if (s.times.size() == 1) return s.times[0] > (s.cold_first ? kColdHopelessFactor : kHopelessFactor) * bound_s;
  return *std::min_element(s.times.begin(), s.times.end()) > (1 + kLosingMargin) * bound_s;
}

// options.warmup untimed calls; a call over kLongCallSeconds is its own warm-up (first-touch
// costs are noise at that scale), so it is kept as the first timed call and ends the warm-up.
void warm_up(const std::function<void()>& call, const TunerOptions& o,
             const std::function<double()>& clock, CallSamples& s) {
  for (int i = 0; i < o.warmup; ++i) {
    const double start = clock();
    call();
    const double took = clock() - start;
    if (took > kLongCallSeconds) {
      s.times.push_back(took);
      s.spent += took;
      return;
    }
    s.warmup_s += took;
  }
}

// Timed calls stop when the median settles, the cap is spent or max_repeats is reached, and,
// against the best median so far (`bound_s` seconds; 0: none yet), when the candidate cannot win
// (hopeless(); as in MIOpen's and cuDNN's find, the repeats would only measure precisely how much
// it loses) or when a rival has had kRivalBudget times the best's call: close enough to need
// repeats, it has had them. One timed call at least.
bool timing_done(const CallSamples& s, const TunerOptions& o, double bound_s) {
  if (s.times.empty()) return false;
  return static_cast<int>(s.times.size()) >= o.max_repeats || s.spent >= o.max_seconds ||
         settled(s.warm(), o) || hopeless(s, bound_s) ||
         (bound_s > 0 && s.spent >= kRivalBudget * bound_s);
}

CallTiming time_with_clock(const std::function<void()>& call, const TunerOptions& o,
                           const std::function<double()>& clock, double bound_s) {
  CallSamples s;
  warm_up(call, o, clock, s);
  time_until_done(call, o, clock, bound_s, s);
  return summarise(s);
}

}  // namespace

double steady_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void time_one(const std::function<void()>& call, const std::function<double()>& clock, CallSamples& s) {
  const double start = clock();
  call();
  s.times.push_back(clock() - start);
  s.spent += s.times.back();
}

void time_until_done(const std::function<void()>& call, const TunerOptions& o,
                     const std::function<double()>& clock, double bound_s, CallSamples& s) {
  while (!timing_done(s, o, bound_s)) time_one(call, clock, s);
}

CallTiming summarise(const CallSamples& s) {
  const std::vector<double> times = s.warm();
  const auto [lo, hi] = std::minmax_element(times.begin(), times.end());
  return {median_of(times) * 1e3, (*hi - *lo) / 2 * 1e3, static_cast<int>(times.size()),
          s.warmup_s * 1e3};
}

CallTiming time_calls(const std::function<void()>& call, const TunerOptions& options,
                      double bound_s) {
  return time_with_clock(call, options, options.clock ? options.clock : steady_seconds, bound_s);
}

}  // namespace tunecnn
