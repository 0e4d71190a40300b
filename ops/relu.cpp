// ReLU as vectorised Eigen array expressions over fixed chunks run as TBB tasks: each chunk writes
// only its own elements, so the result does not depend on scheduling. Backward masks with the
// output rather than the input so the closure keeps no extra tensor: y > 0 exactly where x > 0.
#include "ops/relu.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <Eigen/Core>

namespace tunecnn {
namespace {

// Elementwise work below this size is cheaper than waking a second thread.
constexpr std::int64_t kGrain = 1 << 15;

template <class T>
using ConstArray = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using MutArray = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class Body>
void for_chunks(std::int64_t n, Body body) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, n, kGrain),
                    [&](const tbb::blocked_range<std::int64_t>& r) { body(r.begin(), r.size()); });
}

void check_same(const Tensor& a, const Tensor& b, const char* what) {
  TUNECNN_CHECK(a.numel() == b.numel() && a.dtype() == b.dtype(), "relu ", what, ": ", a.describe(),
                " and ", b.describe(), " differ");
}

}  // namespace

void relu_forward(const Tensor& x, Tensor& y) {
  check_same(x, y, "forward");
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    for_chunks(x.numel(), [&](std::int64_t begin, std::int64_t len) {
      const ConstArray<T> in(px + begin, len);
      // A select rather than max(): it keeps NaN visible, so a diverging run is not masked.
      MutArray<T>(py + begin, len) = (in < T(0)).select(T(0), in);
    });
  });
}

void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx) {
  check_same(y, dy, "backward");
  check_same(y, dx, "backward");
  dispatch_dtype(y.dtype(), [&]<class T>() {
    const T* py = y.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    for_chunks(y.numel(), [&](std::int64_t begin, std::int64_t len) {
      MutArray<T>(pdx + begin, len) =
          (ConstArray<T>(py + begin, len) > T(0)).select(ConstArray<T>(pdy + begin, len), T(0));
    });
  });
}

Variable relu(const Variable& x) {
  Tensor y = Tensor::empty_like(x.data());
  relu_forward(x.data(), y);
  auto backward = [y](std::vector<Variable>& in, const Tensor& dy) {
    Tensor dx = Tensor::empty_like(y);
    relu_backward(y, dy, dx);
    in[0].add_grad(dx);
  };
  return Variable(y, {x}, backward);
}

}  // namespace tunecnn
