#pragma once
// Batch normalisation over the channels of [N, C, H, W] activations (Ioffe and Szegedy 2015), in
// any of the three memory orders: a channel's values are read where the layout puts them, so the
// layer never converts its input. Training mode normalises with the batch's statistics and
// updates the running ones; evaluation mode normalises with the running statistics.
#include <optional>
#include <string>
#include <vector>

#include "core/module.h"

namespace tunecnn {

struct BatchNormOptions {
  double momentum = 0.1;  // running = (1 - momentum) * running + momentum * batch (PyTorch's rule)
  double eps = 1e-5;
};

// `running_mean` and `running_var` ([C], the input's dtype) are read in evaluation mode and
// updated in place in training mode (the variance unbiased, as PyTorch keeps it). `gamma` and
// `beta` are [C] Variables. All five live on one device; on the GPU simple kernels of the same
// definition run (ops/batch_norm.cu). The output has the input's layout. Results do not depend on the
// thread count. Throws Error for a non-4-D input, [C] tensors of another size or dtype, or
// training with a single value per channel.
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    Tensor& running_mean, Tensor& running_var, bool training,
                    const BatchNormOptions& options = {});

// relu(batch_norm(...), cap) in batch norm's own passes over memory: forward writes the clipped
// output once, backward gates dy inside batch norm's two passes, recomputing batch norm's output
// from x (which it reads anyway) to know where the ReLU passed it. One pass fewer each way than
// the two ops, and no ReLU backward tensor. The output is the two ops' (the same selects); the
// gradients match up to rounding. On the GPU it is the two ops. Throws Error for a cap <= 0.
Variable batch_norm_relu(const Variable& x, const Variable& gamma, const Variable& beta,
                         Tensor& running_mean, Tensor& running_var, bool training,
                         const BatchNormOptions& options, double cap);

namespace cuda {  // the GPU version (ops/batch_norm.cu); callers use batch_norm() and batch_norm_relu()
// With `relu_cap`, a ReLU clipped there runs over the output in place.
Variable batch_norm(const Variable& x, const Variable& gamma, const Variable& beta,
                    Tensor& running_mean, Tensor& running_var, bool training,
                    const BatchNormOptions& options, std::optional<double> relu_cap = std::nullopt);
}  // namespace cuda

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int channels, BatchNormOptions options = {});
  Variable forward(const Variable& input) override;
  // Backward reads the input and the batch's statistics, not the output.
  bool output_reusable_in_place() const override { return true; }
  // Per-channel statistics read in place: any memory order, kept.
  std::vector<Layout> input_layouts(const Shape&) const override {
    return {Layout::NCHW, Layout::CHWN, Layout::NHWC};
  }
  // A ReLU (or ReLU6) after this layer runs inside its passes (batch_norm_relu).
  std::optional<Variable> forward_fused(const Variable& input, const Module& next) override;
  std::string describe() const override;  // "BatchNorm2d(64)"
  const BatchNormOptions& options() const { return options_; }

 private:
  void check_input(const Tensor& x) const;

  int channels_;
  BatchNormOptions options_;
  Variable gamma_, beta_;           // parameters "weight" (ones) and "bias" (zeros)
  Tensor running_mean_, running_var_;  // buffers "running_mean" (zeros), "running_var" (ones)
};

}  // namespace tunecnn
