#pragma once
// The reference convolution: plain loops over NCHW tensors, every direction, any geometry; on the
// CPU (direct.cpp) and, as the GPU's reference and fallback, on CUDA (direct.cu).
#include "ops/conv/solver.h"

namespace tunecnn {

class DirectConvSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "direct"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// The same sums on the GPU, one thread per output element. Registered for Device::cuda.
class DirectCudaSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "direct"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
