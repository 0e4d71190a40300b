#pragma once
// "softmax_five_pass": the unfused baseline, as Li et al. (SC'16) describe cuDNN's softmax: five
// separate sweeps over the whole batch with memory round trips in between, then a sixth for the
// loss and gradient. See five_pass.cpp.
#include "ops/softmax/solver.h"

namespace tunecnn {

class FivePassSoftmaxSolver final : public SoftmaxSolver {
 public:
  std::string_view name() const override { return "softmax_five_pass"; }
  bool applicable(const SoftmaxProblem& problem, std::string* why) const override;
  double run(const SoftmaxProblem& problem, const Tensor& logits,
             const std::vector<std::int32_t>& labels, Tensor& grad) const override;
};

// The GPU twin, defined in five_pass.cu (CUDA builds only): the same six sweeps as kernels, the
// baseline against which the GPU's softmax_fused is measured.
class CudaFivePassSoftmaxSolver final : public SoftmaxSolver {
 public:
  std::string_view name() const override { return "softmax_five_pass"; }
  Device device() const override { return Device::cuda; }
  bool applicable(const SoftmaxProblem& problem, std::string* why) const override;
  double run(const SoftmaxProblem& problem, const Tensor& logits,
             const std::vector<std::int32_t>& labels, Tensor& grad) const override;
};

}  // namespace tunecnn
