#pragma once
// MEC, memory-efficient convolution (Cho and Brand, ICML 2017), on NHWC activations, in all three
// directions, lowering a chunk of images at a time into one buffer L. The threshold T picks
// between the paper's Solution A (ow <= T: oh large GEMMs over the chunk) and Solution B
// (chunk*oh small GEMMs, one per image and output row).
#include "ops/conv/solver.h"

namespace tunecnn {

class MecSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "mec"; }
  UntunedRoles untuned_roles() const override { return UntunedRoles::low_memory_solver(); }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override { return {Layout::NHWC}; }
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// MEC on the GPU (mec.cu), NCHW: the same lowered matrix L, built by a kernel, Solution A or B
// chosen by the same T and chunk, and each loop's GEMMs in one cuBLAS strided-batched call.
// Registered for Device::cuda; configs are the CPU's without "mt" (no threads to spread).
class MecCudaSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "mec"; }
  UntunedRoles untuned_roles() const override { return UntunedRoles::nchw_chain(3); }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// The images `config` lowers together: its "chunk", clamped to [1, mb]; mb (the paper's
// Algorithm 2) when absent.
int mec_chunk(const ConvProblem& problem, const TuneConfig& config);
// Whether `config` runs `problem` as Solution A: ow <= T, the output fits in the lowered
// matrix (A permutes its h-n-w-c result back through that memory) and the chunk has more than
// one image (with one, A's GEMMs are B's and B needs no permutation).
bool mec_uses_solution_a(const ConvProblem& problem, const TuneConfig& config);
// Elements of MEC's lowered matrix L of the whole batch: mb * ow * (ih + 2 ph) * kw * ic; a
// chunk's L is chunk/mb of it.
std::size_t mec_lowered_elements(const ConvProblem& problem);

}  // namespace tunecnn
