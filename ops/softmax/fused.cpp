// Fused softmax cross-entropy (Li et al., SC'16: one kernel instead of cuDNN's five, the row kept
// on chip). Per row: the max, exp(x - max) written straight into the gradient buffer and summed,
// the log-sum-exp and the loss, then the buffer scaled in place into (softmax - onehot) / rows.
// The logits are read once from memory and the gradient written once; the re-reads of the row hit
// L1/L2, because a row is processed in chunks of kFusedChunkClasses (16 KiB of f32). Subtracting
// the max keeps every exp in (0, 1], so logits of +-1e4 give a finite loss.
//
// Parallelism: whole rows are TBB tasks. With few long rows (fused_softmax_splits_rows) that
// leaves cores idle, so the chunks of each row become the tasks instead: a parallel max, a
// parallel exp-and-sum, then a parallel normalise, with the per-chunk partials combined in chunk
// order. The serial row path combines the same chunks in the same order, so both paths give
// bit-identical results.
#include "ops/softmax/fused.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "core/threading.h"
#include "ops/softmax/eigen_rows.h"

namespace tunecnn {
namespace {

std::int64_t chunks_per_row(int classes) {
  return (classes + kFusedChunkClasses - 1) / kFusedChunkClasses;
}

// One chunk of a row: [begin, begin + size).
struct Chunk {
  std::int64_t begin, size;
};

Chunk chunk_of(int classes, std::int64_t chunk) {
  const std::int64_t begin = chunk * kFusedChunkClasses;
  return {begin, std::min<std::int64_t>(kFusedChunkClasses, classes - begin)};
}

// Fixed-size blocks of two AVX-512 registers (128 bytes), so that one loop both writes
// exp(x - max) and adds it up, instead of a second sweep for the sum.
template <class T>
inline constexpr int kBlock = 128 / sizeof(T);
template <class T>
using Block = Eigen::Array<T, kBlock<T>, 1>;

template <class T>
T chunk_max(const T* x, Chunk c) {
  return ConstRow<T>(x + c.begin, c.size).maxCoeff();
}

// Writes exp(x - max) into g and returns its sum (per-lane partial sums, then the tail, in a
// fixed order).
template <class T>
T chunk_exp_sum(const T* x, T* g, Chunk c, T max) {
  const T* p = x + c.begin;
  T* q = g + c.begin;
  const std::int64_t blocks = c.size / kBlock<T>, done = blocks * kBlock<T>;
  Block<T> acc = Block<T>::Zero();
  for (std::int64_t b = 0; b < blocks; ++b) {
    const Block<T> e = (Eigen::Map<const Block<T>>(p + b * kBlock<T>) - max).exp();
    Eigen::Map<Block<T>>(q + b * kBlock<T>) = e;
    acc += e;
  }
  T sum = acc.sum();
  if (done < c.size) {
    MutRow<T> tail(q + done, c.size - done);
    tail = (ConstRow<T>(p + done, c.size - done) - max).exp();
    sum += tail.sum();
  }
  return sum;
}

template <class T>
void chunk_scale(T* g, Chunk c, T scale) {
  MutRow<T>(g + c.begin, c.size) *= scale;
}

// The row's loss, log(sum(exp(x))) - x[label], from its max and its sum of exp(x - max).
template <class T>
double row_loss(const T* x, std::int32_t label, T max, T sum) {
  return static_cast<double>(max + std::log(sum) - x[label]);
}

template <class T>
void run_rows(const SoftmaxProblem& p, const T* logits, const std::vector<std::int32_t>& labels,
              T* grad, std::vector<double>& loss) {
  const int classes = p.classes;
  const std::int64_t chunks = chunks_per_row(classes);
  const T inv_rows = T(1) / static_cast<T>(p.rows);
  tbb::parallel_for(
      tbb::blocked_range<std::int64_t>(0, p.rows, softmax_row_grain(classes)),
      [&](const tbb::blocked_range<std::int64_t>& r) {
        for (std::int64_t row = r.begin(); row < r.end(); ++row) {
          const T* x = logits + row * classes;
          T* g = grad + row * classes;
          const std::int32_t label = labels[static_cast<std::size_t>(row)];
          T max = chunk_max(x, chunk_of(classes, 0));
          for (std::int64_t c = 1; c < chunks; ++c)
            max = std::max(max, chunk_max(x, chunk_of(classes, c)));
          T sum = 0;
          for (std::int64_t c = 0; c < chunks; ++c)
            sum += chunk_exp_sum(x, g, chunk_of(classes, c), max);
          loss[static_cast<std::size_t>(row)] = row_loss(x, label, max, sum);
          const T scale = inv_rows / sum;
          for (std::int64_t c = 0; c < chunks; ++c) chunk_scale(g, chunk_of(classes, c), scale);
          g[label] -= inv_rows;
        }
      });
}

// Few long rows: (row, chunk) pairs are the tasks of three parallel sweeps.
template <class T>
void run_split(const SoftmaxProblem& p, const T* logits, const std::vector<std::int32_t>& labels,
               T* grad, std::vector<double>& loss) {
  const int classes = p.classes;
  const std::int64_t chunks = chunks_per_row(classes), tasks = p.rows * chunks;
  const T inv_rows = T(1) / static_cast<T>(p.rows);
  std::vector<T> partial(static_cast<std::size_t>(tasks));
  std::vector<T> row_max(static_cast<std::size_t>(p.rows)), row_scale(row_max.size());
  auto for_chunks = [&](auto body) {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, tasks, 1),
                      [&](const tbb::blocked_range<std::int64_t>& r) {
                        for (std::int64_t t = r.begin(); t < r.end(); ++t)
                          body(t / chunks, chunk_of(classes, t % chunks),
                               static_cast<std::size_t>(t));
                      });
  };
  for_chunks([&](std::int64_t row, Chunk c, std::size_t t) {
    partial[t] = chunk_max(logits + row * classes, c);
  });
  for (std::int64_t row = 0; row < p.rows; ++row) {
    const std::size_t first = static_cast<std::size_t>(row * chunks);
    row_max[static_cast<std::size_t>(row)] =
        *std::max_element(partial.begin() + first, partial.begin() + first + chunks);
  }
  for_chunks([&](std::int64_t row, Chunk c, std::size_t t) {
    partial[t] = chunk_exp_sum(logits + row * classes, grad + row * classes, c,
                               row_max[static_cast<std::size_t>(row)]);
  });
  for (std::int64_t row = 0; row < p.rows; ++row) {
    const std::size_t r = static_cast<std::size_t>(row), first = r * chunks;
    T sum = 0;
    for (std::int64_t c = 0; c < chunks; ++c) sum += partial[first + c];  // in chunk order
    loss[r] = row_loss(logits + row * classes, labels[r], row_max[r], sum);
    row_scale[r] = inv_rows / sum;
  }
  for_chunks([&](std::int64_t row, Chunk c, std::size_t) {
    chunk_scale(grad + row * classes, c, row_scale[static_cast<std::size_t>(row)]);
  });
  for (std::int64_t row = 0; row < p.rows; ++row)
    grad[row * classes + labels[static_cast<std::size_t>(row)]] -= inv_rows;
}

}  // namespace

bool fused_softmax_splits_rows(const SoftmaxProblem& problem, int threads) {
  return problem.rows < 2 * threads && problem.classes >= kFusedSplitMinClasses;
}

bool FusedSoftmaxSolver::applicable(const SoftmaxProblem& problem, std::string* why) const {
  return runs_here(problem, why) && softmax_problem_well_formed(problem, why);
}

double FusedSoftmaxSolver::run(const SoftmaxProblem& problem, const Tensor& logits,
                               const std::vector<std::int32_t>& labels, Tensor& grad) const {
  check_softmax_call(problem, logits, labels, grad);
  std::vector<double> loss(static_cast<std::size_t>(problem.rows));
  const bool split = fused_softmax_splits_rows(problem, num_threads());
  dispatch_dtype(problem.dt, [&]<class T>() {
    if (split)
      run_split<T>(problem, logits.data<T>(), labels, grad.data<T>(), loss);
    else
      run_rows<T>(problem, logits.data<T>(), labels, grad.data<T>(), loss);
  });
  return mean_row_loss(loss);
}

}  // namespace tunecnn
