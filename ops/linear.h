#pragma once
// A fully connected layer: y = x W^T + b with x [B, in], W [out, in], b [out].
#include <functional>

#include "core/module.h"
#include "core/rng.h"

namespace tunecnn {

// Kernels. Outputs are overwritten; `bias` may be undefined.
void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y);
void linear_backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx);
void linear_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dweight);
void linear_backward_bias(const Tensor& dy, Tensor& dbias);  // column sums of dy
// dW in blocks of rows, each handed to `take` with its first row as it is made (on either
// device): the weight's gradient never exists whole (Variable::GradRowsFn).
void linear_weight_grad_in_rows(const Tensor& dy, const Tensor& x,
                                const std::function<void(std::int64_t, const Tensor&)>& take);

// `bias` may be an undefined Variable.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias);

namespace cuda {  // the GPU versions (ops/linear.cu); callers use the kernels above
void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y);
void linear_backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx);
void linear_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dweight);
// Rows [first, first + rows.dim(0)) of dW into `rows`.
void linear_backward_weight_rows(const Tensor& dy, const Tensor& x, std::int64_t first, Tensor& rows);
void linear_backward_bias(const Tensor& dy, Tensor& dbias);
}  // namespace cuda

class Linear : public Module {
 public:
  Linear(int in_features, int out_features, Rng& rng, bool bias = true);
  Variable forward(const Variable& input) override;
  bool output_reusable_in_place() const override { return true; }  // backward reads input and weights
  std::string describe() const override;

 private:
  int in_features_, out_features_;
  Variable weight_, bias_;
};

}  // namespace tunecnn
