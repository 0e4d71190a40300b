#pragma once
// Diagonalwise refactorization of a depthwise convolution (Qin et al.): each group of S channels
// becomes one standard convolution whose S x (S*kh*kw) weight matrix holds the S depthwise
// filters on its diagonal. Tunable: the group size S. On the CPU (diagonal.cpp, through
// im2col_gemm's lowering) and on CUDA (diagonal.cu, all groups in one grouped cuDNN call).
#include "ops/conv/solver.h"

namespace tunecnn {

class DiagonalSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "diagonal"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  // {"S", s} for every divisor s of C with min(8, C) <= s <= 256, smallest first.
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  // The cost over S may dip more than once (GEMM shapes against wasted zeros): time every S.
  bool sweep_configs() const override { return true; }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// The same refactorization on the GPU: the C/S groups as one grouped cuDNN convolution (cuDNN's
// heuristic algorithm for it), W_hat built and the gradient's diagonal taken by small kernels.
// Registered for Device::cuda. configs() lists the CPU's group sizes for which cuDNN has an
// algorithm; like cudnn's, workspace_bytes() and run() call cuDNN and need a GPU.
class DiagonalCudaSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "diagonal"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  bool sweep_configs() const override { return true; }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  bool deterministic(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
