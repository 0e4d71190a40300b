#include "ops/pool/registry.h"

#include <array>

#include "ops/pool/direct.h"
#include "ops/pool/tiled.h"

namespace tunecnn {
namespace {
const TiledPoolSolver kTiled;
const DirectPoolSolver kDirect;
// pool_direct, the reference that accepts every problem, stays last.
const std::array<const PoolSolver*, 2> kCpuSolvers{&kTiled, &kDirect};
}  // namespace

std::span<const PoolSolver* const> cpu_pool_solvers() {
  return kCpuSolvers;
}

const PoolSolver& direct_pool_solver() {
  return kDirect;
}

const PoolSolver* find_pool_solver(std::string_view name) {
  for (const PoolSolver* solver : kCpuSolvers)
    if (solver->name() == name) return solver;
  return nullptr;
}

}  // namespace tunecnn
