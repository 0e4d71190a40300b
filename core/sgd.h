#pragma once
// Stochastic gradient descent with momentum, weight decay and Nesterov, with PyTorch's update
// rule so results compare directly:
//   d = g + wd * p;  v = mu * v + d (v = d on the first step);  d = nesterov ? d + mu * v : v;
//   p -= lr * d
#include <unordered_map>
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
  SgdOptions options_;

  void update(std::size_t i);
};

namespace cuda {  // the update on the GPU (core/sgd.cu); `velocity` is undefined without momentum
void sgd_update(Tensor& param, const Tensor& grad, Tensor& velocity, const SgdOptions& options,
                bool first_step);
}  // namespace cuda

}  // namespace tunecnn
