#include "ops/pool/registry.h"

#include <array>

#include "ops/pool/direct.h"
#ifdef TUNECNN_HAVE_ONEDNN
#include "ops/pool/onednn.h"
#endif
#include "ops/pool/tiled.h"

namespace tunecnn {
namespace {
const TiledPoolSolver kTiled;
const DirectPoolSolver kDirect;
#ifdef TUNECNN_HAVE_ONEDNN
const OneDnnPoolSolver kOneDnn;
#endif
// pool_tiled first, the untuned default; pool_direct, the reference that accepts every problem,
// stays last; oneDNN's (when built with it) between, for the tuner to time.
const auto kCpuSolvers = std::to_array<const PoolSolver*>({&kTiled,
#ifdef TUNECNN_HAVE_ONEDNN
                                                            &kOneDnn,
#endif
                                                            &kDirect});
#ifdef TUNECNN_HAVE_CUDA
const CudaTiledPoolSolver kCudaTiled;
const CudaDirectPoolSolver kCudaDirect;
const auto kCudaSolvers = std::to_array<const PoolSolver*>({&kCudaTiled, &kCudaDirect});
#endif
}  // namespace

std::span<const PoolSolver* const> cpu_pool_solvers() {
  return kCpuSolvers;
}

std::span<const PoolSolver* const> cuda_pool_solvers() {
#ifdef TUNECNN_HAVE_CUDA
  return kCudaSolvers;
#else
  return {};
#endif
}

std::span<const PoolSolver* const> pool_solvers(Device device) {
  return device == Device::cuda ? cuda_pool_solvers() : cpu_pool_solvers();
}

const PoolSolver& direct_pool_solver() {
  return kDirect;
}

const PoolSolver* find_pool_solver(std::string_view name) {
  return find_pool_solver(name, Device::cpu);
}

const PoolSolver* find_pool_solver(std::string_view name, Device device) {
  for (const PoolSolver* solver : pool_solvers(device))
    if (solver->name() == name) return solver;
  return nullptr;
}

}  // namespace tunecnn
