#pragma once
// The tuner's core, common to every kind of problem (convolution, pooling, softmax): try each
// solver in each layout over its configs, check every candidate once against the reference, time
// the correct ones with one timing policy, and pick a winner that stays the same across runs when
// timings are within noise. The per-kind tuners (conv_tuner.h, pool_tuner.h, softmax_tuner.h)
// only say how a candidate is checked and run.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autotune/records.h"
#include "core/tensor.h"

namespace tunecnn {

// NCHW, CHWN and NHWC. (A function rather than a braced default member initializer, which
// GCC 12 misreads as maybe-uninitialized when the options are copied.)
inline std::vector<Layout> all_layouts() { return {Layout::NCHW, Layout::CHWN, Layout::NHWC}; }

// Where one search's seconds went, reported when its entry is made (bench plans --breakdown).
// Seconds of the search's clock (options.clock when set).
struct CandidateCost {
  std::string candidate;  // "solver [config] in LAYOUT"
  double verify_s = 0;    // its check against the reference (building the reference included)
  double timing_s = 0;    // its warm-up and timed calls
  double warmup_s = 0;    // the untimed warm-up calls alone
  int calls = 0;          // timed calls (warm-up not counted)
};
struct SearchCost {
  std::string what, key;  // "conv", "pool" or "softmax"; the problem key
  double total_s = 0;     // from the search's start to its entry: also argument setup
  std::vector<CandidateCost> candidates;  // in the order tried
};

struct TunerOptions {
  // The memory budget (--max-workspace). Candidates over it are skipped and not recorded: the
  // entry keeps what could run, and a bigger budget later is a different tuning question.
  std::size_t max_workspace_bytes = SIZE_MAX;
  // max_repeats bounds the leader of a search (rivals stop earlier, see time_calls): its median
  // only has to bound the rivals, since the playoff (CandidateSearch::try_trials) then re-times it
  // with the close finalists in alternation; 3 calls (a cold scouting call and 2 warm ones).
  int warmup = 1, min_repeats = 2, max_repeats = 3;
  double max_seconds = 0.5;  // cap on one candidate's timed calls; at least one call always runs
  double settle = 0.02;      // settled: the last two calls moved the median less than this
  // The layouts the caller can run in (layers run in any; the layout planner picks).
  std::vector<Layout> layouts = all_layouts();
  // --force-solver: only these conv solver names (empty: all). When none of them yields a correct
  // candidate for a problem (e.g. mec on a grouped conv), the tuner warns and uses all solvers.
  std::vector<std::string> only_solvers;
  // How a solver's configs are searched. hill_climb starts at the solver's first (default) config
  // and moves to the best neighbour (one tunable changed to the next value up or down) while that
  // is faster beyond the noise, as Li et al. tune the pooling factor; exhaustive times them all.
  enum class ConfigSearch { hill_climb, exhaustive } config_search = ConfigSearch::hill_climb;
  // The conv solvers to try, in preference order (empty: cpu_conv_solvers()). Tests inject fakes.
  std::vector<const ConvSolver*> solvers;
  std::function<double()> clock;               // seconds; empty: std::chrono::steady_clock
  std::function<void(std::string_view)> warn;  // empty: std::cerr
  std::uint64_t seed = 1;                      // for the random arguments
  std::function<void(const SearchCost&)> on_cost;  // empty: costs are not reported
  // The tuning budget (--tune-budget; empty: none). Once it says true, a search that has a correct
  // candidate tries no other and skips its playoff; its entry is marked partial.
  std::function<bool()> out_of_time;
};

struct CallTiming {
  double median_ms = 0, spread_ms = 0;  // spread: (max - min) / 2
  int runs = 0;
  double warmup_ms = 0;  // the warm-up calls that were not kept as timed calls
};

// The tuner's timing policy for any call (calibration uses it too): warm-up (a call over 50 ms is
// its own warm-up), then timed calls until the median settles, `max_seconds` is spent or
// `max_repeats` is reached; one timed call at least. With `bound_s` > 0 (the best so far, in
// seconds), a first call over 1.15x the bound ends the timing, so does a fastest call over
// 1.03x of it after two, and so does having spent 2x the bound (a close rival's repeats).
// Uses options.clock when set.
CallTiming time_calls(const std::function<void()>& call, const TunerOptions& options,
                      double bound_s = 0);

// The tuner's choice among the correct, timed candidates that `eligible` accepts: within the noise
// of the fastest, the least workspace, then the earliest. nullptr when none qualifies.
const CandidateResult* choose_candidate(const std::vector<CandidateResult>& candidates,
                                        const std::function<bool(const CandidateResult&)>& eligible);

// The fastest correct, timed candidate in each layout, fastest first: at most one per layout.
std::vector<CandidateResult> best_per_layout(const std::vector<CandidateResult>& candidates);

// One solver in one layout as the search sees it.
struct SolverTrial {
  std::string solver;  // its stable name
  Layout layout = Layout::NCHW;
  std::vector<TuneConfig> configs;  // the first is the default, where hill-climbing starts
  bool sweep = false;  // time every config whatever options.config_search says (the solver asks)
  std::function<std::size_t(const TuneConfig&)> workspace_bytes;  // empty: none
  std::function<bool(const TuneConfig&)> deterministic;            // empty: always
  // Empty when the candidate agrees with the reference, else what went wrong. An empty function
  // means the solver is the reference itself and is not checked.
  std::function<std::string(const TuneConfig&)> verify;
  // Runs the candidate once on the real problem (arguments allocated by the caller, reused).
  std::function<void(const TuneConfig&, std::size_t workspace_bytes)> run;
};

struct CallSamples;  // one candidate's timed calls (call_timing.h)

// One problem's search: candidates accumulate over calls, in the order tried, which is also the
// last tie-break.
class CandidateSearch {
 public:
  // `what` names the problem kind in messages ("conv", "pool", "softmax").
  CandidateSearch(std::string key, std::string what, const TunerOptions& options);

  // Every config (exhaustive, or a trial that asks for a sweep) or a hill-climb from the first,
  // per options.config_search; configs over the workspace budget are skipped and not recorded.
  // The trials' default configs are scouted first (one cold timed call each) and the
  // trials finished fastest scout first, so the rest meet a tight bound; a trial whose default is
  // over 1.3x the best so far does not climb. Last, the finalists (the two fastest and each
  // other layout's fastest) within 1.15x of the fastest are timed again in alternation and those
  // timings stand. Results keep the enumeration order.
  void try_trials(const std::vector<SolverTrial>& trials);
  void try_trial(const SolverTrial& trial);  // one trial alone
  // Exactly these configs of the trial, in order (another device's shortlist under verify).
  void try_configs(const SolverTrial& trial, const std::vector<TuneConfig>& configs);

  bool has_correct() const;
  void warn(const std::string& message) const;
  const std::vector<CandidateResult>& results() const { return results_; }
  // The decision and every candidate; throws Error when none is correct.
  TuningEntry entry() const;

 private:
  struct Attempt;
  using Rank = std::pair<std::size_t, std::size_t>;  // (trial number, config index): result order
  Attempt check(const SolverTrial& trial, const TuneConfig& config, Rank rank);
  void scout(Attempt& attempt);
  double finish(Attempt& attempt);
  double try_candidate(const SolverTrial& trial, const TuneConfig& config, Rank rank,
                       std::size_t warmed_bytes);
  void climb(const SolverTrial& trial, const std::vector<TuneConfig>& configs, std::size_t number,
             double default_ms, std::size_t warmed_bytes);
  void playoff(const std::vector<SolverTrial>& trials, std::size_t first_number);
  bool second_opinion(const std::vector<SolverTrial>& trials, std::size_t index, double fastest_ms);
  std::function<void()> call_of(const std::vector<SolverTrial>& trials, std::size_t index) const;
  void record(std::size_t index, const CallSamples& samples, int new_calls);
  double best_seconds() const;
  bool out_of_time() const;  // the budget is spent (the search stops trying candidates)

  std::string key_, what_;
  const TunerOptions& options_;
  std::function<double()> clock_;
  std::function<void(std::string_view)> warn_;
  std::vector<CandidateResult> results_;  // sorted by ranks_
  std::vector<Rank> ranks_;
  std::vector<CandidateCost> costs_;      // parallel to results_
  std::size_t next_trial_ = 0;
  double started_s_;
  mutable bool cut_short_ = false;  // out_of_time() stopped the search: its entry is partial
};

// Where a decision came from: this host, now, this build.
Provenance provenance_now();

// The tuners' timing arguments, whose values are never read back: an input hash-filled in
// [-1, 1) (hash_fill: cheap for batch-sized tensors) and an output of zeros, made on the CPU in
// NCHW and moved to `device`. A search views one set in every layout (Tensor::with_layout).
Tensor timing_input(const Shape& shape, DType dt, Device device, std::uint64_t seed);
Tensor timing_output(const Shape& shape, DType dt, Device device);

}  // namespace tunecnn
