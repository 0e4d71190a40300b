#pragma once
// The conv bias, kept out of the solvers so each stays a pure convolution. Any layout, f32/f64,
// on the CPU or (bias.cu) the GPU, where the tensors live.
#include "core/tensor.h"

namespace tunecnn {

// dst[n, c, h, w] += bias[c]
void add_bias(Tensor& dst, const Tensor& bias);
// diff_bias[c] = sum over n, h, w of diff_dst[n, c, h, w], in a fixed order.
void bias_grad(const Tensor& diff_dst, Tensor& diff_bias);

// Every layout stores element (outer, c, inner) at (outer * C + c) * inner_size + inner:
// NCHW is (N, C, H*W), CHWN is (1, C, H*W*N) and NHWC is (N*H*W, C, 1).
struct BiasChannelBlocks {
  std::int64_t outer, channels, inner;
};
BiasChannelBlocks bias_channel_blocks(const Tensor& act);

namespace cuda {  // the GPU versions (ops/conv/bias.cu); callers use the functions above
void add_bias(Tensor& dst, const Tensor& bias);
void bias_grad(const Tensor& diff_dst, Tensor& diff_bias);
}  // namespace cuda

}  // namespace tunecnn
