// Global average pooling on the GPU, simple kernels: forward is one thread per (n, c) summing its
// plane in double in row-major (h, w) order, wherever the layout puts those values; backward is
// one thread per input element writing dy(n, c) / (H*W), the scale rounded to T first as on the
// CPU. No tunables.
#include "core/cuda_elementwise.cuh"
#include "ops/global_avg_pool.h"

namespace tunecnn::cuda {
namespace {

// Sizes and the element strides of the logical (n, c, h, w) in the tensor's layout.
struct Geometry {
  std::int64_t c, h, w;
  std::int64_t sn, sc, sh, sw;
};

Geometry geometry_of(const Tensor& x) {
  TUNECNN_CHECK(x.ndim() == 4, "global_avg_pool expects a 4-D tensor, got ", x.describe());
  const std::int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  switch (x.layout()) {
    case Layout::NCHW: return {c, h, w, c * h * w, h * w, w, 1};
    case Layout::CHWN: return {c, h, w, 1, h * w * n, w * n, n};
    case Layout::NHWC: return {c, h, w, h * w * c, 1, w * c, c};
  }
  TUNECNN_FAIL("global_avg_pool: unknown layout of ", x.describe());
}

template <class T>
void forward_as(const Tensor& x, Tensor& y) {
  const Geometry g = geometry_of(x);
  const T* in = static_cast<const T*>(x.raw_data());
  T* out = static_cast<T*>(y.raw_data());
  const double scale = 1.0 / static_cast<double>(g.h * g.w);
  launch_elementwise(y.numel(), [=] __device__(std::int64_t i) {  // i = n * C + c
    const T* plane = in + (i / g.c) * g.sn + (i % g.c) * g.sc;
    double total = 0;
    for (std::int64_t row = 0; row < g.h; ++row)
      for (std::int64_t col = 0; col < g.w; ++col)
        total += static_cast<double>(plane[row * g.sh + col * g.sw]);
    out[i] = static_cast<T>(total * scale);
  });
}

template <class T>
void backward_as(const Tensor& dy, Tensor& dx) {
  const Geometry g = geometry_of(dx);
  const T* grad = static_cast<const T*>(dy.raw_data());
  T* out = static_cast<T*>(dx.raw_data());
  const T scale = static_cast<T>(1.0 / static_cast<double>(g.h * g.w));
  launch_elementwise(dx.numel(), [=] __device__(std::int64_t i) {  // i in logical NCHW order
    const std::int64_t col = i % g.w, row = (i / g.w) % g.h, nc = i / (g.w * g.h);
    const std::int64_t n = nc / g.c, c = nc % g.c;
    out[n * g.sn + c * g.sc + row * g.sh + col * g.sw] = grad[nc] * scale;
  });
}

}  // namespace

void global_avg_pool_forward(const Tensor& x, Tensor& y) {
  if (x.dtype() == DType::f64) return forward_as<double>(x, y);
  forward_as<float>(x, y);
}

void global_avg_pool_backward(const Tensor& dy, Tensor& dx) {
  if (dx.dtype() == DType::f64) return backward_as<double>(dy, dx);
  backward_as<float>(dy, dx);
}

}  // namespace tunecnn::cuda
