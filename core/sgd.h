#pragma once
// Stochastic gradient descent with momentum, weight decay and Nesterov, with PyTorch's update
// rule so results compare directly:
//   d = g + wd * p;  v = mu * v + d (v = d on the first step);  d = nesterov ? d + mu * v : v;
//   p -= lr * d
#include <vector>

#include "core/module.h"

namespace tunecnn {

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class Sgd {
 public:
  Sgd(std::vector<NamedVariable> parameters, SgdOptions options);
  void step();       // parameters without a gradient are left alone
  void zero_grad();
  void set_lr(double lr) { options_.lr = lr; }
  double lr() const { return options_.lr; }
  const SgdOptions& options() const { return options_; }

  // Momentum buffers by parameter name, for checkpoints; undefined until the first step.
  std::vector<NamedTensor> state() const;
  void load_state(const std::vector<NamedTensor>& state);  // throws Error on a name or shape mismatch

 private:
  std::vector<NamedVariable> parameters_;
  std::vector<Tensor> velocity_;
  SgdOptions options_;
};

namespace cuda {  // the update on the GPU (core/sgd.cu); `velocity` is undefined without momentum
void sgd_update(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
                bool first_step);
}  // namespace cuda

}  // namespace tunecnn
