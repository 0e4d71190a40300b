#pragma once
// The ordered lists of softmax cross-entropy solvers, one per device. Order is the preference
// when nothing has been tuned: on the CPU the fused one-pass solver first, the five-pass baseline
// second; on the GPU the fused kernel. All are always applicable on their device.
#include <span>
#include <string_view>

#include "ops/softmax/solver.h"

namespace tunecnn {

std::span<const SoftmaxSolver* const> cpu_softmax_solvers();
// Empty when tunecnn is built without CUDA.
std::span<const SoftmaxSolver* const> cuda_softmax_solvers();
std::span<const SoftmaxSolver* const> softmax_solvers(Device device);
// nullptr when unknown; the one-argument form looks among the CPU solvers.
const SoftmaxSolver* find_softmax_solver(std::string_view name);
const SoftmaxSolver* find_softmax_solver(std::string_view name, Device device);

}  // namespace tunecnn
