// The softmax cross-entropy op over the planned solver (ops/softmax/), plus the evaluation-time
// softmax and argmax. The op's forward computes the loss and the gradient (softmax - onehot) / B
// at once; backward only rescales that gradient by the incoming one. On the GPU the logits and
// the gradient stay there; the labels come from the host and the scalar loss goes back to it.
#include "ops/softmax_cross_entropy.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "core/device.h"
#include "core/tensor_math.h"
#include "ops/softmax/eigen_rows.h"
#include "ops/softmax/plan.h"

namespace tunecnn {
namespace {

void check_logits(const Tensor& logits) {
  TUNECNN_CHECK(logits.ndim() == 2 && logits.dim(1) > 0,
                "softmax expects logits [batch, classes], got ", shape_str(logits.shape()));
}

template <class Body>
void for_rows(const Tensor& logits, Body body) {
  const std::int64_t grain = softmax_row_grain(static_cast<int>(logits.dim(1)));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, logits.dim(0), grain),
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
  FirstApplicableSoftmaxPlanner untuned;
  return softmax_cross_entropy_forward(logits, labels, grad, untuned);
}

double softmax_cross_entropy_forward(const Tensor& logits, const std::vector<std::int32_t>& labels,
                                     Tensor& grad, SoftmaxPlanner& planner) {
  const SoftmaxProblem problem = softmax_problem_of(logits);
  if (problem.rows == 0) {  // an empty batch: no solver to run, the mean of nothing is 0
    TUNECNN_CHECK(labels.empty(), labels.size(), " labels for logits ", shape_str(logits.shape()));
    return 0.0;
  }
  const SoftmaxSolver& solver = planner.plan(problem);
  return run_softmax(solver, problem, logits, labels, grad);
}

void softmax(const Tensor& logits, Tensor& probs) {
  check_logits(logits);
  if (!probs.defined()) probs = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
  TUNECNN_CHECK(probs.shape() == logits.shape() && probs.dtype() == logits.dtype(),
                "softmax output ", probs.describe(), " does not match logits ", logits.describe());
  check_same_device("softmax", logits, probs);
  TUNECNN_ON_CUDA(logits, cuda::softmax(logits, probs));
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
  if (logits.device() != Device::cpu) return argmax_rows(logits.to(Device::cpu));
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
  FirstApplicableSoftmaxPlanner untuned;
  return softmax_cross_entropy(logits, labels, untuned);
}

Variable softmax_cross_entropy(const Variable& logits, const std::vector<std::int32_t>& labels,
                               SoftmaxPlanner& planner) {
  const Tensor& x = logits.data();
  Tensor grad = Tensor::empty(x.shape(), x.dtype(), x.device());
  const double loss = softmax_cross_entropy_forward(x, labels, grad, planner);
  Tensor out = Tensor::full({1}, loss, x.dtype());
  auto backward = [grad](std::vector<Variable>& in, const Tensor& dy) {
    TUNECNN_CHECK(dy.numel() == 1 && dy.dtype() == grad.dtype(),
                  "softmax_cross_entropy backward: the loss gradient must be one ",
                  to_string(grad.dtype()), " value, got ", dy.describe());
    Tensor dx = grad.clone();
    scale_inplace(dx, sum(dy));  // the one value, read wherever dy lives
    in[0].add_grad(dx);
  };
  return Variable(std::move(out), {logits}, backward);
}

}  // namespace tunecnn
