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

LayoutAssignment choose_layouts(const std::vector<LayoutNode>& nodes, const TransformCost& transform,
                                Layout input_layout) {
  std::vector<LayoutNode> merged = nodes;
  for (LayoutNode& node : merged) node = merge_near_ties(node, kLayoutTieFraction);
  const double penalty = kLayoutChangePenalty * plan_layouts(merged, transform, input_layout).total_ms;
  const TransformCost charged = [&](const Shape& shape, Layout from, Layout to) {
    return transform(shape, from, to) + penalty;
  };
  LayoutAssignment chosen = plan_layouts(merged, charged, input_layout);
  chosen.total_ms = assignment_ms(merged, chosen.layouts, transform, input_layout);
  return chosen;
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
