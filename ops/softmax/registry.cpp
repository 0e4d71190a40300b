#include "ops/softmax/registry.h"

#include <array>

#include "ops/softmax/five_pass.h"
#include "ops/softmax/fused.h"

namespace tunecnn {
namespace {
const FusedSoftmaxSolver kFused;
const FivePassSoftmaxSolver kFivePass;
const auto kCpuSolvers = std::to_array<const SoftmaxSolver*>({&kFused, &kFivePass});
#ifdef TUNECNN_HAVE_CUDA
const CudaFusedSoftmaxSolver kCudaFused;
const CudaFivePassSoftmaxSolver kCudaFivePass;
const auto kCudaSolvers = std::to_array<const SoftmaxSolver*>({&kCudaFused, &kCudaFivePass});
#endif
}  // namespace

std::span<const SoftmaxSolver* const> cpu_softmax_solvers() {
  return kCpuSolvers;
}

std::span<const SoftmaxSolver* const> cuda_softmax_solvers() {
#ifdef TUNECNN_HAVE_CUDA
  return kCudaSolvers;
#else
  return {};
#endif
}

std::span<const SoftmaxSolver* const> softmax_solvers(Device device) {
  return device == Device::cuda ? cuda_softmax_solvers() : cpu_softmax_solvers();
}

const SoftmaxSolver* find_softmax_solver(std::string_view name) {
  return find_softmax_solver(name, Device::cpu);
}

const SoftmaxSolver* find_softmax_solver(std::string_view name, Device device) {
  for (const SoftmaxSolver* solver : softmax_solvers(device))
    if (solver->name() == name) return solver;
  return nullptr;
}

}  // namespace tunecnn
