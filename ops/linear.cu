// The linear layer on the GPU: the CPU version's three GEMMs through cuBLAS (ops/blas.cu maps the
// row-major products), a bias-add kernel, and the bias gradient as column sums of dy with one
// thread per column adding the rows in order, as the CPU does, so it needs no atomics and gives
// the same bits every run.
#include "core/cuda_elementwise.cuh"
#include "ops/blas.h"
#include "ops/linear.h"

namespace tunecnn::cuda {
namespace {

int as_int(std::int64_t v) { return static_cast<int>(v); }

template <class T>
const T* ptr(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

template <class T>
T* mut_ptr(Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

template <class T>
void forward_as(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) {
  const int batch = as_int(x.dim(0)), in = as_int(x.dim(1)), out = as_int(weight.dim(0));
  T* py = mut_ptr<T>(y);
  gemm<T>(false, true, batch, out, in, T(1), ptr<T>(x), in, ptr<T>(weight), in, T(0), py, out);
  if (!bias.defined()) return;
  const T* b = ptr<T>(bias);
  launch_elementwise(y.numel(), [=] __device__(std::int64_t i) { py[i] += b[i % out]; });
}

template <class T>
void backward_data_as(const Tensor& dy, const Tensor& weight, Tensor& dx) {
  const int batch = as_int(dy.dim(0)), out = as_int(dy.dim(1)), in = as_int(weight.dim(1));
  gemm<T>(false, false, batch, in, out, T(1), ptr<T>(dy), out, ptr<T>(weight), in, T(0),
          mut_ptr<T>(dx), in);
}

template <class T>
void backward_weights_as(const Tensor& dy, const Tensor& x, Tensor& dweight) {
  const int batch = as_int(dy.dim(0)), out = as_int(dy.dim(1)), in = as_int(x.dim(1));
  gemm<T>(true, false, out, in, batch, T(1), ptr<T>(dy), out, ptr<T>(x), in, T(0),
          mut_ptr<T>(dweight), in);
}

template <class T>
void backward_weight_rows_as(const Tensor& dy, const Tensor& x, std::int64_t first, Tensor& rows) {
  const int batch = as_int(dy.dim(0)), out = as_int(dy.dim(1)), in = as_int(x.dim(1));
  gemm<T>(true, false, as_int(rows.dim(0)), in, batch, T(1), ptr<T>(dy) + first, out, ptr<T>(x), in, T(0),
          mut_ptr<T>(rows), in);
}

template <class T>
void backward_bias_as(const Tensor& dy, Tensor& dbias) {
  const std::int64_t batch = dy.dim(0), out = dy.dim(1);
  const T* g = ptr<T>(dy);
  T* db = mut_ptr<T>(dbias);
  // Adjacent threads read adjacent columns of a row: coalesced.
  launch_elementwise(out, [=] __device__(std::int64_t column) {
    T total = 0;
    for (std::int64_t row = 0; row < batch; ++row) total += g[row * out + column];
    db[column] = total;
  });
}

}  // namespace

void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, Tensor& y) {
  if (x.dtype() == DType::f64) return forward_as<double>(x, weight, bias, y);
  forward_as<float>(x, weight, bias, y);
}

void linear_backward_data(const Tensor& dy, const Tensor& weight, Tensor& dx) {
  if (dy.dtype() == DType::f64) return backward_data_as<double>(dy, weight, dx);
  backward_data_as<float>(dy, weight, dx);
}

void linear_backward_weights(const Tensor& dy, const Tensor& x, Tensor& dweight) {
  if (dy.dtype() == DType::f64) return backward_weights_as<double>(dy, x, dweight);
  backward_weights_as<float>(dy, x, dweight);
}

void linear_backward_weight_rows(const Tensor& dy, const Tensor& x, std::int64_t first, Tensor& rows) {
  if (dy.dtype() == DType::f64) return backward_weight_rows_as<double>(dy, x, first, rows);
  backward_weight_rows_as<float>(dy, x, first, rows);
}

void linear_backward_bias(const Tensor& dy, Tensor& dbias) {
  if (dy.dtype() == DType::f64) return backward_bias_as<double>(dy, dbias);
  backward_bias_as<float>(dy, dbias);
}

}  // namespace tunecnn::cuda
