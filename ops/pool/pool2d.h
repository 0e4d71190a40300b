#pragma once
// 2-D max and average pooling over [N, C, H, W] activations, floor mode. A layer runs the plan the
// network planner installed for its input shape (set_plan); without one it asks its planner
// (ops/planners.h: the autotuner's, or the untuned default) for the layout its input arrives in.
// The functions max_pool2d and avg_pool2d always run the untuned default.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/module.h"
#include "ops/pool/plan.h"

namespace tunecnn {

struct PoolGeometry {
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  static PoolGeometry square(int kernel, int stride, int padding = 0) {
    return {kernel, kernel, stride, stride, padding, padding};
  }
};

// The problem for pooling `x` (4-D), validated: the window must fit the padded input.
PoolProblem pool_problem(const Tensor& x, PoolKind kind, const PoolGeometry& geometry,
                         bool count_include_pad = false);
PoolProblem pool_problem(const Shape& x, DType dtype, PoolKind kind, const PoolGeometry& geometry,
                         bool count_include_pad = false);

// Runs `plan` (its layout; the input is transformed when it arrives in another); the output is
// in the plan's layout.
Variable pool2d(const Variable& x, const PoolProblem& fwd_problem, const PoolLayerPlan& plan);
Variable max_pool2d(const Variable& x, PoolGeometry geometry);
// Divides by the real pixels in each window unless count_include_pad.
Variable avg_pool2d(const Variable& x, PoolGeometry geometry, bool count_include_pad = false);

class Pool2d : public Module {
 public:
  Pool2d(PoolKind kind, PoolGeometry geometry);
  Variable forward(const Variable& input) override;
  // The layouts some CPU pool solver runs both directions in. A pooling layer has no parameters
  // to say where it runs: the network planner asks with its device (the overload below).
  std::vector<Layout> input_layouts(const Shape& input) const override;
  // The layouts `device`'s pool solvers take (the GPU's: NCHW and CHWN, from pool_tiled).
  std::vector<Layout> input_layouts(const Shape& input, Device device) const;
  std::string describe() const override;
  PoolKind kind() const { return kind_; }
  const PoolGeometry& geometry() const { return geometry_; }

  // The forward problem for an f32 input of this shape.
  PoolProblem problem_for(const Shape& input) const;
  // Installs the plan for inputs of one shape (the network planner decides layers together).
  void set_plan(const PoolProblem& fwd_problem, const PoolLayerPlan& plan);
  // Asked for a shape without an installed plan; until given one, the untuned default. Forgets the
  // installed plans.
  void set_planner(std::shared_ptr<PoolPlanner> planner);
  // Every installed plan with its forward problem.
  std::vector<std::pair<PoolProblem, PoolLayerPlan>> plans() const;

 private:
  PoolKind kind_;
  PoolGeometry geometry_;
  std::shared_ptr<PoolPlanner> planner_;
  std::map<std::string, std::pair<PoolProblem, PoolLayerPlan>> plans_;  // by fwd problem key
};

class MaxPool2d : public Pool2d {
 public:
  MaxPool2d(int kernel, int stride, int padding = 0)
      : Pool2d(PoolKind::max, PoolGeometry::square(kernel, stride, padding)) {}
};

class AvgPool2d : public Pool2d {
 public:
  AvgPool2d(int kernel, int stride, int padding = 0)
      : Pool2d(PoolKind::avg, PoolGeometry::square(kernel, stride, padding)) {}
};

}  // namespace tunecnn
