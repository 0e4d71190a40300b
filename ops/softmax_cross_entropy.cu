// The evaluation-time softmax on the GPU: one block per row (rows beyond the grid loop) finds the
// max, writes exp(x - max) and sums it, then divides, with the reductions in double by a fixed
// tree (ops/cuda_reduce.cuh). Each thread divides only the values it wrote.
#include <cmath>

#include "core/cuda_check.h"
#include "ops/cuda_reduce.cuh"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn::cuda {
namespace {

constexpr int kMaxBlocks = 4096;

__device__ float exp_of(float x) { return expf(x); }
__device__ double exp_of(double x) { return exp(x); }

template <class T>
__global__ void softmax_rows(const T* logits, std::int64_t rows, std::int64_t classes, T* probs) {
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* x = logits + row * classes;
    T* p = probs + row * classes;
    double local_max = -INFINITY;
    for (std::int64_t c = threadIdx.x; c < classes; c += kReduceThreads)
      local_max = MaxOp()(local_max, static_cast<double>(x[c]));
    const T max = static_cast<T>(block_reduce(local_max, MaxOp()));
    double local_sum = 0;
    for (std::int64_t c = threadIdx.x; c < classes; c += kReduceThreads) {
      p[c] = exp_of(x[c] - max);
      local_sum += static_cast<double>(p[c]);
    }
    const T sum = static_cast<T>(block_reduce(local_sum, SumOp()));
    for (std::int64_t c = threadIdx.x; c < classes; c += kReduceThreads) p[c] /= sum;
  }
}

template <class T>
void softmax_as(const Tensor& logits, Tensor& probs) {
  const std::int64_t rows = logits.dim(0);
  if (rows == 0) return;
  const int blocks = static_cast<int>(rows < kMaxBlocks ? rows : kMaxBlocks);
  softmax_rows<T><<<blocks, kReduceThreads, 0, cuda_stream()>>>(
      static_cast<const T*>(logits.raw_data()), rows, logits.dim(1),
      static_cast<T*>(probs.raw_data()));
  TUNECNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void softmax(const Tensor& logits, Tensor& probs) {
  if (logits.dtype() == DType::f64) return softmax_as<double>(logits, probs);
  softmax_as<float>(logits, probs);
}

}  // namespace tunecnn::cuda
