#pragma once
// Winograd's minimal filtering F(2x2, 3x3) (Lavin and Gray, 2016) for 3x3 stride-1 kernels on
// NCHW activations: forward and backward-data.
#include "ops/conv/solver.h"

namespace tunecnn {

class WinogradF2x3Solver final : public ConvSolver {
 public:
  std::string_view name() const override { return "winograd_f2x3"; }
  UntunedRoles untuned_roles() const override {
    return UntunedRoles::nchw_chain(1, /*layout_baseline=*/true);
  }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  // {{"tiles", n}}: the most tiles per block; the first is the default.
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
