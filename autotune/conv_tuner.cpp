#include "autotune/conv_tuner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <limits>
#include <optional>
#include <set>

#include "core/rng.h"
#include "ops/conv/registry.h"
#include "ops/conv/verify.h"
#include "ops/layout/reference.h"
#include "ops/layout/to_layout.h"

namespace tunecnn {
namespace {

// The reference runs this many multiply-adds in a few milliseconds (as in the solver suites).
constexpr std::int64_t kMaxVerifyMacs = 3'000'000;
// A noise floor for ties: timings within 2% of the best are indistinguishable on a busy CPU.
constexpr double kTieFraction = 0.02;
// A first timed call this many times slower than the best median so far ends a candidate's timing.
constexpr double kHopelessFactor = 1.5;
// Calls longer than this need no separate warm-up.
constexpr double kLongCallSeconds = 0.05;
// Settled: adding each of the last this many calls moved the median less than `settle`.
constexpr int kSettleLookback = 2;

double steady_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

bool is_direct(const ConvSolver& solver) {
  return &solver == &direct_conv_solver() || solver.name() == direct_conv_solver().name();
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string describe(const ConvSolver& solver, const TuneConfig& config, Layout layout) {
  std::string out(solver.name());
  if (!config.values.empty()) out += " [" + config.str() + "]";
  return out + " in " + std::string(to_string(layout));
}

// ---- small-data verification ---------------------------------------------------------------

// Halves one spatial size while the output keeps at least four rows (columns) and the padded
// input still covers the kernel. Height goes first: MEC's solution choice depends on the width.
bool shrink(ConvProblem& p, bool along_h) {
  int& size = along_h ? p.ih : p.iw;
  const int k = along_h ? p.kh : p.kw, pad = along_h ? p.ph : p.pw, s = along_h ? p.sh : p.sw;
  const int out = along_h ? p.oh() : p.ow();
  if (out < 8 || size / 2 < std::max(1, k - 2 * pad + s)) return false;
  size /= 2;
  return true;
}

// Checks candidates against the reference output, computed once per problem.
class Verifier {
 public:
  Verifier(const ConvProblem& problem, std::uint64_t seed) : problem_(problem) {
    Rng rng(seed);
    args_ = random_conv_args(problem_, rng);
    ConvArgs ref = conv_args_in_layout(args_, Layout::NCHW);
    run_conv({&direct_conv_solver(), {}, Layout::NCHW}, problem_, ref);
    reference_ = conv_output(ref, problem_.dir);
  }
  const ConvProblem& problem() const { return problem_; }

  // Empty when the candidate agrees with the reference; otherwise what went wrong.
  std::string check(const ConvSolver& solver, const TuneConfig& config, Layout layout) const {
    try {
      ConvArgs args = conv_args_in_layout(args_, layout);
      run_conv({&solver, config, layout}, problem_, args);
      const Tensor got = convert_layout_reference(conv_output(args, problem_.dir), Layout::NCHW);
      return relative_mismatch(got, reference_, problem_.dt == DType::f32 ? 1e-4 : 1e-10);
    } catch (const Error& e) {
      return std::string("it threw: ") + e.what();
    }
  }

 private:
  ConvProblem problem_;
  ConvArgs args_;
  Tensor reference_;
};

// ---- timing --------------------------------------------------------------------------------

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

bool settled(const std::vector<double>& times, const ConvTunerOptions& o) {
  if (static_cast<int>(times.size()) < std::max(o.min_repeats, kSettleLookback + 1)) return false;
  const double now = median_of(times);
  for (int back = 1; back <= kSettleLookback; ++back) {
    const std::vector<double> before(times.begin(), times.end() - back);
    if (std::abs(now - median_of(before)) > o.settle * now) return false;
  }
  return true;
}

CallTiming summarise(const std::vector<double>& times) {
  const auto [lo, hi] = std::minmax_element(times.begin(), times.end());
  return {median_of(times) * 1e3, (*hi - *lo) / 2 * 1e3, static_cast<int>(times.size())};
}

bool hopeless(const std::vector<double>& times, double bound_s) {
  return bound_s > 0 && times.size() == 1 && times[0] > kHopelessFactor * bound_s;
}

// Warm-up (a call over kLongCallSeconds is kept as the first timed call instead), then timed
// calls until the median settles, the cap is spent or max_repeats is reached; at least one timed
// call always runs.
// A candidate whose first timed call is already far slower than the best so far (`bound_s`
// seconds; 0: none yet) is not timed further, as in MIOpen's and cuDNN's find: the repeats would
// only measure precisely how much it loses.
CallTiming time_with_clock(const std::function<void()>& call, const ConvTunerOptions& o,
                           const std::function<double()>& clock, double bound_s) {
  std::vector<double> times;
  double spent = 0;
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
  }
  if (!times.empty() && (hopeless(times, bound_s) || spent >= o.max_seconds))
    return summarise(times);
  do {
    const double start = clock();
    call();
    times.push_back(clock() - start);
    spent += times.back();
  } while (static_cast<int>(times.size()) < o.max_repeats && spent < o.max_seconds &&
           !settled(times, o) && !hopeless(times, bound_s));
  return summarise(times);
}

// ---- the search ----------------------------------------------------------------------------

// One tune_conv call: candidates accumulate over passes (forced solvers, all, the reference),
// in enumeration order, which is also the last tie-break.
class Search {
 public:
  Search(const ConvProblem& problem, const ConvTunerOptions& options)
      : problem_(problem),
        options_(options),
        clock_(options.clock ? options.clock : steady_seconds),
        warn_(options.warn ? options.warn
                           : [](std::string_view m) { std::cerr << "warning: " << m << "\n"; }),
        rng_(options.seed) {}

  void try_solvers(const std::vector<const ConvSolver*>& solvers) {
    for (const ConvSolver* solver : solvers) {
      if (!solver->applicable(problem_, nullptr)) continue;
      for (Layout layout : solver->layouts(problem_)) {
        if (std::find(options_.layouts.begin(), options_.layouts.end(), layout) ==
            options_.layouts.end())
          continue;
        std::vector<TuneConfig> configs;
        for (const TuneConfig& config : solver->configs(problem_))  // over budget: not recorded
          if (solver->workspace_bytes(problem_, config) <= options_.max_workspace_bytes)
            configs.push_back(config);
        if (options_.config_search == ConvTunerOptions::ConfigSearch::exhaustive)
          for (const TuneConfig& config : configs) try_candidate(*solver, layout, config);
        else
          climb(*solver, layout, configs);
      }
    }
  }

  // Candidates named by an earlier entry (another device's): those this build can still run.
  void try_listed(const std::vector<CandidateResult>& listed, const std::vector<const ConvSolver*>& solvers) {
    for (const CandidateResult& c : listed) {
      const auto it = std::find_if(solvers.begin(), solvers.end(),
                                   [&](const ConvSolver* s) { return s->name() == c.solver; });
      if (it == solvers.end() || !(*it)->applicable(problem_, nullptr) ||
          !contains_layout((*it)->layouts(problem_), c.layout) ||
          !contains_layout(options_.layouts, c.layout))
        continue;
      try_candidate(**it, c.layout, c.config);
    }
  }

  bool has_correct() const {
    return std::any_of(results_.begin(), results_.end(),
                       [](const CandidateResult& c) { return c.correct; });
  }
  void warn(const std::string& message) const { warn_(message); }
  TuningEntry entry() const;

 private:
  void try_candidate(const ConvSolver& solver, Layout layout, const TuneConfig& config);
  void climb(const ConvSolver& solver, Layout layout, const std::vector<TuneConfig>& configs);
  std::string verify(const ConvSolver& solver, Layout layout, const TuneConfig& config);
  CallTiming time(const ConvSolver& solver, Layout layout, const TuneConfig& config,
              std::size_t workspace_bytes);

  ConvProblem problem_;
  const ConvTunerOptions& options_;
  std::function<double()> clock_;
  std::function<void(std::string_view)> warn_;
  Rng rng_;
  std::vector<CandidateResult> results_;
  std::map<Layout, ConvArgs> timing_args_;  // allocated once per layout, reused by candidates
  std::unique_ptr<Verifier> small_, full_;  // built on first use: the reference is not free
};

void Search::try_candidate(const ConvSolver& solver, Layout layout, const TuneConfig& config) {
  const std::size_t bytes = solver.workspace_bytes(problem_, config);
  if (bytes > options_.max_workspace_bytes) return;  // over budget: not recorded (see header)
  CandidateResult result{std::string(solver.name()), config, layout, 0, 0, 0, bytes, true};
  const std::string wrong = is_direct(solver) ? "" : verify(solver, layout, config);
  if (!wrong.empty()) {
    result.correct = false;
    warn_("conv tuner: " + describe(solver, config, layout) + " disagrees with the reference on " +
          problem_.key() + " (" + wrong + "); disqualified");
  } else {
    const CallTiming t = time(solver, layout, config, bytes);
    result.median_ms = t.median_ms;
    result.spread_ms = t.spread_ms;
    result.runs = t.runs;
  }
  results_.push_back(std::move(result));
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

// Hill-climbing from the default config: the walk stops at the first step that does not beat the
// current config by more than the noise floor, so a solver costs a handful of timings, not one per
// config.
void Search::climb(const ConvSolver& solver, Layout layout, const std::vector<TuneConfig>& configs) {
  if (configs.empty()) return;
  std::map<std::size_t, double> timed;  // config index -> median ms (infinity: wrong)
  const auto time_config = [&](std::size_t i) {
    if (auto it = timed.find(i); it != timed.end()) return it->second;
    try_candidate(solver, layout, configs[i]);
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

// On the small problem when the solver takes it, else (rarely) on the real one.
std::string Search::verify(const ConvSolver& solver, Layout layout, const TuneConfig& config) {
  if (!small_) small_ = std::make_unique<Verifier>(verification_problem(problem_), options_.seed);
  if (solver.applicable(small_->problem(), nullptr)) return small_->check(solver, config, layout);
  if (!full_) full_ = std::make_unique<Verifier>(problem_, options_.seed);
  return full_->check(solver, config, layout);
}

CallTiming Search::time(const ConvSolver& solver, Layout layout, const TuneConfig& config,
                    std::size_t workspace_bytes) {
  auto it = timing_args_.find(layout);
  if (it == timing_args_.end())
    it = timing_args_.emplace(layout, conv_args_in_layout(random_conv_args(problem_, rng_), layout))
             .first;
  const ConvArgs& args = it->second;
  Storage storage(workspace_bytes, Device::cpu);
  const Workspace ws{workspace_bytes ? storage.data() : nullptr, workspace_bytes};
  double best_s = 0;
  for (const CandidateResult& r : results_)
    if (r.correct && r.runs > 0 && (best_s == 0 || r.median_ms / 1e3 < best_s)) best_s = r.median_ms / 1e3;
  return time_with_clock([&] { solver.run(problem_, config, args, ws); }, options_, clock_, best_s);
}

std::size_t choose(const std::vector<CandidateResult>& results) {
  const CandidateResult* pick = choose_candidate(results, [](const CandidateResult&) { return true; });
  return static_cast<std::size_t>(pick - results.data());
}

std::string utc_now_iso() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Provenance provenance_now() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return {host, utc_now_iso(), TUNECNN_VERSION};
}

TuningEntry Search::entry() const {
  TUNECNN_CHECK(has_correct(), "no conv solver gives a correct result for ", problem_.key(),
                " within a workspace budget of ", options_.max_workspace_bytes, " bytes");
  const CandidateResult& chosen = results_[choose(results_)];
  return {problem_.key(), chosen.solver, chosen.config, chosen.layout, results_, provenance_now()};
}

std::vector<const ConvSolver*> all_solvers(const ConvTunerOptions& options) {
  if (!options.solvers.empty()) return options.solvers;
  const auto registry = cpu_conv_solvers();
  return {registry.begin(), registry.end()};
}

std::vector<const ConvSolver*> select(const std::vector<const ConvSolver*>& solvers,
                                      const std::function<bool(const ConvSolver&)>& keep) {
  std::vector<const ConvSolver*> out;
  for (const ConvSolver* s : solvers)
    if (keep(*s)) out.push_back(s);
  return out;
}

// A forced name this build does not have is a typo on the command line: say so.
void check_forced_names(const ConvTunerOptions& options,
                        const std::vector<const ConvSolver*>& solvers) {
  for (const std::string& name : options.only_solvers) {
    const bool known = std::any_of(solvers.begin(), solvers.end(),
                                   [&](const ConvSolver* s) { return s->name() == name; });
    if (known) continue;
    std::string names;
    for (const ConvSolver* s : solvers)
      names += (names.empty() ? "" : ", ") + std::string(s->name());
    TUNECNN_FAIL("forced conv solver '", name, "' is unknown; known solvers: ", names);
  }
}

}  // namespace

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

CallTiming time_calls(const std::function<void()>& call, const ConvTunerOptions& options,
                      double bound_s) {
  return time_with_clock(call, options, options.clock ? options.clock : steady_seconds, bound_s);
}

ConvProblem verification_problem(const ConvProblem& problem) {
  ConvProblem p = problem;
  p.mb = std::min(p.mb, 2);
  while (p.macs() > kMaxVerifyMacs && shrink(p, true)) {
  }
  while (p.macs() > kMaxVerifyMacs && shrink(p, false)) {
  }
  return p;
}

// Passes: the forced solvers (or every solver but the slow reference); all of them again when
// the forced ones give nothing correct; the reference last, when nothing else is correct.
TuningEntry tune_conv(const ConvProblem& problem, const ConvTunerOptions& options) {
  problem.validate();
  const std::vector<const ConvSolver*> solvers = all_solvers(options);
  check_forced_names(options, solvers);
  const auto non_direct = select(solvers, [](const ConvSolver& s) { return !is_direct(s); });
  Search search(problem, options);
  if (!options.only_solvers.empty()) {
    search.try_solvers(select(
        solvers, [&](const ConvSolver& s) { return contains(options.only_solvers, s.name()); }));
    if (!search.has_correct()) {
      search.warn("conv tuner: no forced solver runs " + problem.key() + "; trying all solvers");
      search.try_solvers(select(non_direct, [&](const ConvSolver& s) {
        return !contains(options.only_solvers, s.name());
      }));
    }
  } else {
    search.try_solvers(non_direct);
  }
  if (!search.has_correct())
    search.try_solvers(select(solvers, [&](const ConvSolver& s) {
      return is_direct(s) && !contains(options.only_solvers, s.name());
    }));
  return search.entry();
}

ConvPlan plan_from_entry(const TuningEntry& entry) {
  const ConvSolver* solver = find_conv_solver(entry.solver);
  TUNECNN_CHECK(solver != nullptr, "tuning entry for '", entry.key, "' names conv solver '",
                entry.solver, "', which this build does not have");
  return {solver, entry.config, entry.layout};
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

TuningEntry retime_candidates(const ConvProblem& problem, const std::vector<CandidateResult>& shortlist,
                              const ConvTunerOptions& options) {
  problem.validate();
  Search search(problem, options);
  search.try_listed(shortlist, all_solvers(options));
  if (!search.has_correct()) {
    search.warn("conv tuner: none of the " + std::to_string(shortlist.size()) +
                " candidates carried over for " + problem.key() + " runs here; tuning it fully");
    return tune_conv(problem, options);
  }
  return search.entry();
}

}  // namespace tunecnn
