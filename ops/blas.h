#pragma once
// Row-major GEMM on OpenBLAS: C = alpha * op(A) * op(B) + beta * C, op(A) is m x k, op(B) k x n.
// OpenBLAS always runs single-threaded (see core/threading.h); gemm() splits large products
// over TBB itself, in fixed row blocks so results do not depend on scheduling.
namespace tunecnn {

template <class T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda,
          const T* b, int ldb, T beta, T* c, int ldc);

// The same product as one single-threaded OpenBLAS call, for callers already inside a TBB task.
template <class T>
void gemm_serial(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda,
                 const T* b, int ldb, T beta, T* c, int ldc);

namespace cuda {
// The same row-major product on device pointers through cuBLAS, on the compute stream
// (ops/blas.cu; CUDA builds only).
template <class T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda,
          const T* b, int ldb, T beta, T* c, int ldc);
}  // namespace cuda

}  // namespace tunecnn
