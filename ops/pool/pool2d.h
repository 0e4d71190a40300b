#pragma once
// 2-D max and average pooling over [N, C, H, W] activations, floor mode. Each call plans through
// default_pool_planner(), so the autotuner's choice of solver applies without touching layers.
#include "core/module.h"
#include "ops/pool/problem.h"

namespace tunecnn {

struct PoolGeometry {
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
  static PoolGeometry square(int kernel, int stride, int padding = 0) {
    return {kernel, kernel, stride, stride, padding, padding};
  }
};

// The problem for pooling `x` (4-D), validated: the window must fit the padded input.
PoolProblem pool_problem(const Tensor& x, PoolKind kind, const PoolGeometry& geometry,
                         bool count_include_pad = false);
PoolProblem pool_problem(const Shape& x, DType dtype, PoolKind kind, const PoolGeometry& geometry,
                         bool count_include_pad = false);

Variable max_pool2d(const Variable& x, PoolGeometry geometry);
// Divides by the real pixels in each window unless count_include_pad.
Variable avg_pool2d(const Variable& x, PoolGeometry geometry, bool count_include_pad = false);

class MaxPool2d : public Module {
 public:
  MaxPool2d(int kernel, int stride, int padding = 0);
  Variable forward(const Variable& input) override { return max_pool2d(input, geometry_); }
  std::vector<Layout> input_layouts(const Shape& input) const override;
  std::string describe() const override;

 private:
  PoolGeometry geometry_;
};

class AvgPool2d : public Module {
 public:
  AvgPool2d(int kernel, int stride, int padding = 0);
  Variable forward(const Variable& input) override { return avg_pool2d(input, geometry_); }
  std::vector<Layout> input_layouts(const Shape& input) const override;
  std::string describe() const override;

 private:
  PoolGeometry geometry_;
};

}  // namespace tunecnn
