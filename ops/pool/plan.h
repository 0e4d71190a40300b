#pragma once
// How one pooling layer runs: a solver and config per direction, chosen once per problem (the
// autotuner fills plans; until it has, the first applicable solver in registry order is used).
#include <memory>

#include "ops/pool/solver.h"

namespace tunecnn {

struct PoolPlan {
  const PoolSolver* solver = nullptr;
  TuneConfig config;
};

// Both directions run in `layout`; the layer transforms its input to it when it arrives in another.
struct PoolLayerPlan {
  PoolPlan fwd, bwd_data;
  Layout layout = Layout::NCHW;
};

class PoolPlanner {
 public:
  virtual ~PoolPlanner() = default;
  // `layout` is the memory order of the layer's input; the plan's solvers must accept it.
  virtual PoolLayerPlan plan(const PoolProblem& fwd_problem, Layout layout) = 0;
};

// Registry order of the problem's device (pool_solvers(problem.device)), first config: the
// untuned default.
class FirstApplicablePoolPlanner final : public PoolPlanner {
 public:
  PoolLayerPlan plan(const PoolProblem& fwd_problem, Layout layout) override;
};

// Checks the solver is applicable, then runs it.
void run_pool(const PoolPlan& plan, const PoolProblem& problem, const PoolArgs& args);

// The layouts some applicable solver of the problem's device runs it in (both directions), NCHW
// first.
std::vector<Layout> pool_layouts(const PoolProblem& fwd_problem);

}  // namespace tunecnn
