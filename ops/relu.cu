// ReLU on the GPU: one elementwise kernel each way, with the CPU version's selects (a NaN input
// passes through forward, so divergence stays visible) and its backward mask on the output.
#include "core/cuda_elementwise.cuh"
#include "ops/relu.h"

namespace tunecnn::cuda {
namespace {

template <class T>
void forward_as(const Tensor& x, Tensor& y, double cap) {
  const T* in = static_cast<const T*>(x.raw_data());
  T* out = static_cast<T*>(y.raw_data());
  const bool capped = cap != kNoCap;
  const T top = static_cast<T>(cap);
  launch_elementwise(x.numel(), [=] __device__(std::int64_t i) {
    const T v = in[i];
    out[i] = v < T(0) ? T(0) : (capped && v > top ? top : v);
  });
}

template <class T>
void backward_as(const Tensor& y, const Tensor& dy, Tensor& dx, double cap) {
  const T* out = static_cast<const T*>(y.raw_data());
  const T* grad = static_cast<const T*>(dy.raw_data());
  T* result = static_cast<T*>(dx.raw_data());
  const bool capped = cap != kNoCap;
  const T top = static_cast<T>(cap);
  launch_elementwise(y.numel(), [=] __device__(std::int64_t i) {
    const T v = out[i];
    result[i] = (v > T(0) && (!capped || v < top)) ? grad[i] : T(0);
  });
}

}  // namespace

void relu_forward(const Tensor& x, Tensor& y, double cap) {
  if (x.dtype() == DType::f64) return forward_as<double>(x, y, cap);
  forward_as<float>(x, y, cap);
}

void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double cap) {
  if (y.dtype() == DType::f64) return backward_as<double>(y, dy, dx, cap);
  backward_as<float>(y, dy, dx, cap);
}

}  // namespace tunecnn::cuda
