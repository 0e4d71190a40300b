// Fused softmax cross-entropy (Li et al., SC'16 fuse softmax with its loss). Per row: the max,
// exp(x - max) written straight into the gradient buffer, their sum, the log-sum-exp and the loss;
// then the buffer is scaled into (softmax - onehot) / B, which backward only rescales by the
// incoming gradient. Subtracting the max keeps every exp in (0, 1], so logits of +-1e4 give a
// finite loss. Rows run as TBB tasks writing disjoint rows; per-row losses are summed afterwards
// in row order, so the loss does not depend on scheduling.
#include "ops/softmax_cross_entropy.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

// GCC 12 reports false uninitialised reads inside the AVX-512 intrinsics Eigen's exp and max use
// (_mm512_undefined_ps, GCC PR 105593, fixed in GCC 13); the diagnostic is attributed to the
// intrinsics header, so it is silenced only where that header enters this file.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
#include <algorithm>
#include <cmath>

namespace tunecnn {
namespace {

template <class T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using MutRow = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

void check_logits(const Tensor& logits) {
  TUNECNN_CHECK(logits.ndim() == 2 && logits.dim(1) > 0,
                "softmax expects logits [batch, classes], got ", shape_str(logits.shape()));
}

void check_labels(const Tensor& logits, const std::vector<std::int32_t>& labels) {
  TUNECNN_CHECK(static_cast<std::int64_t>(labels.size()) == logits.dim(0), labels.size(),
                " labels for logits ", shape_str(logits.shape()));
  const std::int64_t classes = logits.dim(1);
  for (std::size_t row = 0; row < labels.size(); ++row)
    TUNECNN_CHECK(labels[row] >= 0 && labels[row] < classes, "label ", labels[row], " in row ", row,
                  " is outside [0, ", classes, ")");
}

// Rows per task: enough work to amortise the task, at least one row.
std::int64_t row_grain(std::int64_t classes) {
  return std::max<std::int64_t>(1, 4096 / classes);
}

template <class Body>
void for_rows(const Tensor& logits, Body body) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, logits.dim(0), row_grain(logits.dim(1))),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t row = r.begin(); row < r.end(); ++row) body(row);
                    });
}

// Writes exp(x - max) into out and returns log(sum(exp(x))).
template <class T>
T shifted_exp(const T* x, T* out, Eigen::Index classes) {
  ConstRow<T> in(x, classes);
  const T max = in.maxCoeff();
  MutRow<T> e(out, classes);
  e = (in - max).exp();
  return max + std::log(e.sum());
}

}  // namespace

double softmax_cross_entropy_forward(const Tensor& logits, const std::vector<std::int32_t>& labels,
                                     Tensor& grad) {
  check_logits(logits);
  check_labels(logits, labels);
  TUNECNN_CHECK(grad.shape() == logits.shape() && grad.dtype() == logits.dtype(),
                "softmax_cross_entropy gradient ", grad.describe(), " does not match logits ",
                logits.describe());
  const std::int64_t batch = logits.dim(0), classes = logits.dim(1);
  std::vector<double> row_loss(static_cast<std::size_t>(batch));
  dispatch_dtype(logits.dtype(), [&]<class T>() {
    const T inv_batch = T(1) / static_cast<T>(batch);
    for_rows(logits, [&](std::int64_t row) {
      const T* x = logits.data<T>() + row * classes;
      T* g = grad.data<T>() + row * classes;
      const T lse = shifted_exp(x, g, classes);
      const std::int32_t label = labels[static_cast<std::size_t>(row)];
      row_loss[static_cast<std::size_t>(row)] = static_cast<double>(lse - x[label]);
      MutRow<T> gr(g, classes);
      gr *= inv_batch / gr.sum();
      g[label] -= inv_batch;
    });
  });
  double total = 0;
  for (double l : row_loss) total += l;
  return batch == 0 ? 0.0 : total / static_cast<double>(batch);
}

void softmax(const Tensor& logits, Tensor& probs) {
  check_logits(logits);
  if (!probs.defined()) probs = Tensor::empty(logits.shape(), logits.dtype());
  TUNECNN_CHECK(probs.shape() == logits.shape() && probs.dtype() == logits.dtype(),
                "softmax output ", probs.describe(), " does not match logits ", logits.describe());
  const std::int64_t classes = logits.dim(1);
  dispatch_dtype(logits.dtype(), [&]<class T>() {
    for_rows(logits, [&](std::int64_t row) {
      T* p = probs.data<T>() + row * classes;
      shifted_exp(logits.data<T>() + row * classes, p, classes);
      MutRow<T> pr(p, classes);
      pr /= pr.sum();
    });
  });
}

std::vector<std::int32_t> argmax_rows(const Tensor& logits) {
  check_logits(logits);
  const std::int64_t batch = logits.dim(0), classes = logits.dim(1);
  std::vector<std::int32_t> out(static_cast<std::size_t>(batch));
  dispatch_dtype(logits.dtype(), [&]<class T>() {
    for (std::int64_t row = 0; row < batch; ++row) {
      const T* x = logits.data<T>() + row * classes;
      std::int32_t best = 0;
      for (std::int64_t c = 1; c < classes; ++c)
        if (x[c] > x[best]) best = static_cast<std::int32_t>(c);
      out[static_cast<std::size_t>(row)] = best;
    }
  });
  return out;
}

Variable softmax_cross_entropy(const Variable& logits, const std::vector<std::int32_t>& labels) {
  Tensor grad = Tensor::empty(logits.data().shape(), logits.data().dtype());
  const double loss = softmax_cross_entropy_forward(logits.data(), labels, grad);
  Tensor out = Tensor::full({1}, loss, logits.data().dtype());
  auto backward = [grad](std::vector<Variable>& in, const Tensor& dy) {
    Tensor dx = grad.clone();
    dispatch_dtype(dx.dtype(), [&]<class T>() {
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dx.data<T>(), dx.numel()) *= dy.data<T>()[0];
    });
    in[0].add_grad(dx);
  };
  return Variable(std::move(out), {logits}, backward);
}

}  // namespace tunecnn
