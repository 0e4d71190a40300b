#include "ops/conv/registry.h"

#include <array>

#include "ops/conv/channel_by_channel.h"
#include "ops/conv/depthwise_direct.h"
#include "ops/conv/diagonal.h"
#include "ops/conv/direct.h"
#include "ops/conv/direct_chwn.h"
#include "ops/conv/im2col_gemm.h"
#include "ops/conv/mec.h"
#include "ops/conv/pointwise_gemm.h"
#include "ops/conv/winograd_f2x3.h"

namespace tunecnn {
namespace {

const Im2colGemmSolver kIm2colGemm;
const MecSolver kMec;
const PointwiseGemmSolver kPointwiseGemm;
const WinogradF2x3Solver kWinogradF2x3;
const DirectChwnSolver kDirectChwn;
const DepthwiseDirectSolver kDepthwiseDirect;
const DiagonalSolver kDiagonal;
const ChannelByChannelSolver kChannelByChannel;
const DirectConvSolver kDirect;

// Preference order when nothing has been tuned; the reference comes last as the fallback. The
// depthwise solvers take only depthwise problems (which im2col_gemm leaves to channel_by_channel);
// the direct kernel, fastest on the CPU, comes first of them. pointwise_gemm runs only NHWC and
// CHWN, so it is never the NCHW default.
const std::array<const ConvSolver*, 9> kCpuSolvers = {
    &kIm2colGemm,      &kMec,      &kPointwiseGemm,    &kWinogradF2x3, &kDirectChwn,
    &kDepthwiseDirect, &kDiagonal, &kChannelByChannel, &kDirect};

}  // namespace

std::span<const ConvSolver* const> cpu_conv_solvers() {
  return kCpuSolvers;
}

const ConvSolver& direct_conv_solver() {
  return kDirect;
}

const ConvSolver* find_conv_solver(std::string_view name) {
  for (const ConvSolver* solver : kCpuSolvers)
    if (solver->name() == name) return solver;
  return nullptr;
}

std::string conv_solver_names() {
  std::string names;
  for (const ConvSolver* solver : kCpuSolvers)
    names += (names.empty() ? "" : ", ") + std::string(solver->name());
  return names;
}

}  // namespace tunecnn
