#pragma once
// Rectified linear unit, y = max(x, 0).
#include "core/module.h"

namespace tunecnn {

void relu_forward(const Tensor& x, Tensor& y);
// dx = dy where y > 0, else 0. Takes the output: it is what the next layer keeps alive anyway.
void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx);

Variable relu(const Variable& x);

class ReLU : public Module {
 public:
  Variable forward(const Variable& input) override { return relu(input); }
  // Elementwise: any memory order, kept.
  std::vector<Layout> input_layouts(const Shape&) const override {
    return {Layout::NCHW, Layout::CHWN, Layout::NHWC};
  }
  std::string describe() const override { return "ReLU"; }
};

}  // namespace tunecnn
