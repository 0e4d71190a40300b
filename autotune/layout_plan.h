#pragma once
// Layout planning for a whole network (Li et al., PAPERS.md section 2). The network is a chain of
// layers; each layer runs in one of the layouts it accepts, at a measured cost per layout, and
// wherever two consecutive layers disagree a transform is paid on the activation between them
// (forward) and on its gradient (backward). An exact dynamic programme over (layer, layout)
// finds the cheapest assignment in O(layers x layouts^2).
#include <array>
#include <functional>
#include <limits>
#include <vector>

#include "core/types.h"

namespace tunecnn {

inline constexpr int kLayoutCount = 3;  // NCHW, CHWN, NHWC: the values of Layout, in order
inline constexpr double kCannotRun = std::numeric_limits<double>::infinity();

struct LayoutNode {
  Shape input;  // the logical shape of the layer's input activation
  // Milliseconds per step in each layout (indexed by Layout); kCannotRun where it cannot run.
  std::array<double, kLayoutCount> cost_ms{kCannotRun, kCannotRun, kCannotRun};
  // The noise measured behind each cost (the spreads of the timings it sums), 0 when unknown.
  std::array<double, kLayoutCount> noise_ms{0, 0, 0};
};

// Milliseconds to change an activation of this shape from one layout to another, forward and
// backward together; called with from != to only.
using TransformCost = std::function<double(const Shape& shape, Layout from, Layout to)>;

struct LayoutAssignment {
  std::vector<Layout> layouts;  // one per node
  double total_ms = kCannotRun;  // node costs plus transforms
};

// The cheapest assignment, the network input arriving in `input_layout`. Ties are broken the same
// way every time (the lower Layout value, from the last layer backwards), so equal measurements
// give equal plans. Throws Error when some node can run in no layout.
LayoutAssignment plan_layouts(const std::vector<LayoutNode>& nodes, const TransformCost& transform,
                              Layout input_layout = Layout::NCHW);

// What an assignment costs: node costs plus transforms, the input arriving in `input_layout`.
double assignment_ms(const std::vector<LayoutNode>& nodes, const std::vector<Layout>& layouts,
                     const TransformCost& transform, Layout input_layout = Layout::NCHW);

// Layer costs within this fraction of the layer's best layout, or within the noise measured
// behind the two costs when that is larger, count as equal when layouts are chosen: close
// candidates' medians move by about this much between runs on an idle machine.
inline constexpr double kLayoutTieFraction = 0.03;

// The node with every layout whose cost is within max(`fraction` of the cheapest, its noise plus
// the cheapest's noise) of the cheapest set equal to it. Layouts the timings cannot tell apart
// then tie exactly, and plan_layouts' fixed tie-breaking (the transforms around the layer, then
// the lower Layout value) decides them the same way on every run instead of by this run's noise.
LayoutNode merge_near_ties(LayoutNode node, double fraction);

// Each layout change the planners make must save more than this fraction of the step's cost
// beyond its transforms. Without it, MobileNet's pointwise layers, measured a few percent faster
// in NCHW between depthwise layers that run in NHWC, bought back their transforms by margins
// smaller than the run-to-run noise, and the plan switched some of them and not others,
// differently on each run; yet the mixed plan trained no faster than the one that stays in NHWC
// (169 against 164 ms per step). With it, 14 of 16 runs from an empty cache agreed on every layer
// after the first (docs/BENCHMARKS.md).
inline constexpr double kLayoutChangePenalty = 0.01;

// The planners' choice: near-ties merged per layer (kLayoutTieFraction), then the cheapest
// assignment with each layout change charged kLayoutChangePenalty of the cheapest total on top of
// its transform. Identical layers in identical surroundings so get the same layout: a change is
// worth it for all of them or for none. Its total_ms is at the merged costs without the penalty;
// report a plan's cost with assignment_ms on the measured nodes.
LayoutAssignment choose_layouts(const std::vector<LayoutNode>& nodes, const TransformCost& transform,
                                Layout input_layout = Layout::NCHW);

// Every assignment tried: the check for plan_layouts on small chains.
LayoutAssignment plan_layouts_brute_force(const std::vector<LayoutNode>& nodes,
                                          const TransformCost& transform,
                                          Layout input_layout = Layout::NCHW);

}  // namespace tunecnn
