#pragma once
// How one conv layer runs: a solver, config and layout per direction. A layer asks its planner
// (ops/planners.h): the autotuner's, or the untuned default, the first applicable NCHW solver in
// registry order. All three directions
// of a layer share one layout, since they share the layer's activations and gradients.
#include <memory>

#include "ops/conv/solver.h"

namespace tunecnn {

struct ConvPlan {
  const ConvSolver* solver = nullptr;
  TuneConfig config;
  Layout layout = Layout::NCHW;  // of src, dst and their gradients
};

struct ConvLayerPlan {
  ConvPlan fwd, bwd_data, bwd_weights;
  const ConvPlan& for_direction(Direction dir) const;
  Layout layout() const { return fwd.layout; }
  // Throws Error unless every direction has a solver, and all run in one layout that they accept.
  void validate(const ConvProblem& fwd_problem) const;
};

class ConvPlanner {
 public:
  virtual ~ConvPlanner() = default;
  virtual ConvLayerPlan plan(const ConvProblem& fwd_problem) = 0;
};

// Registry order, first config, among the solvers that run in one layout: the untuned default.
class FirstApplicablePlanner final : public ConvPlanner {
 public:
  explicit FirstApplicablePlanner(Layout layout = Layout::NCHW) : layout_(layout) {}
  ConvLayerPlan plan(const ConvProblem& fwd_problem) override;

 private:
  Layout layout_;
};

// Allocates the plan's workspace and runs it; checks the solver is applicable first.
void run_conv(const ConvPlan& plan, const ConvProblem& problem, const ConvArgs& args);

}  // namespace tunecnn
