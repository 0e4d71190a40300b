#pragma once
// A 1x1, stride-1, unpadded convolution as one GEMM over the whole batch, in the layouts where the
// activations already are that matrix: NHWC ([N*H*W, C] rows) and CHWN ([C, H*W*N]).
#include "ops/conv/solver.h"

namespace tunecnn {

class PointwiseGemmSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "pointwise_gemm"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override { return {Layout::NHWC, Layout::CHWN}; }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
