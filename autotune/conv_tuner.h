#pragma once
// The conv tuner core: for one problem, try every applicable solver x layout x config, check each
// once against the direct reference on small data, time the correct ones on the real problem and
// pick a winner that stays the same across runs when timings are within noise.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "autotune/records.h"
#include "ops/conv/plan.h"

namespace tunecnn {

// NCHW, CHWN and NHWC. (A function rather than a braced default member initializer, which
// GCC 12 misreads as maybe-uninitialized when the options are copied.)
inline std::vector<Layout> all_layouts() { return {Layout::NCHW, Layout::CHWN, Layout::NHWC}; }

struct ConvTunerOptions {
  // The memory budget (--max-workspace). Candidates over it are skipped and not recorded: the
  // entry keeps what could run, and a bigger budget later is a different tuning question.
  std::size_t max_workspace_bytes = SIZE_MAX;
  int warmup = 1, min_repeats = 3, max_repeats = 30;
  double max_seconds = 0.5;  // cap on one candidate's timed calls; at least one call always runs
  double settle = 0.02;      // settled: the last two calls moved the median less than this
  // The layouts the caller can run in (conv layers run in any; the layout planner picks).
  std::vector<Layout> layouts = all_layouts();
  // --force-solver: only these solver names (empty: all). When none of them yields a correct
  // candidate for a problem (e.g. mec on a grouped conv), the tuner warns and uses all solvers.
  std::vector<std::string> only_solvers;
  // How a solver's configs are searched. hill_climb starts at the solver's first (default) config
  // and moves to the best neighbour (one tunable changed to the next value up or down) while that
  // is faster beyond the noise, as Li et al. tune the pooling factor; exhaustive times them all.
  enum class ConfigSearch { hill_climb, exhaustive } config_search = ConfigSearch::hill_climb;
  // The solvers to try, in preference order (empty: cpu_conv_solvers()). Tests inject fakes.
  std::vector<const ConvSolver*> solvers;
  std::function<double()> clock;               // seconds; empty: std::chrono::steady_clock
  std::function<void(std::string_view)> warn;  // empty: std::cerr
  std::uint64_t seed = 1;                      // for the random arguments
};

// Tunes one problem (any direction). The direct reference is tried only when forced or when no
// other solver gives a correct candidate, since it is very slow. Throws Error when nothing at all
// can run the problem within the budget.
TuningEntry tune_conv(const ConvProblem& problem, const ConvTunerOptions& options);

struct CallTiming {
  double median_ms = 0, spread_ms = 0;  // spread: (max - min) / 2
  int runs = 0;
};

// The tuner's timing policy for any call (calibration uses it too): warm-up (a call over 50 ms is
// its own warm-up), then timed calls until the median settles, `max_seconds` is spent or
// `max_repeats` is reached; one timed call at least. With `bound_s` > 0 (the best so far, in
// seconds), a first call over 1.5x the bound ends the timing. Uses options.clock when set.
CallTiming time_calls(const std::function<void()>& call, const ConvTunerOptions& options,
                      double bound_s = 0);

// The runnable plan an entry describes; throws Error when it names a solver this build lacks.
ConvPlan plan_from_entry(const TuningEntry& entry);

// The tuner's choice among the correct, timed candidates that `eligible` accepts: within the noise
// of the fastest, the least workspace, then the earliest. nullptr when none qualifies.
const CandidateResult* choose_candidate(const std::vector<CandidateResult>& candidates,
                                        const std::function<bool(const CandidateResult&)>& eligible);

// The fastest correct, timed candidate in each layout, fastest first: at most one per layout.
std::vector<CandidateResult> best_per_layout(const std::vector<CandidateResult>& candidates);

// `--tune verify`: checks and re-times only `shortlist` (typically best_per_layout of another
// device's entry) on this device and returns the entry they make. Falls back to a full tune_conv,
// with a warning, when none of them runs correctly here.
TuningEntry retime_candidates(const ConvProblem& problem, const std::vector<CandidateResult>& shortlist,
                              const ConvTunerOptions& options);

// The same geometry at batch 2 with the spatial size reduced until the reference is cheap;
// kernel, stride, padding and channels kept. The tuner checks candidates on it.
ConvProblem verification_problem(const ConvProblem& problem);

}  // namespace tunecnn
