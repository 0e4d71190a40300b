#pragma once
// One candidate's timed calls (CallSamples) and the steps of the tuner's timing policy that the
// search takes one at a time: a scout's single call, the rest of a candidate's timing, the
// playoff's alternating calls. Internal to autotune/; time_calls (candidate_search.h) is the
// whole policy for any call.
#include <functional>
#include <vector>

#include "autotune/candidate_search.h"

namespace tunecnn {

// A noise floor for ties: timings within 3% of the best are indistinguishable on a busy CPU (on
// the 2-core development machine, the same candidate's median moved by a median 11% between
// four profiling runs of MobileNet; two candidates timed in alternation kept their order within
// 1-3%).
inline constexpr double kTieFraction = 0.03;

// The calls one candidate has had so far; a scouted candidate keeps its first timed call here
// until the rest of its timing.
struct CallSamples {
  std::vector<double> times;  // the timed calls, seconds
  double spent = 0;           // their sum
  double warmup_s = 0;        // the untimed warm-up calls
  bool cold_first = false;    // times[0] had no warm-up before it (a scout's call)

  // The calls the median, spread and settling are taken over: a cold first call is dropped once
  // warm ones follow (it decides only whether there are more), since it would otherwise hold the
  // median off settling for two more calls.
  std::vector<double> warm() const {
    if (cold_first && times.size() > 1) return {times.begin() + 1, times.end()};
    return times;
  }
};

// The steady clock, in seconds: the search's clock when options.clock is empty.
double steady_seconds();
// One timed call, added to the samples.
void time_one(const std::function<void()>& call, const std::function<double()>& clock,
              CallSamples& s);
// Timed calls until the policy says the candidate's timing is done (time_calls has the rules).
void time_until_done(const std::function<void()>& call, const TunerOptions& o,
                     const std::function<double()>& clock, double bound_s, CallSamples& s);
// Median, spread and count of the warm calls, and the warm-up's time, in ms.
CallTiming summarise(const CallSamples& s);

}  // namespace tunecnn
