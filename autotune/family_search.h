#pragma once
// FamilySearch: the scaffold the conv, pool and softmax tuners share around the common search
// (candidate_search.h): the trials made from a list of solvers, the candidates another device
// listed, the timing arguments every trial runs on, and `--tune verify`'s fallback to a full
// tune. Each family subclasses it to say how its candidates are checked. Internal to autotune/.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <vector>

#include "autotune/candidate_search.h"
#include "ops/layout/to_layout.h"

namespace tunecnn {

// The solvers of a list (a registry, options.solvers) that `keep` accepts, in the list's order.
template <class Solvers, class Keep>
std::vector<std::ranges::range_value_t<Solvers>> solvers_where(const Solvers& solvers, Keep keep) {
  std::vector<std::ranges::range_value_t<Solvers>> kept;
  for (const auto* solver : solvers)
    if (keep(*solver)) kept.push_back(solver);
  return kept;
}

// The layouts a solver runs in that the caller allows (options.layouts), in the solver's order.
inline std::vector<Layout> allowed_layouts(const std::vector<Layout>& solver_layouts,
                                           const TunerOptions& options) {
  std::vector<Layout> allowed;
  for (Layout layout : solver_layouts)
    if (contains_layout(options.layouts, layout)) allowed.push_back(layout);
  return allowed;
}

// One tune_X or retime_X call's search. The family's traits (ConvFamily, PoolFamily,
// SoftmaxFamily in the tuners' .cpp files) supply:
//   Problem, Solver, Args                 the family's types
//   kWhat                                 "conv", "pool" or "softmax", in messages
//   layouts(solver, problem, options)     the layouts a solver is tried in, in order
//   configs(solver, problem)              its configs, the default first
//   timing_args(problem, seed)            what candidates are timed on, NCHW, on the device
//   viewed_in_layout(args, layout)        the same memory read as `layout`
//   run_timed(solver, problem, config, args, workspace_bytes)   one timed call
template <class Family>
class FamilySearch : public CandidateSearch {
 public:
  using Problem = typename Family::Problem;
  using Solver = typename Family::Solver;
  using Args = typename Family::Args;

  FamilySearch(const Problem& problem, const TunerOptions& options)
      : CandidateSearch(problem.key(), Family::kWhat, options),
        problem_(problem),
        options_(options) {}
  virtual ~FamilySearch() = default;

  // Every applicable solver of `solvers` in each of its layouts, in one search pass, so the
  // likely winner among them is timed first.
  void try_solvers(std::span<const Solver* const> solvers) {
    std::vector<SolverTrial> trials;
    for (const Solver* solver : solvers) {
      if (!solver->applicable(problem_, nullptr)) continue;
      for (Layout layout : Family::layouts(*solver, problem_, options_))
        trials.push_back(trial(*solver, layout));
    }
    try_trials(trials);
  }

  // Candidates named by an earlier entry (another device's), each alone, in the listed order:
  // those whose solver `solvers` still has and that run the problem in their layout with a config
  // the solver offers (a cache file may hold any values; none is run unchecked).
  void try_listed(const std::vector<CandidateResult>& listed,
                  std::span<const Solver* const> solvers) {
    for (const CandidateResult& c : listed) {
      const auto named = std::find_if(solvers.begin(), solvers.end(),
                                      [&](const Solver* s) { return s->name() == c.solver; });
      if (named == solvers.end() || !(*named)->applicable(problem_, nullptr) ||
          !contains_layout(Family::layouts(**named, problem_, options_), c.layout) ||
          !contains_config(Family::configs(**named, problem_), c.config))
        continue;
      try_configs(trial(**named, c.layout), {c.config});
    }
  }

  // `--tune verify`, after try_listed: the entry the `listed` candidates make, or a full tune
  // (`tune_fully`), with a warning, when none of them runs correctly here.
  TuningEntry entry_or_full_tune(std::size_t listed,
                                 const std::function<TuningEntry()>& tune_fully) {
    if (has_correct()) return entry();
    warn(std::string(Family::kWhat) + " tuner: none of the " + std::to_string(listed) +
         " candidates carried over for " + problem_.key() + " runs here; tuning it fully");
    return tune_fully();
  }

 protected:
  // The family's trial: timed_trial plus how a candidate is checked (SolverTrial::verify) and
  // anything else of its own the search weighs.
  virtual SolverTrial trial(const Solver& solver, Layout layout) = 0;

  // A solver in a layout with its configs, run on the timing arguments.
  SolverTrial timed_trial(const Solver& solver, Layout layout) {
    SolverTrial t;
    t.solver = std::string(solver.name());
    t.layout = layout;
    t.configs = Family::configs(solver, problem_);
    // Made here, not in the first timed call: making the arguments would count against whichever
    // candidate comes first in a layout, and get it pruned as hopeless.
    Args* args = &timing_args(layout);
    t.run = [this, &solver, args](const TuneConfig& c, std::size_t workspace_bytes) {
      Family::run_timed(solver, problem_, c, *args, workspace_bytes);
    };
    return t;
  }

  const Problem problem_;
  const TunerOptions& options_;

 private:
  // Allocated once and viewed in each layout: timing never reads the values back, so every
  // layout's candidates share one set, with no conversion, a third of the memory to touch, and
  // the same cache state for all.
  Args& timing_args(Layout layout) {
    if (!timing_base_) timing_base_ = Family::timing_args(problem_, options_.seed);
    auto it = timing_args_.find(layout);
    if (it == timing_args_.end())
      it = timing_args_.emplace(layout, Family::viewed_in_layout(*timing_base_, layout)).first;
    return it->second;
  }

  std::optional<Args> timing_base_;  // NCHW
  std::map<Layout, Args> timing_args_;  // views of timing_base_
};

}  // namespace tunecnn
