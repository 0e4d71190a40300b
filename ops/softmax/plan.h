#pragma once
// Which solver runs a softmax cross-entropy problem. The op asks the planner it is given on every
// call (the problem is known only then): the autotuner's, or by default the first applicable
// solver in registry order.
#include <memory>

#include "ops/softmax/solver.h"

namespace tunecnn {

class SoftmaxPlanner {
 public:
  virtual ~SoftmaxPlanner() = default;
  virtual const SoftmaxSolver& plan(const SoftmaxProblem& problem) = 0;
};

// Registry order of the problem's device (softmax_solvers(problem.device)): the untuned default.
class FirstApplicableSoftmaxPlanner final : public SoftmaxPlanner {
 public:
  const SoftmaxSolver& plan(const SoftmaxProblem& problem) override;
};

// Checks the solver is applicable, then runs it; returns the mean loss.
double run_softmax(const SoftmaxSolver& solver, const SoftmaxProblem& problem,
                   const Tensor& logits, const std::vector<std::int32_t>& labels, Tensor& grad);

}  // namespace tunecnn
