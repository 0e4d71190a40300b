#pragma once
// The 2-D convolution op for autograd and the Conv2d module. The op runs a ConvLayerPlan: one
// solver and config per direction, chosen once per layer shape by a ConvPlanner.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/module.h"
#include "core/rng.h"
#include "ops/conv/plan.h"

namespace tunecnn {

struct ConvGeometry {
  int stride = 1, padding = 0, groups = 1;
};

// The forward problem for input x [N, C, H, W] and weight [OC, C/groups, KH, KW]; throws on
// mismatched shapes or dtypes.
ConvProblem conv_problem(const Tensor& x, const Tensor& weight, const ConvGeometry& geo);

// `bias` [OC] may be an undefined Variable. The input is transformed to the plan's layout when it
// is in another; the output is in the plan's layout.
Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias,
                const ConvGeometry& geo, const ConvLayerPlan& plan);

class Conv2d : public Module {
 public:
  Conv2d(int in_channels, int out_channels, int kernel, int stride, int padding, Rng& rng,
         int groups = 1, bool bias = true);
  Variable forward(const Variable& input) override;
  bool output_reusable_in_place() const override { return true; }  // backward reads input and weights
  std::string describe() const override;
  int in_channels() const { return in_channels_; }
  int out_channels() const { return out_channels_; }
  int kernel() const { return kernel_; }
  const ConvGeometry& geometry() const { return geo_; }
  bool depthwise() const { return geo_.groups > 1 && geo_.groups == in_channels_; }

  // Until given one (ops/planners.h), a layer plans with the untuned default. Forgets the plans
  // made so far.
  void set_planner(std::shared_ptr<ConvPlanner> planner);
  // The forward problem for an f32 input of this shape.
  ConvProblem problem_for(const Shape& input) const;
  // Installs the plan for inputs of one shape (the network planner decides layers together).
  void set_plan(const ConvProblem& fwd_problem, const ConvLayerPlan& plan);
  // The plan the layer runs `fwd_problem` with: the installed one, else its planner's (kept).
  const ConvLayerPlan& plan_for(const ConvProblem& fwd_problem);
  // Every input shape seen so far (as its forward problem) and the plan it runs.
  std::vector<std::pair<ConvProblem, ConvLayerPlan>> plans() const;

 private:
  int in_channels_, out_channels_, kernel_;
  ConvGeometry geo_;
  Variable weight_, bias_;
  std::shared_ptr<ConvPlanner> planner_;
  std::map<std::string, std::pair<ConvProblem, ConvLayerPlan>> plans_;  // by fwd problem key
};

}  // namespace tunecnn
