#pragma once
// The ordered lists of pooling solvers, one per device. Order is the preference when nothing has
// been tuned; the direct reference is last and always applicable on its device.
#include <span>
#include <string_view>

#include "ops/pool/solver.h"

namespace tunecnn {

std::span<const PoolSolver* const> cpu_pool_solvers();
// Empty when tunecnn is built without CUDA.
std::span<const PoolSolver* const> cuda_pool_solvers();
std::span<const PoolSolver* const> pool_solvers(Device device);
const PoolSolver& direct_pool_solver();  // the CPU reference
// nullptr when unknown; the one-argument form looks among the CPU solvers.
const PoolSolver* find_pool_solver(std::string_view name);
const PoolSolver* find_pool_solver(std::string_view name, Device device);

}  // namespace tunecnn
