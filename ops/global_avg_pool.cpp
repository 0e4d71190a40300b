// Global average pooling read in the input's own memory order, seen as [groups, H*W, width]: NCHW
// is N*C groups of width 1 (contiguous planes), NHWC N groups of rows of C, CHWN C groups of rows
// of N. Sums go into double, one group per TBB unit, each writing its own outputs, so the result
// does not depend on scheduling. Backward spreads dy / (H*W) back in the same order; the closure
// keeps nothing (the input's shape and layout come from the graph). GPU tensors run the simple
// kernels of global_avg_pool.cu.
#include "ops/global_avg_pool.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

#include "core/device.h"
#include "ops/eigen_core.h"

namespace tunecnn {
namespace {

constexpr std::int64_t kGrain = 1 << 15;

// Output element (n, c) of group g and column j sits at g * group_stride + j * column_stride.
struct GroupView {
  std::int64_t groups, plane, width, group_stride, column_stride;
};

GroupView group_view(const Tensor& x) {
  const std::int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  switch (x.layout()) {
    case Layout::NCHW:
      return {n * c, hw, 1, 1, 0};
    case Layout::NHWC:
      return {n, hw, c, c, 1};
    case Layout::CHWN:
      return {c, hw, n, 1, c};
  }
  TUNECNN_FAIL("global_avg_pool: unknown layout of ", x.describe());
}

template <class Body>
void for_groups(const GroupView& g, Body body) {
  const std::int64_t grain = std::max<std::int64_t>(1, kGrain / (g.plane * g.width));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, g.groups, grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t i = r.begin(); i < r.end(); ++i) body(i);
                    });
}

template <class T>
using Column = Eigen::Array<T, Eigen::Dynamic, 1>;

template <class T>
void gap_forward(const T* x, T* y, const GroupView& g) {
  const double scale = 1.0 / static_cast<double>(g.plane);
  using Rows = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>>;
  for_groups(g, [&](std::int64_t i) {
    if (g.width == 1) {
      const Eigen::Map<const Column<T>> plane(x + i * g.plane, g.plane);
      y[i * g.group_stride] = static_cast<T>(plane.template cast<double>().sum() * scale);
      return;
    }
    const Rows rows(x + i * g.plane * g.width, g.width, g.plane);  // column p = row p of memory
    Eigen::ArrayXd sum = Eigen::ArrayXd::Zero(g.width);
    for (std::int64_t p = 0; p < g.plane; ++p) sum += rows.col(p).template cast<double>();
    for (std::int64_t j = 0; j < g.width; ++j)
      y[i * g.group_stride + j * g.column_stride] = static_cast<T>(sum[j] * scale);
  });
}

template <class T>
void gap_backward(const T* dy, T* dx, const GroupView& g) {
  const T scale = static_cast<T>(1.0 / static_cast<double>(g.plane));
  using Rows = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>>;
  for_groups(g, [&](std::int64_t i) {
    if (g.width == 1) {
      Eigen::Map<Column<T>>(dx + i * g.plane, g.plane).setConstant(dy[i * g.group_stride] * scale);
      return;
    }
    Column<T> row(g.width);
    for (std::int64_t j = 0; j < g.width; ++j)
      row[j] = dy[i * g.group_stride + j * g.column_stride] * scale;
    Rows(dx + i * g.plane * g.width, g.width, g.plane).colwise() = row;
  });
}

void forward_on_device(const Tensor& x, Tensor& y) {
  TUNECNN_ON_CUDA(x, cuda::global_avg_pool_forward(x, y));
  dispatch_dtype(x.dtype(), [&]<class T>() { gap_forward(x.data<T>(), y.data<T>(), group_view(x)); });
}

void backward_on_device(const Tensor& dy, Tensor& dx) {
  TUNECNN_ON_CUDA(dy, cuda::global_avg_pool_backward(dy, dx));
  dispatch_dtype(dx.dtype(),
                 [&]<class T>() { gap_backward(dy.data<T>(), dx.data<T>(), group_view(dx)); });
}

}  // namespace

Variable global_avg_pool(const Variable& x) {
  const Tensor& input = x.data();
  TUNECNN_CHECK(input.ndim() == 4, "global_avg_pool expects a 4-D input [N, C, H, W], got ",
                shape_str(input.shape()));
  TUNECNN_CHECK(input.dim(2) * input.dim(3) > 0, "global_avg_pool: empty planes in ",
                input.describe());
  Tensor y = Tensor::empty({input.dim(0), input.dim(1)}, input.dtype(), input.device());
  forward_on_device(input, y);
  auto backward = [](std::vector<Variable>& in, const Tensor& dy) {
    const Tensor& input = in[0].data();
    TUNECNN_CHECK(dy.ndim() == 2 && dy.dim(0) == input.dim(0) && dy.dim(1) == input.dim(1) &&
                      dy.dtype() == input.dtype() && dy.device() == input.device(),
                  "global_avg_pool backward: ", dy.describe(), " does not match input ",
                  input.describe());
    Tensor dx = Tensor::empty_like(input);
    backward_on_device(dy, dx);
    in[0].add_grad(dx);
  };
  return Variable(std::move(y), {x}, backward);
}

}  // namespace tunecnn
