#pragma once
// The ordered list of CPU softmax cross-entropy solvers. Order is the preference when nothing has
// been tuned: the fused one-pass solver first, the five-pass baseline second. Both are always
// applicable.
#include <span>
#include <string_view>

#include "ops/softmax/solver.h"

namespace tunecnn {

std::span<const SoftmaxSolver* const> cpu_softmax_solvers();
const SoftmaxSolver* find_softmax_solver(std::string_view name);  // nullptr when unknown

}  // namespace tunecnn
