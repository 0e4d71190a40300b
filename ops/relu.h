#pragma once
// Rectified linear unit, y = max(x, 0), optionally capped at the top: ReLU6 (MobileNet's, from
// TensorFlow) is y = min(max(x, 0), 6).
#include <limits>
#include <string>

#include "core/module.h"

namespace tunecnn {

inline constexpr double kNoCap = std::numeric_limits<double>::infinity();

void relu_forward(const Tensor& x, Tensor& y, double cap = kNoCap);
// dx = dy where 0 < y < cap, else 0. Takes the output: it is what the next layer keeps alive
// anyway, and y hits 0 or cap exactly where x is outside (0, cap).
void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double cap = kNoCap);

Variable relu(const Variable& x, double cap = kNoCap);
// relu() written over x's own tensor, for an x that nothing reads afterwards, its producer's
// backward included (Module::output_reusable_in_place). The gradient is the same: backward
// masks with the output. On either device.
Variable relu_in_place(const Variable& x, double cap = kNoCap);

namespace cuda {  // the GPU versions (ops/relu.cu); callers use the functions above
void relu_forward(const Tensor& x, Tensor& y, double cap);
void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double cap);
}  // namespace cuda

class ReLU : public Module {
 public:
  explicit ReLU(double cap = kNoCap) : cap_(cap) {}
  Variable forward(const Variable& input) override { return relu(input, cap_); }
  Variable forward_in_place(const Variable& input) override { return relu_in_place(input, cap_); }
  // Elementwise: any memory order, kept.
  std::vector<Layout> input_layouts(const Shape&) const override {
    return {Layout::NCHW, Layout::CHWN, Layout::NHWC};
  }
  std::string describe() const override;  // "ReLU", or "ReLU6" for a cap of 6
  double cap() const { return cap_; }  // kNoCap: none

 private:
  double cap_;
};

class ReLU6 : public ReLU {
 public:
  ReLU6() : ReLU(6.0) {}
};

}  // namespace tunecnn
