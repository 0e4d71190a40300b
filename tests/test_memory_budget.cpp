// Planning a step within --memory-budget (apps/training/memory_budget.h): which of its knobs the
// fitter turns for what the predicted peak holds, what it says when nothing fits, and train
// --memory-budget end to end with its peak against the prediction.
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "apps/training/memory_budget.h"
#include "apps/training/trainer.h"
#include "core/allocator.h"
#include "core/variable.h"
#include "tests/support/expect_error.h"
#include "tests/support/train_options.h"

namespace tunecnn {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// Leaves the process as the other tests expect it: activations kept, the allocator's cache kept.
class MemoryBudget : public ::testing::Test {
 protected:
  void TearDown() override {
    set_recompute_activations(false);
    allocator_for(Device::cpu).set_cache_policy(CachePolicy::keep);
    allocator_for(Device::cpu).set_cache_limit(0);
  }
};

StepPeak peak_of(std::size_t activations, std::size_t workspaces) {
  StepPeak peak;
  peak.by_use[static_cast<int>(MemoryUse::parameters)] = 10 * kMiB;
  peak.by_use[static_cast<int>(MemoryUse::activations)] = activations;
  peak.by_use[static_cast<int>(MemoryUse::workspaces)] = workspaces;
  peak.bytes = 10 * kMiB + activations + workspaces;
  peak.layers_keeping = {{"conv1", activations / 2}, {"bn1", activations / 4}};
  return peak;
}

TEST_F(MemoryBudget, APlanThatFitsIsLeftAsItIsAndTheAllocatorGetsTheBudget) {
  int replans = 0;
  const MemoryBudgetFit fit = fit_memory_budget(
      100 * kMiB, {[] { return peak_of(50 * kMiB, 20 * kMiB); }, [&](std::size_t) { ++replans; }});
  EXPECT_EQ(fit.predicted.bytes, 80 * kMiB);
  EXPECT_FALSE(fit.recomputed_activations);
  EXPECT_FALSE(recompute_activations());
  EXPECT_EQ(fit.workspace_cap, SIZE_MAX);
  EXPECT_EQ(replans, 0);
  EXPECT_NE(fit.describe(100 * kMiB).find("80.0 MiB within 100.0 MiB as planned"), std::string::npos);
  EXPECT_EQ(allocator_for(Device::cpu).cache_policy(), CachePolicy::bounded);
  EXPECT_EQ(allocator_for(Device::cpu).cache_limit(), 100 * kMiB);
}

// Activations recomputed first (one pass per BatchNorm); no workspace limit once that fits.
TEST_F(MemoryBudget, RecomputesActivationsWhenThatBringsThePeakWithin) {
  int replans = 0;
  const auto predict = [] { return peak_of(recompute_activations() ? 40 * kMiB : 80 * kMiB, 5 * kMiB); };
  const MemoryBudgetFit fit = fit_memory_budget(60 * kMiB, {predict, [&](std::size_t) { ++replans; }});
  EXPECT_TRUE(fit.recomputed_activations);
  EXPECT_TRUE(recompute_activations()) << "left on for the run";
  EXPECT_EQ(fit.predicted.bytes, 55 * kMiB);
  EXPECT_EQ(replans, 0);
}

// A network without BatchNorm: recomputing changes nothing, so it is turned off again, and the
// conv workspace at the peak is limited to what leaves room.
TEST_F(MemoryBudget, LimitsTheWorkspaceAtThePeakWhenRecomputingDoesNotHelp) {
  std::size_t cap = SIZE_MAX;
  std::vector<std::size_t> replans;
  const auto predict = [&] { return peak_of(30 * kMiB, std::min<std::size_t>(cap, 50 * kMiB)); };
  const MemoryBudgetFit fit = fit_memory_budget(70 * kMiB, {predict, [&](std::size_t limit) {
                                                              cap = limit;
                                                              replans.push_back(limit);
                                                            }});
  EXPECT_FALSE(fit.recomputed_activations);
  EXPECT_FALSE(recompute_activations());
  ASSERT_EQ(replans, std::vector<std::size_t>{30 * kMiB}) << "50 MiB of workspace, 20 MiB over";
  EXPECT_EQ(fit.workspace_cap, 30 * kMiB);
  EXPECT_EQ(fit.predicted.bytes, 70 * kMiB);
}

TEST_F(MemoryBudget, SaysByHowMuchItIsOverWhatThePeakHoldsAndTheLayersKeepingTheMost) {
  const auto predict = [] { return peak_of(recompute_activations() ? 60 * kMiB : 80 * kMiB, 0); };
  testing::expect_error([&] { fit_memory_budget(50 * kMiB, {predict, {}}); },
                        {"--memory-budget 50.0 MiB is too small", "70.0 MiB with activations recomputed",
                         "20.0 MiB over", "activations 60.0 MiB", "conv1 30.0 MiB, bn1 15.0 MiB",
                         "A smaller batch or a larger budget"});
}

// Trains under a budget; the epoch's allocator peak and the prediction made before the first step.
struct PeakAndPrediction {
  double peak = 0, predicted = 0;
};

PeakAndPrediction train_within_budget(TrainOptions o) {
  o.memory_budget = 1024 * kMiB;
  std::ostringstream out;
  const TrainResult result = train(o, out);
  EXPECT_EQ(result.status, TrainStatus::completed) << result.message;
  const std::string text = out.str();
  EXPECT_NE(text.find("memory budget: predicted peak"), std::string::npos) << text;
  PeakAndPrediction got;
  const std::size_t line = text.find("memory: peak ");
  EXPECT_NE(line, std::string::npos) << text;
  if (line != std::string::npos) {
    EXPECT_EQ(std::sscanf(text.c_str() + line, "memory: peak %lf MiB (predicted %lf MiB)", &got.peak, &got.predicted), 2)
        << text;
  }
  return got;
}

// The run's allocator peak against the prediction made before its first step: within 5%.
TEST_F(MemoryBudget, TrainWithinABudgetPeaksWhereItPredicted) {
  // Enough batches for the loader's queue to fill, as in a real run.
  TrainOptions o = testing::synthetic_options("mobilenet-0.25-128", 80, 16);
  o.batch_size = 8;
  const PeakAndPrediction got = train_within_budget(o);
  EXPECT_NEAR(got.peak, got.predicted, 0.05 * got.predicted);
}

// Frozen layers keep their gradients and have no momentum: the copy steps the same parameters.
TEST_F(MemoryBudget, TrainWithFrozenLayersPeaksWhereItPredicted) {
  TrainOptions o = testing::synthetic_options("lenet", 640, 64);
  o.freeze_until = "conv2";
  const PeakAndPrediction got = train_within_budget(o);
  EXPECT_NEAR(got.peak, got.predicted, 0.05 * got.predicted);
}

TEST_F(MemoryBudget, TrainRefusesABudgetNoPlanFitsBeforeItsFirstStep) {
  TrainOptions o = testing::synthetic_options("lenet", 64, 64);
  o.memory_budget = kMiB;
  std::ostringstream out;
  testing::expect_error([&] { train(o, out); }, {"--memory-budget 1.0 MiB is too small", "over"});
  EXPECT_EQ(out.str().find("epoch 1/1"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace tunecnn
