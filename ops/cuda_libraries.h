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

}  // namespace tunecnn
