// The GPU half of ops/conv/bias.h. add_bias is elementwise. bias_grad runs one block per channel:
// each thread sums a fixed stride of the channel's values in double, then a fixed tree adds the
// threads' sums, so the same gradient always gives the same bits (no atomics).
#include "core/cuda_elementwise.cuh"
#include "ops/conv/bias.h"

namespace tunecnn::cuda {
namespace {

constexpr int kBiasGradThreads = 256;

template <class T>
void add_bias_as(Tensor& dst, const Tensor& bias) {
  const BiasChannelBlocks b = bias_channel_blocks(dst);
  T* out = static_cast<T*>(dst.raw_data());
  const T* values = static_cast<const T*>(bias.raw_data());
  const std::int64_t channels = b.channels, inner = b.inner;
  launch_elementwise(dst.numel(),
                     [=] __device__(std::int64_t i) { out[i] += values[(i / inner) % channels]; });
}

// Block c sums channel c: the values (outer, c, inner) for every outer and inner.
template <class T>
__global__ void bias_grad_kernel(const T* diff_dst, BiasChannelBlocks b, T* diff_bias) {
  __shared__ double partial[kBiasGradThreads];
  const std::int64_t c = blockIdx.x, per_channel = b.outer * b.inner;
  double acc = 0;
  for (std::int64_t i = threadIdx.x; i < per_channel; i += kBiasGradThreads) {
    const std::int64_t o = i / b.inner, j = i % b.inner;
    acc += static_cast<double>(diff_dst[(o * b.channels + c) * b.inner + j]);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kBiasGradThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) diff_bias[c] = static_cast<T>(partial[0]);
}

template <class T>
void bias_grad_as(const Tensor& diff_dst, Tensor& diff_bias) {
  const BiasChannelBlocks b = bias_channel_blocks(diff_dst);
  if (b.channels == 0) return;
  bias_grad_kernel<T><<<static_cast<unsigned>(b.channels), kBiasGradThreads, 0, cuda_stream()>>>(
      static_cast<const T*>(diff_dst.raw_data()), b, static_cast<T*>(diff_bias.raw_data()));
  TUNECNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void add_bias(Tensor& dst, const Tensor& bias) {
  if (dst.dtype() == DType::f64) return add_bias_as<double>(dst, bias);
  add_bias_as<float>(dst, bias);
}

void bias_grad(const Tensor& diff_dst, Tensor& diff_bias) {
  if (diff_dst.dtype() == DType::f64) return bias_grad_as<double>(diff_dst, diff_bias);
  bias_grad_as<float>(diff_dst, diff_bias);
}

}  // namespace tunecnn::cuda
