#pragma once
// Direct convolution on CHWN activations with the batch in the SIMD lanes, as cuda-convnet does
// on the GPU: every weight is loaded once and applied to a vector of images. All directions.
#include "ops/conv/solver.h"

namespace tunecnn {

class DirectChwnSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "direct_chwn"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override { return {Layout::CHWN}; }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
