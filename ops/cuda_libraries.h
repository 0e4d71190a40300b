#pragma once
// For CUDA sources only: the process's cuBLAS and cuDNN handles, bound to the compute stream
// (cuda_stream()), and checks that turn a failed library call into a tunecnn::Error naming the
// call and the library's own message.
#include <cublas_v2.h>
#include <cudnn.h>

#include "core/cuda_check.h"

#define TUNECNN_CUBLAS_CHECK(expr)                                                        \
  do {                                                                                    \
    const cublasStatus_t status_ = (expr);                                                \
    TUNECNN_CHECK(status_ == CUBLAS_STATUS_SUCCESS, #expr, " failed: ",                   \
                  cublasGetStatusString(status_));                                        \
  } while (0)

#define TUNECNN_CUDNN_CHECK(expr)                                                         \
  do {                                                                                    \
    const cudnnStatus_t status_ = (expr);                                                 \
    TUNECNN_CHECK(status_ == CUDNN_STATUS_SUCCESS, #expr, " failed: ",                    \
                  cudnnGetErrorString(status_));                                          \
  } while (0)

namespace tunecnn {

cublasHandle_t cublas_handle();
cudnnHandle_t cudnn_handle();

// cuBLAS's strided-batched GEMM on the process's handle, one name for float and double.
inline void gemm_strided_batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                 const float* alpha, const float* a, int lda, long long stride_a,
                                 const float* b, int ldb, long long stride_b, const float* beta,
                                 float* c, int ldc, long long stride_c, int batch) {
  TUNECNN_CUBLAS_CHECK(cublasSgemmStridedBatched(cublas_handle(), ta, tb, m, n, k, alpha, a, lda,
                                                 stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                                                 batch));
}

inline void gemm_strided_batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                                 const double* alpha, const double* a, int lda, long long stride_a,
                                 const double* b, int ldb, long long stride_b, const double* beta,
                                 double* c, int ldc, long long stride_c, int batch) {
  TUNECNN_CUBLAS_CHECK(cublasDgemmStridedBatched(cublas_handle(), ta, tb, m, n, k, alpha, a, lda,
                                                 stride_a, b, ldb, stride_b, beta, c, ldc, stride_c,
                                                 batch));
}

}  // namespace tunecnn
