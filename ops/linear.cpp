// Linear layer on OpenBLAS GEMM: forward y = x W^T, backward dx = dy W and dW = dy^T x, each one
// GEMM over the whole batch (gemm() splits large products over TBB in fixed blocks). The bias
// gradient is a column sum of dy done row by row in a fixed order, so it does not depend on
// scheduling. Only 2-D inputs: convolutional features go through Flatten first. GPU tensors run
// the same GEMMs on cuBLAS (ops/linear.cu).
#include "ops/linear.h"

#include <algorithm>

#include <Eigen/Core>

#include "core/device.h"
#include "core/init.h"
#include "ops/blas.h"

namespace tunecnn {
namespace {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void check_shapes(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  TUNECNN_CHECK(x.ndim() == 2, "linear expects a 2-D input [batch, in_features], got ",
                shape_str(x.shape()));
  TUNECNN_CHECK(weight.ndim() == 2 && weight.dim(1) == x.dim(1), "linear weight ",
                shape_str(weight.shape()), " does not match input ", shape_str(x.shape()));
  TUNECNN_CHECK(x.dtype() == weight.dtype(), "linear input ", x.describe(), " and weight ",
                weight.describe(), " differ in dtype");
  if (!bias.defined()) return;
  TUNECNN_CHECK(bias.ndim() == 1 && bias.dim(0) == weight.dim(0) && bias.dtype() == x.dtype(),
                "linear bias ", bias.describe(), " does not match weight ", weight.describe());
}

int as_int(std::int64_t v) {
  return static_cast<int>(v);
}

}  // namespace

void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) {
  check_same_device("linear forward", x, weight, y);
  if (bias.defined()) check_same_device("linear forward", x, bias);
  TUNECNN_ON_CUDA(x, cuda::linear_forward(x, weight, bias, y));
  const int batch = as_int(x.dim(0)), in = as_int(x.dim(1)), out = as_int(weight.dim(0));
  dispatch_dtype(x.dtype(), [&]<class T>() {
    T* py = y.data<T>();
    gemm<T>(false, true, batch, out, in, T(1), x.data<T>(), in, weight.data<T>(), in, T(0), py,
            out);
    if (!bias.defined()) return;
    Eigen::Map<RowMatrix<T>> ym(py, batch, out);
    Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>> b(bias.data<T>(), out);
    ym.rowwise() += b;
  });
}

void linear_backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) {
  check_same_device("linear backward_data", dy, weight, dx);
  TUNECNN_ON_CUDA(dy, cuda::linear_backward_data(dy, weight, dx));
  const int batch = as_int(dy.dim(0)), out = as_int(dy.dim(1)), in = as_int(weight.dim(1));
  dispatch_dtype(dy.dtype(), [&]<class T>() {
    gemm<T>(false, false, batch, in, out, T(1), dy.data<T>(), out, weight.data<T>(), in, T(0),
            dx.data<T>(), in);
  });
}

void linear_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dweight) {
  check_same_device("linear backward_weights", dy, x, dweight);
  TUNECNN_ON_CUDA(dy, cuda::linear_backward_weights(dy, x, dweight));
  const int batch = as_int(dy.dim(0)), out = as_int(dy.dim(1)), in = as_int(x.dim(1));
  dispatch_dtype(dy.dtype(), [&]<class T>() {
    gemm<T>(true, false, out, in, batch, T(1), dy.data<T>(), out, x.data<T>(), in, T(0),
            dweight.data<T>(), in);
  });
}

namespace {

// Rows [first, first + rows.dim(0)) of dW = dy^T x into `rows`, on dy's device.
void weight_rows(const Tensor& dy, const Tensor& x, std::int64_t first, Tensor& rows) {
  TUNECNN_ON_CUDA(dy, cuda::linear_backward_weight_rows(dy, x, first, rows));
  const int batch = as_int(dy.dim(0)), out = as_int(dy.dim(1)), in = as_int(x.dim(1));
  dispatch_dtype(dy.dtype(), [&]<class T>() {
    gemm<T>(true, false, as_int(rows.dim(0)), in, batch, T(1), dy.data<T>() + first, out, x.data<T>(), in, T(0),
            rows.data<T>(), in);
  });
}

}  // namespace

void linear_weight_grad_in_rows(const Tensor& dy, const Tensor& x,
                                const std::function<void(std::int64_t, const Tensor&)>& take) {
  const std::int64_t out = dy.dim(1), in = x.dim(1);
  // About 4 MiB a block, which the update reads while it is still in cache (fc6: 113 rows of 9216).
  const std::int64_t block = std::clamp<std::int64_t>((4 << 20) / (in * dtype_size(dy.dtype())), 1, out);
  for (std::int64_t first = 0; first < out; first += block) {
    Tensor dw = Tensor::empty({std::min(block, out - first), in}, dy.dtype(), dy.device());
    weight_rows(dy, x, first, dw);
    take(first, dw);
  }
}

void linear_backward_bias(const Tensor& dy, Tensor& dbias) {
  check_same_device("linear backward_bias", dy, dbias);
  TUNECNN_ON_CUDA(dy, cuda::linear_backward_bias(dy, dbias));
  const int batch = as_int(dy.dim(0)), out = as_int(dy.dim(1));
  dispatch_dtype(dy.dtype(), [&]<class T>() {
    Eigen::Map<const RowMatrix<T>> g(dy.data<T>(), batch, out);
    Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>> db(dbias.data<T>(), out);
    db.setZero();
    for (int r = 0; r < batch; ++r) db += g.row(r);
  });
}

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  const Tensor no_bias;
  const Tensor& b = bias.defined() ? bias.data() : no_bias;
  check_shapes(x.data(), weight.data(), b);
  Tensor y = Tensor::empty({x.data().dim(0), weight.data().dim(0)}, x.data().dtype(),
                           x.data().device());
  linear_forward(x.data(), weight.data(), b, y);
  std::vector<Variable> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  auto backward = [](std::vector<Variable>& in, const Tensor& dy) {
    if (in[0].requires_grad()) {
      Tensor dx = Tensor::empty_like(in[0].data());
      linear_backward_data(dy, in[1].data(), dx);
      in[0].add_grad(dx);
    }
    // After dx, which reads the weight: taking the rows may update it.
    const Variable::GradRowsFn* take = Variable::grad_rows_taker(in[1]);
    if (take != nullptr) {
      linear_weight_grad_in_rows(dy, in[0].data(), [&](std::int64_t first, const Tensor& rows) { (*take)(in[1], first, rows); });
    } else if (in[1].requires_grad()) {
      Tensor dw = Tensor::empty_like(in[1].data());
      linear_backward_weights(dy, in[0].data(), dw);
      in[1].add_grad(dw);
    }
    if (in.size() > 2 && in[2].requires_grad()) {
      Tensor db = Tensor::empty_like(in[2].data());
      linear_backward_bias(dy, db);
      in[2].add_grad(db);
    }
  };
  return Variable(std::move(y), std::move(inputs), backward);
}

Linear::Linear(int in_features, int out_features, Rng& rng, bool bias)
    : in_features_(in_features), out_features_(out_features) {
  TUNECNN_CHECK(in_features > 0 && out_features > 0, "Linear(", in_features, "->", out_features,
                "): sizes must be positive");
  Tensor w = Tensor::empty({out_features, in_features});
  kaiming_normal(w, in_features, rng);
  weight_ = register_parameter("weight", std::move(w));
  if (bias) bias_ = register_parameter("bias", Tensor::zeros({out_features}));
}

Variable Linear::forward(const Variable& input) {
  return linear(input, weight_, bias_);
}

std::string Linear::describe() const {
  std::string text =
      "Linear(" + std::to_string(in_features_) + "->" + std::to_string(out_features_);
  return text + (bias_.defined() ? ")" : ", no bias)");
}

}  // namespace tunecnn
