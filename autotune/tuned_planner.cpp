#include "autotune/tuned_planner.h"

#include <cstdio>
#include <algorithm>
#include <iostream>
#include <set>
#include <utility>

#include "autotune/calibration.h"
#include "autotune/tuned_planner_internal.h"
#include "core/error.h"
#include "ops/conv/registry.h"
#include "ops/pool/registry.h"
#include "ops/softmax/registry.h"
#include "ops/layout/to_layout.h"

namespace tunecnn {
using tuned_planner_internal::directions;
using tuned_planner_internal::kDirections;
using tuned_planner_internal::kPoolDirections;
using tuned_planner_internal::pool_directions;
using tuned_planner_internal::section_device;
using tuned_planner_internal::steady_seconds;

namespace {

}  // namespace

TunePolicy parse_tune_policy(std::string_view text) {
  if (text == "off") return TunePolicy::off;
  if (text == "cached") return TunePolicy::cached;
  if (text == "full") return TunePolicy::full;
  if (text == "verify") return TunePolicy::verify;
  TUNECNN_FAIL("unknown tuning policy '", text, "': expected off, cached, full or verify");
}

std::string_view to_string(TunePolicy policy) {
  switch (policy) {
    case TunePolicy::off: return "off";
    case TunePolicy::cached: return "cached";
    case TunePolicy::full: return "full";
    case TunePolicy::verify: return "verify";
  }
  return "?";
}

void TunedPlanner::warn(const std::string& message) const {
  if (options_.warn)
    options_.warn(message);
  else
    std::cerr << "warning: " << message << "\n";
}

// ---- which cached candidates still run here ---------------------------------------------------

const ConvSolver* TunedPlanner::solver_named(const std::string& name, Device device) const {
  for (const ConvSolver* s : options_.solvers)
    if (s->name() == name) return s;
  return find_conv_solver(name, device);
}

TunedPlanner::Subject TunedPlanner::conv_subject(const ConvProblem& problem) const {
  Subject subject;
  subject.key = problem.key();
  subject.forcible = true;
  subject.runnable = [this, problem](const CandidateResult& c) {
    const ConvSolver* solver = solver_named(c.solver, problem.device);
    return solver != nullptr && contains_layout(options_.layouts, c.layout) &&
           solver->applicable(problem, nullptr) && contains_layout(solver->layouts(problem), c.layout) &&
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
  subject.runnable = [this, problem](const CandidateResult& c) {
    const PoolSolver* solver = find_pool_solver(c.solver, problem.device);
    return solver != nullptr && contains_layout(options_.layouts, c.layout) &&
           solver->applicable(problem, nullptr) && contains_layout(solver->layouts(problem), c.layout);
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
  subject.runnable = [problem](const CandidateResult& c) {
    const SoftmaxSolver* solver = find_softmax_solver(c.solver, problem.device);
    return solver != nullptr && solver->applicable(problem, nullptr);
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

// Another device's entry for this key: the one whose fingerprint shares the most fields with
// ours (the same CPU model and ISA first), then the most timed runs. Only devices of our kind: the
// keys do not name the device, and a GPU's shortlist re-timed on a CPU (or the reverse) would
// stand in for a full search and leave out the solvers that only this kind has (cudnn; winograd,
// direct_chwn).
const TuningEntry* TunedPlanner::foreign_entry(const std::string& key) const {
  const TuningEntry* best = nullptr;
  int best_shared = -1;
  for (const auto& [id, device] : cache_.devices()) {
    if (id == device_id_ || section_device(id) != section_device(device_id_)) continue;
    auto it = device.entries.find(key);
    if (it == device.entries.end()) continue;
    int shared = 0;
    for (const auto& [field, value] : device.fingerprint) {
      auto mine = device_fields_.find(field);
      shared += mine != device_fields_.end() && mine->second == value;
    }
    if (shared > best_shared) best = &it->second, best_shared = shared;
  }
  return best;
}

// ---- resolving one direction ------------------------------------------------------------------

const TuningEntry& TunedPlanner::remember(TuningEntry entry) {
  const std::string key = entry.key;
  return resolved_[key] = std::move(entry);
}

bool TunedPlanner::would_profile(const Subject& subject) const {
  if (policy_ == TunePolicy::off) return false;
  if (resolved_.count(subject.key)) return false;
  if (policy_ == TunePolicy::full) return true;
  const TuningEntry* entry = cache_.find(device_id_, subject.key);
  return entry == nullptr || !usable(*entry, subject);
}

const TuningEntry* TunedPlanner::resolve(const Subject& subject) {
  const std::string& key = subject.key;
  if (auto it = resolved_.find(key); it != resolved_.end()) return &it->second;
  if (missing_.count(key)) return nullptr;
  ++stats_.keys;
  if (policy_ != TunePolicy::full) {
    if (const TuningEntry* entry = cache_.find(device_id_, key)) {
      if (usable(*entry, subject)) {
        ++stats_.from_cache;
        return &remember(*entry);
      }
      warn("tuning cache " + (cache_path_.empty() ? "(in memory)" : cache_path_.string()) + ": no candidate of the entry for " + key +
           " runs here any more (solver gone, not applicable, or over --max-workspace)" +
           (policy_ == TunePolicy::off ? "; deciding it from the thresholds" : "; re-tuning it"));
    }
  }
  if (policy_ == TunePolicy::off) {
    ++stats_.defaults;
    missing_[key] = true;
    return nullptr;
  }
  if (on_profile) on_profile(key);
  const double start = steady_seconds();
  TuningEntry entry;
  const TuningEntry* foreign = policy_ == TunePolicy::verify ? foreign_entry(key) : nullptr;
  if (foreign != nullptr) {
    const std::vector<CandidateResult> shortlist = best_per_layout(foreign->candidates);
    entry = subject.retime(shortlist);
    ++stats_.verified;
    stats_.retimed_candidates += static_cast<int>(entry.candidates.size());
  } else {
    entry = subject.tune();
    ++stats_.profiled;
  }
  stats_.profile_seconds += steady_seconds() - start;
  store(entry, subject.forcible);
  return &remember(std::move(entry));
}

int TunedPlanner::pending(const std::vector<std::pair<ConvProblem, LayerUse>>& conv_layers,
                          const std::vector<std::pair<PoolProblem, LayerUse>>& pool_layers,
                          const std::vector<SoftmaxProblem>& softmax_problems) const {
  std::lock_guard lock(mutex_);
  std::set<std::string> keys;
  const auto count = [&](const Subject& subject) {
    if (would_profile(subject)) keys.insert(subject.key);
  };
  for (const auto& [fwd, use] : conv_layers)
    for (Direction dir : directions(use)) count(conv_subject(fwd.with_dir(dir)));
  for (const auto& [fwd, use] : pool_layers)
    for (Direction dir : pool_directions(use)) count(pool_subject(fwd.with_dir(dir)));
  for (const SoftmaxProblem& problem : softmax_problems) count(softmax_subject(problem));
  return static_cast<int>(keys.size());
}

// ---- resolving a layer's directions ----------------------------------------------------------

std::optional<LayerEntries> TunedPlanner::layer_entries(const ConvProblem& fwd_problem,
                                                        LayerUse use) {
  std::lock_guard lock(mutex_);
  LayerEntries entries;
  bool complete = true;
  for (Direction dir : directions(use)) {  // every direction, so `off` counts each missing key
    const TuningEntry* entry = resolve(conv_subject(fwd_problem.with_dir(dir)));
    if (entry != nullptr) entries[static_cast<int>(dir)] = *entry;
    complete = complete && entry != nullptr;
  }
  if (!complete) return std::nullopt;
  return entries;
}

std::optional<PoolEntries> TunedPlanner::pool_entries(const PoolProblem& fwd_problem, LayerUse use) {
  std::lock_guard lock(mutex_);
  PoolEntries entries;
  bool complete = true;
  for (Direction dir : pool_directions(use)) {
    const TuningEntry* entry = resolve(pool_subject(fwd_problem.with_dir(dir)));
    if (entry != nullptr) entries[static_cast<int>(dir)] = *entry;
    complete = complete && entry != nullptr;
  }
  if (!complete) return std::nullopt;
  return entries;
}

}  // namespace tunecnn
