#pragma once
// cuDNN's convolutions as one solver (ops/conv/cudnn_cuda.cpp, CUDA builds only): its configs are
// cuDNN's algorithms for the problem's direction, {"algo", k}, the first being cuDNN's own
// heuristic choice.
#include "ops/conv/solver.h"

namespace tunecnn {

// Registered for Device::cuda. applicable() asks cuDNN (once per problem key) whether it has an
// algorithm for the problem, so the tuners skip cuDNN rather than fail where it has none; on a
// machine without a GPU it does not call cuDNN (the static checks only). configs(),
// workspace_bytes() and run() call cuDNN and need a GPU.
class CudnnSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "cudnn"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
