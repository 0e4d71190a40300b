#pragma once
// Elementwise GPU work as one device lambda per element, run with a grid-stride loop on the compute
// stream (needs nvcc's --extended-lambda, set in cmake/cuda.cmake). Simple kernels: the tuned ones
// are separate solvers. nvcc refuses device lambdas inside generic lambdas, so dtype dispatch in
// CUDA sources goes through function templates: `if (t.dtype() == DType::f64) return f<double>(..)`.
#include <cstdint>

#include "core/cuda_check.h"

namespace tunecnn {

// A grid-stride loop's start and step: `for (e = first_index(); e < n; e += grid_stride())`.
__device__ inline std::int64_t first_index() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::int64_t grid_stride() {
  return static_cast<std::int64_t>(gridDim.x) * blockDim.x;
}

template <class Fn>
__global__ void elementwise_kernel(std::int64_t n, Fn fn) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) fn(i);
}

template <class Fn>
void launch_elementwise(std::int64_t n, Fn fn) {
  if (n <= 0) return;
  elementwise_kernel<<<cuda_blocks(n), kCudaThreads, 0, cuda_stream()>>>(n, fn);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

}  // namespace tunecnn
