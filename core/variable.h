#pragma once
// Reverse-mode autograd. A Variable holds data, its gradient and, for results of ops, the
// inputs and a backward closure that captures only what backward needs (flashlight's model).
// Kernels know nothing about this file.
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace tunecnn {

class Variable {
 public:
  // Computes and adds the inputs' gradients from the output's gradient.
  using BackwardFn = std::function<void(std::vector<Variable>& inputs, const Tensor& grad_output)>;

  Variable() = default;
  explicit Variable(Tensor data, bool requires_grad = false);
  // The result of an op. Records the graph only when grad mode is on and an input needs it.
  Variable(Tensor data, std::vector<Variable> inputs, BackwardFn backward);

  bool defined() const { return node_ != nullptr; }
  const Tensor& data() const;
  Tensor& data();
  const Tensor& grad() const;  // undefined until a backward pass reaches this variable
  bool has_grad() const;
  bool requires_grad() const;
  const Shape& shape() const { return data().shape(); }

  // Accumulates into grad; `g` must not be written to afterwards by the caller.
  void add_grad(Tensor g);
  void zero_grad();  // drops the gradient (the next add_grad starts afresh)

  // Called by backward for each leaf that requires grad (a parameter) as soon as the rest of the
  // pass can no longer add to its gradient: data-parallel training starts reducing it then.
  using GradReadyFn = std::function<void(const Variable& leaf)>;

  // Where an op can make a parameter's gradient in blocks of rows (Linear's weight), whoever
  // steps on the whole gradient may take each block as it is made instead, so that the gradient
  // never exists whole (AlexNet's fc6: 144 MiB at the step's peak at batch 8).
  using GradRowsFn = std::function<void(const Variable& leaf, std::int64_t first_row, const Tensor& rows)>;

  void backward();                     // for a one-element result: d(self)/d(self) = 1
  void backward(const Tensor& grad);   // frees the graph behind self as it goes
  void backward(const GradReadyFn& on_grad_ready, const GradRowsFn& on_grad_rows = {});
  void backward(const Tensor& grad, const GradReadyFn& on_grad_ready, const GradRowsFn& on_grad_rows = {});
  // Inside a backward pass given a GradRowsFn, on this thread: that function when `leaf`'s whole
  // gradient is what the running op is about to make (a leaf used once, without a gradient
  // yet); null otherwise. The op then hands it every row once, and adds no gradient; the leaf's
  // GradReadyFn still comes.
  static const GradRowsFn* grad_rows_taker(const Variable& leaf);

  // Recomputable activations (issue 29): `recompute` rebuilds this Variable's data from what its
  // op keeps for its own backward anyway (batch norm + ReLU from its input), so that a Sequential
  // may release the data once the next layer has read it. data() rebuilds it on first use, which
  // is the backward of that next layer; the op's own backward must not read it.
  void set_recompute(std::function<Tensor()> recompute);
  bool recomputable() const { return node_ && node_->recompute != nullptr; }
  // Lets go of the data's storage when it is recomputable (shape, dtype and layout stay);
  // otherwise does nothing.
  void release_data();

  // The same for every copy of this Variable, distinct between Variables: a key for maps.
  const void* id() const { return node_.get(); }

  bool same_node(const Variable& other) const { return node_ == other.node_; }

 private:
  struct Node {
    Tensor data;
    Tensor grad;
    bool requires_grad = false;
    std::vector<Variable> inputs;
    BackwardFn backward;
    std::function<Tensor()> recompute;  // see set_recompute
  };
  std::shared_ptr<Node> node_;

  explicit Variable(std::shared_ptr<Node> node) : node_(std::move(node)) {}
  std::vector<std::shared_ptr<Node>> topological_order();
};

bool grad_enabled();

// Whether ops whose output is cheap to rebuild from what they keep anyway mark it recomputable
// (Variable::set_recompute), for a Sequential to release it between forward and backward. Off by
// default: it trades a pass over the activation in backward for its memory. Set once per run
// (train --recompute-activations).
bool recompute_activations();
void set_recompute_activations(bool on);

// While alive, ops record no graph (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace tunecnn
