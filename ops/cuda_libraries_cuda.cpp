// One cuBLAS and one cuDNN handle per process, created on first use and never destroyed: their
// destructors would run after the driver has shut down at exit. Both run on the compute stream,
// so library calls and tunecnn's kernels stay in one order.
#include "ops/cuda_libraries.h"

namespace tunecnn {

cublasHandle_t cublas_handle() {
  static const cublasHandle_t handle = [] {
    cublasHandle_t created = nullptr;
    TUNECNN_CUBLAS_CHECK(cublasCreate(&created));
    TUNECNN_CUBLAS_CHECK(cublasSetStream(created, cuda_stream()));
    // Bit-for-bit repeatable results: no atomics-based reductions inside cuBLAS.
    TUNECNN_CUBLAS_CHECK(cublasSetAtomicsMode(created, CUBLAS_ATOMICS_NOT_ALLOWED));
    return created;
  }();
  return handle;
}

cudnnHandle_t cudnn_handle() {
  static const cudnnHandle_t handle = [] {
    cudnnHandle_t created = nullptr;
    TUNECNN_CUDNN_CHECK(cudnnCreate(&created));
    TUNECNN_CUDNN_CHECK(cudnnSetStream(created, cuda_stream()));
    return created;
  }();
  return handle;
}

}  // namespace tunecnn
