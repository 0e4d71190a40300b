#pragma once
// Direct convolution on CHWN activations with the batch in the SIMD lanes, as cuda-convnet does
// on the GPU: every weight is loaded once and applied to a vector of images. All directions, on
// the CPU (direct_chwn.cpp) and on the GPU (direct_chwn.cu).
#include "ops/conv/solver.h"

namespace tunecnn {

class DirectChwnSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "direct_chwn"; }
  UntunedRoles untuned_roles() const override { return UntunedRoles::chwn_solver(); }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override { return {Layout::CHWN}; }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// The same layout on the GPU (direct_chwn.cu), as cuda-convnet runs it: the batch across the 32
// lanes of a warp, B images x F channels of sums per thread in registers, weights staged in
// shared memory. Groups 1 only. Registered for Device::cuda; configs {"B", "F"}, and for
// bwd_weights "S" (slices of the output pixels, each a partial gradient in the workspace).
class DirectChwnCudaSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "direct_chwn"; }
  UntunedRoles untuned_roles() const override { return UntunedRoles::chwn_solver(); }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override { return {Layout::CHWN}; }
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
