// The GPU half of core/tensor_math.h. Updates are elementwise; reductions run in one block with a
// fixed per-thread stride and a fixed tree, in double, so the same tensor always gives the same
// bits (a few microseconds slower than a multi-block reduction, which only tests and the trainer's
// checks call).
#include <cmath>

#include "core/cuda_elementwise.cuh"
#include "core/tensor_math.h"

namespace tunecnn::cuda {
namespace {

constexpr int kReduceThreads = 512;

enum class Reduction { sum, max_abs_diff, count_not_finite };

template <class T, Reduction kind>
__global__ void reduce_kernel(const T* a, const T* b, std::int64_t n, double* out) {
  __shared__ double partial[kReduceThreads];
  double acc = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += kReduceThreads) {
    const double x = static_cast<double>(a[i]);
    if constexpr (kind == Reduction::sum) {
      acc += x;
    } else if constexpr (kind == Reduction::max_abs_diff) {
      const double d = fabs(x - static_cast<double>(b[i]));
      // A NaN wins and stays: `!(d <= acc)` would let the next finite d replace a NaN acc.
      if (d > acc || d != d) acc = d;
    } else {
      acc += isfinite(x) ? 0.0 : 1.0;
    }
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      const double other = partial[threadIdx.x + half];
      if constexpr (kind == Reduction::max_abs_diff) {
        if (other > partial[threadIdx.x] || other != other) partial[threadIdx.x] = other;
      } else {
        partial[threadIdx.x] += other;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}

template <Reduction kind>
double reduce(const Tensor& a, const Tensor* b) {
  Tensor result = Tensor::empty({1}, DType::f64, Device::cuda);
  dispatch_dtype(a.dtype(), [&]<class T>() {
    const T* pb = b != nullptr ? static_cast<const T*>(b->raw_data()) : nullptr;
    reduce_kernel<T, kind><<<1, kReduceThreads, 0, cuda_stream()>>>(
        static_cast<const T*>(a.raw_data()), pb, a.numel(), static_cast<double*>(result.raw_data()));
    TUNECNN_CUDA_CHECK_LAUNCH();
  });
  return result.to(Device::cpu).data<double>()[0];
}

template <class T>
void axpy_as(Tensor& dst, double alpha, const Tensor& x) {
  T* d = static_cast<T*>(dst.raw_data());
  const T* s = static_cast<const T*>(x.raw_data());
  const T a = static_cast<T>(alpha);
  launch_elementwise(dst.numel(), [=] __device__(std::int64_t i) { d[i] += a * s[i]; });
}

template <class T>
void scale_as(Tensor& dst, double alpha) {
  T* d = static_cast<T*>(dst.raw_data());
  const T a = static_cast<T>(alpha);
  launch_elementwise(dst.numel(), [=] __device__(std::int64_t i) { d[i] *= a; });
}

template <class T>
void fill_as(Tensor& t, double value) {
  T* d = static_cast<T*>(t.raw_data());
  const T v = static_cast<T>(value);
  launch_elementwise(t.numel(), [=] __device__(std::int64_t i) { d[i] = v; });
}

}  // namespace

void axpy_inplace(Tensor& dst, double alpha, const Tensor& x) {
  if (dst.dtype() == DType::f64) return axpy_as<double>(dst, alpha, x);
  axpy_as<float>(dst, alpha, x);
}

void scale_inplace(Tensor& dst, double alpha) {
  if (dst.dtype() == DType::f64) return scale_as<double>(dst, alpha);
  scale_as<float>(dst, alpha);
}

void fill(Tensor& t, double value) {
  if (t.dtype() == DType::f64) return fill_as<double>(t, value);
  fill_as<float>(t, value);
}

double sum(const Tensor& t) { return reduce<Reduction::sum>(t, nullptr); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return reduce<Reduction::max_abs_diff>(a, &b);
}

bool all_finite(const Tensor& t) { return reduce<Reduction::count_not_finite>(t, nullptr) == 0; }

}  // namespace tunecnn::cuda
