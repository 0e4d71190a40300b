#pragma once
// "softmax_fused": the softmax, the loss and the gradient in one pass per row (Li et al., SC'16
// fuse cuDNN's five softmax kernels into one), the row kept in cache. See fused.cpp.
#include "ops/softmax/solver.h"

namespace tunecnn {

// A row is processed in chunks of this many classes (the last one shorter); the row's sum is the
// sum of the chunk sums in chunk order, whichever thread computed each chunk, so results do not
// depend on the thread count or the scheduling.
inline constexpr int kFusedChunkClasses = 4096;
// Rows are split across threads only when there are few of them and each is long.
inline constexpr int kFusedSplitMinClasses = 8192;

// True when run() parallelises within rows at `threads` threads: rows < 2 x threads and classes
// >= kFusedSplitMinClasses. Otherwise whole rows are the tasks.
bool fused_softmax_splits_rows(const SoftmaxProblem& problem, int threads);

class FusedSoftmaxSolver final : public SoftmaxSolver {
 public:
  std::string_view name() const override { return "softmax_fused"; }
  bool applicable(const SoftmaxProblem& problem, std::string* why) const override;
  double run(const SoftmaxProblem& problem, const Tensor& logits,
             const std::vector<std::int32_t>& labels, Tensor& grad) const override;
};

// The GPU twin, defined in fused.cu (CUDA builds only): one block per row does the max, the
// exp-and-sum, the loss and the normalised gradient in one kernel; the per-row losses come back
// to the host and are averaged in row order.
class CudaFusedSoftmaxSolver final : public SoftmaxSolver {
 public:
  std::string_view name() const override { return "softmax_fused"; }
  Device device() const override { return Device::cuda; }
  bool applicable(const SoftmaxProblem& problem, std::string* why) const override;
  double run(const SoftmaxProblem& problem, const Tensor& logits,
             const std::vector<std::int32_t>& labels, Tensor& grad) const override;
};

}  // namespace tunecnn
