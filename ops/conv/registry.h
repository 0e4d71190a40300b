#pragma once
// The ordered lists of conv solvers, one per device. Order is the preference when nothing has
// been tuned; the direct reference is last and always applicable. The CUDA list keeps the CPU
// names for the same algorithms (the tuning cache keeps devices apart, and --force-solver means
// the same thing on both) and adds "cudnn".
#include <span>
#include <string>
#include <string_view>

#include "ops/conv/solver.h"

namespace tunecnn {

// The solvers that run problems on `device`; empty for cuda in a build without CUDA.
std::span<const ConvSolver* const> conv_solvers(Device device);
std::span<const ConvSolver* const> cpu_conv_solvers();
// The reference of a device; throws Error for cuda in a build without CUDA.
const ConvSolver& direct_conv_solver(Device device = Device::cpu);
// nullptr when `device` has no solver of that name.
const ConvSolver* find_conv_solver(std::string_view name, Device device = Device::cpu);
// "im2col_gemm, mec, ...", for messages.
std::string conv_solver_names(Device device = Device::cpu);

#ifdef TUNECNN_HAVE_CUDA
// registry_cuda.cpp, compiled only with CUDA: cudnn, im2col_gemm, mec, depthwise_direct,
// diagonal, direct_chwn, direct.
std::span<const ConvSolver* const> cuda_conv_solvers();
#endif

}  // namespace tunecnn
