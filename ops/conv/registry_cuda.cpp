// The CUDA conv solvers, compiled only with the CUDA backend, in untuned preference order: cuDNN
// first, whose first config is its own heuristic's choice for the problem; then the cuBLAS
// lowerings im2col_gemm and mec; the depthwise-only solvers depthwise_direct and diagonal (which
// the tuner weighs against cuDNN's grouped convolution per layer, as Qin et al. advise);
// direct_chwn, the only CHWN one (the untuned NCHW planner never picks it); the direct reference
// last, the always-applicable fallback.
#include <array>

#include "ops/conv/cudnn.h"
#include "ops/conv/depthwise_direct.h"
#include "ops/conv/diagonal.h"
#include "ops/conv/direct.h"
#include "ops/conv/direct_chwn.h"
#include "ops/conv/im2col_gemm.h"
#include "ops/conv/mec.h"
#include "ops/conv/registry.h"

namespace tunecnn {
namespace {

const CudnnSolver kCudnn;
const Im2colGemmCudaSolver kIm2colGemmCuda;
const MecCudaSolver kMecCuda;
const DepthwiseDirectCudaSolver kDepthwiseDirectCuda;
const DiagonalCudaSolver kDiagonalCuda;
const DirectChwnCudaSolver kDirectChwnCuda;
const DirectCudaSolver kDirectCuda;

const auto kCudaSolvers = std::to_array<const ConvSolver*>(
    {&kCudnn, &kIm2colGemmCuda, &kMecCuda, &kDepthwiseDirectCuda, &kDiagonalCuda, &kDirectChwnCuda,
     &kDirectCuda});

}  // namespace

std::span<const ConvSolver* const> cuda_conv_solvers() {
  return kCudaSolvers;
}

}  // namespace tunecnn
