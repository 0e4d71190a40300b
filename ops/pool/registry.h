#pragma once
// The ordered list of CPU pooling solvers. Order is the preference when nothing has been tuned;
// the direct reference is last and always applicable.
#include <span>
#include <string_view>

#include "ops/pool/solver.h"

namespace tunecnn {

std::span<const PoolSolver* const> cpu_pool_solvers();
const PoolSolver& direct_pool_solver();
const PoolSolver* find_pool_solver(std::string_view name);  // nullptr when unknown

}  // namespace tunecnn
