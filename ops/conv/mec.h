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

// Whether `config` runs `problem` as Solution A: ow <= T and the output fits in the lowered
// matrix (A permutes its h-n-w-c result back through that memory).
bool mec_uses_solution_a(const ConvProblem& problem, const TuneConfig& config);
// Elements of MEC's lowered matrix L: mb * ow * (ih + 2 ph) * kw * ic.
std::size_t mec_lowered_elements(const ConvProblem& problem);

}  // namespace tunecnn
