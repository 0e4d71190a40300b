// Which of an entry's candidates a TunedPlanner may use here. Each op family (conv, pooling,
// softmax) is put to the policy as a Subject: its key, whether a candidate still runs on this
// device within the options (solver, layout, workspace), and how to tune or re-time it. Over
// those, the --force-solver rules decide which runnable candidates are eligible.
#include <algorithm>
#include <string>
#include <vector>

#include "autotune/tuned_planner.h"
#include "ops/conv/registry.h"
#include "ops/layout/to_layout.h"
#include "ops/pool/registry.h"
#include "ops/softmax/registry.h"

namespace tunecnn {

const ConvSolver* TunedPlanner::solver_named(const std::string& name, Device device) const {
  for (const ConvSolver* s : options_.solvers)
    if (s->name() == name) return s;
  return find_conv_solver(name, device);
}

TunedPlanner::Subject TunedPlanner::conv_subject(const ConvProblem& problem) const {
  Subject subject;
  subject.key = problem.key();
  subject.forcible = true;
  subject.offered = [this, problem](const CandidateResult& c) {
    const ConvSolver* solver = solver_named(c.solver, problem.device);
    return solver != nullptr && contains_config(solver->configs(problem), c.config);
  };
  subject.runnable = [this, problem](const CandidateResult& c) {
    const ConvSolver* solver = solver_named(c.solver, problem.device);
    return solver != nullptr && contains_layout(options_.layouts, c.layout) &&
           solver->applicable(problem, nullptr) && contains_layout(solver->layouts(problem), c.layout) &&
           contains_config(solver->configs(problem), c.config) &&
           solver->workspace_bytes(problem, c.config) <= options_.max_workspace_bytes;
  };
  subject.applies = [this, problem](const std::string& name) {
    const ConvSolver* solver = solver_named(name, problem.device);
    return solver != nullptr && solver->applicable(problem, nullptr);
  };
  subject.tune = [this, problem] { return tune_conv(problem, options_); };
  subject.retime = [this, problem](const std::vector<CandidateResult>& shortlist) {
    return retime_candidates(problem, shortlist, options_);
  };
  return subject;
}

TunedPlanner::Subject TunedPlanner::pool_subject(const PoolProblem& problem) const {
  Subject subject;
  subject.key = problem.key();
  subject.offered = [problem](const CandidateResult& c) {
    const PoolSolver* solver = find_pool_solver(c.solver, problem.device);
    return solver != nullptr && contains_config(solver->configs(problem), c.config);
  };
  subject.runnable = [this, problem](const CandidateResult& c) {
    const PoolSolver* solver = find_pool_solver(c.solver, problem.device);
    return solver != nullptr && contains_layout(options_.layouts, c.layout) &&
           solver->applicable(problem, nullptr) && contains_layout(solver->layouts(problem), c.layout) &&
           contains_config(solver->configs(problem), c.config);
  };
  subject.applies = [problem](const std::string& name) {
    const PoolSolver* solver = find_pool_solver(name, problem.device);
    return solver != nullptr && solver->applicable(problem, nullptr);
  };
  subject.tune = [this, problem] { return tune_pool(problem, options_); };
  subject.retime = [this, problem](const std::vector<CandidateResult>& shortlist) {
    return retime_pool_candidates(problem, shortlist, options_);
  };
  return subject;
}

TunedPlanner::Subject TunedPlanner::softmax_subject(const SoftmaxProblem& problem) const {
  Subject subject;
  subject.key = problem.key();
  // Softmax solvers have no tunables.
  subject.offered = [](const CandidateResult& c) { return c.config.values.empty(); };
  subject.runnable = [problem](const CandidateResult& c) {
    const SoftmaxSolver* solver = find_softmax_solver(c.solver, problem.device);
    return solver != nullptr && solver->applicable(problem, nullptr) && c.config.values.empty();
  };
  subject.applies = [problem](const std::string& name) {
    const SoftmaxSolver* solver = find_softmax_solver(name, problem.device);
    return solver != nullptr && solver->applicable(problem, nullptr);
  };
  subject.tune = [this, problem] { return tune_softmax(problem, options_); };
  subject.retime = [this, problem](const std::vector<CandidateResult>& shortlist) {
    return retime_softmax_candidates(problem, shortlist, options_);
  };
  return subject;
}

// Says which correct candidates of a cached entry hold a config their solver does not offer, so
// the user learns why a cached entry is ignored (runnable() leaves them out).
void TunedPlanner::warn_unoffered_configs(const TuningEntry& entry, const Subject& subject) const {
  for (const CandidateResult& c : entry.candidates) {
    if (!c.correct || !subject.applies(c.solver) || subject.offered(c)) continue;
    warn("tuning cache " + cache_label() + ": entry " + entry.key + ": " + c.solver + " [" +
         c.config.str() + "] is not a config that solver offers for this problem (edited by "
         "hand, or written by another version); ignored");
  }
}

bool TunedPlanner::forced(const std::string& solver) const {
  return std::find(options_.only_solvers.begin(), options_.only_solvers.end(), solver) !=
         options_.only_solvers.end();
}

// Runnable, and, under --force-solver, one of the forced solvers whenever any of them runs this
// problem (as in the tuner: the others only stand in when no forced solver can).
bool TunedPlanner::eligible(const TuningEntry& entry, const CandidateResult& c,
                            const Subject& subject) const {
  if (!subject.runnable(c)) return false;
  if (!subject.forcible || options_.only_solvers.empty() || forced(c.solver)) return true;
  return std::none_of(entry.candidates.begin(), entry.candidates.end(), [&](const CandidateResult& o) {
    return o.correct && o.runs > 0 && forced(o.solver) && subject.runnable(o);
  });
}

bool TunedPlanner::usable(const TuningEntry& entry, const Subject& subject) const {
  const bool any = choose_candidate(entry.candidates, [&](const CandidateResult& c) {
                     return eligible(entry, c, subject);
                   }) != nullptr;
  // An entry made without forcing may lack a forced solver that applies: tune it again.
  if (!any || !subject.forcible || options_.only_solvers.empty()) return any;
  for (const std::string& name : options_.only_solvers) {
    const bool measured = std::any_of(entry.candidates.begin(), entry.candidates.end(),
                                      [&](const CandidateResult& c) { return c.solver == name; });
    if (subject.applies(name) && !measured) return false;
  }
  return true;
}

const CandidateResult* TunedPlanner::best_in_layout(const TuningEntry& entry, const Subject& subject,
                                                    Layout layout) const {
  return choose_candidate(entry.candidates, [&](const CandidateResult& c) {
    return c.layout == layout && eligible(entry, c, subject);
  });
}

}  // namespace tunecnn
