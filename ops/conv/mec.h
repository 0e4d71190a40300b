#pragma once
// MEC, memory-efficient convolution (Cho and Brand, ICML 2017), on NHWC activations, in all three
// directions. The threshold T picks between the paper's Solution A (ow <= T: oh large GEMMs over
// the whole batch) and Solution B (mb*oh small GEMMs).
#include "ops/conv/solver.h"

namespace tunecnn {

class MecSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "mec"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override { return {Layout::NHWC}; }
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
