// LRN on the GPU with simple kernels of its own rather than cuDNN's cross-channel LRN: these
// follow lrn.cpp's definition exactly (alpha / n, PyTorch's window placement for an even n, the
// base s kept for backward) and read every layout through the [outer, C, inner] view, where
// cuDNN's conventions would each need checking on a GPU.
// One thread per element: forward sums a^2 over the window [c - n/2, c + (n-1)/2] clipped to the
// channels, channel by channel upwards (the CPU's order), then y = a * s^-beta with beta = 0.75
// as two square roots as on the CPU. Backward sums g * y / s over the mirrored window
// [j - (n-1)/2, j + n/2]:
//   da_j = g_j s_j^-beta - 2 beta alpha/n a_j sum_{c: j in window(c)} g_c y_c / s_c.
// Each thread writes only its own element; no tunables. Without a kept base (recompute_activations)
// backward sums each s it reads again from x, as forward summed it: n times the reads, the same
// bits.
#include <cmath>

#include "core/cuda_elementwise.cuh"
#include "ops/channel_view.h"
#include "ops/lrn.h"

namespace tunecnn::cuda {
namespace {

struct Geometry {
  std::int64_t channels, inner;  // element i is channel (i / inner) % channels
  int below, above;              // window(c) = [c - below, c + above]
};

Geometry geometry_of(const Tensor& x, int size) {
  const ChannelView v = channel_view(x, "local_response_norm");
  return {v.channels, v.inner, size / 2, (size - 1) / 2};
}

__device__ float negative_power(float base, double beta) {
  if (beta == 0.75) {
    const float r = sqrtf(base);
    return 1.0f / (r * sqrtf(r));
  }
  return expf(logf(base) * static_cast<float>(-beta));
}

__device__ double negative_power(double base, double beta) {
  if (beta == 0.75) {
    const double r = sqrt(base);
    return 1.0 / (r * sqrt(r));
  }
  return exp(log(base) * -beta);
}

// s of element i: k + alpha/n times the sum of a^2 over its channel's window, channel by channel
// upwards.
template <class T>
__device__ T base_at(const T* in, std::int64_t i, Geometry g, T k, T scale) {
  const std::int64_t c = (i / g.inner) % g.channels;
  const std::int64_t first = c - g.below < 0 ? 0 : c - g.below;
  const std::int64_t last = c + g.above >= g.channels ? g.channels - 1 : c + g.above;
  T window = 0;
  for (std::int64_t w = first; w <= last; ++w) {
    const T a = in[i + (w - c) * g.inner];
    window += a * a;
  }
  return window * scale + k;
}

template <class T>
void forward_as(const Tensor& x, Tensor& y, Tensor& base, const LrnParams& p) {
  const Geometry g = geometry_of(x, p.size);
  const T* in = static_cast<const T*>(x.raw_data());
  T* out = static_cast<T*>(y.raw_data());
  T* keep = base.defined() ? static_cast<T*>(base.raw_data()) : nullptr;
  const T k = static_cast<T>(p.k), scale = static_cast<T>(p.alpha / p.size);
  const double beta = p.beta;
  launch_elementwise(x.numel(), [=] __device__(std::int64_t i) {
    const T s = base_at(in, i, g, k, scale);
    out[i] = in[i] * negative_power(s, beta);
    if (keep != nullptr) keep[i] = s;
  });
}

template <class T>
void backward_as(const Tensor& x, const Tensor& y, const Tensor& base, const Tensor& dy,
                 Tensor& dx, const LrnParams& p) {
  const Geometry g = geometry_of(x, p.size);
  const T* in = static_cast<const T*>(x.raw_data());
  const T* out = static_cast<const T*>(y.raw_data());
  const T* s = base.defined() ? static_cast<const T*>(base.raw_data()) : nullptr;
  const T* grad = static_cast<const T*>(dy.raw_data());
  T* result = static_cast<T*>(dx.raw_data());
  const T coef = static_cast<T>(2 * p.beta * p.alpha / p.size);
  const T k = static_cast<T>(p.k), scale = static_cast<T>(p.alpha / p.size);
  const double beta = p.beta;
  launch_elementwise(x.numel(), [=] __device__(std::int64_t i) {
    const auto s_at = [&](std::int64_t at) { return s != nullptr ? s[at] : base_at(in, at, g, k, scale); };
    const std::int64_t j = (i / g.inner) % g.channels;
    // The channels whose windows hold j: the window mirrored.
    const std::int64_t first = j - g.above < 0 ? 0 : j - g.above;
    const std::int64_t last = j + g.below >= g.channels ? g.channels - 1 : j + g.below;
    T window = 0;
    for (std::int64_t c = first; c <= last; ++c) {
      const std::int64_t at = i + (c - j) * g.inner;
      window += grad[at] * out[at] / s_at(at);
    }
    result[i] = grad[i] * negative_power(s_at(i), beta) - coef * in[i] * window;
  });
}

}  // namespace

void lrn_forward(const Tensor& x, Tensor& y, Tensor& base, const LrnParams& params) {
  if (x.dtype() == DType::f64) return forward_as<double>(x, y, base, params);
  forward_as<float>(x, y, base, params);
}

void lrn_backward(const Tensor& x, const Tensor& y, const Tensor& base, const Tensor& dy,
                  Tensor& dx, const LrnParams& params) {
  if (x.dtype() == DType::f64) return backward_as<double>(x, y, base, dy, dx, params);
  backward_as<float>(x, y, base, dy, dx, params);
}

}  // namespace tunecnn::cuda
