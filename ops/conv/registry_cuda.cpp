// The CUDA conv solvers, compiled only with the CUDA backend, in untuned preference order: cuDNN
// first, whose first config is its own heuristic's choice for the problem; then the cuBLAS
// lowerings im2col_gemm and mec; the direct reference last, the always-applicable fallback.
#include <array>

#include "ops/conv/cudnn.h"
#include "ops/conv/direct.h"
#include "ops/conv/im2col_gemm.h"
#include "ops/conv/mec.h"
#include "ops/conv/registry.h"

namespace tunecnn {
namespace {

const CudnnSolver kCudnn;
const Im2colGemmCudaSolver kIm2colGemmCuda;
const MecCudaSolver kMecCuda;
const DirectCudaSolver kDirectCuda;

const std::array<const ConvSolver*, 4> kCudaSolvers = {&kCudnn, &kIm2colGemmCuda, &kMecCuda,
                                                       &kDirectCuda};

}  // namespace

std::span<const ConvSolver* const> cuda_conv_solvers() {
  return kCudaSolvers;
}

}  // namespace tunecnn
