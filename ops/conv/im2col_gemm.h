#pragma once
// Convolution lowered to GEMM through a column buffer for a chunk of images (im2col / col2im).
// The lowering is also a function of its own, so solvers that reduce their problem to a standard
// convolution (channel_by_channel, diagonal) run it without a second copy.
#include "ops/conv/solver.h"

namespace tunecnn {

class Im2colGemmSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "im2col_gemm"; }
  UntunedRoles untuned_roles() const override {
    return UntunedRoles::nchw_chain(2, /*layout_baseline=*/true);
  }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// The same lowering on the GPU (im2col_gemm.cu): a column buffer for a chunk of images built by a
// kernel, cuBLAS strided-batched GEMMs, col2im as a gather. Depthwise problems included (the GPU
// has no channel_by_channel). Registered for Device::cuda; configs {"chunk"}.
class Im2colGemmCudaSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "im2col_gemm"; }
  UntunedRoles untuned_roles() const override { return UntunedRoles::nchw_chain(2); }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// The NCHW tensors of one call as raw pointers, for callers whose operands live in their own
// buffers (diagonal's W_hat). Which are read and written follows ConvArgs; weights are
// [oc, ic/g, kh, kw].
template <class T>
struct ConvBuffers {
  const T* src = nullptr;
  const T* wei = nullptr;
  const T* diff_dst = nullptr;
  T* dst = nullptr;
  T* diff_src = nullptr;
  T* diff_wei = nullptr;
};

// The lowering for any well-formed problem, depthwise included ("chunk" configs, its exact
// workspace). run_im2col_gemm checks the tensors (NCHW) and the workspace size; the ConvBuffers
// overload checks only the workspace size.
std::vector<TuneConfig> im2col_gemm_configs(const ConvProblem& problem);
std::size_t im2col_gemm_workspace_bytes(const ConvProblem& problem, const TuneConfig& config);
void run_im2col_gemm(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
                     Workspace workspace);
template <class T>
void run_im2col_gemm(const ConvProblem& problem, const TuneConfig& config,
                     const ConvBuffers<T>& buffers, Workspace workspace);

}  // namespace tunecnn
