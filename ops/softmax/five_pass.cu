// "softmax_five_pass" on the GPU: the unfused baseline of Li et al. (SC'16), cuDNN's softmax as
// five kernels, each a sweep over the whole batch through global memory, then the loss layer's
// sweep for the gradient, as five_pass.cpp does on the CPU:
//   1. the max of each row (one block per row) into a [rows] buffer;
//   2. logits - max into a [rows, classes] buffer (one thread per element);
//   3. exp of that buffer, in place;
//   4. the sum of each row (one block per row) into a [rows] buffer;
//   5. the buffer divided by its row sum: the probabilities;
//   6. the gradient (p - onehot) / rows, and each row's loss max + log(sum) - x[label], written by
//      the thread of the label's element.
// The row reductions are the fused kernel's (double, a fixed tree: ops/cuda_reduce.cuh), so the
// two solvers differ in the fusion only and each gives the same bits on every run.
#include <cmath>

#include "core/allocator.h"
#include "core/cuda_check.h"
#include "core/cuda_elementwise.cuh"
#include "core/cuda_runtime.h"
#include "ops/cuda_reduce.cuh"
#include "ops/softmax/five_pass.h"
#include "ops/softmax/gpu_rows.h"

namespace tunecnn {
namespace {

constexpr int kMaxBlocks = 4096;

__device__ float exp_of(float x) { return expf(x); }
__device__ double exp_of(double x) { return exp(x); }
__device__ float log_of(float x) { return logf(x); }
__device__ double log_of(double x) { return log(x); }

// Steps 1 and 4: out[row] = the reduction of the row, one block per row (rows beyond the grid
// loop).
template <class T, class Op>
__global__ void reduce_rows(const T* in, int rows, int classes, Op op, double identity, T* out) {
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = in + static_cast<std::int64_t>(row) * classes;
    double local = identity;
    for (int c = threadIdx.x; c < classes; c += kReduceThreads) local = op(local, static_cast<double>(x[c]));
    const double total = block_reduce(local, op);
    if (threadIdx.x == 0) out[row] = static_cast<T>(total);
  }
}

template <class T, class Op>
void launch_reduce_rows(const T* in, const SoftmaxProblem& p, Op op, double identity, T* out) {
  const int blocks = p.rows < kMaxBlocks ? p.rows : kMaxBlocks;
  reduce_rows<T, Op><<<blocks, kReduceThreads, 0, cuda_stream()>>>(in, p.rows, p.classes, op, identity, out);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

// The row of element i of a [rows, classes] buffer.
__device__ std::int64_t row_of(std::int64_t i, int classes) { return i / classes; }

template <class T>
void run_passes(const SoftmaxProblem& p, const T* logits, const std::int32_t* labels, T* probs,
                T* row_max, T* row_sum, T* grad, double* row_loss) {
  const std::int64_t n = static_cast<std::int64_t>(p.rows) * p.classes;
  const int classes = p.classes;
  launch_reduce_rows(logits, p, MaxOp(), -INFINITY, row_max);
  launch_elementwise(n, [=] __device__(std::int64_t i) { probs[i] = logits[i] - row_max[row_of(i, classes)]; });
  launch_elementwise(n, [=] __device__(std::int64_t i) { probs[i] = exp_of(probs[i]); });
  launch_reduce_rows(probs, p, SumOp(), 0.0, row_sum);
  launch_elementwise(n, [=] __device__(std::int64_t i) { probs[i] /= row_sum[row_of(i, classes)]; });
  const T inv_rows = T(1) / static_cast<T>(p.rows);
  launch_elementwise(n, [=] __device__(std::int64_t i) {
    const std::int64_t row = row_of(i, classes);
    const bool is_label = i - row * classes == labels[row];
    grad[i] = is_label ? probs[i] * inv_rows - inv_rows : probs[i] * inv_rows;
    if (is_label)
      row_loss[row] = static_cast<double>(row_max[row]) + static_cast<double>(log_of(row_sum[row])) -
                      static_cast<double>(logits[i]);
  });
}

}  // namespace

bool CudaFivePassSoftmaxSolver::applicable(const SoftmaxProblem& problem, std::string* why) const {
  return runs_here(problem, why) && softmax_problem_well_formed(problem, why);
}

double CudaFivePassSoftmaxSolver::run(const SoftmaxProblem& problem, const Tensor& logits,
                                      const std::vector<std::int32_t>& labels, Tensor& grad) const {
  check_softmax_call(problem, logits, labels, grad);
  const std::unique_ptr<Storage> device_labels = labels_on_gpu(labels);
  Tensor probs = Tensor::empty(problem.logits_shape(), problem.dt, Device::cuda);
  Tensor row_max = Tensor::empty({problem.rows}, problem.dt, Device::cuda);
  Tensor row_sum = Tensor::empty({problem.rows}, problem.dt, Device::cuda);
  Tensor row_loss = Tensor::empty({problem.rows}, DType::f64, Device::cuda);
  const auto* label_data = static_cast<const std::int32_t*>(device_labels->data());
  const auto passes = [&](auto zero) {
    using T = decltype(zero);
    run_passes<T>(problem, static_cast<const T*>(logits.raw_data()), label_data,
                  static_cast<T*>(probs.raw_data()), static_cast<T*>(row_max.raw_data()),
                  static_cast<T*>(row_sum.raw_data()), static_cast<T*>(grad.raw_data()),
                  static_cast<double*>(row_loss.raw_data()));
  };
  if (problem.dt == DType::f64)
    passes(0.0);
  else
    passes(0.0f);
  return mean_row_loss_on_gpu(row_loss);
}

}  // namespace tunecnn
