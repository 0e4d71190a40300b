// One problem's search over its candidates: each trial's default config scouted, the trials
// finished fastest scout first, configs hill-climbed or swept, results kept in enumeration order,
// and the entry made of them. The timing policy is in call_timing.cpp, the playoff that ends a
// pass in candidate_playoff.cpp, the choice of a winner in candidate_choice.cpp. Also the timing
// arguments and the provenance an entry records.
#include "autotune/candidate_search.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <set>

#include "autotune/call_timing.h"
#include "autotune/tuning_cache.h"
#include "core/error.h"
#include "core/init.h"
#include "core/tensor.h"

namespace tunecnn {
namespace {

// A solver in a layout whose default config is this many times slower than the best so far does
// not climb its configs: one tunable step does not close such a gap, and each step costs calls.
constexpr double kClimbFactor = 1.3;
// A solver that asks for a sweep (the diagonal depthwise solver's group size, whose cost curve may
// dip more than once) is swept only when its default is within this factor of the best so far:
// on MobileNet its default was 4-8x behind direct kernels and the sweep's larger group sizes
// slower still, yet they cost a third of the profiling pass.
constexpr double kSweepFactor = 2;

std::string describe(const SolverTrial& trial, const TuneConfig& config) {
  std::string out = trial.solver;
  if (!config.values.empty()) out += " [" + config.str() + "]";
  return out + " in " + std::string(to_string(trial.layout));
}

std::size_t workspace_of(const SolverTrial& trial, const TuneConfig& config) {
  return trial.workspace_bytes ? trial.workspace_bytes(config) : 0;
}

// Configs that differ from `from` in one tunable only, set to the next smaller or larger value
// that tunable takes anywhere in `configs`.
std::vector<std::size_t> neighbours(const std::vector<TuneConfig>& configs, std::size_t from) {
  const auto& base = configs[from].values;
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < base.size(); ++k) {
    std::set<int> values;
    for (const TuneConfig& c : configs)
      if (k < c.values.size()) values.insert(c.values[k].second);
    auto at = values.find(base[k].second);
    std::vector<int> adjacent;
    if (at != values.begin()) adjacent.push_back(*std::prev(at));
    if (std::next(at) != values.end()) adjacent.push_back(*std::next(at));
    for (int value : adjacent)
      for (std::size_t j = 0; j < configs.size(); ++j) {
        auto moved = base;
        moved[k].second = value;
        if (configs[j].values == moved) out.push_back(j);
      }
  }
  return out;
}

}  // namespace

Tensor timing_input(const Shape& shape, DType dt, Device device, std::uint64_t seed) {
  Tensor t = Tensor::empty(shape, dt);
  hash_fill(t, -1, 1, seed);
  return t.to(device);
}

Tensor timing_output(const Shape& shape, DType dt, Device device) {
  return Tensor::zeros(shape, dt).to(device);
}

Provenance provenance_now() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return {host, utc_now_text("%Y-%m-%dT%H:%M:%SZ"), TUNECNN_VERSION};
}

// ---- the search ------------------------------------------------------------------------------

CandidateSearch::CandidateSearch(std::string key, std::string what, const TunerOptions& options)
    : key_(std::move(key)),
      what_(std::move(what)),
      options_(options),
      clock_(options.clock ? options.clock : steady_seconds),
      warn_(options.warn ? options.warn
                         : [](std::string_view m) { std::cerr << "warning: " << m << "\n"; }),
      started_s_(clock_()) {}

// One candidate on its way through the search: checked, maybe scouted, then timed and recorded.
struct CandidateSearch::Attempt {
  const SolverTrial* trial = nullptr;
  TuneConfig config;
  std::size_t bytes = 0;
  Rank rank;
  std::string wrong;  // empty: it agrees with the reference
  CallSamples samples;
  CandidateCost cost;
  double first_call_s() const { return samples.times.empty() ? 0 : samples.times.front(); }
};

// Trials in two passes. First each trial's default config is checked and given its warm-up and
// one timed call (scouting); then the trials are finished fastest scout first, so the likely
// winner is timed in full first and every rival after it meets a tight bound (hopeless() and
// kRivalBudget in call_timing.cpp), instead of a slow early candidate being timed in full for
// nothing. Results stay in enumeration order whatever the timing order was, so ties break the
// same way on every run.
void CandidateSearch::try_trials(const std::vector<SolverTrial>& trials) {
  std::vector<std::vector<TuneConfig>> configs;
  std::vector<Attempt> scouts;
  std::vector<std::size_t> trial_of;  // scouts[i] belongs to trials[trial_of[i]]
  for (const SolverTrial& trial : trials) {
    configs.push_back({});
    for (const TuneConfig& config : trial.configs)  // over budget: not recorded
      if (workspace_of(trial, config) <= options_.max_workspace_bytes) configs.back().push_back(config);
    const std::size_t number = next_trial_++;
    if (configs.back().empty()) continue;
    const bool a_scout_ran = std::any_of(scouts.begin(), scouts.end(), [](const Attempt& a) { return a.wrong.empty(); });
    if (a_scout_ran && out_of_time()) continue;
    scouts.push_back(check(trial, configs.back().front(), {number, 0}));
    trial_of.push_back(configs.size() - 1);
    if (scouts.back().wrong.empty()) scout(scouts.back());
  }
  std::vector<std::size_t> order(scouts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Correct ones by their scouting call (enumeration order among equals), then the wrong ones,
  // whose other configs may still be right.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const bool a_ok = scouts[a].wrong.empty(), b_ok = scouts[b].wrong.empty();
    if (a_ok != b_ok) return a_ok;
    return a_ok && scouts[a].first_call_s() < scouts[b].first_call_s();
  });
  for (std::size_t i : order) {
    if (has_correct() && out_of_time()) break;
    const SolverTrial& trial = trials[trial_of[i]];
    const std::vector<TuneConfig>& trial_configs = configs[trial_of[i]];
    const std::size_t number = scouts[i].rank.first;
    const std::size_t warmed = scouts[i].wrong.empty() ? scouts[i].bytes : 0;
    const double default_ms = finish(scouts[i]);
    // Within `factor` of the best so far, or wrong by default (infinite: other configs may be right).
    const auto within = [&](double factor) {
      return !std::isfinite(default_ms) || default_ms <= factor * best_seconds() * 1e3;
    };
    const bool exhaustive = options_.config_search == TunerOptions::ConfigSearch::exhaustive;
    if (has_correct() && out_of_time()) break;
    if (exhaustive || (trial.sweep && within(kSweepFactor))) {
      for (std::size_t c = 1; c < trial_configs.size() && !(has_correct() && out_of_time()); ++c)
        try_candidate(trial, trial_configs[c], {number, c}, warmed);
    } else if (!trial.sweep && within(kClimbFactor)) {
      climb(trial, trial_configs, number, default_ms, warmed);
    }
  }
  if (!out_of_time()) playoff(trials, next_trial_ - trials.size());
}

void CandidateSearch::try_trial(const SolverTrial& trial) {
  try_trials({trial});
}

void CandidateSearch::try_configs(const SolverTrial& trial, const std::vector<TuneConfig>& configs) {
  const std::size_t number = next_trial_++;
  std::size_t warmed = 0;
  for (std::size_t c = 0; c < configs.size(); ++c) {
    if (has_correct() && out_of_time()) return;
    const double ms = try_candidate(trial, configs[c], {number, c}, warmed);
    if (std::isfinite(ms)) warmed = std::max(warmed, workspace_of(trial, configs[c]));
  }
}

bool CandidateSearch::has_correct() const {
  return std::any_of(results_.begin(), results_.end(), [](const CandidateResult& c) { return c.correct; });
}

void CandidateSearch::warn(const std::string& message) const {
  warn_(message);
}

bool CandidateSearch::out_of_time() const {
  if (options_.out_of_time && options_.out_of_time()) cut_short_ = true;
  return cut_short_;
}

double CandidateSearch::best_seconds() const {
  double best_s = 0;
  for (const CandidateResult& r : results_)
    if (r.correct && r.runs > 0 && (best_s == 0 || r.median_ms / 1e3 < best_s)) best_s = r.median_ms / 1e3;
  return best_s;
}

CandidateSearch::Attempt CandidateSearch::check(const SolverTrial& trial, const TuneConfig& config,
                                                Rank rank) {
  Attempt a;
  a.trial = &trial;
  a.config = config;
  a.bytes = workspace_of(trial, config);
  a.rank = rank;
  a.cost.candidate = describe(trial, config);
  const double start = clock_();
  a.wrong = trial.verify ? trial.verify(config) : "";
  a.cost.verify_s = clock_() - start;
  if (!a.wrong.empty())
    warn_(what_ + " tuner: " + a.cost.candidate + " disagrees with the reference on " + key_ + " (" +
          a.wrong + "); disqualified");
  return a;
}

// One call, timed without a warm-up: a separate warm-up cost as much as the call itself for every
// candidate, and most candidates need no second call. The cold call is kept as the first sample,
// left out of the median once warm calls follow (CallSamples::warm), and hopeless() allows for it.
void CandidateSearch::scout(Attempt& a) {
  time_one([&] { a.trial->run(a.config, a.bytes); }, clock_, a.samples);
  a.samples.cold_first = true;
}

// Times a correct attempt to the end against the best so far and records it in rank order.
// Returns its median in ms (infinity when it is wrong).
double CandidateSearch::finish(Attempt& a) {
  CandidateResult result{a.trial->solver, a.config, a.trial->layout, 0, 0, 0, a.bytes, a.wrong.empty()};
  result.deterministic = !a.trial->deterministic || a.trial->deterministic(a.config);
  if (result.correct) {
    time_until_done([&] { a.trial->run(a.config, a.bytes); }, options_, clock_, best_seconds(), a.samples);
    const CallTiming t = summarise(a.samples);
    result.median_ms = t.median_ms;
    result.spread_ms = t.spread_ms;
    result.runs = t.runs;
    a.cost.timing_s = a.samples.warmup_s + a.samples.spent;
    a.cost.warmup_s = a.samples.warmup_s;
    a.cost.calls = static_cast<int>(a.samples.times.size());  // a dropped cold call included
  }
  const auto at = std::upper_bound(ranks_.begin(), ranks_.end(), a.rank);
  const auto index = at - ranks_.begin();
  ranks_.insert(at, a.rank);
  results_.insert(results_.begin() + index, result);
  costs_.insert(costs_.begin() + index, a.cost);
  return result.correct ? result.median_ms : std::numeric_limits<double>::infinity();
}

// A candidate of a trial whose other configs may have run already: warm when one of them has run
// with at least this workspace, so the code, the arguments and the allocator's memory are warm.
// With a bigger workspace its first call pays for fresh pages: it is taken as a cold call, like a
// scout's, rather than preceded by a warm-up that cost as much as the call itself.
double CandidateSearch::try_candidate(const SolverTrial& trial, const TuneConfig& config, Rank rank,
                                      std::size_t warmed_bytes) {
  Attempt a = check(trial, config, rank);
  a.samples.cold_first = warmed_bytes == 0 || a.bytes > warmed_bytes;
  return finish(a);
}

// Hill-climbing from the default config (already timed: `default_ms`): the walk stops at the
// first step that does not beat the current config by more than the noise floor, so a solver
// costs a handful of timings, not one per config.
void CandidateSearch::climb(const SolverTrial& trial, const std::vector<TuneConfig>& configs,
                            std::size_t number, double default_ms, std::size_t warmed_bytes) {
  std::map<std::size_t, double> timed{{0, default_ms}};  // config index -> median ms (infinity: wrong)
  const auto time_config = [&](std::size_t i) {
    if (auto it = timed.find(i); it != timed.end()) return it->second;
    const double ms = try_candidate(trial, configs[i], {number, i}, warmed_bytes);
    if (std::isfinite(ms)) warmed_bytes = std::max(warmed_bytes, workspace_of(trial, configs[i]));
    return timed[i] = ms;
  };
  std::size_t current = 0;
  double current_ms = default_ms;
  for (;;) {
    std::size_t best = current;
    double best_ms = current_ms;
    for (std::size_t j : neighbours(configs, current)) {
      if (has_correct() && out_of_time()) return;
      if (const double ms = time_config(j); ms < best_ms) best = j, best_ms = ms;
    }
    if (best == current || best_ms >= current_ms * (1 - kTieFraction)) return;
    current = best, current_ms = best_ms;
  }
}

TuningEntry CandidateSearch::entry() const {
  TUNECNN_CHECK(has_correct(), "no ", what_, " solver gives a correct result for ", key_,
                " within a workspace budget of ", options_.max_workspace_bytes, " bytes");
  const CandidateResult* chosen = choose_candidate(results_, [](const CandidateResult&) { return true; });
  if (options_.on_cost) options_.on_cost({what_, key_, clock_() - started_s_, costs_});
  return {key_, chosen->solver, chosen->config, chosen->layout, results_, provenance_now(), cut_short_};
}

}  // namespace tunecnn
