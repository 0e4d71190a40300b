#include "ops/blas.h"

#include <cblas.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

namespace tunecnn {
namespace {

// Below this many multiply-adds a single call beats the cost of splitting.
constexpr double kParallelMinMacs = 2e6;

const bool g_openblas_single_threaded = [] {
  openblas_set_num_threads(1);
  return true;
}();

CBLAS_TRANSPOSE trans(bool t) { return t ? CblasTrans : CblasNoTrans; }

void blas_call(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
               const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans(ta), trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_call(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
               const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, trans(ta), trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

template <class T>
void gemm_serial(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda,
                 const T* b, int ldb, T beta, T* c, int ldc) {
  if (m == 0 || n == 0) return;
  (void)g_openblas_single_threaded;
  blas_call(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
void gemm(bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a, int lda,
          const T* b, int ldb, T beta, T* c, int ldc) {
  const double macs = static_cast<double>(m) * n * k;
  const int blocks = macs < kParallelMinMacs ? 1 : 4 * tbb::this_task_arena::max_concurrency();
  // Split the longer of C's dimensions; each block is an independent product.
  if (blocks == 1 || std::max(m, n) < 2 * blocks) {
    gemm_serial(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const bool split_rows = m >= n;
  const int extent = split_rows ? m : n;
  const int step = (extent + blocks - 1) / blocks;
  tbb::parallel_for(0, (extent + step - 1) / step, [&](int block) {
    const int begin = block * step;
    const int len = std::min(step, extent - begin);
    if (split_rows) {
      const T* a_part = trans_a ? a + begin : a + static_cast<long>(begin) * lda;
      gemm_serial(trans_a, trans_b, len, n, k, alpha, a_part, lda, b, ldb, beta,
                  c + static_cast<long>(begin) * ldc, ldc);
    } else {
      const T* b_part = trans_b ? b + static_cast<long>(begin) * ldb : b + begin;
      gemm_serial(trans_a, trans_b, m, len, k, alpha, a, lda, b_part, ldb, beta, c + begin, ldc);
    }
  });
}

template void gemm<float>(bool, bool, int, int, int, float, const float*, int, const float*, int,
                          float, float*, int);
template void gemm<double>(bool, bool, int, int, int, double, const double*, int, const double*,
                           int, double, double*, int);
template void gemm_serial<float>(bool, bool, int, int, int, float, const float*, int,
                                 const float*, int, float, float*, int);
template void gemm_serial<double>(bool, bool, int, int, int, double, const double*, int,
                                  const double*, int, double, double*, int);

}  // namespace tunecnn
