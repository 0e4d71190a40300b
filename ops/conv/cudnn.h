#pragma once
// cuDNN's convolutions as one solver (ops/conv/cudnn_cuda.cpp, CUDA builds only): its configs are
// cuDNN's algorithms for the problem's direction, {"algo", k}, the first being cuDNN's own
// heuristic choice.
#include "ops/conv/solver.h"

namespace tunecnn {

// Registered for Device::cuda. applicable() asks cuDNN (once per problem key) whether it has an
// algorithm for the problem, so the tuners skip cuDNN rather than fail where it has none; on a
// machine without a GPU it does not call cuDNN (the static checks only). configs(),
// workspace_bytes() and run() call cuDNN and need a GPU.
class CudnnSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "cudnn"; }
  UntunedRoles untuned_roles() const override {
    return UntunedRoles::nchw_chain(1, /*layout_baseline=*/true);
  }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  // False for the algorithms cuDNN documents as adding with atomics: bwd_data ALGO_0, bwd_filter
  // ALGO_0 and ALGO_3. An empty config (the heuristic's choice) asks cuDNN, so it needs a GPU.
  bool deterministic(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

template <class T>
struct ConvBuffers;  // ops/conv/im2col_gemm.h: a call's operands as raw pointers

// cuDNN on operands that live in a caller's own buffers (diagonal's W_hat in its workspace): the
// same call as CudnnSolver::run with NCHW device pointers in place of tensors and the config's
// algorithm (an empty config: cuDNN's heuristic choice). The workspace must hold at least what
// CudnnSolver::workspace_bytes names for the problem and config; that size is all it checks.
template <class T>
void run_cudnn(const ConvProblem& problem, const TuneConfig& config, const ConvBuffers<T>& buffers,
               Workspace workspace);

}  // namespace tunecnn
