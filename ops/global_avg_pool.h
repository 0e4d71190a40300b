#pragma once
// Global average pooling: [N, C, H, W] in any memory order -> [N, C], the mean of each channel
// plane (MobileNet's last spatial layer, before the classifier).
#include <string>
#include <vector>

#include "core/module.h"

namespace tunecnn {

Variable global_avg_pool(const Variable& x);

namespace cuda {  // the GPU versions (ops/global_avg_pool.cu); callers use global_avg_pool()
void global_avg_pool_forward(const Tensor& x, Tensor& y);   // x [N, C, H, W] any layout, y [N, C]
void global_avg_pool_backward(const Tensor& dy, Tensor& dx);  // dx in its own layout
}  // namespace cuda

class GlobalAvgPool : public Module {
 public:
  Variable forward(const Variable& input) override { return global_avg_pool(input); }
  std::vector<Layout> input_layouts(const Shape&) const override {
    return {Layout::NCHW, Layout::CHWN, Layout::NHWC};
  }
  std::string describe() const override { return "GlobalAvgPool"; }
};

}  // namespace tunecnn
