// The five-pass softmax cross-entropy baseline, the way Li et al. (SC'16) describe cuDNN's
// softmax: each step is its own sweep over the WHOLE batch, with the intermediate results going
// through memory between sweeps:
//   1. the max of each row into a [rows] buffer;
//   2. logits - max into a [rows, classes] buffer;
//   3. exp of that buffer, in place;
//   4. the sum of each row into a [rows] buffer;
//   5. the buffer divided by its row sum: the probabilities;
// then, as the separate loss layer of an unfused framework, a sixth sweep reads the probabilities
// and writes the gradient (p - onehot) / rows. The loss is max + log(sum) - x[label] from the
// buffers of steps 1 and 4 rather than -log(p[label]), which underflows to infinity for extreme
// logits; that costs O(1) per row, not a sweep.
//
// Every sweep is parallel over rows with the same grain as the fused solver and uses the same
// Eigen vectorised operations, so the difference between the two is the fusion alone: the
// baseline is not made slow on purpose.
#include "ops/softmax/five_pass.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <cmath>

#include "ops/softmax/eigen_rows.h"

namespace tunecnn {
namespace {

// One sweep over all rows, parallel over rows.
template <class Body>
void sweep(const SoftmaxProblem& p, Body body) {
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, p.rows, softmax_row_grain(p.classes)),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t row = r.begin(); row < r.end(); ++row) body(row);
                    });
}

template <class T>
void run_passes(const SoftmaxProblem& p, const T* logits, const std::vector<std::int32_t>& labels,
                T* probs, T* grad, std::vector<double>& loss) {
  const std::int64_t n = p.classes;
  const std::size_t rows = static_cast<std::size_t>(p.rows);
  std::vector<T> row_max(rows), row_sum(rows);
  auto in = [&](std::int64_t row) { return ConstRow<T>(logits + row * n, n); };
  auto buf = [&](std::int64_t row) { return MutRow<T>(probs + row * n, n); };
  sweep(p, [&](std::int64_t row) { row_max[static_cast<std::size_t>(row)] = in(row).maxCoeff(); });
  sweep(p, [&](std::int64_t row) { buf(row) = in(row) - row_max[static_cast<std::size_t>(row)]; });
  sweep(p, [&](std::int64_t row) { buf(row) = buf(row).exp(); });
  sweep(p, [&](std::int64_t row) { row_sum[static_cast<std::size_t>(row)] = buf(row).sum(); });
  sweep(p, [&](std::int64_t row) { buf(row) /= row_sum[static_cast<std::size_t>(row)]; });
  const T inv_rows = T(1) / static_cast<T>(p.rows);
  sweep(p, [&](std::int64_t row) {
    const std::size_t r = static_cast<std::size_t>(row);
    const std::int32_t label = labels[r];
    loss[r] = static_cast<double>(row_max[r] + std::log(row_sum[r]) - logits[row * n + label]);
    MutRow<T>(grad + row * n, n) = buf(row) * inv_rows;
    grad[row * n + label] -= inv_rows;
  });
}

}  // namespace

bool FivePassSoftmaxSolver::applicable(const SoftmaxProblem& problem, std::string* why) const {
  return runs_here(problem, why) && softmax_problem_well_formed(problem, why);
}

double FivePassSoftmaxSolver::run(const SoftmaxProblem& problem, const Tensor& logits,
                                  const std::vector<std::int32_t>& labels, Tensor& grad) const {
  check_softmax_call(problem, logits, labels, grad);
  Tensor probs = Tensor::empty(problem.logits_shape(), problem.dt);
  std::vector<double> loss(static_cast<std::size_t>(problem.rows));
  dispatch_dtype(problem.dt, [&]<class T>() {
    run_passes<T>(problem, logits.data<T>(), labels, probs.data<T>(), grad.data<T>(), loss);
  });
  return mean_row_loss(loss);
}

}  // namespace tunecnn
