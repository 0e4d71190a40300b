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
#include "core/tensor.h"

namespace tunecnn {
namespace {

// A noise floor for ties: timings within 2% of the best are indistinguishable on a busy CPU.
constexpr double kTieFraction = 0.02;
// A first timed call this many times slower than the best median so far ends a candidate's timing;
// so do two calls whose faster one is still beyond kLosingMargin of it.
constexpr double kHopelessFactor = 1.25;
constexpr double kLosingMargin = 0.05;
// Calls longer than this need no separate warm-up.
constexpr double kLongCallSeconds = 0.05;
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

CallTiming summarise(const std::vector<double>& times, double warmup_s) {
  const auto [lo, hi] = std::minmax_element(times.begin(), times.end());
  return {median_of(times) * 1e3, (*hi - *lo) / 2 * 1e3, static_cast<int>(times.size()), warmup_s * 1e3};
}

// A candidate that cannot win: its median will be at least its fastest call, and that is already
// slower than the best median so far (`bound_s`) by more than the noise allows. One call decides
// only when it is far slower; two when it is close, so one unlucky call does not drop a rival.
bool hopeless(const std::vector<double>& times, double bound_s) {
  if (bound_s <= 0 || times.empty()) return false;
  if (times.size() == 1) return times[0] > kHopelessFactor * bound_s;
  return *std::min_element(times.begin(), times.end()) > (1 + kLosingMargin) * bound_s;
}

// Warm-up (a call over kLongCallSeconds is kept as the first timed call instead), then timed
// calls until the median settles, the cap is spent or max_repeats is reached; at least one timed
// call always runs.
// A candidate that cannot win (hopeless(), against the best so far, `bound_s` seconds; 0: none
// yet) is not timed further, as in MIOpen's and cuDNN's find: the repeats would only measure
// precisely how much it loses.
CallTiming time_with_clock(const std::function<void()>& call, const TunerOptions& o,
                           const std::function<double()>& clock, double bound_s) {
  std::vector<double> times;
  double spent = 0, warmup_s = 0;
  for (int i = 0; i < o.warmup; ++i) {
    const double start = clock();
    call();
    const double took = clock() - start;
    // A long call is its own warm-up: first-touch costs are noise at that scale, so it counts.
    if (took > kLongCallSeconds) {
      times.push_back(took);
      spent += took;
      break;
    }
    warmup_s += took;
  }
  if (!times.empty() && (hopeless(times, bound_s) || spent >= o.max_seconds))
    return summarise(times, warmup_s);
  do {
    const double start = clock();
    call();
    times.push_back(clock() - start);
    spent += times.back();
  } while (static_cast<int>(times.size()) < o.max_repeats && spent < o.max_seconds &&
           !settled(times, o) && !hopeless(times, bound_s));
  return summarise(times, warmup_s);
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
// to the least workspace, then the earliest in enumeration order (registry, layout, config), so
// equal timings always give the same plan.
const CandidateResult* choose_candidate(const std::vector<CandidateResult>& candidates,
                                        const std::function<bool(const CandidateResult&)>& eligible) {
  const auto ok = [&](const CandidateResult& c) { return c.correct && c.runs > 0 && eligible(c); };
  const CandidateResult* best = nullptr;
  for (const CandidateResult& c : candidates)
    if (ok(c) && (best == nullptr || c.median_ms < best->median_ms)) best = &c;
  if (best == nullptr) return nullptr;
  const double limit = best->median_ms + std::max(best->spread_ms, kTieFraction * best->median_ms);
  const CandidateResult* pick = best;
  for (const CandidateResult& c : candidates) {  // in order: the first of equals stays
    if (!ok(c) || c.median_ms > limit) continue;
    if (c.workspace_bytes < pick->workspace_bytes || (c.workspace_bytes == pick->workspace_bytes && &c < pick))
      pick = &c;
  }
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

void CandidateSearch::try_trial(const SolverTrial& trial) {
  std::vector<TuneConfig> configs;
  for (const TuneConfig& config : trial.configs)  // over budget: not recorded
    if (workspace_of(trial, config) <= options_.max_workspace_bytes) configs.push_back(config);
  if (trial.sweep || options_.config_search == TunerOptions::ConfigSearch::exhaustive)
    for (const TuneConfig& config : configs) try_candidate(trial, config);
  else
    climb(trial, configs);
}

void CandidateSearch::try_configs(const SolverTrial& trial, const std::vector<TuneConfig>& configs) {
  for (const TuneConfig& config : configs) try_candidate(trial, config);
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

void CandidateSearch::try_candidate(const SolverTrial& trial, const TuneConfig& config) {
  const std::size_t bytes = workspace_of(trial, config);
  if (bytes > options_.max_workspace_bytes) return;  // over budget: not recorded (see header)
  CandidateResult result{trial.solver, config, trial.layout, 0, 0, 0, bytes, true};
  CandidateCost cost{describe(trial, config), 0, 0, 0, 0};
  const double verify_start = clock_();
  const std::string wrong = trial.verify ? trial.verify(config) : "";
  cost.verify_s = clock_() - verify_start;
  if (!wrong.empty()) {
    result.correct = false;
    warn_(what_ + " tuner: " + describe(trial, config) + " disagrees with the reference on " + key_ +
          " (" + wrong + "); disqualified");
  } else {
    const double timing_start = clock_();
    const CallTiming t =
        time_with_clock([&] { trial.run(config, bytes); }, options_, clock_, best_seconds());
    cost.timing_s = clock_() - timing_start;
    cost.calls = t.runs;
    cost.warmup_s = t.warmup_ms / 1e3;
    result.median_ms = t.median_ms;
    result.spread_ms = t.spread_ms;
    result.runs = t.runs;
  }
  results_.push_back(std::move(result));
  costs_.push_back(std::move(cost));
}

// Hill-climbing from the default config: the walk stops at the first step that does not beat the
// current config by more than the noise floor, so a solver costs a handful of timings, not one per
// config.
void CandidateSearch::climb(const SolverTrial& trial, const std::vector<TuneConfig>& configs) {
  if (configs.empty()) return;
  std::map<std::size_t, double> timed;  // config index -> median ms (infinity: wrong)
  const auto time_config = [&](std::size_t i) {
    if (auto it = timed.find(i); it != timed.end()) return it->second;
    try_candidate(trial, configs[i]);
    const CandidateResult& r = results_.back();
    return timed[i] = r.correct ? r.median_ms : std::numeric_limits<double>::infinity();
  };
  std::size_t current = 0;
  double current_ms = time_config(0);
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
