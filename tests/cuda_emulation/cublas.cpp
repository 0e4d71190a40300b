// Host emulation of the cuBLAS calls tunecnn makes: device memory is host memory, so every routine
// is a plain loop on the calling thread. Compiled against the real cublas_v2.h, so the compiler
// checks each signature. Arguments are validated as cuBLAS documents; a rejected call prints one
// line to stderr naming the function and the argument, and returns CUBLAS_STATUS_INVALID_VALUE.
#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
};

extern "C" void tunecnn_emu_check_stream(cudaStream_t, const char* call);  // cudart.cpp

namespace {

cublasStatus_t invalid(const char* fn, const char* what, long long value, const char* rule) {
  std::fprintf(stderr, "fake cuBLAS: %s: invalid %s = %lld (%s) -> CUBLAS_STATUS_INVALID_VALUE\n",
               fn, what, value, rule);
  return CUBLAS_STATUS_INVALID_VALUE;
}

bool valid_op(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// True when two different batch entries of C (m x n, leading dimension ldc, entries stride apart)
// share an element: b * stride == di + dj * ldc for some 0 < b < batch, |di| < m, |dj| < n.
bool outputs_overlap(int m, int n, int ldc, long long stride, int batch) {
  const long long s = stride < 0 ? -stride : stride;
  for (long long b = 1; b < batch; ++b) {
    const long long d = b * s, q = d / ldc;
    for (long long dj = q; dj <= q + 1; ++dj)
      if (dj < n && std::llabs(d - dj * ldc) < m) return true;
  }
  return false;
}

// C_b = alpha op(A_b) op(B_b) + beta C_b, column-major, for b < batch.
template <class T>
cublasStatus_t gemm(const char* fn, cublasHandle_t handle, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k, const T* alpha, const T* A, int lda,
                    long long sa, const T* B, int ldb, long long sb, const T* beta, T* C, int ldc,
                    long long sc, int batch) {
  if (handle == nullptr) {
    std::fprintf(stderr, "fake cuBLAS: %s: null handle -> CUBLAS_STATUS_NOT_INITIALIZED\n", fn);
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  tunecnn_emu_check_stream(handle->stream, fn);  // a handle never given a stream uses stream 0
  const bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  if (!valid_op(ta)) return invalid(fn, "transa", ta, "must be CUBLAS_OP_N, _T or _C");
  if (!valid_op(tb)) return invalid(fn, "transb", tb, "must be CUBLAS_OP_N, _T or _C");
  if (m < 0) return invalid(fn, "m", m, "must be >= 0");
  if (n < 0) return invalid(fn, "n", n, "must be >= 0");
  if (k < 0) return invalid(fn, "k", k, "must be >= 0");
  if (lda < std::max(1, na ? m : k))
    return invalid(fn, "lda", lda, na ? "must be >= max(1, m) for transa N" : "must be >= max(1, k) for transa T");
  if (ldb < std::max(1, nb ? k : n))
    return invalid(fn, "ldb", ldb, nb ? "must be >= max(1, k) for transb N" : "must be >= max(1, n) for transb T");
  if (ldc < std::max(1, m)) return invalid(fn, "ldc", ldc, "must be >= max(1, m)");
  if (batch < 0) return invalid(fn, "batchCount", batch, "must be >= 0");
  if (alpha == nullptr) return invalid(fn, "alpha", 0, "null pointer");
  if (beta == nullptr) return invalid(fn, "beta", 0, "null pointer");
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (C == nullptr) return invalid(fn, "C", 0, "null pointer");
  if (batch > 1 && outputs_overlap(m, n, ldc, sc, batch))
    std::fprintf(stderr,
                 "fake cuBLAS: %s: WARNING: C matrices of different batch entries overlap "
                 "(m=%d n=%d ldc=%d strideC=%lld batchCount=%d): a data race on a GPU\n",
                 fn, m, n, ldc, sc, batch);
  const double a = *alpha, bt = *beta;
  for (int b = 0; b < batch; ++b) {
    const T* Ab = A + b * sa;
    const T* Bb = B + b * sb;
    T* Cb = C + b * sc;
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        double acc = 0;
        if (a != 0)  // like BLAS, alpha == 0 reads neither A nor B
          for (int l = 0; l < k; ++l)
            acc += static_cast<double>(na ? Ab[i + static_cast<long long>(l) * lda]
                                          : Ab[l + static_cast<long long>(i) * lda]) *
                   static_cast<double>(nb ? Bb[l + static_cast<long long>(j) * ldb]
                                          : Bb[j + static_cast<long long>(l) * ldb]);
        T& c = Cb[i + static_cast<long long>(j) * ldc];
        // beta == 0: C is not read, so NaN or garbage there does not propagate.
        c = static_cast<T>(a * acc + (bt == 0 ? 0.0 : bt * static_cast<double>(c)));
      }
  }
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
    case MAJOR_VERSION: *value = CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
  }
  return CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED)
    return invalid("cublasSetAtomicsMode", "mode", mode, "not a cublasAtomicsMode_t");
  handle->atomics = mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "error detected trying to check the license";
  }
  return "unknown error";
}

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k,
                                           const float* alpha, const float* A, int lda,
                                           const float* B, int ldb, const float* beta, float* C,
                                           int ldc) {
  return gemm("cublasSgemm_v2", handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta,
              C, ldc, 0, 1);
}

cublasStatus_t CUBLASWINAPI cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k,
                                           const double* alpha, const double* A, int lda,
                                           const double* B, int ldb, const double* beta, double* C,
                                           int ldc) {
  return gemm("cublasDgemm_v2", handle, transa, transb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta,
              C, ldc, 0, 1);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
    long long int strideB, const float* beta, float* C, int ldc, long long int strideC,
    int batchCount) {
  return gemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA,
              B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t CUBLASWINAPI cublasDgemmStridedBatched(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const double* alpha, const double* A, int lda, long long int strideA, const double* B, int ldb,
    long long int strideB, const double* beta, double* C, int ldc, long long int strideC,
    int batchCount) {
  return gemm("cublasDgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, lda, strideA,
              B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

}  // extern "C"
