#include "autotune/layout_plan.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.h"

namespace tunecnn {
namespace {

Layout layout_at(int i) { return static_cast<Layout>(i); }

double transform_between(const TransformCost& transform, const Shape& shape, Layout from, Layout to) {
  return from == to ? 0.0 : transform(shape, from, to);
}

void check_runnable(const std::vector<LayoutNode>& nodes) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    bool any = false;
    for (double cost : nodes[i].cost_ms) any = any || std::isfinite(cost);
    TUNECNN_CHECK(any, "layout planning: layer ", i, " (input ", shape_str(nodes[i].input),
                  ") cannot run in any layout");
  }
}

}  // namespace

LayoutAssignment plan_layouts(const std::vector<LayoutNode>& nodes, const TransformCost& transform,
                              Layout input_layout) {
  check_runnable(nodes);
  const std::size_t n = nodes.size();
  if (n == 0) return {{}, 0.0};
  // best[i][l]: the cheapest cost of layers 0..i with layer i in layout l; from[i][l] the layout of
  // layer i-1 on that path. Scanning layouts in enum order with a strict < keeps the earliest
  // (NCHW-first) choice among equal costs.
  std::vector<std::array<double, kLayoutCount>> best(n);
  std::vector<std::array<int, kLayoutCount>> from(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (int l = 0; l < kLayoutCount; ++l) {
      best[i][l] = kCannotRun;
      from[i][l] = -1;
      const double own = nodes[i].cost_ms[l];
      if (!std::isfinite(own)) continue;
      if (i == 0) {
        best[i][l] = own + transform_between(transform, nodes[0].input, input_layout, layout_at(l));
        continue;
      }
      for (int p = 0; p < kLayoutCount; ++p) {
        if (!std::isfinite(best[i - 1][p])) continue;
        const double cost =
            best[i - 1][p] + transform_between(transform, nodes[i].input, layout_at(p), layout_at(l)) + own;
        if (cost < best[i][l]) best[i][l] = cost, from[i][l] = p;
      }
    }
  }
  LayoutAssignment out;
  int last = -1;
  for (int l = 0; l < kLayoutCount; ++l)
    if (best[n - 1][l] < out.total_ms) out.total_ms = best[n - 1][l], last = l;
  TUNECNN_CHECK(last >= 0, "layout planning: no layout assignment can run the network");
  out.layouts.assign(n, Layout::NCHW);
  for (std::size_t i = n; i-- > 0;) {
    out.layouts[i] = layout_at(last);
    last = from[i][last];
  }
  return out;
}

double assignment_ms(const std::vector<LayoutNode>& nodes, const std::vector<Layout>& layouts,
                     const TransformCost& transform, Layout input_layout) {
  TUNECNN_CHECK(layouts.size() == nodes.size(), "layout planning: ", layouts.size(), " layouts for ",
                nodes.size(), " layers");
  double total = 0;
  Layout previous = input_layout;
  for (std::size_t i = 0; i < nodes.size() && std::isfinite(total); ++i) {
    total += transform_between(transform, nodes[i].input, previous, layouts[i]) +
             nodes[i].cost_ms[static_cast<int>(layouts[i])];
    previous = layouts[i];
  }
  return total;
}

LayoutNode merge_near_ties(LayoutNode node, double fraction) {
  const auto cheapest = std::min_element(node.cost_ms.begin(), node.cost_ms.end());
  if (!std::isfinite(*cheapest)) return node;
  const double best = *cheapest, best_noise = node.noise_ms[cheapest - node.cost_ms.begin()];
  for (int l = 0; l < kLayoutCount; ++l)
    if (node.cost_ms[l] <= best + std::max(fraction * best, node.noise_ms[l] + best_noise)) node.cost_ms[l] = best;
  return node;
}

namespace {

// cost[k][l]: the cheapest cost of the layers so far, the last in layout l, after exactly k layout
// changes; from[k][l]: the layout of the layer before it on that path (-1 for the first layer).
struct ChangesStep {
  std::vector<std::array<double, kLayoutCount>> cost;
  std::vector<std::array<int, kLayoutCount>> from;
};

// Before the first layer: the input, in `input_layout`, at no cost and no change.
ChangesStep input_step(std::size_t max_changes, Layout input_layout) {
  ChangesStep step{std::vector<std::array<double, kLayoutCount>>(max_changes + 1),
                   std::vector<std::array<int, kLayoutCount>>(max_changes + 1)};
  for (auto& row : step.cost) row.fill(kCannotRun);
  for (auto& row : step.from) row.fill(-1);
  step.cost[0][static_cast<int>(input_layout)] = 0;
  return step;
}

// The step for `node` after `previous`; as in plan_layouts, a strict < over layouts in enum
// order keeps the NCHW-first choice among equal costs.
ChangesStep next_changes_step(const ChangesStep& previous, const LayoutNode& node, const TransformCost& transform) {
  ChangesStep step = previous;
  for (auto& row : step.cost) row.fill(kCannotRun);
  for (auto& row : step.from) row.fill(-1);
  for (std::size_t k = 0; k < step.cost.size(); ++k)
    for (int l = 0; l < kLayoutCount; ++l) {
      if (!std::isfinite(node.cost_ms[l])) continue;
      for (int p = 0; p < kLayoutCount; ++p) {
        const std::size_t change = p != l;
        if (k < change || !std::isfinite(previous.cost[k - change][p])) continue;
        const double cost = previous.cost[k - change][p] +
                            transform_between(transform, node.input, layout_at(p), layout_at(l)) + node.cost_ms[l];
        if (cost < step.cost[k][l]) step.cost[k][l] = cost, step.from[k][l] = p;
      }
    }
  return step;
}

}  // namespace

LayoutAssignment plan_fewest_changes(const std::vector<LayoutNode>& nodes, const TransformCost& transform,
                                     double fraction, Layout input_layout) {
  check_runnable(nodes);
  const std::size_t n = nodes.size();
  if (n == 0) return {{}, 0.0};
  std::vector<ChangesStep> steps;  // steps[i]: after layer i
  ChangesStep before = input_step(n, input_layout);
  for (const LayoutNode& node : nodes) before = steps.emplace_back(next_changes_step(before, node, transform));
  const auto& last = steps.back().cost;
  double cheapest = kCannotRun;
  for (const auto& row : last) cheapest = std::min(cheapest, *std::min_element(row.begin(), row.end()));
  TUNECNN_CHECK(std::isfinite(cheapest), "layout planning: no layout assignment can run the network");
  // The fewest changes whose cheapest path is within the limit, then that path's last layout.
  std::size_t k = 0;
  int layout = -1;
  for (; layout < 0; ++k)
    for (int l = 0; l < kLayoutCount; ++l)
      if (last[k][l] <= cheapest * (1 + fraction) && (layout < 0 || last[k][l] < last[k][layout])) layout = l;
  --k;
  LayoutAssignment out{std::vector<Layout>(n), last[k][layout]};
  for (std::size_t i = n; i-- > 0;) {
    out.layouts[i] = layout_at(layout);
    const int previous = steps[i].from[k][layout];
    if (previous != layout) --k;
    layout = previous;
  }
  return out;
}

LayoutAssignment choose_layouts(const std::vector<LayoutNode>& nodes, const TransformCost& transform,
                                Layout input_layout) {
  std::vector<LayoutNode> merged = nodes;
  for (LayoutNode& node : merged) node = merge_near_ties(node, kLayoutTieFraction);
  return plan_fewest_changes(merged, transform, kLayoutTieFraction, input_layout);
}

int layout_changes(const std::vector<Layout>& layouts, Layout input_layout) {
  int changes = 0;
  Layout previous = input_layout;
  for (Layout layout : layouts) changes += layout != previous, previous = layout;
  return changes;
}

LayoutAssignment plan_layouts_brute_force(const std::vector<LayoutNode>& nodes,
                                          const TransformCost& transform, Layout input_layout) {
  check_runnable(nodes);
  const std::size_t n = nodes.size();
  LayoutAssignment out;
  if (n == 0) return {{}, 0.0};
  std::vector<int> choice(n, 0);
  std::size_t combinations = 1;
  for (std::size_t i = 0; i < n; ++i) combinations *= kLayoutCount;
  for (std::size_t code = 0; code < combinations; ++code) {
    std::size_t rest = code;
    for (std::size_t i = n; i-- > 0;) choice[i] = static_cast<int>(rest % kLayoutCount), rest /= kLayoutCount;
    std::vector<Layout> layouts;
    for (int c : choice) layouts.push_back(layout_at(c));
    const double total = assignment_ms(nodes, layouts, transform, input_layout);
    if (total < out.total_ms) out = {layouts, total};
  }
  TUNECNN_CHECK(!out.layouts.empty(), "layout planning: no layout assignment can run the network");
  return out;
}

}  // namespace tunecnn
