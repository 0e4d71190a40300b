#pragma once
// The reference convolution: plain loops over NCHW tensors, every direction, any geometry.
#include "ops/conv/solver.h"

namespace tunecnn {

class DirectConvSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "direct"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
