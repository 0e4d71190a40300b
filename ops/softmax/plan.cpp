#include "ops/softmax/plan.h"

#include <mutex>

#include "ops/softmax/registry.h"

namespace tunecnn {
namespace {
std::mutex g_planner_mutex;
std::shared_ptr<SoftmaxPlanner> g_default_planner =
    std::make_shared<FirstApplicableSoftmaxPlanner>();
}  // namespace

const SoftmaxSolver& FirstApplicableSoftmaxPlanner::plan(const SoftmaxProblem& problem) {
  for (const SoftmaxSolver* solver : softmax_solvers(problem.device))
    if (solver->applicable(problem, nullptr)) return *solver;
  TUNECNN_FAIL("no ", to_string(problem.device), " softmax solver is applicable to ", problem.key(),
               problem.device == Device::cuda && cuda_softmax_solvers().empty()
                   ? " (this build has no CUDA backend)"
                   : "");
}

std::shared_ptr<SoftmaxPlanner> default_softmax_planner() {
  std::lock_guard lock(g_planner_mutex);
  return g_default_planner;
}

void set_default_softmax_planner(std::shared_ptr<SoftmaxPlanner> planner) {
  TUNECNN_CHECK(planner != nullptr, "set_default_softmax_planner: null planner");
  std::lock_guard lock(g_planner_mutex);
  g_default_planner = std::move(planner);
}

double run_softmax(const SoftmaxSolver& solver, const SoftmaxProblem& problem,
                   const Tensor& logits, const std::vector<std::int32_t>& labels, Tensor& grad) {
  std::string why;
  TUNECNN_CHECK(solver.applicable(problem, &why), "softmax solver ", solver.name(), " (",
                to_string(solver.device()), ") is not applicable to ", problem.key(), " on ",
                to_string(problem.device), ": ", why);
  return solver.run(problem, logits, labels, grad);
}

}  // namespace tunecnn
