#include "autotune/candidate_search.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>
#include <limits>
#include <map>
#include <set>

#include "core/error.h"
#include "core/init.h"
#include "core/tensor.h"

namespace tunecnn {

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

namespace {

// A noise floor for ties: timings within 3% of the best are indistinguishable on a busy CPU (on
// the 2-core development machine, the same candidate's median moved by a median 11% between
// four profiling runs of MobileNet; two candidates timed in alternation kept their order within
// 1-3%).
constexpr double kTieFraction = 0.03;
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
// A solver in a layout whose default config is this many times slower than the best so far does
// not climb its configs: one tunable step does not close such a gap, and each step costs calls.
constexpr double kClimbFactor = 1.3;
// A solver that asks for a sweep (the diagonal depthwise solver's group size, whose cost curve may
// dip more than once) is swept only when its default is within this factor of the best so far:
// on MobileNet its default was 4-8x behind direct kernels and the sweep's larger group sizes
// slower still, yet they cost a third of the profiling pass.
constexpr double kSweepFactor = 2;
// A pass's finalists (the two fastest and each layout's fastest) within this factor of the
// fastest are timed again in alternation, for this many calls each.
constexpr double kPlayoffFactor = 1.15;
constexpr int kPlayoffRounds = 2;
// A layout's fastest candidate cut on its one cold call within this factor of the fastest gets a
// second call before the playoff (CandidateSearch::second_opinion).
constexpr double kSecondOpinionFactor = 2.5;
// Settled: adding each of the last this many calls moved the median less than `settle`.
constexpr int kSettleLookback = 2;

double steady_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

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

void time_one(const std::function<void()>& call, const std::function<double()>& clock, CallSamples& s) {
  const double start = clock();
  call();
  s.times.push_back(clock() - start);
  s.spent += s.times.back();
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

CallTiming time_with_clock(const std::function<void()>& call, const TunerOptions& o,
                           const std::function<double()>& clock, double bound_s) {
  CallSamples s;
  warm_up(call, o, clock, s);
  time_until_done(call, o, clock, bound_s, s);
  return summarise(s);
}

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

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

CallTiming time_calls(const std::function<void()>& call, const TunerOptions& options,
                      double bound_s) {
  return time_with_clock(call, options, options.clock ? options.clock : steady_seconds, bound_s);
}

// Among eligible correct candidates, those within the noise of the fastest are ties; the tie goes
// to a deterministic candidate, then the least workspace, then the earliest in enumeration order
// (registry, layout, config), so equal timings always give the same plan.
const CandidateResult* choose_candidate(const std::vector<CandidateResult>& candidates,
                                        const std::function<bool(const CandidateResult&)>& eligible) {
  const auto ok = [&](const CandidateResult& c) { return c.correct && c.runs > 0 && eligible(c); };
  const CandidateResult* best = nullptr;
  for (const CandidateResult& c : candidates)
    if (ok(c) && (best == nullptr || c.median_ms < best->median_ms)) best = &c;
  if (best == nullptr) return nullptr;
  // Within the noise: the floor, or the two timings' spreads together when that is larger (a
  // candidate whose own calls varied by 0.5 ms is not known to be 0.4 ms slower).
  const auto tied = [&](const CandidateResult& c) {
    return c.median_ms <= best->median_ms + std::max(best->spread_ms + c.spread_ms, kTieFraction * best->median_ms);
  };
  const auto preferred = [](const CandidateResult& c, const CandidateResult& pick) {
    if (c.deterministic != pick.deterministic) return c.deterministic;
    if (c.workspace_bytes != pick.workspace_bytes) return c.workspace_bytes < pick.workspace_bytes;
    return &c < &pick;  // in order: the first of equals stays
  };
  const CandidateResult* pick = best;
  for (const CandidateResult& c : candidates)
    if (ok(c) && tied(c) && preferred(c, *pick)) pick = &c;
  return pick;
}

std::vector<CandidateResult> best_per_layout(const std::vector<CandidateResult>& candidates) {
  std::vector<CandidateResult> best;
  for (const CandidateResult& c : candidates) {
    if (!c.correct || c.runs == 0) continue;
    auto same = std::find_if(best.begin(), best.end(),
                             [&](const CandidateResult& b) { return b.layout == c.layout; });
    if (same == best.end())
      best.push_back(c);
    else if (c.median_ms < same->median_ms)
      *same = c;
  }
  std::sort(best.begin(), best.end(), [](const CandidateResult& a, const CandidateResult& b) {
    return a.median_ms < b.median_ms;
  });
  return best;
}

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
  return {host, utc_now_iso(), TUNECNN_VERSION};
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
// kRivalBudget), instead of a slow early candidate being timed in full for nothing. Results stay
// in enumeration order whatever the timing order was, so ties break the same way on every run.
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
    if (exhaustive || (trial.sweep && within(kSweepFactor))) {
      for (std::size_t c = 1; c < trial_configs.size(); ++c)
        try_candidate(trial, trial_configs[c], {number, c}, warmed);
    } else if (!trial.sweep && within(kClimbFactor)) {
      climb(trial, trial_configs, number, default_ms, warmed);
    }
  }
  playoff(trials, next_trial_ - trials.size());
}

// Each candidate was timed on its own, in whatever load the machine had at that moment, so a
// burst during the leader's calls can hand the win to a slower rival, and the best candidates of
// two layouts, which the layout DP weighs against each other, can swap places between runs. The
// finalists of this pass (the two fastest, and the fastest in each other layout) that are within
// kPlayoffFactor of the fastest are called in alternation (a, b, c, a, b, c, ...), so all see the
// same load, and those calls' medians replace their timings.
void CandidateSearch::playoff(const std::vector<SolverTrial>& trials, std::size_t first_number) {
  std::vector<std::size_t> timed;  // indices into results_, of this pass's timed candidates
  for (std::size_t i = 0; i < results_.size(); ++i)
    if (ranks_[i].first >= first_number && results_[i].correct && results_[i].runs > 0) timed.push_back(i);
  std::stable_sort(timed.begin(), timed.end(), [&](std::size_t a, std::size_t b) {
    return results_[a].median_ms < results_[b].median_ms;
  });
  std::vector<std::size_t> finalists;
  std::set<Layout> seen;
  for (std::size_t rank = 0; rank < timed.size(); ++rank) {
    const std::size_t index = timed[rank];
    const bool layout_best = seen.insert(results_[index].layout).second;
    const double fastest_ms = results_[timed[0]].median_ms;
    const bool close = results_[index].median_ms <= kPlayoffFactor * fastest_ms ||
                       (layout_best && second_opinion(trials, index, fastest_ms));
    if (close && (rank < 2 || layout_best)) finalists.push_back(index);
  }
  if (finalists.size() < 2) return;
  std::vector<CallSamples> samples(finalists.size());
  for (int round = 0; round < kPlayoffRounds; ++round)
    for (std::size_t k = 0; k < finalists.size(); ++k) time_one(call_of(trials, finalists[k]), clock_, samples[k]);
  for (std::size_t k = 0; k < finalists.size(); ++k) record(finalists[k], samples[k], kPlayoffRounds);
}

// A layout's fastest candidate that was cut on its one cold scouting call may have met a burst
// (on MobileNet one lasted through five candidates' calls and put every layout but the leader's
// at 2x), and then the layout DP weighs that layout at twice its cost. Within
// kSecondOpinionFactor of the fastest it gets one more call; when that one is within
// kPlayoffFactor, it is a finalist. One cut after a cold and a warm call was measured twice (on
// AlexNet a third call of direct_chwn cost 0.1 s per key and changed nothing).
bool CandidateSearch::second_opinion(const std::vector<SolverTrial>& trials, std::size_t index,
                                     double fastest_ms) {
  const CandidateResult& r = results_[index];
  if (costs_[index].calls > 1 || r.median_ms > kSecondOpinionFactor * fastest_ms) return false;
  CallSamples samples;
  samples.times = {r.median_ms / 1e3};
  time_one(call_of(trials, index), clock_, samples);
  record(index, samples, 1);  // both calls: their spread tells the layout DP how unsure they are
  return samples.times.back() * 1e3 <= kPlayoffFactor * fastest_ms;
}

std::function<void()> CandidateSearch::call_of(const std::vector<SolverTrial>& trials, std::size_t index) const {
  const CandidateResult& r = results_[index];
  const auto trial = std::find_if(trials.begin(), trials.end(), [&](const SolverTrial& t) {
    return t.solver == r.solver && t.layout == r.layout;
  });
  return [trial, config = r.config, bytes = r.workspace_bytes] { trial->run(config, bytes); };
}

// Replaces a candidate's timing with these calls', the last `new_calls` of which are added to
// what it has cost.
void CandidateSearch::record(std::size_t index, const CallSamples& samples, int new_calls) {
  const CallTiming t = summarise(samples);
  CandidateResult& r = results_[index];
  r.median_ms = t.median_ms;
  r.spread_ms = t.spread_ms;
  r.runs = t.runs;
  for (int k = 0; k < new_calls; ++k) costs_[index].timing_s += samples.times[samples.times.size() - 1 - k];
  costs_[index].calls += new_calls;
}

void CandidateSearch::try_trial(const SolverTrial& trial) {
  try_trials({trial});
}

void CandidateSearch::try_configs(const SolverTrial& trial, const std::vector<TuneConfig>& configs) {
  const std::size_t number = next_trial_++;
  std::size_t warmed = 0;
  for (std::size_t c = 0; c < configs.size(); ++c) {
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
    for (std::size_t j : neighbours(configs, current))
      if (const double ms = time_config(j); ms < best_ms) best = j, best_ms = ms;
    if (best == current || best_ms >= current_ms * (1 - kTieFraction)) return;
    current = best, current_ms = best_ms;
  }
}

TuningEntry CandidateSearch::entry() const {
  TUNECNN_CHECK(has_correct(), "no ", what_, " solver gives a correct result for ", key_,
                " within a workspace budget of ", options_.max_workspace_bytes, " bytes");
  const CandidateResult* chosen = choose_candidate(results_, [](const CandidateResult&) { return true; });
  if (options_.on_cost) options_.on_cost({what_, key_, clock_() - started_s_, costs_});
  return {key_, chosen->solver, chosen->config, chosen->layout, results_, provenance_now()};
}

}  // namespace tunecnn
