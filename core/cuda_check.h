#pragma once
// For CUDA sources only (.cu and *_cuda.cpp files): every runtime call is checked and throws
// tunecnn::Error with the call, the CUDA message and the place. Kernels run on one compute stream
// per process (cuda_stream()); host<->device copies are ordered on it too.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "core/error.h"

#define TUNECNN_CUDA_CHECK(expr)                                                            \
  do {                                                                                      \
    const cudaError_t status_ = (expr);                                                     \
    TUNECNN_CHECK(status_ == cudaSuccess, #expr, " failed: ", cudaGetErrorString(status_)); \
  } while (0)

// After a kernel launch: reports a bad launch configuration at the launch, not at the next sync.
#define TUNECNN_CUDA_CHECK_LAUNCH() TUNECNN_CUDA_CHECK(cudaGetLastError())

namespace tunecnn {

// The stream every tunecnn kernel, cuBLAS and cuDNN call runs on (created on first use,
// non-blocking, so it never waits for other libraries' work on the legacy default stream).
cudaStream_t cuda_stream();

// A 1-D launch covering n elements with grid-stride loops: enough blocks to fill the GPU, no more.
inline constexpr int kCudaThreads = 256;
int cuda_blocks(std::int64_t n, int threads = kCudaThreads);

}  // namespace tunecnn
