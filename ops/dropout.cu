// Dropout on the GPU: y = x * mask, one elementwise kernel. The mask itself is drawn on the host
// (ops/dropout.cpp) and uploaded, so GPU and CPU steps drop the same elements.
#include "core/cuda_elementwise.cuh"
#include "ops/dropout.h"

namespace tunecnn::cuda {
namespace {

template <class T>
void apply_as(const Tensor& x, const Tensor& mask, Tensor& y) {
  const T* in = static_cast<const T*>(x.raw_data());
  const T* keep = static_cast<const T*>(mask.raw_data());
  T* out = static_cast<T*>(y.raw_data());
  launch_elementwise(x.numel(), [=] __device__(std::int64_t i) { out[i] = in[i] * keep[i]; });
}

}  // namespace

void dropout_apply(const Tensor& x, const Tensor& mask, Tensor& y) {
  if (x.dtype() == DType::f64) return apply_as<double>(x, mask, y);
  apply_as<float>(x, mask, y);
}

}  // namespace tunecnn::cuda
