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

// MobileNet's shape of the problem: six depthwise layers much faster in NHWC, each followed by a
// pointwise layer `pointwise_nchw` ms in NCHW and 10.35 ms in NHWC; a change costs 0.1 ms.
std::vector<LayoutNode> depthwise_pointwise_chain(double pointwise_nchw) {
  std::vector<LayoutNode> nodes;
  for (int i = 0; i < 6; ++i) {
    LayoutNode depthwise, pointwise;
    depthwise.input = pointwise.input = {1, 1, 1, 1};
    depthwise.cost_ms = {4.0, kCannotRun, 1.0};
    pointwise.cost_ms = {pointwise_nchw, kCannotRun, 10.35};
    nodes.push_back(depthwise), nodes.push_back(pointwise);
  }
  return nodes;
}

const TransformCost kTenthOfAMs = [](const Shape&, Layout, Layout) { return 0.1; };

// Layout changes in an assignment, the one from the NCHW input included.
int layout_changes(const std::vector<Layout>& layouts) {
  int changes = 0;
  Layout previous = Layout::NCHW;
  for (Layout layout : layouts) changes += layout != previous, previous = layout;
  return changes;
}

}  // namespace

// NCHW saves 0.35 ms per pointwise layer, 0.15 ms net of its two changes: the cheapest plan
// switches around every pointwise layer, but each switch gains less than the penalty (1% of
// the 68 ms step per change), so all six stay in NHWC; the reported total has no penalty in it.
TEST(LayoutPlan, ChangesThatGainLessThanThePenaltyAreNotMade) {
  const std::vector<LayoutNode> nodes = depthwise_pointwise_chain(10.0);
  const LayoutAssignment cheapest = plan_layouts(nodes, kTenthOfAMs);
  EXPECT_EQ(layout_changes(cheapest.layouts), 12);
  const LayoutAssignment chosen = choose_layouts(nodes, kTenthOfAMs);
  EXPECT_EQ(chosen.layouts, std::vector<Layout>(nodes.size(), Layout::NHWC));
  EXPECT_DOUBLE_EQ(chosen.total_ms, assignment_ms(nodes, chosen.layouts, kTenthOfAMs));
  EXPECT_LE(chosen.total_ms, cheapest.total_ms * 1.03);
}

// At 8 ms in NCHW each pointwise layer saves 2.15 ms net, more than two changes' penalty: all six
// switch, identical layers alike (a budget spent change by change would switch only some).
TEST(LayoutPlan, ChangesThatGainMoreThanThePenaltyAreMadeForEveryIdenticalLayer) {
  const std::vector<LayoutNode> nodes = depthwise_pointwise_chain(8.0);
  const LayoutAssignment chosen = choose_layouts(nodes, kTenthOfAMs);
  for (std::size_t i = 0; i < nodes.size(); ++i)
    EXPECT_EQ(chosen.layouts[i], i % 2 ? Layout::NCHW : Layout::NHWC) << "layer " << i;
  EXPECT_EQ(chosen.layouts, plan_layouts(nodes, kTenthOfAMs).layouts);
}

}  // namespace tunecnn
