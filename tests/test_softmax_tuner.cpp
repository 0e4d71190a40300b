// Softmax cross-entropy in the autotuner: both solvers are checked and timed, a cached entry
// times nothing, `off` without an entry takes the registry's first solver, and the network
// planner plans the loss on the model's logits. No real-time assertions.
#include <gtest/gtest.h>

#include "autotune/network_planner.h"
#include "autotune/softmax_tuner.h"
#include "autotune/tuned_planner.h"
#include "core/rng.h"
#include "models/registry.h"
#include "ops/softmax/registry.h"
#include "tests/support/test_data.h"
#include "tests/support/tuner_harness.h"

namespace tunecnn {
namespace {

const SoftmaxProblem kProblem{16, 1000, DType::f32};

using Harness = testing::TunerHarness;

TEST(SoftmaxTuner, BothSolversAreCheckedAndTimed) {
  for (DType dt : {DType::f32, DType::f64}) {
    Harness h;
    SoftmaxProblem problem = kProblem;
    problem.dt = dt;
    const TuningEntry entry = tune_softmax(problem, h.options());
    EXPECT_EQ(entry.key, problem.key());
    EXPECT_TRUE(h.warnings.empty()) << h.warnings.front();
    ASSERT_EQ(entry.candidates.size(), cpu_softmax_solvers().size());
    for (const CandidateResult& c : entry.candidates) {
      EXPECT_TRUE(c.correct) << c.solver;
      EXPECT_GT(c.runs, 0);
      EXPECT_EQ(c.layout, Layout::NCHW);
    }
    EXPECT_NE(find_softmax_solver(entry.solver), nullptr);
  }
}

TEST(SoftmaxTuner, CachedEntryTimesNothing) {
  testing::TempDir dir;
  const auto file = dir.path() / "tuning.yaml";
  Harness first;
  const std::string chosen(first.planner(TunePolicy::cached, file)->plan(kProblem).name());
  EXPECT_GT(first.calls, 0);
  Harness second;
  auto b = second.planner(TunePolicy::cached, file);
  EXPECT_EQ(b->plan(kProblem).name(), chosen);
  EXPECT_EQ(second.calls, 0);
  EXPECT_EQ(b->stats().from_cache, 1);
  EXPECT_TRUE(second.warnings.empty()) << second.warnings.front();
}

TEST(SoftmaxTuner, OffWithoutAnEntryTakesTheFirstSolver) {
  testing::TempDir dir;
  Harness h;
  auto off = h.planner(TunePolicy::off, dir.path() / "tuning.yaml");
  EXPECT_EQ(&off->plan(kProblem), cpu_softmax_solvers().front());
  EXPECT_EQ(h.calls, 0);
}

TEST(SoftmaxTuner, NetworkPlannerPlansTheLossOnTheLogits) {
  testing::TempDir dir;
  Harness h;
  auto tuner = h.planner(TunePolicy::cached, dir.path() / "tuning.yaml");
  Rng rng(1);
  auto model = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
  const NetworkPlanReport report = NetworkPlanner(tuner).plan(*model, {32, 1, 28, 28});
  ASSERT_TRUE(report.softmax.has_value());
  EXPECT_EQ(report.softmax->key(), "softmax_xent mb32 classes10");
  EXPECT_NE(find_softmax_solver(report.softmax_solver), nullptr);
}

}  // namespace
}  // namespace tunecnn
