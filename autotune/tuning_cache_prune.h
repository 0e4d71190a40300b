#pragma once
// Housekeeping for a tuning cache that otherwise only grows (`autotune prune`): device sections no
// run has used for a while or that an older tunecnn wrote, entries whose chosen solver this build
// no longer has, and the candidates no plan reads. What stays of an entry is what `--tune cached`
// and `--tune verify` read under the options it was tuned with, so they make the same plans.
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autotune/tuning_cache.h"

namespace tunecnn {

struct PruneOptions {
  std::string today;  // "YYYY-MM-DD" (utc_date_today())
  int older_than_days = 90;
  // Sections without last_used were written before the field existed; their age is unknown, so
  // they stay unless this is set.
  bool drop_undated = false;
  // This machine's sections (its CPU at the run's threads, its GPU): the ones whose plans are
  // current, never dropped for their age.
  std::set<std::string> current_devices;
  std::string current_version;  // this build's TUNECNN_VERSION; older sections are dropped
  bool keep_all_candidates = false;
  SolverFilter known = is_known_solver;
  // A build without CUDA has an empty GPU registry: it cannot tell a GPU solver that is gone from
  // one it never had, so it leaves GPU sections' entries alone.
  bool gpu_solvers_known = false;
};

struct PruneReport {
  std::vector<std::string> dropped_devices;  // "ID: why"
  std::vector<std::string> dropped_entries;  // "ID KEY: why"
  std::size_t dropped_candidates = 0;
};

// Prunes `cache` in place and says what it removed.
PruneReport prune_tuning_cache(TuningCache& cache, const PruneOptions& options);

// The candidates of `entry` that plans read: the chosen one, and in each layout the planner's
// choice (choose_candidate: what the layout planner weighs) and the fastest (best_per_layout: what
// --tune verify re-times for another device), among correct, timed candidates of known solvers.
// In their original order, since ties go to the earliest.
std::vector<CandidateResult> candidates_plans_read(const TuningEntry& entry,
                                                   const SolverFilter& known);

// Negative, zero or positive as `a` is older than, the same as or newer than `b` ("0.1.0");
// nullopt when either is not dotted numbers.
std::optional<int> compare_versions(const std::string& a, const std::string& b);

// Whole days from `from` to `to` ("YYYY-MM-DD"); nullopt for a malformed date.
std::optional<long> days_between(const std::string& from, const std::string& to);

}  // namespace tunecnn
