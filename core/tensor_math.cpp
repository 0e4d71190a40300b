#include "core/tensor_math.h"

#include <algorithm>
#include <cmath>

#include "core/device.h"

namespace tunecnn {
namespace {
void check_same_size(const Tensor& a, const Tensor& b, const char* op) {
  TUNECNN_CHECK(a.numel() == b.numel() && a.dtype() == b.dtype(), op, ": ", a.describe(),
                " and ", b.describe(), " differ in size or dtype");
}
}  // namespace

void add_inplace(Tensor& dst, const Tensor& src) { axpy_inplace(dst, 1.0, src); }

void axpy_inplace(Tensor& dst, double alpha, const Tensor& x) {
  check_same_size(dst, x, "axpy");
  check_same_device("axpy", dst, x);
  TUNECNN_ON_CUDA(dst, cuda::axpy_inplace(dst, alpha, x));
  dispatch_dtype(dst.dtype(), [&]<class T>() {
    T* d = dst.data<T>();
    const T* s = x.data<T>();
    const T a = static_cast<T>(alpha);
    for (std::int64_t i = 0, n = dst.numel(); i < n; ++i) d[i] += a * s[i];
  });
}

void scale_inplace(Tensor& dst, double alpha) {
  TUNECNN_ON_CUDA(dst, cuda::scale_inplace(dst, alpha));
  dispatch_dtype(dst.dtype(), [&]<class T>() {
    T* d = dst.data<T>();
    const T a = static_cast<T>(alpha);
    for (std::int64_t i = 0, n = dst.numel(); i < n; ++i) d[i] *= a;
  });
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = a.clone();
  add_inplace(out, b);
  return out;
}

double sum(const Tensor& t) {
  TUNECNN_ON_CUDA(t, cuda::sum(t));
  return dispatch_dtype(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    double total = 0;
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i) total += p[i];
    return total;
  });
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  check_same_size(a, b, "max_abs_diff");
  if (a.device() != b.device()) return max_abs_diff(a.to(Device::cpu), b.to(Device::cpu));
  TUNECNN_ON_CUDA(a, cuda::max_abs_diff(a, b));
  return dispatch_dtype(a.dtype(), [&]<class T>() {
    const T* p = a.data<T>();
    const T* q = b.data<T>();
    double worst = 0;
    for (std::int64_t i = 0, n = a.numel(); i < n; ++i) {
      const double d = std::abs(static_cast<double>(p[i]) - static_cast<double>(q[i]));
      if (std::isnan(d)) return d;  // a NaN is the worst difference; a later finite one must not hide it
      worst = std::max(worst, d);
    }
    return worst;
  });
}

bool all_finite(const Tensor& t) {
  TUNECNN_ON_CUDA(t, cuda::all_finite(t));
  return dispatch_dtype(t.dtype(), [&]<class T>() {
    const T* p = t.data<T>();
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
      if (!std::isfinite(p[i])) return false;
    return true;
  });
}

}  // namespace tunecnn
