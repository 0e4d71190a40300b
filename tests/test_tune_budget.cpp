// The tuning budget (--tune-budget, TunedPlanner::set_budget), on the fake clock of the tuner
// tests: a pass stops at the budget within one candidate's time, tunes the layers with the most
// work first, stores only complete searches, plans the rest from the thresholds or the untuned
// default, and a later run without a budget tunes exactly what was left and ends with the plans
// a pass without a budget makes. No real-time assertions.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "core/rng.h"
#include "models/registry.h"
#include "tests/support/test_data.h"
#include "tests/support/tuner_harness.h"

namespace tunecnn {
namespace {

using Harness = testing::TunerHarness;
const Shape kBatch{4, 1, 28, 28};

std::shared_ptr<Sequential> lenet() {
  Rng rng(3);
  return build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
}

struct Pass {
  NetworkPlanReport report;
  std::vector<std::string> profiled;  // keys in the order they were profiled
  std::vector<double> started;        // the harness clock as each of them began
  TunedPlannerStats stats;
  std::string summary;
  double fake_seconds = 0;  // the harness clock at the end
};

// Plans LeNet through `tuner`, whose harness is `h`.
Pass plan_lenet(Harness& h, const std::shared_ptr<TunedPlanner>& tuner) {
  auto model = lenet();
  NetworkPlanner planner(tuner);
  Pass pass;
  planner.on_profile = [&](int, int, const std::string& key) {
    pass.profiled.push_back(key);
    pass.started.push_back(h.now);
  };
  pass.report = planner.plan(*model, kBatch);
  pass.stats = tuner->stats();
  pass.summary = tuner->summary();
  pass.fake_seconds = h.now;
  return pass;
}

std::string layer_plans(const NetworkPlanReport& report) {
  std::string text;
  for (const ConvLayerReport& layer : report.layers)
    for (Direction d : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
      text += std::string(layer.plan.for_direction(d).solver->name()) + " " +
              layer.plan.for_direction(d).config.str() + " " +
              std::string(to_string(layer.plan.layout())) + "; ";
  return text;
}

TEST(TuneBudget, APassStopsAtItsBudgetStoresOnlyWholeSearchesAndALaterRunTunesTheRest) {
  testing::TempDir dir;
  Harness unlimited_h;
  const Pass unlimited = plan_lenet(unlimited_h, unlimited_h.planner(TunePolicy::cached, dir.path() / "unlimited.yaml"));

  // A budget that runs out half-way through the second search, in the order a budget resolves
  // keys (most work first). Any fixed fraction of the whole could fall on the last candidate of
  // a search, which then ends whole, and which one does depends on the solvers built in.
  Harness ordered_h;
  auto ordered = ordered_h.planner(TunePolicy::cached, dir.path() / "ordered.yaml");
  ordered->set_budget(1e9, [&ordered_h] { return ordered_h.now; });
  const Pass in_budget_order = plan_lenet(ordered_h, ordered);
  ASSERT_GE(in_budget_order.started.size(), 3u);
  const double budget = (in_budget_order.started[1] + in_budget_order.started[2]) / 2;

  const auto file = dir.path() / "tuning.yaml";
  Harness h;
  auto budgeted = h.planner(TunePolicy::cached, file);
  budgeted->set_budget(budget, [&h] { return h.now; });
  const Pass first = plan_lenet(h, budgeted);
  EXPECT_LT(first.stats.profiled, unlimited.stats.profiled);
  EXPECT_GT(first.stats.over_budget, 0);
  EXPECT_EQ(first.stats.partial, 1) << "the search running when the budget ran out is cut short";
  // Within one candidate's time of the budget: a candidate costs a few clock reads (1 ms each)
  // plus its check, far less than 20 ms here.
  EXPECT_LE(first.fake_seconds, budget + 0.02);
  EXPECT_NE(first.summary.find("--tune-budget"), std::string::npos) << first.summary;

  // What the first pass wrote: its whole searches, not the one cut short.
  Harness later_h;
  auto later = later_h.planner(TunePolicy::cached, file);
  const Pass second = plan_lenet(later_h, later);
  EXPECT_EQ(second.stats.from_cache, first.stats.profiled - first.stats.partial);
  EXPECT_EQ(second.stats.profiled, unlimited.stats.profiled - second.stats.from_cache);
  EXPECT_EQ(layer_plans(second.report), layer_plans(unlimited.report));
  for (const std::string& key : first.profiled)
    EXPECT_EQ(std::count(second.profiled.begin(), second.profiled.end(), key), key == first.profiled.back() ? 1 : 0)
        << key << ": only the search the budget cut short is searched again";
}

TEST(TuneBudget, TheLayerWithTheMostWorkIsTunedFirst) {
  testing::TempDir dir;
  Harness chain_h;
  const Pass chain_order = plan_lenet(chain_h, chain_h.planner(TunePolicy::cached, dir.path() / "a.yaml"));
  ASSERT_FALSE(chain_order.report.layers.empty());
  EXPECT_EQ(chain_order.profiled.front(), chain_order.report.layers[0].problem.key()) << "without a budget: chain order";

  Harness h;
  auto tuner = h.planner(TunePolicy::cached, dir.path() / "b.yaml");
  tuner->set_budget(1e-9, [&h] { return h.now; });  // spent by the first candidate
  const Pass pass = plan_lenet(h, tuner);
  // LeNet's conv2 (16 -> 16 channels at 14x14, all three directions) has six times conv1's work
  // (1 -> 16 at 28x28, no input gradient).
  ASSERT_EQ(pass.profiled.size(), 1u);
  EXPECT_EQ(pass.profiled.front(), pass.report.layers[1].problem.key());
  EXPECT_EQ(pass.stats.partial, 1);
  EXPECT_GT(pass.stats.over_budget, 0);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "b.yaml") &&
               tuner->cache().find("cpu-test", pass.profiled.front()) != nullptr)
      << "a search cut short is not stored";
}

}  // namespace
}  // namespace tunecnn
