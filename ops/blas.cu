// Row-major GEMM on cuBLAS, which is column-major: a row-major C (m x n) is the column-major C^T,
// and C^T = op(B)^T op(A)^T, so the product runs as cuBLAS's op(B) * op(A) with the operands and
// the sizes m, n swapped and every leading dimension kept.
#include "ops/blas.h"
#include "ops/cuda_libraries.h"

namespace tunecnn::cuda {
namespace {

cublasOperation_t op(bool transposed) { return transposed ? CUBLAS_OP_T : CUBLAS_OP_N; }

void column_major_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                       const float* alpha, const float* a, int lda, const float* b, int ldb,
                       const float* beta, float* c, int ldc) {
  TUNECNN_CUBLAS_CHECK(
      cublasSgemm(cublas_handle(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

void column_major_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                       const double* alpha, const double* a, int lda, const double* b, int ldb,
                       const double* beta, double* c, int ldc) {
  TUNECNN_CUBLAS_CHECK(
      cublasDgemm(cublas_handle(), ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

}  // namespace

template <class T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda,
          const T* b, int ldb, T beta, T* c, int ldc) {
  if (m == 0 || n == 0) return;
  // alpha and beta are read from the host (cuBLAS's default pointer mode).
  column_major_gemm(op(trans_b), op(trans_a), n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc);
}

template void gemm<float>(bool, bool, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
template void gemm<double>(bool, bool, int, int, int, double, const double*, int, const double*,
                           int, double, double*, int);

}  // namespace tunecnn::cuda
