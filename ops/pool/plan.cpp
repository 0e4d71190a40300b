#include "ops/pool/plan.h"

#include <algorithm>

#include "ops/pool/registry.h"

namespace tunecnn {
namespace {
bool accepts(const PoolSolver& solver, const PoolProblem& problem, Layout layout) {
  const std::vector<Layout> layouts = solver.layouts(problem);
  return std::find(layouts.begin(), layouts.end(), layout) != layouts.end();
}

PoolPlan first_applicable(const PoolProblem& problem, Layout layout) {
  for (const PoolSolver* solver : pool_solvers(problem.device))
    if (accepts(*solver, problem, layout) && solver->applicable(problem, nullptr))
      return {solver, solver->configs(problem).front()};
  TUNECNN_FAIL("no ", to_string(problem.device), " pool solver is applicable to ", problem.key(),
               " in layout ", to_string(layout),
               problem.device == Device::cuda && cuda_pool_solvers().empty()
                   ? " (this build has no CUDA backend)"
                   : "");
}
}  // namespace

std::vector<Layout> pool_layouts(const PoolProblem& fwd_problem) {
  std::vector<Layout> layouts;
  for (Layout layout : {Layout::NCHW, Layout::CHWN, Layout::NHWC}) {
    bool both = true;
    for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
      const PoolProblem problem = fwd_problem.with_dir(dir);
      bool any = false;
      for (const PoolSolver* solver : pool_solvers(problem.device))
        any = any || (accepts(*solver, problem, layout) && solver->applicable(problem, nullptr));
      both = both && any;
    }
    if (both) layouts.push_back(layout);
  }
  return layouts;
}

PoolLayerPlan FirstApplicablePoolPlanner::plan(const PoolProblem& fwd_problem, Layout layout) {
  return {first_applicable(fwd_problem.with_dir(Direction::fwd), layout),
          first_applicable(fwd_problem.with_dir(Direction::bwd_data), layout), layout};
}

void run_pool(const PoolPlan& plan, const PoolProblem& problem, const PoolArgs& args) {
  TUNECNN_CHECK(plan.solver != nullptr, "pool plan without a solver for ", problem.key());
  std::string why;
  TUNECNN_CHECK(plan.solver->applicable(problem, &why), "solver ", plan.solver->name(), " (",
                to_string(plan.solver->device()), ") is not applicable to ", problem.key(), " on ",
                to_string(problem.device), ": ", why);
  plan.solver->run(problem, plan.config, args);
}

}  // namespace tunecnn
