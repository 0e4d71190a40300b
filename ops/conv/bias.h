#pragma once
// The conv bias, kept out of the solvers so each stays a pure convolution. CPU, any layout,
// f32/f64.
#include "core/tensor.h"

namespace tunecnn {

// dst[n, c, h, w] += bias[c]
void add_bias(Tensor& dst, const Tensor& bias);
// diff_bias[c] = sum over n, h, w of diff_dst[n, c, h, w], in a fixed order.
void bias_grad(const Tensor& diff_dst, Tensor& diff_bias);

}  // namespace tunecnn
