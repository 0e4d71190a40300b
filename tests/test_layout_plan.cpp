// The layout DP against brute force, and the transforms and layout plumbing it relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "autotune/layout_plan.h"
#include "ops/layout/reference.h"
#include "ops/layout/to_layout.h"
#include "ops/layout/transform.h"

namespace tunecnn {
namespace {

constexpr Layout kLayouts[] = {Layout::NCHW, Layout::CHWN, Layout::NHWC};

// Transform cost proportional to the activation's size, with a different rate per pair.
double pair_cost(const Shape& shape, Layout from, Layout to) {
  const double rate = 1.0 + static_cast<int>(from) * 0.5 + static_cast<int>(to) * 0.25;
  return rate * static_cast<double>(shape_numel(shape)) * 1e-3;
}

double cost_of(const std::vector<LayoutNode>& nodes, const std::vector<Layout>& layouts,
               const TransformCost& transform) {
  double total = 0;
  Layout previous = Layout::NCHW;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (layouts[i] != previous) total += transform(nodes[i].input, previous, layouts[i]);
    total += nodes[i].cost_ms[static_cast<int>(layouts[i])];
    previous = layouts[i];
  }
  return total;
}

std::vector<LayoutNode> random_chain(std::mt19937& gen, int length) {
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  std::uniform_int_distribution<int> size(1, 40), kind(0, 3);
  std::vector<LayoutNode> nodes(length);
  for (LayoutNode& node : nodes) {
    node.input = {size(gen), size(gen), 4, 4};
    switch (kind(gen)) {
      case 0: node.cost_ms = {cost(gen), kCannotRun, kCannotRun}; break;  // NCHW only (linear)
      case 1: node.cost_ms = {0, 0, 0}; break;                            // elementwise
      default: node.cost_ms = {cost(gen), cost(gen), cost(gen)};          // conv
    }
    if (kind(gen) == 3) node.cost_ms[1] = kCannotRun;  // no CHWN solver for this one
  }
  return nodes;
}

TEST(LayoutPlan, MatchesBruteForceOnRandomChains) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 300; ++trial) {
    const int length = 1 + trial % 8;
    const std::vector<LayoutNode> nodes = random_chain(gen, length);
    const LayoutAssignment dp = plan_layouts(nodes, pair_cost);
    const LayoutAssignment brute = plan_layouts_brute_force(nodes, pair_cost);
    ASSERT_EQ(dp.layouts.size(), nodes.size());
    EXPECT_NEAR(dp.total_ms, brute.total_ms, 1e-9) << "trial " << trial;
    EXPECT_NEAR(cost_of(nodes, dp.layouts, pair_cost), dp.total_ms, 1e-9) << "trial " << trial;
  }
}

TEST(LayoutPlan, SwitchesOnlyWhenTheSavingsPayForTheTransforms) {
  // Two convs that are 3 ms faster each in CHWN, around an elementwise layer, then an NCHW-only
  // layer. A round trip costs 2 ms per transform.
  const TransformCost two_ms = [](const Shape&, Layout, Layout) { return 2.0; };
  std::vector<LayoutNode> nodes(4);
  nodes[0].cost_ms = {10, 7, kCannotRun};
  nodes[1].cost_ms = {0, 0, 0};
  nodes[2].cost_ms = {10, 7, kCannotRun};
  nodes[3].cost_ms = {1, kCannotRun, kCannotRun};
  LayoutAssignment plan = plan_layouts(nodes, two_ms);
  EXPECT_EQ(plan.layouts, (std::vector<Layout>{Layout::CHWN, Layout::CHWN, Layout::CHWN, Layout::NCHW}));
  EXPECT_DOUBLE_EQ(plan.total_ms, 2 + 7 + 0 + 7 + 2 + 1);
  // With 4 ms transforms the round trip costs more than it saves.
  plan = plan_layouts(nodes, [](const Shape&, Layout, Layout) { return 4.0; });
  EXPECT_EQ(plan.layouts, std::vector<Layout>(4, Layout::NCHW));
  EXPECT_DOUBLE_EQ(plan.total_ms, 21);
}

TEST(LayoutPlan, EqualCostsGiveTheSamePlanEveryTime) {
  const TransformCost free = [](const Shape&, Layout, Layout) { return 0.0; };
  std::vector<LayoutNode> nodes(3);
  for (LayoutNode& node : nodes) node.cost_ms = {1, 1, 1};
  const LayoutAssignment plan = plan_layouts(nodes, free);
  EXPECT_EQ(plan.layouts, std::vector<Layout>(3, Layout::NCHW));
  EXPECT_EQ(plan_layouts(nodes, free).layouts, plan.layouts);
}

TEST(LayoutPlan, ANodeThatCannotRunIsAnError) {
  std::vector<LayoutNode> nodes(2);
  nodes[0].cost_ms = {1, 1, 1};
  EXPECT_THROW(plan_layouts(nodes, pair_cost), Error);
}

TEST(LayoutTransform, EveryPairMatchesTheReferenceOnOddSizes) {
  const Shape shapes[] = {{1, 1, 1, 1}, {3, 5, 7, 2}, {33, 17, 3, 5}, {2, 65, 1, 1}, {40, 3, 9, 11}, {70, 9, 6, 7}};
  for (const Shape& shape : shapes)
    for (Layout from : kLayouts)
      for (Layout to : kLayouts) {
        Tensor src = Tensor::empty(shape, DType::f32, Device::cpu, from);
        float* data = src.data<float>();  // distinct values, so a misplaced element shows
        for (std::int64_t i = 0; i < src.numel(); ++i) data[i] = static_cast<float>(i);
        const Tensor fast = convert_layout(src, to);
        const Tensor expected = convert_layout_reference(src, to);
        ASSERT_EQ(fast.layout(), to);
        ASSERT_EQ(0, std::memcmp(fast.data<float>(), expected.data<float>(), fast.nbytes()))
            << shape_str(shape) << " " << to_string(from) << " -> " << to_string(to);
        // And back again: a round trip is the identity.
        const Tensor back = convert_layout(fast, from);
        ASSERT_EQ(0, std::memcmp(back.data<float>(), src.data<float>(), src.nbytes()));
      }
}

}  // namespace
LayoutNode node_with(std::array<double, kLayoutCount> cost_ms, std::array<double, kLayoutCount> noise_ms = {0, 0, 0}) {
  LayoutNode node;
  node.input = {1, 1, 1, 1};
  node.cost_ms = cost_ms;
  node.noise_ms = noise_ms;
  return node;
}

// Near-ties: within the fraction of the layer's cheapest layout, or within the two costs' noise
// when that is larger, costs merge to it; others and layouts that cannot run stay as they are.
TEST(LayoutPlan, NearTiesMergeToTheCheapest) {
  const LayoutNode merged = merge_near_ties(node_with({10.2, kCannotRun, 10.0}), 0.03);
  EXPECT_EQ(merged.cost_ms[0], 10.0);
  EXPECT_EQ(merged.cost_ms[1], kCannotRun);
  EXPECT_EQ(merged.cost_ms[2], 10.0);
  EXPECT_EQ(merge_near_ties(node_with({10.0, 12.0, 10.5}), 0.03).cost_ms[1], 12.0);
  EXPECT_EQ(merge_near_ties(node_with({10.0, 12.0, 10.5}), 0.03).cost_ms[2], 10.5);
  EXPECT_EQ(merge_near_ties(node_with({kCannotRun, kCannotRun, kCannotRun}), 0.03).cost_ms[0], kCannotRun);
  // 10.5 against 10.0 with 0.3 ms of noise on each: within the noise, merged; 12 is not.
  const LayoutNode noisy = merge_near_ties(node_with({10.0, 12.0, 10.5}, {0.3, 0.3, 0.3}), 0.03);
  EXPECT_EQ(noisy.cost_ms[2], 10.0);
  EXPECT_EQ(noisy.cost_ms[1], 12.0);
}

// A layer 2% faster in NHWC, between an NCHW input and a layer that runs only in NCHW: measured
// as is, the DP puts it in NHWC when the two transforms cost less than the 2%, and in NCHW when
// the same layer measures 2% slower there on the next run. Merged, both runs decide it by the
// transforms alone.
TEST(LayoutPlan, MergedNearTiesGiveTheSamePlanWhicheverWayTheNoiseWent) {
  const TransformCost transform = [](const Shape&, Layout, Layout) { return 0.05; };
  const auto chain = [](double nchw, double nhwc) {
    std::vector<LayoutNode> nodes(2);
    nodes[0].input = nodes[1].input = {1, 1, 1, 1};
    nodes[0].cost_ms = {nchw, kCannotRun, nhwc};
    nodes[1].cost_ms = {5, kCannotRun, kCannotRun};
    return nodes;
  };
  const auto merged = [](std::vector<LayoutNode> nodes) {
    for (LayoutNode& node : nodes) node = merge_near_ties(node, 0.03);
    return nodes;
  };
  const std::vector<LayoutNode> run_a = chain(10.0, 9.8), run_b = chain(9.8, 10.0);
  EXPECT_EQ(plan_layouts(run_a, transform).layouts[0], Layout::NHWC);
  EXPECT_EQ(plan_layouts(run_b, transform).layouts[0], Layout::NCHW);
  EXPECT_EQ(plan_layouts(merged(run_a), transform).layouts[0], Layout::NCHW);
  EXPECT_EQ(plan_layouts(merged(run_b), transform).layouts[0], Layout::NCHW);
  // The cost of a plan is still what was measured.
  const std::vector<Layout> plan = plan_layouts(merged(run_a), transform).layouts;
  EXPECT_DOUBLE_EQ(assignment_ms(run_a, plan, transform), 15.0);
  EXPECT_DOUBLE_EQ(assignment_ms(run_a, plan, transform), cost_of(run_a, plan, transform));
}

namespace {

// Brute force for plan_fewest_changes: every assignment, those within the fraction of the
// cheapest, the fewest changes among them, the cheapest of those.
std::pair<int, double> fewest_changes_brute_force(const std::vector<LayoutNode>& nodes,
                                                  const TransformCost& transform, double fraction) {
  const double cheapest = plan_layouts_brute_force(nodes, transform).total_ms;
  std::pair<int, double> best{1 << 30, kCannotRun};
  std::vector<Layout> layouts(nodes.size());
  std::size_t combinations = 1;
  for (std::size_t i = 0; i < nodes.size(); ++i) combinations *= kLayoutCount;
  for (std::size_t code = 0; code < combinations; ++code) {
    std::size_t rest = code;
    for (Layout& l : layouts) l = static_cast<Layout>(rest % kLayoutCount), rest /= kLayoutCount;
    const double total = assignment_ms(nodes, layouts, transform);
    if (!(total <= cheapest * (1 + fraction))) continue;
    best = std::min(best, std::pair{layout_changes(layouts), total});
  }
  return best;
}

}  // namespace

TEST(LayoutPlan, FewestChangesMatchesBruteForceOnRandomChains) {
  std::mt19937 gen(11);
  for (int trial = 0; trial < 300; ++trial) {
    const std::vector<LayoutNode> nodes = random_chain(gen, 1 + trial % 7);
    for (double fraction : {0.0, 0.03, 0.2}) {
      const LayoutAssignment dp = plan_fewest_changes(nodes, pair_cost, fraction);
      const auto [changes, total] = fewest_changes_brute_force(nodes, pair_cost, fraction);
      ASSERT_EQ(dp.layouts.size(), nodes.size());
      EXPECT_EQ(layout_changes(dp.layouts), changes) << "trial " << trial << " fraction " << fraction;
      EXPECT_NEAR(dp.total_ms, total, 1e-9) << "trial " << trial << " fraction " << fraction;
      EXPECT_NEAR(assignment_ms(nodes, dp.layouts, pair_cost), dp.total_ms, 1e-9);
    }
  }
}

// MobileNet's shape of the problem: depthwise layers much faster in NHWC, pointwise layers
// between them a little faster in NCHW (a margin the next run may reverse). The cheapest plan
// switches layouts around every pointwise layer; within 3% of it, staying in NHWC changes once.
TEST(LayoutPlan, FewestChangesKeepsOneLayoutWhenSwitchingGainsLessThanTheNoise) {
  const TransformCost transform = [](const Shape&, Layout, Layout) { return 0.1; };
  std::vector<LayoutNode> nodes;
  for (int i = 0; i < 6; ++i) {
    LayoutNode depthwise, pointwise;
    depthwise.input = pointwise.input = {1, 1, 1, 1};
    depthwise.cost_ms = {4.0, kCannotRun, 1.0};
    pointwise.cost_ms = {10.0, kCannotRun, 10.35};  // NHWC 0.35 ms behind, two transforms 0.2 ms
    nodes.push_back(depthwise), nodes.push_back(pointwise);
  }
  const LayoutAssignment cheapest = plan_layouts(nodes, transform);
  EXPECT_GT(layout_changes(cheapest.layouts), 1);
  const LayoutAssignment simplest = plan_fewest_changes(nodes, transform, 0.03);
  EXPECT_EQ(simplest.layouts, std::vector<Layout>(nodes.size(), Layout::NHWC));
  EXPECT_EQ(layout_changes(simplest.layouts), 1);
  EXPECT_LE(simplest.total_ms, cheapest.total_ms * 1.03);
  // Beyond the fraction the cheapest plan stands.
  EXPECT_EQ(plan_fewest_changes(nodes, transform, 0.001).layouts, cheapest.layouts);
}

}  // namespace tunecnn
