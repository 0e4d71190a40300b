#pragma once
// Block-wide reductions for the simple GPU kernels of ops/ (one block per row or per channel):
// each thread brings one partial, combined by a fixed tree in shared memory. No atomics, so a
// given input always gives the same bits, as the CPU kernels promise for a given thread count.
// Launch such kernels with exactly kReduceThreads threads per block.
namespace tunecnn {

inline constexpr int kReduceThreads = 256;

struct SumOp {
  __device__ double operator()(double a, double b) const { return a + b; }
};

// A NaN wins, so a diverging run is not masked (as the CPU kernels' maxima do).
struct MaxOp {
  __device__ double operator()(double a, double b) const { return (b > a || b != b) ? b : a; }
};

template <class Op>
__device__ double block_reduce(double value, Op op) {
  __shared__ double partial[kReduceThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half = kReduceThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      partial[threadIdx.x] = op(partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  const double result = partial[0];
  __syncthreads();  // every thread has read it before the next call overwrites the buffer
  return result;
}

}  // namespace tunecnn
