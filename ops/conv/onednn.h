#pragma once
// oneDNN's convolution (Debian's libdnnl, the vendor library of the CPU) as solvers beside ours,
// one per activation layout, so that the tuned plan is never worse than the vendor's and our
// algorithms keep a layer only where they beat it. Its configs are the implementations oneDNN
// offers for the problem (brgconv, jit per ISA, gemm, Winograd; never its reference code), each
// with the activations as they are or reordered into the implementation's blocked format inside
// the call; the tuner times them all instead of trusting oneDNN's first choice.
#include "ops/conv/solver.h"

namespace tunecnn {

class OneDnnSolver final : public ConvSolver {
 public:
  explicit OneDnnSolver(Layout layout) : layout_(layout) {}
  std::string_view name() const override;
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override { return {layout_}; }
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  // oneDNN's implementations have no order of cost among them: the tuner times each.
  bool sweep_configs() const override { return true; }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  // "blocked=1,winograd=0,impl=0 (jit:avx512_core)"
  std::string describe(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;

 private:
  Layout layout_;
};

}  // namespace tunecnn
