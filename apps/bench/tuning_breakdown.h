#pragma once
// Where a profiling pass spends its seconds: `bench plans --breakdown keys|candidates` collects
// each search's cost (autotune/candidate_search.h) and prints them per problem kind, per key and,
// with `candidates`, per candidate: checks against the reference, warm-up and timed calls, and
// the rest (arguments, the reference's inputs, the search itself).
#include <iosfwd>
#include <string>
#include <vector>

#include "autotune/candidate_search.h"

namespace tunecnn {

class TuningBreakdown {
 public:
  // Installs a collector in `options` (replacing any earlier on_cost); this object must outlive
  // the searches run with those options.
  void attach(TunerOptions& options);

  // `detail`: "keys" or "candidates". `pass_s`: the whole profiling pass as the caller timed it;
  // `tuner_s`: the planner's time inside the tuners (TunedPlannerStats::profile_seconds), so the
  // time around the searches (transform calibration, cache writes, planning) is shown too.
  void print(std::ostream& out, const std::string& detail, double pass_s, double tuner_s) const;

 private:
  std::vector<SearchCost> searches_;
};

// "keys" or "candidates"; throws Error naming them otherwise. Empty is accepted (no breakdown).
void check_breakdown_detail(const std::string& detail);

}  // namespace tunecnn
