#include "ops/softmax/plan.h"

#include "ops/softmax/registry.h"

namespace tunecnn {
const SoftmaxSolver& FirstApplicableSoftmaxPlanner::plan(const SoftmaxProblem& problem) {
  for (const SoftmaxSolver* solver : softmax_solvers(problem.device))
    if (solver->applicable(problem, nullptr)) return *solver;
  TUNECNN_FAIL("no ", to_string(problem.device), " softmax solver is applicable to ", problem.key(),
               problem.device == Device::cuda && cuda_softmax_solvers().empty()
                   ? " (this build has no CUDA backend)"
                   : "");
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
