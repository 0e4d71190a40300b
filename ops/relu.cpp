// ReLU as vectorised Eigen array expressions over fixed chunks run as TBB tasks: each chunk writes
// only its own elements, so the result does not depend on scheduling. Backward masks with the
// output rather than the input so the closure keeps no extra tensor: 0 < y < cap exactly where
// 0 < x < cap.
#include "ops/relu.h"

#include <sstream>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "core/device.h"
#include "ops/relu_functors.h"

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

void relu_forward(const Tensor& x, Tensor& y, double cap) {
  check_same(x, y, "forward");
  check_same_device("relu forward", x, y);
  TUNECNN_ON_CUDA(x, cuda::relu_forward(x, y, cap));
  dispatch_dtype(x.dtype(), [&]<class T>() {
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const T top = static_cast<T>(cap);
    for_chunks(x.numel(), [&](std::int64_t begin, std::int64_t len) {
      MutArray<T>(py + begin, len) = ConstArray<T>(px + begin, len).unaryExpr(ReluClip<T>{top});
    });
  });
}

void relu_backward(const Tensor& y, const Tensor& dy, Tensor& dx, double cap) {
  check_same(y, dy, "backward");
  check_same(y, dx, "backward");
  check_same_device("relu backward", y, dy, dx);
  TUNECNN_ON_CUDA(y, cuda::relu_backward(y, dy, dx, cap));
  dispatch_dtype(y.dtype(), [&]<class T>() {
    const T* py = y.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    const T top = static_cast<T>(cap);
    for_chunks(y.numel(), [&](std::int64_t begin, std::int64_t len) {
      MutArray<T>(pdx + begin, len) =
          ConstArray<T>(pdy + begin, len).binaryExpr(ConstArray<T>(py + begin, len), ReluGate<T>{top});
    });
  });
}

namespace {

Variable relu_into(const Variable& x, Tensor y, double cap) {
  TUNECNN_CHECK(cap > 0, "relu: the cap must be positive, got ", cap);
  relu_forward(x.data(), y, cap);
  auto backward = [y, cap](std::vector<Variable>& in, const Tensor& dy) {
    Tensor dx = Tensor::empty_like(y);
    relu_backward(y, dy, dx, cap);
    in[0].add_grad(dx);
  };
  return Variable(y, {x}, backward);
}

}  // namespace

Variable relu(const Variable& x, double cap) { return relu_into(x, Tensor::empty_like(x.data()), cap); }

Variable relu_in_place(const Variable& x, double cap) {
  // Elementwise on either device (the GPU kernel reads each element before writing it, with no
  // restrict), so reading and writing one element is safe.
  return relu_into(x, x.data(), cap);
}

std::string ReLU::describe() const {
  if (cap_ == kNoCap) return "ReLU";
  std::ostringstream out;
  out << "ReLU" << cap_;
  return out.str();
}

}  // namespace tunecnn
