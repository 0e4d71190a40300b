// "softmax_fused" on the GPU: one block of kReduceThreads per row (rows beyond the grid loop)
// finds the max, writes exp(x - max) straight into the gradient while summing it, then scales the
// gradient in place into (softmax - onehot) / rows: one kernel, the logits read twice from cache
// and the gradient written once, in the spirit of Li et al.'s fused kernel (SC'16). Each thread
// rescales only the elements it wrote, so the passes need no barrier besides the reductions'.
// The max and the sum are reduced in double by a fixed tree (ops/cuda_reduce.cuh), so results do
// not vary from run to run; each row's loss goes to a device array that comes back to the host
// and is averaged in row order, as on the CPU. Labels are uploaded per call (a few hundred bytes).
// Any rows and classes; no tunables.
#include <cmath>

#include "core/allocator.h"
#include "core/cuda_check.h"
#include "core/cuda_runtime.h"
#include "ops/cuda_reduce.cuh"
#include "ops/softmax/fused.h"
#include "ops/softmax/gpu_rows.h"

namespace tunecnn {
namespace {

constexpr int kMaxBlocks = 4096;

__device__ float exp_of(float x) { return expf(x); }
__device__ double exp_of(double x) { return exp(x); }

template <class T>
__global__ void softmax_xent_rows(const T* logits, const std::int32_t* labels, int rows,
                                  int classes, T* grad, double* row_loss) {
  const T inv_rows = T(1) / static_cast<T>(rows);
  for (int row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = logits + static_cast<std::int64_t>(row) * classes;
    T* g = grad + static_cast<std::int64_t>(row) * classes;
    double local_max = -INFINITY;
    for (int c = threadIdx.x; c < classes; c += kReduceThreads)
      local_max = MaxOp()(local_max, static_cast<double>(x[c]));
    const T max = static_cast<T>(block_reduce(local_max, MaxOp()));
    double local_sum = 0;
    for (int c = threadIdx.x; c < classes; c += kReduceThreads) {
      const T e = exp_of(x[c] - max);
      g[c] = e;
      local_sum += static_cast<double>(e);
    }
    const double sum = block_reduce(local_sum, SumOp());
    const int label = labels[row];
    if (threadIdx.x == 0) row_loss[row] = static_cast<double>(max) + log(sum) - static_cast<double>(x[label]);
    const T scale = inv_rows / static_cast<T>(sum);
    for (int c = threadIdx.x; c < classes; c += kReduceThreads)
      g[c] = c == label ? g[c] * scale - inv_rows : g[c] * scale;
  }
}

template <class T>
void run_typed(const SoftmaxProblem& p, const Tensor& logits, const Storage& labels, Tensor& grad,
               Tensor& row_loss) {
  const int blocks = p.rows < kMaxBlocks ? p.rows : kMaxBlocks;
  softmax_xent_rows<T><<<blocks, kReduceThreads, 0, cuda_stream()>>>(
      static_cast<const T*>(logits.raw_data()), static_cast<const std::int32_t*>(labels.data()),
      p.rows, p.classes, static_cast<T*>(grad.raw_data()),
      static_cast<double*>(row_loss.raw_data()));
  TUNECNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool CudaFusedSoftmaxSolver::applicable(const SoftmaxProblem& problem, std::string* why) const {
  return runs_here(problem, why) && softmax_problem_well_formed(problem, why);
}

double CudaFusedSoftmaxSolver::run(const SoftmaxProblem& problem, const Tensor& logits,
                                   const std::vector<std::int32_t>& labels, Tensor& grad) const {
  check_softmax_call(problem, logits, labels, grad);
  const std::unique_ptr<Storage> device_labels = labels_on_gpu(labels);
  Tensor row_loss = Tensor::empty({problem.rows}, DType::f64, Device::cuda);
  if (problem.dt == DType::f64)
    run_typed<double>(problem, logits, *device_labels, grad, row_loss);
  else
    run_typed<float>(problem, logits, *device_labels, grad, row_loss);
  return mean_row_loss_on_gpu(row_loss);
}

}  // namespace tunecnn
