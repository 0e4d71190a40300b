#include "ops/conv/registry.h"

#include <array>

#include "ops/conv/channel_by_channel.h"
#include "ops/conv/depthwise_direct.h"
#include "ops/conv/diagonal.h"
#include "ops/conv/direct.h"
#include "ops/conv/direct_chwn.h"
#include "ops/conv/im2col_gemm.h"
#include "ops/conv/mec.h"
#ifdef TUNECNN_HAVE_ONEDNN
#include "ops/conv/onednn.h"
#endif
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
#ifdef TUNECNN_HAVE_ONEDNN
const OneDnnSolver kOneDnnNchw(Layout::NCHW);
const OneDnnSolver kOneDnnNhwc(Layout::NHWC);
#endif

// Preference order when nothing has been tuned; the reference comes last as the fallback. The
// depthwise solvers take only depthwise problems (which im2col_gemm leaves to channel_by_channel);
// the direct kernel, fastest on the CPU, comes first of them. pointwise_gemm runs only NHWC and
// CHWN, so it is never the NCHW default. oneDNN's solvers (when built with it) are for the tuner to
// time; they come after ours so that the untuned plan does not change with the build.
const auto kCpuSolvers = std::to_array<const ConvSolver*>({
    &kIm2colGemm,      &kMec,      &kPointwiseGemm,    &kWinogradF2x3, &kDirectChwn,
    &kDepthwiseDirect, &kDiagonal, &kChannelByChannel,
#ifdef TUNECNN_HAVE_ONEDNN
    &kOneDnnNchw,      &kOneDnnNhwc,
#endif
    &kDirect});

}  // namespace

std::span<const ConvSolver* const> conv_solvers(Device device) {
  if (device == Device::cpu) return kCpuSolvers;
#ifdef TUNECNN_HAVE_CUDA
  return cuda_conv_solvers();
#else
  return {};
#endif
}

std::span<const ConvSolver* const> cpu_conv_solvers() {
  return kCpuSolvers;
}

// Each list ends with its reference.
const ConvSolver& direct_conv_solver(Device device) {
  const std::span<const ConvSolver* const> solvers = conv_solvers(device);
  TUNECNN_CHECK(!solvers.empty(), "no ", to_string(device),
                " conv solvers: this build of tunecnn has no CUDA backend; reconfigure with "
                "-DTUNECNN_CUDA=ON");
  return *solvers.back();
}

const ConvSolver* find_conv_solver(std::string_view name, Device device) {
  for (const ConvSolver* solver : conv_solvers(device))
    if (solver->name() == name) return solver;
  return nullptr;
}

std::string conv_solver_names(Device device) {
  std::string names;
  for (const ConvSolver* solver : conv_solvers(device))
    names += (names.empty() ? "" : ", ") + std::string(solver->name());
  return names;
}

}  // namespace tunecnn
