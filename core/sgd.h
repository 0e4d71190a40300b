#pragma once
// Stochastic gradient descent with momentum, weight decay and Nesterov, with PyTorch's update
// rule so results compare directly:
//   d = g + wd * p;  v = mu * v + d (v = d on the first step);  d = nesterov ? d + mu * v : v;
//   p -= lr * d
#include <unordered_map>
#include <unordered_set>
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

  // The same update for one parameter, as soon as backward has finished its gradient (the hook
  // of Variable::backward), and that gradient dropped at once: a step then holds one layer's
  // gradients at a time instead of every parameter's (AlexNet: 238 MB of them). Parameters this
  // optimizer does not own are left alone. Use it instead of step(), not after it.
  void step_parameter(const Variable& parameter);
  // The same update for rows [first_row, first_row + rows.dim(0)) of a parameter, from those
  // rows of its gradient (Variable::GradRowsFn): an op that makes the gradient in blocks of rows
  // hands each here and the whole gradient never exists. step_parameter then closes the step.
  void step_rows(const Variable& parameter, std::int64_t first_row, const Tensor& rows);
  // `loss`'s backward with step_parameter as its hook: the whole step, as train takes it.
  void backward_and_step(Variable& loss);
  void set_lr(double lr) { options_.lr = lr; }
  double lr() const { return options_.lr; }
  const SgdOptions& options() const { return options_; }

  // Momentum buffers by parameter name, for checkpoints; undefined until the first step.
  std::vector<NamedTensor> state() const;
  void load_state(const std::vector<NamedTensor>& state);  // throws Error on a name or shape mismatch

 private:
  std::vector<NamedVariable> parameters_;
  std::vector<Tensor> velocity_;
  std::unordered_map<const void*, std::size_t> index_of_;  // Variable::id() -> parameter index
  std::unordered_set<std::size_t> first_step_in_rows_;     // stepped by rows, velocity made this step
  SgdOptions options_;

  void update(std::size_t i);
};

namespace cuda {  // the update on the GPU (core/sgd.cu); `velocity` is undefined without momentum
void sgd_update(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
                bool first_step);
// The same on the grad.numel() elements of param (and velocity) from `offset` on.
void sgd_update_range(Tensor& param, std::int64_t offset, const Tensor& grad, Tensor& velocity,
                      const SgdOptions& options, bool first_step);
}  // namespace cuda

}  // namespace tunecnn
