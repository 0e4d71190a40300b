// Pooling in the autotuner: tune_pool checks and times every pool solver in every layout, the
// tuned planner keeps pool entries in the cache (a hit times nothing), `verify` re-times at most
// one candidate per layout, and the network planner installs pool plans whose layouts come from
// the chain DP, without changing what the network computes. No real-time assertions.
#include <gtest/gtest.h>

#include <set>

#include "autotune/network_planner.h"
#include "autotune/pool_tuner.h"
#include "autotune/tuned_planner.h"
#include "core/rng.h"
#include "core/init.h"
#include "models/registry.h"
#include "ops/conv/verify.h"
#include "ops/layout/reference.h"
#include "ops/pool/pool2d.h"
#include "ops/pool/registry.h"
#include "tests/support/test_data.h"
#include "tests/support/tuner_harness.h"

namespace tunecnn {
namespace {

// Overlapped 3/2 pooling, padded, odd size.
PoolProblem small_pool(Direction dir = Direction::fwd) {
  PoolProblem p;
  p.dir = dir;
  p.mb = 4, p.c = 6, p.ih = 13, p.iw = 11, p.kh = 3, p.kw = 3, p.sh = 2, p.sw = 2, p.ph = 1, p.pw = 1;
  return p;
}

using Harness = testing::TunerHarness;

TEST(PoolTuner, VerificationKeepsTheBatchAndGeometryAndCutsChannels) {
  PoolProblem alexnet = small_pool();
  alexnet.mb = 64, alexnet.c = 96, alexnet.ih = alexnet.iw = 55, alexnet.ph = alexnet.pw = 0;
  const PoolProblem v = pool_verification_problem(alexnet);
  EXPECT_EQ(v.mb, 64);
  EXPECT_EQ(v.ih, 55);
  EXPECT_EQ(v.kh, 3);
  EXPECT_LT(v.c, 96);
  EXPECT_GE(v.c, 1);
  EXPECT_EQ(pool_verification_problem(small_pool()), small_pool());
}

TEST(PoolTuner, EveryLayoutIsTriedAndTheChoiceIsACorrectCandidate) {
  for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
    Harness h;
    TunerOptions options = h.options();
    options.config_search = TunerOptions::ConfigSearch::exhaustive;
    const PoolProblem problem = small_pool(dir);
    const TuningEntry entry = tune_pool(problem, options);
    EXPECT_EQ(entry.key, problem.key());
    EXPECT_TRUE(h.warnings.empty()) << h.warnings.front();
    std::set<Layout> layouts;
    std::set<std::string> solvers;
    for (const CandidateResult& c : entry.candidates) {
      EXPECT_TRUE(c.correct) << c.solver << " " << c.config.str();
      EXPECT_GT(c.runs, 0);
      layouts.insert(c.layout);
      solvers.insert(c.solver);
    }
    EXPECT_EQ(layouts.size(), 3u) << "NCHW, CHWN and NHWC";
    // Every solver but the slow reference, which runs only when nothing else is correct.
    std::size_t configs = 0;
    for (const PoolSolver* solver : cpu_pool_solvers()) {
      const bool reference = solver == &direct_pool_solver();
      EXPECT_EQ(solvers.count(std::string(solver->name())), reference ? 0u : 1u) << solver->name();
      if (!reference) configs += solver->configs(problem).size() * solver->layouts(problem).size();
    }
    EXPECT_EQ(entry.candidates.size(), configs) << "exhaustive: every config in every layout";
    const CandidateResult* chosen = choose_candidate(entry.candidates, [](const CandidateResult&) { return true; });
    ASSERT_NE(chosen, nullptr);
    EXPECT_EQ(entry.solver, chosen->solver);
    EXPECT_EQ(entry.layout, chosen->layout);
  }
}

TEST(PoolTuner, HillClimbingTimesFewerConfigsThanTheGrid) {
  Harness h;
  PoolProblem problem = small_pool();
  problem.ih = problem.iw = 40;  // enough outputs for the whole (fx, fy) grid
  const TuningEntry entry = tune_pool(problem, h.options());
  std::size_t grid = 0;
  for (const PoolSolver* solver : cpu_pool_solvers())
    grid += solver->configs(problem).size() * solver->layouts(problem).size();
  EXPECT_LT(entry.candidates.size(), grid);
  // The climb starts at each solver's first config, coarsening 1 for pool_tiled.
  for (const PoolSolver* solver : cpu_pool_solvers()) {
    if (solver == &direct_pool_solver()) continue;  // the reference: only when nothing else is correct
    const TuneConfig first = solver->configs(problem).front();
    EXPECT_TRUE(std::any_of(entry.candidates.begin(), entry.candidates.end(), [&](const CandidateResult& c) {
      return c.solver == solver->name() && c.config == first;
    })) << solver->name();
  }
}

TEST(PoolTuner, CachedPoolEntriesTimeNothing) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness first;
  auto a = first.planner(TunePolicy::cached, file);
  ASSERT_TRUE(a->pool_entries(small_pool()).has_value());
  EXPECT_EQ(a->stats().profiled, 2);
  EXPECT_GT(first.calls, 0);
  a->flush();  // what a pass's end (NetworkPlanner::plan) or the planner's destructor does

  Harness second;
  auto b = second.planner(TunePolicy::cached, file);
  const std::optional<PoolEntries> entries = b->pool_entries(small_pool());
  ASSERT_TRUE(entries.has_value());
  EXPECT_EQ(second.calls, 0);
  EXPECT_EQ(b->stats().from_cache, 2);
  for (const std::string& w : second.warnings) ADD_FAILURE() << w;
  const PoolLayerPlan plan = b->plan(small_pool(), Layout::CHWN);
  EXPECT_EQ(plan.layout, Layout::CHWN);
  EXPECT_EQ(second.calls, 0);
}

TEST(PoolTuner, OffWithoutEntriesGivesTheDefaultInTheArrivingLayout) {
  testing::TempDir dir;
  Harness h;
  auto off = h.planner(TunePolicy::off, dir.path() / "tuning.yaml");
  EXPECT_FALSE(off->pool_entries(small_pool()).has_value());
  const PoolLayerPlan plan = off->plan(small_pool(), Layout::NCHW);
  EXPECT_EQ(plan.fwd.solver, cpu_pool_solvers().front());
  EXPECT_EQ(plan.fwd.config, cpu_pool_solvers().front()->configs(small_pool()).front());
  EXPECT_EQ(h.calls, 0);
}

TEST(PoolTuner, VerifyRetimesAtMostOneCandidatePerLayout) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness there;
  ASSERT_TRUE(there.planner(TunePolicy::full, file, "cpu-there")->pool_entries(small_pool()));
  Harness here;
  auto verify = here.planner(TunePolicy::verify, file, "cpu-here");
  const std::optional<PoolEntries> entries = verify->pool_entries(small_pool());
  ASSERT_TRUE(entries.has_value());
  EXPECT_EQ(verify->stats().verified, 2);
  EXPECT_LE(verify->stats().retimed_candidates, 2 * 3);
  for (const TuningEntry& entry : *entries) EXPECT_LE(entry.candidates.size(), 3u);
}

// Plans LeNet with the tuned planner (fake clock: the choices are arbitrary but legal) and checks
// the pool layers run the installed plans in the DP's layouts and compute what they did before.
TEST(PoolTuner, NetworkPlannerInstallsPoolPlansWithoutChangingResults) {
  testing::TempDir dir;
  Harness h;
  auto tuner = h.planner(TunePolicy::full, dir.path() / "tuning.yaml");
  Rng rng(3);
  auto model = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
  Tensor images = Tensor::empty({8, 1, 28, 28});
  uniform_fill(images, -1, 1, rng);
  NoGradGuard no_grad;
  const Tensor before = model->forward(Variable(images)).data().clone();

  NetworkPlanner planner(tuner);
  const NetworkPlanReport report = planner.plan(*model, {8, 1, 28, 28});
  ASSERT_EQ(report.pools.size(), 2u);
  int pools = 0;
  for (const auto& [name, child] : model->children())
    if (auto* pool = dynamic_cast<Pool2d*>(child.get())) {
      const auto plans = pool->plans();
      ASSERT_EQ(plans.size(), 1u) << name;
      const auto& [problem, plan] = plans.front();
      EXPECT_EQ(problem.mb, 8);
      EXPECT_EQ(plan.layout, report.pools[static_cast<std::size_t>(pools)].plan.layout);
      ++pools;
    }
  EXPECT_EQ(pools, 2);
  const Tensor after = convert_layout_reference(model->forward(Variable(images)).data(), Layout::NCHW);
  EXPECT_EQ(relative_mismatch(after, before, 1e-4), "");
}

// A model whose layers take the tuner as their planner (as `train` and `autotune profile` build
// it): planning resolves the batch's problems and nothing else; tracing the shapes on one example
// asks no planner (it used to tune and cache one-image pooling problems no step runs).
TEST(PoolTuner, PlanningAModelBuiltWithTheTunerTunesOnlyTheBatchsProblems) {
  testing::TempDir dir;
  Harness h;
  auto tuner = h.planner(TunePolicy::full, dir.path() / "tuning.yaml");
  Rng rng(3);
  auto model = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, Planners::all(tuner)}, rng);
  NetworkPlanner(tuner).plan(*model, {8, 1, 28, 28});
  int keys = 0;
  for (const auto& [id, device] : tuner->cache().devices())
    for (const auto& [key, entry] : device.entries) {
      EXPECT_NE(key.find(" mb8 "), std::string::npos) << key;
      ++keys;
    }
  // conv1 fwd and bwd_weights (its input is the data), conv2 all three, two pools both ways, loss.
  EXPECT_EQ(keys, 2 + 3 + 4 + 1);
}

}  // namespace
}  // namespace tunecnn
