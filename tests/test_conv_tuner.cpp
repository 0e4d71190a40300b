// The conv tuner core: choice under a fake clock, stable ties, --force-solver, the memory budget,
// verification against the reference, and that the chosen plan runs. No real-time assertions.
#include <gtest/gtest.h>

#include <array>
#include <set>

#include "autotune/conv_tuner.h"
#include "ops/conv/registry.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using testing::close_relative;
using testing::kAllDirections;
using testing::make_conv_args;
using testing::run_in_layout;

// Time only moves when a fake solver runs, by the solver's cost.
struct FakeClock {
  double now = 0;
  int calls = 0;
  std::function<double()> fn() {
    return [this] {
      ++calls;
      return now;
    };
  }
};

// Computes the right answer through im2col_gemm but reports its own name, cost and workspace.
// A fake that does a real solver's work (its default config), so its output is right, while the
// fake clock says what each call cost: cost_s(config).
class ClockedFake : public ConvSolver {
 public:
  ClockedFake(std::string name, FakeClock& clock, std::string_view real = "im2col_gemm",
              std::size_t extra_workspace = 0)
      : name_(std::move(name)), clock_(clock), real_(*find_conv_solver(real)), extra_(extra_workspace) {}
  std::string_view name() const override { return name_; }
  bool applicable(const ConvProblem& p, std::string* why) const override { return real_.applicable(p, why); }
  std::size_t workspace_bytes(const ConvProblem& p, const TuneConfig&) const override {
    return real_.workspace_bytes(p, real_.configs(p).front()) + extra_;
  }
  void run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args, Workspace ws) const override {
    real_.run(p, real_.configs(p).front(), args, ws);
    clock_.now += cost_s(config);
  }

 protected:
  virtual double cost_s(const TuneConfig& config) const = 0;

 private:
  std::string name_;
  FakeClock& clock_;
  const ConvSolver& real_;
  std::size_t extra_;
};

// The same cost on every call.
class FakeSolver final : public ClockedFake {
 public:
  FakeSolver(std::string name, FakeClock& clock, double cost_s, std::size_t extra_workspace = 0)
      : ClockedFake(std::move(name), clock, "im2col_gemm", extra_workspace), cost_s_(cost_s) {}

 private:
  double cost_s(const TuneConfig&) const override { return cost_s_; }
  double cost_s_;
};

// The same cost on every call, summed with atomics (varying bits), as some cuDNN algorithms are.
class NondeterministicFake final : public ClockedFake {
 public:
  NondeterministicFake(std::string name, FakeClock& clock, double cost_s)
      : ClockedFake(std::move(name), clock), cost_s_(cost_s) {}
  bool deterministic(const ConvProblem&, const TuneConfig&) const override { return false; }

 private:
  double cost_s(const TuneConfig&) const override { return cost_s_; }
  double cost_s_;
};

// Deliberately wrong: writes zeros.
class ZeroSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "zeros"; }
  bool applicable(const ConvProblem&, std::string*) const override { return true; }
  void run(const ConvProblem& p, const TuneConfig&, const ConvArgs& args,
           Workspace) const override {
    Tensor out = conv_output(args, p.dir);
    out.fill(0);
  }
};

const ConvProblem kSmall{Direction::fwd, 4, 3, 10, 9, 5, 3, 3, 1, 1, 1, 1, 1};
// LeNet's conv2 (models/conv_layers.txt) at batch 4.
const ConvProblem kLenetConv2{Direction::fwd, 4, 16, 14, 14, 16, 5, 5, 1, 1, 2, 2, 1};
// 3x3, so winograd_f2x3 applies too.
const ConvProblem k3x3{Direction::fwd, 4, 8, 12, 11, 8, 3, 3, 1, 1, 1, 1, 1};

struct Harness {
  FakeClock clock;
  std::vector<std::string> warnings;
  TunerOptions options() {
    TunerOptions o;
    o.clock = clock.fn();
    o.warn = [this](std::string_view m) { warnings.emplace_back(m); };
    return o;
  }
};

const CandidateResult* find(const TuningEntry& e, std::string_view solver) {
  for (const CandidateResult& c : e.candidates)
    if (c.solver == solver) return &c;
  return nullptr;
}

TEST(ConvTuner, FakeClockFastestSolverIsChosen) {
  Harness h;
  FakeSolver slow("slow", h.clock, 3e-3), fast("fast", h.clock, 1e-3), mid("mid", h.clock, 2e-3);
  TunerOptions o = h.options();
  o.solvers = {&slow, &fast, &mid};
  const TuningEntry e = tune_conv(kSmall, o);
  EXPECT_EQ(e.solver, "fast");
  EXPECT_EQ(e.key, kSmall.key());
  ASSERT_EQ(e.candidates.size(), 3u);
  EXPECT_DOUBLE_EQ(find(e, "fast")->median_ms, 1.0);
  EXPECT_DOUBLE_EQ(find(e, "slow")->median_ms, 3.0);
  EXPECT_NEAR(find(e, "fast")->spread_ms, 0, 1e-12);
  EXPECT_GE(find(e, "fast")->runs, o.min_repeats);
  EXPECT_TRUE(h.warnings.empty());
  EXPECT_FALSE(e.provenance.host.empty());
  EXPECT_EQ(e.provenance.version, TUNECNN_VERSION);
  EXPECT_EQ(e.provenance.date.size(), 20u);  // 2025-01-31T12:34:56Z
  EXPECT_EQ(e.provenance.date.back(), 'Z');
}

TEST(ConvTuner, TiesWithinNoiseGoToLowerWorkspaceThenEarlier) {
  Harness h;
  // 1% apart: within the 2% noise floor. "big" is fastest but needs more memory.
  FakeSolver big("big", h.clock, 1.00e-3, 1 << 20), lean("lean", h.clock, 1.01e-3);
  FakeSolver lean_twin("lean_twin", h.clock, 1.005e-3), far("far", h.clock, 1.5e-3);
  TunerOptions o = h.options();
  o.solvers = {&big, &lean, &lean_twin, &far};
  const TuningEntry first = tune_conv(kSmall, o);
  EXPECT_EQ(first.solver, "lean");  // lower workspace than big; earlier than its equal twin
  h.clock.now = 0;                  // the same fake times again, to the last bit
  const TuningEntry second = tune_conv(kSmall, o);
  EXPECT_EQ(second.solver, first.solver);
  EXPECT_EQ(second.candidates, first.candidates);

  // Outside the noise, speed wins over memory.
  FakeSolver big_fast("big_fast", h.clock, 0.5e-3, 1 << 20);
  o.solvers = {&lean, &big_fast};
  EXPECT_EQ(tune_conv(kSmall, o).solver, "big_fast");
}

// The spec's first tie-break: within the noise a deterministic candidate beats one that is not,
// even one with less workspace that comes earlier; outside the noise speed still wins.
TEST(ConvTuner, TiesWithinNoiseGoToADeterministicCandidateFirst) {
  Harness h;
  NondeterministicFake atomic("atomic", h.clock, 1.00e-3);
  FakeSolver steady("steady", h.clock, 1.01e-3, 1 << 20);
  TunerOptions o = h.options();
  o.solvers = {&atomic, &steady};
  const TuningEntry e = tune_conv(kSmall, o);
  EXPECT_EQ(e.solver, "steady");
  ASSERT_NE(find(e, "atomic"), nullptr);
  EXPECT_FALSE(find(e, "atomic")->deterministic);
  EXPECT_TRUE(find(e, "steady")->deterministic);

  NondeterministicFake atomic_fast("atomic_fast", h.clock, 0.5e-3);
  o.solvers = {&atomic_fast, &steady};
  EXPECT_EQ(tune_conv(kSmall, o).solver, "atomic_fast");
}

TEST(ConvTuner, ForceSolverIsHonoured) {
  Harness h;
  FakeSolver slow("slow", h.clock, 3e-3), fast("fast", h.clock, 1e-3);
  TunerOptions o = h.options();
  o.solvers = {&fast, &slow};
  o.only_solvers = {"slow"};
  const TuningEntry e = tune_conv(kSmall, o);
  EXPECT_EQ(e.solver, "slow");
  ASSERT_EQ(e.candidates.size(), 1u);

  // With the registry: every candidate is the forced solver, the reference included.
  TunerOptions real = h.options();
  for (const char* name : {"winograd_f2x3", "direct"}) {
    real.only_solvers = {name};
    const TuningEntry forced = tune_conv(kSmall, real);
    EXPECT_EQ(forced.solver, name);
    for (const CandidateResult& c : forced.candidates) EXPECT_EQ(c.solver, name);
  }
  real.only_solvers = {"no_such_solver"};
  EXPECT_THROW(tune_conv(kSmall, real), Error);
}

TEST(ConvTuner, ForcedSolverThatCannotRunFallsBackWithWarning) {
  Harness h;
  TunerOptions o = h.options();
  o.layouts = {Layout::NCHW, Layout::NHWC};
  o.only_solvers = {"mec"};
  ConvProblem grouped = kSmall;
  grouped.ic = grouped.oc = grouped.g = 4;  // mec needs groups == 1
  const TuningEntry e = tune_conv(grouped, o);
  EXPECT_NE(e.solver, "mec");
  EXPECT_EQ(h.warnings.size(), 1u);
}

// What the registry offers for p in the given layouts within the budget, as "solver config".
std::multiset<std::string> within_budget(const ConvProblem& p, const std::vector<Layout>& layouts,
                                         std::size_t budget) {
  std::multiset<std::string> out;
  for (const ConvSolver* s : cpu_conv_solvers()) {
    if (s == &direct_conv_solver() || !s->applicable(p, nullptr)) continue;
    for (Layout layout : s->layouts(p)) {
      if (std::find(layouts.begin(), layouts.end(), layout) == layouts.end()) continue;
      for (const TuneConfig& c : s->configs(p))
        if (s->workspace_bytes(p, c) <= budget) out.insert(std::string(s->name()) + " " + c.str());
    }
  }
  return out;
}

TEST(ConvTuner, MemoryBudgetExcludesBigWorkspaces) {
  Harness h;
  TunerOptions o = h.options();
  o.layouts = {Layout::NCHW, Layout::NHWC, Layout::CHWN};
  o.config_search = TunerOptions::ConfigSearch::exhaustive;  // every config within budget
  const ConvProblem& p = kLenetConv2;
  const ConvSolver& im2col = *find_conv_solver("im2col_gemm");
  const ConvSolver& mec = *find_conv_solver("mec");
  const TuneConfig mec_one{{{"chunk", 1}, {"T", 100}, {"mt", 0}}};
  const TuneConfig mec_batch{{{"chunk", p.mb}, {"T", 100}, {"mt", 0}}};
  const std::size_t im2col_one = im2col.workspace_bytes(p, TuneConfig{{{"chunk", 1}}});
  // The premise: lowering several images needs more than lowering one.
  ASSERT_GT(im2col.workspace_bytes(p, TuneConfig{{{"chunk", 2}}}), im2col_one);
  ASSERT_GT(mec.workspace_bytes(p, mec_batch), mec.workspace_bytes(p, mec_one));

  for (std::size_t budget : {im2col_one, mec.workspace_bytes(p, mec_one)}) {
    o.max_workspace_bytes = budget;
    const TuningEntry e = tune_conv(p, o);
    std::multiset<std::string> got;
    for (const CandidateResult& c : e.candidates) {
      EXPECT_LE(c.workspace_bytes, budget) << c.solver << " " << c.config.str();
      got.insert(c.solver + " " + c.config.str());
    }
    EXPECT_EQ(got, within_budget(p, o.layouts, budget)) << "budget " << budget;
    EXPECT_FALSE(got.count("im2col_gemm chunk=2"));
    EXPECT_EQ(got.count("mec " + mec_batch.str()), mec.workspace_bytes(p, mec_batch) <= budget);
  }

  o.max_workspace_bytes = 0;  // only workspace-free solvers remain: the reference at worst
  for (const CandidateResult& c : tune_conv(p, o).candidates) EXPECT_EQ(c.workspace_bytes, 0u);
}

TEST(ConvTuner, EveryCandidateOfARealProblemIsCorrect) {
  Harness h;
  TunerOptions o = h.options();
  o.layouts = {Layout::NCHW, Layout::NHWC, Layout::CHWN};
  std::set<std::string> solvers;
  for (Direction dir : kAllDirections)
    for (const ConvProblem& p : {kLenetConv2, k3x3}) {
      const TuningEntry e = tune_conv(p.with_dir(dir), o);
      for (const CandidateResult& c : e.candidates) {
        EXPECT_TRUE(c.correct) << c.solver << " " << c.config.str() << " " << e.key;
        EXPECT_GT(c.runs, 0);
        solvers.insert(c.solver);
      }
    }
  EXPECT_TRUE(h.warnings.empty()) << h.warnings.front();
  for (const char* name : {"im2col_gemm", "mec", "winograd_f2x3", "direct_chwn"})
    EXPECT_TRUE(solvers.count(name)) << name;
  EXPECT_FALSE(solvers.count("direct"));  // the slow reference only when nothing else runs
}

TEST(ConvTuner, WrongSolverIsDisqualifiedWithWarning) {
  Harness h;
  ZeroSolver zeros;
  TunerOptions o = h.options();  // the clock never moves: every time ties at 0
  o.solvers = {&zeros, find_conv_solver("im2col_gemm")};
  const TuningEntry e = tune_conv(kSmall, o);
  ASSERT_NE(find(e, "zeros"), nullptr);
  EXPECT_FALSE(find(e, "zeros")->correct);
  EXPECT_EQ(e.solver, "im2col_gemm");  // zeros would win the tie (no workspace, first)
  ASSERT_EQ(h.warnings.size(), 1u);
  EXPECT_NE(h.warnings[0].find("zeros"), std::string::npos);
  EXPECT_NE(h.warnings[0].find(kSmall.key()), std::string::npos);
}

TEST(ConvTuner, ReferenceIsTheLastResort) {
  Harness h;
  ZeroSolver zeros;
  TunerOptions o = h.options();
  o.solvers = {&zeros, &direct_conv_solver()};
  EXPECT_EQ(tune_conv(kSmall, o).solver, "direct");
  o.solvers = {&zeros};
  EXPECT_THROW(tune_conv(kSmall, o), Error);
}

TEST(ConvTuner, TimingStopsAtTheCapOrMaxRepeats) {
  Harness h;
  FakeSolver slow("slow", h.clock, 0.2);
  TunerOptions o = h.options();
  o.solvers = {&slow};
  o.max_seconds = 0.5;
  // 0.6 s spent after three calls; the cold scouting call is not among the runs once warm ones
  // follow.
  EXPECT_EQ(tune_conv(kSmall, o).candidates.at(0).runs, 2);

  // Each call takes 20% longer than the last, so the median never settles: calls stop at
  // max_repeats, the first (cold) one not counted as a run.
  double now = 0, step = 1e-3;
  o.clock = [&] { return now += step *= 1.2; };
  o.max_seconds = 1e9;
  o.max_repeats = 12;
  FakeSolver noisy("noisy", h.clock, 0);
  o.solvers = {&noisy};
  EXPECT_EQ(tune_conv(kSmall, o).candidates.at(0).runs, 11);
}

TEST(ConvTuner, VerificationProblemKeepsTheGeometry) {
  const ConvProblem big{Direction::bwd_weights, 64, 64, 112, 96, 64, 3, 3, 2, 2, 1, 1, 1};
  const ConvProblem small = verification_problem(big);
  EXPECT_EQ(small.mb, 2);
  EXPECT_LE(small.oh(), 8);  // 64 channels keep it above the usual 1M multiply-adds
  EXPECT_LE(small.ow(), 8);
  EXPECT_GE(small.oh(), 4);
  EXPECT_EQ(small.dir, big.dir);
  EXPECT_EQ(small.ic, 16);  // 64 channels: the same remainder modulo 48, 16
  EXPECT_EQ(small.oc, 16);
  EXPECT_LE(small.macs(), 1'000'000);
  EXPECT_EQ(small.kh, big.kh);
  EXPECT_EQ(small.sh, big.sh);
  EXPECT_EQ(small.pw, big.pw);
  EXPECT_EQ(verification_problem(kSmall).ih, kSmall.ih);

  // AlexNet's conv4: 384 -> 384 channels stays near 100M multiply-adds after the spatial cut;
  // the channels go to their remainder modulo 48 (0 here), raised by 48 to at least 16.
  const ConvProblem wide{Direction::fwd, 64, 384, 13, 13, 384, 3, 3, 1, 1, 1, 1, 1};
  const ConvProblem cut = verification_problem(wide);
  EXPECT_EQ(cut.ic, 48);
  EXPECT_EQ(cut.oc, 48);
  const ConvProblem odd = verification_problem({Direction::fwd, 2, 100, 8, 8, 1024, 3, 3, 1, 1, 1, 1, 1});
  EXPECT_EQ(odd.ic, 48 + 100 % 48);  // 4 is under 16
  EXPECT_EQ(odd.oc, 1024 % 48);      // 16
  // Grouped: a config such as the diagonal solver's group size depends on the channels.
  const ConvProblem depthwise{Direction::fwd, 64, 512, 14, 14, 512, 3, 3, 1, 1, 1, 1, 512};
  EXPECT_EQ(verification_problem(depthwise).ic, 512);
}

TEST(ConvTuner, ChosenPlanRunsAndMatchesTheReference) {
  TunerOptions o;  // the real clock, kept short
  o.max_seconds = 0.02;
  o.max_repeats = 5;
  for (Direction dir : kAllDirections) {
    const ConvProblem p = kLenetConv2.with_dir(dir);
    const TuningEntry entry = tune_conv(p, o);
    EXPECT_EQ(entry.key, p.key());
    const ConvPlan plan = plan_from_entry(entry);
    EXPECT_EQ(plan.layout, entry.layout);
    const ConvArgs args = make_conv_args(p, 7);
    const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
    const Tensor got = run_in_layout(plan, p, args, plan.layout);
    EXPECT_TRUE(close_relative(got, want, 1e-4)) << p.key();
  }
}

TEST(ConvTuner, PlanFromEntryRejectsUnknownSolvers) {
  TuningEntry e;
  e.key = kSmall.key();
  e.solver = "winograd_f2x3";
  e.config = TuneConfig{{{"tiles", 32}}};
  EXPECT_EQ(plan_from_entry(e).solver, find_conv_solver("winograd_f2x3"));
  EXPECT_EQ(plan_from_entry(e).config, e.config);
  e.solver = "renamed_solver";
  try {
    plan_from_entry(e);
    FAIL() << "no throw";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("renamed_solver"), std::string::npos);
  }
}

// A tunable whose cost dips twice: {1: 2 ms, 2: 3 ms, 3: 1 ms}. Hill-climbing from 1 stops at
// once (2 is slower); a solver that asks for a sweep gets every config timed.
class DippingConfigSolver final : public ClockedFake {
 public:
  DippingConfigSolver(FakeClock& clock, bool sweep) : ClockedFake("dipping", clock), sweep_(sweep) {}
  std::vector<TuneConfig> configs(const ConvProblem&) const override {
    return {TuneConfig{{{"S", 1}}}, TuneConfig{{{"S", 2}}}, TuneConfig{{{"S", 3}}}};
  }
  bool sweep_configs() const override { return sweep_; }

 private:
  double cost_s(const TuneConfig& config) const override {
    return std::array<double, 3>{2e-3, 3e-3, 1e-3}.at(config.get("S", 1) - 1);
  }
  bool sweep_;
};

TEST(ConvTuner, SolversAskingForASweepGetEveryConfigTimed) {
  for (const bool sweep : {false, true}) {
    Harness h;
    DippingConfigSolver solver(h.clock, sweep);
    TunerOptions o = h.options();
    o.solvers = {&solver};
    const TuningEntry e = tune_conv(kSmall, o);
    EXPECT_EQ(e.candidates.size(), sweep ? 3u : 2u) << "sweep " << sweep;
    EXPECT_EQ(e.config.get("S", 0), sweep ? 3 : 1) << "sweep " << sweep;
  }
}

// A sweep is for a solver in contention: with its default (2 ms) over twice the best so far it is
// not swept; within twice it is, and its third config wins.
TEST(ConvTuner, ASweepIsSkippedWhenTheDefaultIsOverTwiceTheBest) {
  for (const double best_s : {0.9e-3, 1.1e-3}) {
    Harness h;
    DippingConfigSolver dipping(h.clock, true);
    FakeSolver best("best", h.clock, best_s);
    TunerOptions o = h.options();
    o.solvers = {&dipping, &best};
    const TuningEntry e = tune_conv(kSmall, o);
    const bool swept = 2e-3 <= 2 * best_s;
    EXPECT_EQ(e.candidates.size(), swept ? 4u : 2u) << "best " << best_s;
    EXPECT_EQ(e.solver, swept ? "dipping" : "best") << "best " << best_s;
  }
}

// bench plans --breakdown: one report per search, a cost per candidate in the entry's order, in
// the search's clock (here the fake one, which moves only when a fake solver runs: in its check
// on the small problem and its timed calls; a scout's first call is timed cold, with no warm-up);
// a disqualified candidate is not timed.
TEST(ConvTuner, EverySearchReportsWhereItsTimeWent) {
  Harness h;
  ZeroSolver zeros;
  FakeSolver slow("slow", h.clock, 3e-3), fast("fast", h.clock, 1e-3);
  TunerOptions o = h.options();
  o.solvers = {&slow, &zeros, &fast};
  std::vector<SearchCost> reports;
  o.on_cost = [&](const SearchCost& cost) { reports.push_back(cost); };
  const TuningEntry e = tune_conv(kSmall, o);
  ASSERT_EQ(reports.size(), 1u);
  const SearchCost& r = reports[0];
  EXPECT_EQ(r.what, "conv");
  EXPECT_EQ(r.key, kSmall.key());
  ASSERT_EQ(r.candidates.size(), e.candidates.size());
  double parts_s = 0;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const CandidateCost& c = r.candidates[i];
    const CandidateResult& result = e.candidates[i];
    EXPECT_EQ(c.candidate, result.solver + " in NCHW");
    EXPECT_EQ(c.calls, result.runs + (c.calls > 1 ? 1 : 0)) << c.candidate;  // + the cold scout
    const double call_s = result.solver == "slow" ? 3e-3 : result.solver == "fast" ? 1e-3 : 0;
    EXPECT_NEAR(c.verify_s, call_s, 1e-12) << c.candidate;
    EXPECT_EQ(c.warmup_s, 0) << c.candidate;
    EXPECT_NEAR(c.timing_s, call_s * c.calls, 1e-12) << c.candidate;
    parts_s += c.verify_s + c.timing_s;
  }
  ASSERT_EQ(e.candidates[1].solver, "zeros");
  EXPECT_EQ(r.candidates[1].calls, 0);
  EXPECT_EQ(r.candidates[1].timing_s, 0);
  EXPECT_NEAR(r.total_s, parts_s, 1e-12);  // nothing else moves the fake clock
}

// Scouting: every solver's default gets one (cold) call first, then the fastest is
// timed in full; a slow solver that comes first in the registry is not timed in full before it.
// The entry still lists candidates in registry order.
TEST(ConvTuner, TheLikelyWinnerIsTimedFirstAndLosersGetOneCall) {
  Harness h;
  FakeSolver slow("slow", h.clock, 3e-3), fast("fast", h.clock, 1e-3);
  TunerOptions o = h.options();
  o.solvers = {&slow, &fast};
  const TuningEntry e = tune_conv(kSmall, o);
  ASSERT_EQ(e.candidates.size(), 2u);
  EXPECT_EQ(e.candidates[0].solver, "slow");
  EXPECT_EQ(e.candidates[0].runs, 1);  // its scouting call, already hopeless against fast
  EXPECT_GE(e.candidates[1].runs, o.min_repeats);
  EXPECT_EQ(e.solver, "fast");
}

// Costs by call: the leader is steady; the rival alternates 6% over and 3% under the same time,
// so its median never settles and its fastest call never loses by 3%. It is timed for about
// kRivalBudget (2) of the leader's calls (then the playoff's), not up to max_repeats alone.
class AlternatingSolver final : public ClockedFake {
 public:
  AlternatingSolver(FakeClock& clock, double cost_s) : ClockedFake("alternating", clock), cost_s_(cost_s) {}

 private:
  double cost_s(const TuneConfig&) const override {
    return cost_s_ * (calls_++ % 2 ? 1.06 : 0.97);  // its scouting call (the 2nd) is slow
  }
  double cost_s_;
  mutable int calls_ = 0;
};

TEST(ConvTuner, ACloseRivalIsTimedForAFewOfTheLeadersCalls) {
  Harness h;
  FakeSolver leader("leader", h.clock, 1e-3);
  AlternatingSolver rival(h.clock, 1e-3);
  TunerOptions o = h.options();
  o.solvers = {&leader, &rival};
  std::vector<SearchCost> costs;
  o.on_cost = [&](const SearchCost& c) { costs.push_back(c); };
  const TuningEntry e = tune_conv(kSmall, o);
  ASSERT_NE(find(e, "alternating"), nullptr);
  ASSERT_EQ(costs.size(), 1u);
  const auto rival_cost = std::find_if(costs[0].candidates.begin(), costs[0].candidates.end(),
                                       [](const CandidateCost& c) { return c.candidate == "alternating in NCHW"; });
  ASSERT_NE(rival_cost, costs[0].candidates.end());
  // Its own calls stop once they pass 2 of the leader's (3 calls); then, within 1.15x, the
  // playoff's 2.
  EXPECT_GE(rival_cost->calls, o.min_repeats);
  EXPECT_LE(rival_cost->calls, 4 + 2);
  o.on_cost = nullptr;

  // Alone (no bound) it is called until max_repeats (the cold scouting call is no run): the
  // budget is relative to a best so far.
  o.solvers = {&rival};
  EXPECT_EQ(tune_conv(kSmall, o).candidates.at(0).runs, o.max_repeats - 1);
}

// A solver whose default config is over 1.3x the best so far does not climb its configs; within
// that it does, and its later configs (no more workspace than the default's) get no warm-up.
TEST(ConvTuner, OnlyCompetitiveSolversClimbTheirConfigs) {
  for (const double best_s : {1.4e-3, 1.6e-3}) {
    Harness h;
    DippingConfigSolver dipping(h.clock, false);  // default S=1 at 2 ms, S=2 at 3 ms
    FakeSolver best("best", h.clock, best_s);
    TunerOptions o = h.options();
    o.solvers = {&dipping, &best};
    std::vector<SearchCost> costs;
    o.on_cost = [&](const SearchCost& c) { costs.push_back(c); };
    const TuningEntry e = tune_conv(kSmall, o);
    const bool climbs = best_s * 1.3 >= 2e-3;
    ASSERT_EQ(e.candidates.size(), climbs ? 3u : 2u) << "best " << best_s;
    EXPECT_EQ(e.candidates[0].config.get("S", 0), 1);
    if (!climbs) continue;
    EXPECT_EQ(e.candidates[1].config.get("S", 0), 2);
    ASSERT_EQ(costs.size(), 1u);
    EXPECT_EQ(costs[0].candidates[0].warmup_s, 0);  // scouted: one cold timed call
    EXPECT_EQ(costs[0].candidates[1].warmup_s, 0);
  }
}

// A burst of load on the machine: calls number [from, to) over every solver sharing it (checks
// on the small problem included) take `factor` times longer.
struct Burst {
  int calls = 0, from = 0, to = 0;
  double factor = 1;
  double next() { return calls++ >= from && calls <= to ? factor : 1.0; }
};

class BurstySolver final : public ClockedFake {
 public:
  // In NHWC the real MEC does the work, in NCHW im2col_gemm.
  BurstySolver(std::string name, FakeClock& clock, Burst& burst, double cost_s, Layout layout = Layout::NCHW)
      : ClockedFake(std::move(name), clock, layout == Layout::NHWC ? "mec" : "im2col_gemm"),
        burst_(burst),
        cost_s_(cost_s),
        layout_(layout) {}
  std::vector<Layout> layouts(const ConvProblem&) const override { return {layout_}; }

 private:
  double cost_s(const TuneConfig&) const override { return cost_s_ * burst_.next(); }
  Burst& burst_;
  double cost_s_;
  Layout layout_;
};

// "a" (1 ms) scouts fastest and is timed in full first, but a burst (x1.12) covers those calls
// (calls 4-7, counted from 0: b's check and scouting call, then a's, come first), so a measures
// 1.12 ms and b (1.05 ms), timed mostly after the burst, 1.05 ms. Within 1.15x of each other, the
// two are timed again in alternation, and a wins as it should; both keep the alternating calls'
// timings.
TEST(ConvTuner, CloseLeadersAreTimedAgainInAlternation) {
  Harness h;
  Burst burst{0, 4, 8, 1.12};
  BurstySolver a("a", h.clock, burst, 1e-3), b("b", h.clock, burst, 1.05e-3);
  TunerOptions o = h.options();
  o.solvers = {&b, &a};
  const TuningEntry e = tune_conv(kSmall, o);
  EXPECT_EQ(e.solver, "a");
  ASSERT_EQ(e.candidates.size(), 2u);
  EXPECT_EQ(e.candidates[0].solver, "b");
  EXPECT_NEAR(find(e, "a")->median_ms, 1.0, 1e-9);
  EXPECT_NEAR(find(e, "b")->median_ms, 1.05, 1e-9);
  EXPECT_EQ(find(e, "a")->runs, 2);
  EXPECT_EQ(find(e, "b")->runs, 2);
}

// A fake in NHWC: the real MEC (default config) does the work, the fake clock says what it cost.
class NhwcFakeSolver final : public ClockedFake {
 public:
  NhwcFakeSolver(std::string name, FakeClock& clock, double cost_s)
      : ClockedFake(std::move(name), clock, "mec"), cost_s_(cost_s) {}
  std::vector<Layout> layouts(const ConvProblem&) const override { return {Layout::NHWC}; }

 private:
  double cost_s(const TuneConfig&) const override { return cost_s_; }
  double cost_s_;
};

// The playoff's finalists are the two fastest and each other layout's fastest within 1.15x: the
// layout DP weighs the layouts' best candidates against each other, so they are timed together.
// "c", NHWC's fastest, is re-timed with "a" and "b" (its runs are the playoff's 2); "d", second
// in NHWC, keeps its one solo run.
TEST(ConvTuner, EachLayoutsFastestJoinsThePlayoff) {
  Harness h;
  FakeSolver a("a", h.clock, 1.0e-3), b("b", h.clock, 1.02e-3);
  NhwcFakeSolver c("c", h.clock, 1.1e-3), d("d", h.clock, 1.12e-3);
  TunerOptions o = h.options();
  o.solvers = {&a, &b, &c, &d};
  const TuningEntry e = tune_conv(kSmall, o);
  EXPECT_EQ(e.solver, "a");
  ASSERT_NE(find(e, "c"), nullptr);
  ASSERT_NE(find(e, "d"), nullptr);
  EXPECT_EQ(find(e, "c")->layout, Layout::NHWC);
  EXPECT_EQ(find(e, "c")->runs, 2);
  EXPECT_NEAR(find(e, "c")->median_ms, 1.1, 1e-9);
  EXPECT_EQ(find(e, "d")->runs, 1);
}

// A burst (x2.2) covers the one call NHWC's only candidate "c" (1.05 ms) gets as a scout (its
// calls counted from 0: the check, then the scout), so it measures 2.31 ms and is cut as hopeless
// against "a" (1 ms). Within 2.5x, the layout's best gets a second call, which measures 1.05 ms,
// so it joins the playoff and the layout DP sees NHWC at its real cost.
TEST(ConvTuner, ALayoutsBestCutOnOneCallGetsASecondOpinion) {
  Harness h;
  Burst burst{0, 1, 2, 2.2};
  FakeSolver a("a", h.clock, 1.0e-3);
  BurstySolver c("c", h.clock, burst, 1.05e-3, Layout::NHWC);
  TunerOptions o = h.options();
  o.solvers = {&a, &c};
  const TuningEntry e = tune_conv(kSmall, o);
  EXPECT_EQ(e.solver, "a");
  ASSERT_NE(find(e, "c"), nullptr);
  EXPECT_NEAR(find(e, "c")->median_ms, 1.05, 1e-9);
  EXPECT_EQ(find(e, "c")->runs, 2);  // the playoff's alternating calls
}

// A second opinion only for a layout's best that was cut on its one cold call within 2.5x: at
// 2.2x it keeps its second call in its timing (two runs, not a finalist); at 3x it is beyond
// reach; at 1.6x its cold call did not cut it, a warm one did, so it was measured twice already.
TEST(ConvTuner, ASecondOpinionOnlyForLayoutsCutOnOneColdCallWithinReach) {
  for (const double ratio : {2.2, 3.0, 1.6}) {
    Harness h;
    FakeSolver a("a", h.clock, 1.0e-3);
    NhwcFakeSolver c("c", h.clock, ratio * 1e-3);
    TunerOptions o = h.options();
    o.solvers = {&a, &c};
    const TuningEntry e = tune_conv(kSmall, o);
    ASSERT_NE(find(e, "c"), nullptr);
    EXPECT_NEAR(find(e, "c")->median_ms, ratio, 1e-9);
    EXPECT_EQ(find(e, "c")->runs, ratio == 2.2 ? 2 : 1) << ratio;
  }
}

}  // namespace
}  // namespace tunecnn
