#include "ops/softmax/registry.h"

#include <array>

#include "ops/softmax/five_pass.h"
#include "ops/softmax/fused.h"

namespace tunecnn {
namespace {
const FusedSoftmaxSolver kFused;
const FivePassSoftmaxSolver kFivePass;
const std::array<const SoftmaxSolver*, 2> kCpuSolvers{&kFused, &kFivePass};
}  // namespace

std::span<const SoftmaxSolver* const> cpu_softmax_solvers() {
  return kCpuSolvers;
}

const SoftmaxSolver* find_softmax_solver(std::string_view name) {
  for (const SoftmaxSolver* solver : kCpuSolvers)
    if (solver->name() == name) return solver;
  return nullptr;
}

}  // namespace tunecnn
