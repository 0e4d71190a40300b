#pragma once
// Convolution lowered to GEMM through a column buffer for a chunk of images (im2col / col2im).
#include "ops/conv/solver.h"

namespace tunecnn {

class Im2colGemmSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "im2col_gemm"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
