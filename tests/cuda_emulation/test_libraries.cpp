// Checks the host fakes tests/cuda_emulation/cublas.cpp and cudnn.cpp through the real headers:
// GEMM (four op combinations, ld > rows, strided batch, beta == 0 over NaN, argument validation)
// against a row-major reference; convolution forward against a direct reference, backward data
// and filter by the transpose identity <conv(x,w), dy> == <x, bwd_data(w,dy)> ==
// <w, bwd_filter(x,dy)>. Last, that work on the legacy default stream aborts once a non-blocking
// stream exists.
#include <cublas_v2.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/cuda_emulation/device.h"  // last: it redefines CUDA's keywords for host code

namespace tunecnn {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

template <class T>
std::vector<T> random_vec(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(d(rng));
  return v;
}

// The larger error, NaN once either is: std::max alone would drop a NaN, and a NaN is exactly
// what reading an unwritten or skipped element produces here.
double worse(double worst, double error) {
  return std::isnan(worst) || std::isnan(error) ? kNaN : std::max(worst, error);
}

template <class Status>
struct Outcome {
  Status status;
  std::string said;  // stderr: the fakes print one line per refusal or warning
};

template <class F>
Outcome<decltype(std::declval<F>()())> capture_stderr(F call) {
  ::testing::internal::CaptureStderr();
  const auto status = call();
  return {status, ::testing::internal::GetCapturedStderr()};
}

// A refusal must say why in one line, naming what it blames, or a caller cannot act on it.
template <class Status, class F>
void expect_refused(Status status, const std::string& blamed, F call) {
  const auto outcome = capture_stderr(call);
  EXPECT_EQ(outcome.status, status) << outcome.said;
  EXPECT_EQ(std::count(outcome.said.begin(), outcome.said.end(), '\n'), 1) << outcome.said;
  EXPECT_NE(outcome.said.find(blamed), std::string::npos) << outcome.said;
}

// ---------------- cuBLAS ----------------

const cublasOperation_t kOpN = CUBLAS_OP_N, kOpT = CUBLAS_OP_T;

class FakeCublas : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override {
    if (handle_ != nullptr) {
      EXPECT_EQ(cublasDestroy(handle_), CUBLAS_STATUS_SUCCESS);
    }
  }

  // The buffers are large enough for every call made through here, so only the arguments under
  // test decide whether it is refused.
  cublasStatus_t sgemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda,
                       int ldb, int ldc, int batch) {
    return cublasSgemmStridedBatched(handle_, ta, tb, m, n, k, &one_, a_, lda, 16, b_, ldb, 16,
                                     &zero_, c_, ldc, 16, batch);
  }

  cublasHandle_t handle_ = nullptr;
  float a_[64] = {}, b_[64] = {}, c_[64] = {};
  const float one_ = 1, zero_ = 0;
};

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const float* al, const float* a, int lda, long long sa, const float* b,
                    int ldb, long long sb, const float* be, float* c, int ldc, long long sc,
                    int batch) {
  if (batch > 1)
    return cublasSgemmStridedBatched(h, ta, tb, m, n, k, al, a, lda, sa, b, ldb, sb, be, c, ldc, sc,
                                     batch);
  return cublasSgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}

cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                    int k, const double* al, const double* a, int lda, long long sa,
                    const double* b, int ldb, long long sb, const double* be, double* c, int ldc,
                    long long sc, int batch) {
  if (batch > 1)
    return cublasDgemmStridedBatched(h, ta, tb, m, n, k, al, a, lda, sa, b, ldb, sb, be, c, ldc, sc,
                                     batch);
  return cublasDgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}

// op(A) is m x k and op(B) is k x n, drawn row-major and stored column-major as cuBLAS reads
// them, with leading dimensions (and, batched, strides) larger than needed. Every element of A
// and B the layout skips is NaN, so reading one shows in C.
template <class T>
struct GemmCase {
  static constexpr int m = 5, n = 4, k = 3, pad = 2;
  bool ta = false, tb = false;
  int batch = 1;  // 1 goes through cublas?gemm, more through cublas?gemmStridedBatched
  T alpha = T(1.5), beta = 0;
  int lda = 0, ldb = 0, ldc = 0;
  long long sa = 0, sb = 0, sc = 0;
  std::vector<std::vector<T>> op_a, op_b;  // per batch entry, row-major
  std::vector<T> a, b, c0;                 // c0: C before the call
};

template <class T>
void fill_operands(GemmCase<T>* g, std::mt19937& rng) {
  const int m = g->m, n = g->n, k = g->k;
  g->a.assign(g->sa * g->batch + g->lda * (g->ta ? m : k), T(kNaN));
  g->b.assign(g->sb * g->batch + g->ldb * (g->tb ? k : n), T(kNaN));
  for (int e = 0; e < g->batch; ++e) {
    g->op_a.push_back(random_vec<T>(m * k, rng));
    g->op_b.push_back(random_vec<T>(k * n, rng));
    for (int i = 0; i < m; ++i)
      for (int l = 0; l < k; ++l)
        g->a[e * g->sa + (g->ta ? l + i * g->lda : i + l * g->lda)] = g->op_a[e][i * k + l];
    for (int l = 0; l < k; ++l)
      for (int j = 0; j < n; ++j)
        g->b[e * g->sb + (g->tb ? j + l * g->ldb : l + j * g->ldb)] = g->op_b[e][l * n + j];
  }
}

template <class T>
GemmCase<T> make_gemm_case(bool ta, bool tb, int batch, T beta) {
  GemmCase<T> g;
  g.ta = ta, g.tb = tb, g.batch = batch, g.beta = beta;
  g.lda = (ta ? g.k : g.m) + g.pad, g.ldb = (tb ? g.n : g.k) + g.pad, g.ldc = g.m + g.pad;
  // Odd gaps between batch entries, so a wrong stride lands on padding or on another entry.
  g.sa = batch > 1 ? g.lda * (ta ? g.m : g.k) + 7 : 0;
  g.sb = batch > 1 ? g.ldb * (tb ? g.k : g.n) + 5 : 0;
  g.sc = batch > 1 ? g.ldc * g.n + 3 : 0;
  std::mt19937 rng(42);
  fill_operands(&g, rng);
  const size_t c_size = g.sc * batch + g.ldc * g.n;
  // beta == 0 must not read C, so a NaN there would show.
  g.c0 = beta == 0 ? std::vector<T>(c_size, T(kNaN)) : random_vec<T>(c_size, rng);
  return g;
}

template <class T>
void expect_matches_reference(const GemmCase<T>& g, const std::vector<T>& c) {
  double worst = 0;
  std::vector<bool> touched(c.size());
  for (int e = 0; e < g.batch; ++e)
    for (int i = 0; i < g.m; ++i)
      for (int j = 0; j < g.n; ++j) {
        double ref = 0;
        for (int l = 0; l < g.k; ++l)
          ref += double(g.op_a[e][i * g.k + l]) * g.op_b[e][l * g.n + j];
        const size_t at = e * g.sc + i + j * g.ldc;
        ref = g.alpha * ref + (g.beta == 0 ? 0 : g.beta * double(g.c0[at]));
        worst = worse(worst, std::fabs(ref - double(c[at])));
        touched[at] = true;
      }
  EXPECT_LT(worst, 1e-5);
  // Padding between columns and between batch entries is left alone, bit for bit.
  for (size_t i = 0; i < c.size(); ++i)
    if (!touched[i] && std::memcmp(&c[i], &g.c0[i], sizeof(T)) != 0) {
      ADD_FAILURE() << "element " << i << " outside C was written";
      break;
    }
}

template <class T>
void check_gemm(cublasHandle_t h, bool ta, bool tb, int batch, T beta) {
  SCOPED_TRACE(std::string(sizeof(T) == 4 ? "S" : "D") + "gemm batch=" + std::to_string(batch) +
               " beta=" + std::to_string(beta));
  const GemmCase<T> g = make_gemm_case(ta, tb, batch, beta);
  std::vector<T> c = g.c0;
  ASSERT_EQ(gemm(h, ta ? kOpT : kOpN, tb ? kOpT : kOpN, g.m, g.n, g.k, &g.alpha, g.a.data(), g.lda,
                 g.sa, g.b.data(), g.ldb, g.sb, &g.beta, c.data(), g.ldc, g.sc, batch),
            CUBLAS_STATUS_SUCCESS);
  expect_matches_reference(g, c);
}

// Every op pair indexes A and B differently, and each precision has its own entry point.
void check_gemm_for_every_op_pair(cublasHandle_t h, int batch, double beta) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("transa=") + (ta ? "T" : "N") + " transb=" + (tb ? "T" : "N"));
      check_gemm<float>(h, ta, tb, batch, static_cast<float>(beta));
      check_gemm<double>(h, ta, tb, batch, beta);
    }
}

TEST_F(FakeCublas, AcceptsAStreamAndAnAtomicsMode) {
  EXPECT_EQ(cublasSetStream(handle_, nullptr), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSetAtomicsMode(handle_, CUBLAS_ATOMICS_NOT_ALLOWED), CUBLAS_STATUS_SUCCESS);
}

TEST_F(FakeCublas, ReportsTheHeaderVersionAndDescribesStatuses) {
  int major = -1;
  EXPECT_EQ(cublasGetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(major, CUBLAS_VER_MAJOR);
  EXPECT_GT(std::strlen(cublasGetStatusString(CUBLAS_STATUS_INVALID_VALUE)), 0u);
}

TEST_F(FakeCublas, GemmMatchesARowMajorReferenceForEveryOpPair) {
  check_gemm_for_every_op_pair(handle_, 1, 0.75);
}

TEST_F(FakeCublas, StridedBatchedGemmMatchesTheReferenceInEveryEntry) {
  check_gemm_for_every_op_pair(handle_, 3, 0.75);
}

TEST_F(FakeCublas, BetaZeroOverwritesNaNInC) {
  check_gemm_for_every_op_pair(handle_, 1, 0.0);
  check_gemm_for_every_op_pair(handle_, 3, 0.0);
}

TEST_F(FakeCublas, RejectsNegativeSizesAndBatchCounts) {
  const cublasStatus_t invalid = CUBLAS_STATUS_INVALID_VALUE;
  expect_refused(invalid, "invalid m", [&] { return sgemm(kOpN, kOpN, -1, 2, 2, 2, 2, 2, 1); });
  expect_refused(invalid, "invalid k", [&] { return sgemm(kOpN, kOpN, 2, 2, -1, 2, 2, 2, 1); });
  expect_refused(invalid, "invalid batchCount",
                 [&] { return sgemm(kOpN, kOpN, 2, 2, 2, 2, 2, 2, -1); });
}

TEST_F(FakeCublas, RejectsBadLeadingDimensions) {
  const cublasStatus_t invalid = CUBLAS_STATUS_INVALID_VALUE;
  expect_refused(invalid, "invalid lda", [&] { return sgemm(kOpN, kOpN, 3, 2, 2, 2, 2, 3, 1); });
  // Transposed, A is stored k x m and B n x k.
  expect_refused(invalid, "invalid lda", [&] { return sgemm(kOpT, kOpN, 3, 2, 4, 3, 4, 3, 1); });
  expect_refused(invalid, "invalid ldb", [&] { return sgemm(kOpN, kOpT, 2, 3, 2, 2, 2, 2, 1); });
  expect_refused(invalid, "invalid ldc", [&] { return sgemm(kOpN, kOpN, 3, 2, 2, 3, 2, 2, 1); });
  // A leading dimension is at least 1 even when the matrix has no rows.
  expect_refused(invalid, "invalid lda", [&] { return sgemm(kOpN, kOpN, 0, 2, 2, 0, 2, 1, 1); });
}

TEST_F(FakeCublas, RejectsANullAlpha) {
  expect_refused(CUBLAS_STATUS_INVALID_VALUE, "invalid alpha", [&] {
    return cublasSgemm(handle_, kOpN, kOpN, 2, 2, 2, nullptr, a_, 2, b_, 2, &zero_, c_, 2);
  });
}

TEST_F(FakeCublas, EmptyProblemsSucceedWithoutTouchingMemory) {
  // The same call, not empty, is valid too: only the zero makes the next one a no-op.
  EXPECT_EQ(sgemm(kOpN, kOpN, 2, 2, 2, 2, 2, 2, 2), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(sgemm(kOpN, kOpN, 2, 2, 2, 2, 2, 2, 0), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(
      cublasSgemm(handle_, kOpN, kOpN, 0, 2, 2, &one_, nullptr, 1, nullptr, 2, &zero_, nullptr, 1),
      CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(
      cublasSgemm(handle_, kOpN, kOpN, 2, 0, 2, &one_, nullptr, 2, nullptr, 2, &zero_, nullptr, 2),
      CUBLAS_STATUS_SUCCESS);
}

TEST_F(FakeCublas, KZeroScalesCByBetaWithoutReadingAOrB) {
  c_[0] = 4;
  const float half = 0.5f;
  ASSERT_EQ(cublasSgemm(handle_, kOpN, kOpN, 1, 1, 0, &one_, nullptr, 1, nullptr, 1, &half, c_, 1),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c_[0], 2);
}

// On a GPU overlapping outputs race, but the call itself is legal, so it must not fail.
TEST_F(FakeCublas, OverlappingBatchOutputsWarnWithoutFailing) {
  const auto apart = capture_stderr([&] { return sgemm(kOpN, kOpN, 2, 2, 2, 2, 2, 2, 2); });
  EXPECT_EQ(apart.status, CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(apart.said, "");
  const auto overlapping = capture_stderr([&] {
    return cublasSgemmStridedBatched(handle_, kOpN, kOpN, 2, 2, 2, &one_, a_, 2, 4, b_, 2, 4,
                                     &zero_, c_, 2, 2, 2);
  });
  EXPECT_EQ(overlapping.status, CUBLAS_STATUS_SUCCESS);
  EXPECT_NE(overlapping.said.find("WARNING"), std::string::npos) << overlapping.said;
  EXPECT_NE(overlapping.said.find("overlap"), std::string::npos) << overlapping.said;
}

// ---------------- cuDNN ----------------

struct Shape {
  int n, c, h, w, k, r, s, g, pad, stride, dil;
  int oh() const { return (h + 2 * pad - ((r - 1) * dil + 1)) / stride + 1; }
  int ow() const { return (w + 2 * pad - ((s - 1) * dil + 1)) / stride + 1; }
};

template <class T>
std::string describe(const Shape& p) {
  char text[160];
  std::snprintf(text, sizeof text, "%s n%d c%d h%d w%d k%d r%d s%d g%d pad%d stride%d dil%d",
                sizeof(T) == 8 ? "double" : "float", p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.g, p.pad,
                p.stride, p.dil);
  return text;
}

// Cross-correlation at one output element, written directly from the definition (NCHW / KCRS)
// so that it shares nothing with the fake's loops.
template <class T>
double reference_output(const Shape& p, const std::vector<T>& x, const std::vector<T>& w, int n,
                        int k, int oh, int ow) {
  const int cg = p.c / p.g, kg = p.k / p.g;
  double acc = 0;
  for (int c = 0; c < cg; ++c)
    for (int r = 0; r < p.r; ++r)
      for (int s = 0; s < p.s; ++s) {
        const int ih = oh * p.stride - p.pad + r * p.dil, iw = ow * p.stride - p.pad + s * p.dil;
        if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
        acc += double(x[((n * p.c + (k / kg) * cg + c) * p.h + ih) * p.w + iw]) *
               double(w[((k * cg + c) * p.r + r) * p.s + s]);
      }
  return acc;
}

template <class T>
std::vector<double> reference_forward(const Shape& p, const std::vector<T>& x,
                                      const std::vector<T>& w) {
  std::vector<double> y;
  y.reserve(size_t(p.n) * p.k * p.oh() * p.ow());
  for (int n = 0; n < p.n; ++n)
    for (int k = 0; k < p.k; ++k)
      for (int oh = 0; oh < p.oh(); ++oh)
        for (int ow = 0; ow < p.ow(); ++ow) y.push_back(reference_output(p, x, w, n, k, oh, ow));
  return y;
}

template <class A, class B>
double dot(const std::vector<A>& a, const std::vector<B>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

// Largest |got - scale * want|, NaN when any of got is NaN.
template <class T>
double max_error(const std::vector<T>& got, const std::vector<double>& want, double scale) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = worse(worst, std::fabs(double(got[i]) - scale * want[i]));
  return worst;
}

// The four descriptors of one convolution, destroyed with it.
struct ConvDescriptors {
  ConvDescriptors() {
    EXPECT_EQ(cudnnCreateTensorDescriptor(&x), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnCreateTensorDescriptor(&y), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnCreateFilterDescriptor(&w), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(cudnnCreateConvolutionDescriptor(&conv), CUDNN_STATUS_SUCCESS);
  }
  ~ConvDescriptors() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
};

// A tensor descriptor destroyed with its scope.
struct TensorDescriptor {
  TensorDescriptor() { EXPECT_EQ(cudnnCreateTensorDescriptor(&d), CUDNN_STATUS_SUCCESS); }
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(d); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;

  cudnnTensorDescriptor_t d = nullptr;
};

// One convolution problem with random data and the reference forward result.
template <class T>
struct Conv {
  Conv(cudnnHandle_t handle, const Shape& shape);

  cudnnHandle_t h;
  Shape p;
  cudnnDataType_t type = sizeof(T) == 8 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  double tol = sizeof(T) == 8 ? 1e-12 : 1e-5;
  ConvDescriptors d;
  std::vector<T> x, w, dy;
  std::vector<double> y_ref;
  double y_ref_dot_dy = 0;  // <conv(x, w), dy>: both backward directions must reproduce it
};

template <class T>
Conv<T>::Conv(cudnnHandle_t handle, const Shape& shape) : h(handle), p(shape) {
  std::mt19937 rng(42);
  x = random_vec<T>(size_t(p.n) * p.c * p.h * p.w, rng);
  w = random_vec<T>(size_t(p.k) * (p.c / p.g) * p.r * p.s, rng);
  dy = random_vec<T>(size_t(p.n) * p.k * p.oh() * p.ow(), rng);
  y_ref = reference_forward(p, x, w);
  y_ref_dot_dy = dot(y_ref, dy);
}

template <class T>
void set_descriptors(const Conv<T>& c) {
  const Shape& p = c.p;
  const cudnnTensorFormat_t nchw = CUDNN_TENSOR_NCHW;
  ASSERT_EQ(cudnnSetTensor4dDescriptor(c.d.x, nchw, c.type, p.n, p.c, p.h, p.w),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(c.d.y, nchw, c.type, p.n, p.k, p.oh(), p.ow()),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(c.d.w, c.type, nchw, p.k, p.c / p.g, p.r, p.s),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(c.d.conv, p.pad, p.pad, p.stride, p.stride, p.dil,
                                            p.dil, CUDNN_CROSS_CORRELATION, c.type),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolutionGroupCount(c.d.conv, p.g), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolutionMathType(c.d.conv, CUDNN_FMA_MATH), CUDNN_STATUS_SUCCESS);
}

template <class T>
cudnnStatus_t forward(const Conv<T>& c, cudnnConvolutionFwdAlgo_t algo, T alpha, T beta, void* ws,
                      size_t ws_bytes, std::vector<T>* y) {
  return cudnnConvolutionForward(c.h, &alpha, c.d.x, c.x.data(), c.d.w, c.w.data(), c.d.conv, algo,
                                 ws, ws_bytes, &beta, c.d.y, y->data());
}

template <class T>
size_t forward_workspace(const Conv<T>& c, cudnnConvolutionFwdAlgo_t algo) {
  size_t need = 0;
  EXPECT_EQ(
      cudnnGetConvolutionForwardWorkspaceSize(c.h, c.d.x, c.d.w, c.d.conv, c.d.y, algo, &need),
      CUDNN_STATUS_SUCCESS);
  return need;
}

// The heuristic lists of the three directions, supported algorithms or not. Asking for the
// maximum count must return the whole list.
template <class T>
std::vector<cudnnConvolutionFwdAlgoPerf_t> forward_list(const Conv<T>& c) {
  int cap = 0, got = 0;
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithmMaxCount(c.h, &cap), CUDNN_STATUS_SUCCESS);
  std::vector<cudnnConvolutionFwdAlgoPerf_t> list(cap);
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(c.h, c.d.x, c.d.w, c.d.conv, c.d.y, cap, &got,
                                                   list.data()),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(got, cap);
  list.resize(std::clamp(got, 0, cap));
  return list;
}

template <class T>
std::vector<cudnnConvolutionBwdDataAlgoPerf_t> backward_data_list(const Conv<T>& c) {
  int cap = 0, got = 0;
  EXPECT_EQ(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(c.h, &cap), CUDNN_STATUS_SUCCESS);
  std::vector<cudnnConvolutionBwdDataAlgoPerf_t> list(cap);
  EXPECT_EQ(cudnnGetConvolutionBackwardDataAlgorithm_v7(c.h, c.d.w, c.d.y, c.d.conv, c.d.x, cap,
                                                        &got, list.data()),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(got, cap);
  list.resize(std::clamp(got, 0, cap));
  return list;
}

template <class T>
std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> backward_filter_list(const Conv<T>& c) {
  int cap = 0, got = 0;
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(c.h, &cap), CUDNN_STATUS_SUCCESS);
  std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> list(cap);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(c.h, c.d.x, c.d.y, c.d.conv, c.d.w, cap,
                                                          &got, list.data()),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(got, cap);
  list.resize(std::clamp(got, 0, cap));
  return list;
}

template <class Perf>
std::vector<Perf> supported(std::vector<Perf> list) {
  std::erase_if(list, [](const Perf& perf) { return perf.status != CUDNN_STATUS_SUCCESS; });
  return list;
}

std::string algo_name(const char* direction, int algo) {
  return std::string(direction) + " algo " + std::to_string(algo);
}

template <class T>
void expect_output_dims(const Conv<T>& c) {
  int n = -1, k = -1, oh = -1, ow = -1;
  ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(c.d.conv, c.d.x, c.d.w, &n, &k, &oh, &ow),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(n, c.p.n);
  EXPECT_EQ(k, c.p.k);
  EXPECT_EQ(oh, c.p.oh());
  EXPECT_EQ(ow, c.p.ow());
}

// y starts as NaN: beta == 0 must not read it.
template <class T>
void expect_forward_matches_reference(const Conv<T>& c) {
  int checked = 0;
  for (const cudnnConvolutionFwdAlgoPerf_t& algo : supported(forward_list(c))) {
    SCOPED_TRACE(algo_name("forward", algo.algo));
    const size_t need = forward_workspace(c, algo.algo);
    EXPECT_EQ(need, algo.memory);  // the heuristic and the query agree
    std::vector<unsigned char> ws(need);
    std::vector<T> y(c.dy.size(), T(kNaN));
    ASSERT_EQ(forward(c, algo.algo, T(1), T(0), ws.data(), need, &y), CUDNN_STATUS_SUCCESS);
    EXPECT_LT(max_error(y, c.y_ref, 1), c.tol);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

template <class T>
void expect_forward_scales_and_accumulates(const Conv<T>& c) {
  for (const cudnnConvolutionFwdAlgoPerf_t& algo : supported(forward_list(c))) {
    SCOPED_TRACE(algo_name("forward", algo.algo));
    const size_t need = forward_workspace(c, algo.algo);
    std::vector<unsigned char> ws(need);
    std::vector<T> y(c.y_ref.begin(), c.y_ref.end());
    ASSERT_EQ(forward(c, algo.algo, T(2), T(1), ws.data(), need, &y), CUDNN_STATUS_SUCCESS);
    EXPECT_LT(max_error(y, c.y_ref, 3), 3 * c.tol);  // 2 conv + y
  }
}

// The poison catches a caller that expects the workspace to keep what it wrote; a byte written
// past what the algorithm asked for would be the caller's memory.
template <class T>
void expect_forward_poisons_exactly_its_workspace(const Conv<T>& c) {
  int poisoned = 0;
  for (const cudnnConvolutionFwdAlgoPerf_t& algo : supported(forward_list(c))) {
    SCOPED_TRACE(algo_name("forward", algo.algo));
    const size_t need = forward_workspace(c, algo.algo);
    if (need == 0) continue;
    std::vector<unsigned char> ws(need + 16, 0);
    std::vector<T> y(c.dy.size());
    ASSERT_EQ(forward(c, algo.algo, T(1), T(0), ws.data(), ws.size(), &y), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(ws[0], 0xFF);
    EXPECT_EQ(ws[need - 1], 0xFF);
    EXPECT_TRUE(std::all_of(ws.begin() + need, ws.end(), [](unsigned char b) { return b == 0; }));
    ++poisoned;
  }
  EXPECT_GT(poisoned, 0);
}

template <class T>
void expect_listed_unsupported_forward_refused(const Conv<T>& c) {
  int unsupported = 0;
  std::vector<T> y(c.dy.size());
  for (const cudnnConvolutionFwdAlgoPerf_t& algo : forward_list(c)) {
    if (algo.status == CUDNN_STATUS_SUCCESS) continue;
    SCOPED_TRACE(algo_name("forward", algo.algo));
    ++unsupported;
    // Callers filter the list by asking, so the query refuses without a message.
    size_t need = 0;
    const auto query = capture_stderr([&] {
      return cudnnGetConvolutionForwardWorkspaceSize(c.h, c.d.x, c.d.w, c.d.conv, c.d.y, algo.algo,
                                                     &need);
    });
    EXPECT_EQ(query.status, CUDNN_STATUS_NOT_SUPPORTED);
    EXPECT_EQ(query.said, "");
    expect_refused(CUDNN_STATUS_NOT_SUPPORTED, algo_name("forward", algo.algo),
                   [&] { return forward(c, algo.algo, T(1), T(0), nullptr, 0, &y); });
  }
  EXPECT_GE(unsupported, 1);
}

template <class T>
void expect_unlisted_forward_refused(const Conv<T>& c) {
  const size_t need = forward_workspace(c, CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
  std::vector<unsigned char> ws(need);
  std::vector<T> y(c.dy.size());
  const cudnnConvolutionFwdAlgo_t fft = CUDNN_CONVOLUTION_FWD_ALGO_FFT;
  expect_refused(CUDNN_STATUS_NOT_SUPPORTED, algo_name("forward", fft),
                 [&] { return forward(c, fft, T(1), T(0), ws.data(), need, &y); });
}

template <class T>
void expect_too_small_workspace_refused(const Conv<T>& c) {
  const cudnnConvolutionFwdAlgo_t gemm = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  const size_t need = forward_workspace(c, gemm);
  ASSERT_GT(need, 0u);
  std::vector<unsigned char> ws(need);
  std::vector<T> y(c.dy.size());
  expect_refused(CUDNN_STATUS_BAD_PARAM, "workSpaceSizeInBytes",
                 [&] { return forward(c, gemm, T(1), T(0), ws.data(), need - 1, &y); });
}

template <class T>
void expect_null_workspace_refused(const Conv<T>& c) {
  const cudnnConvolutionFwdAlgo_t gemm = CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  const size_t need = forward_workspace(c, gemm);
  std::vector<T> y(c.dy.size());
  expect_refused(CUDNN_STATUS_BAD_PARAM, "null workSpace",
                 [&] { return forward(c, gemm, T(1), T(0), nullptr, need, &y); });
}

template <class T>
void expect_wrong_output_dims_refused(const Conv<T>& c) {
  const Shape& p = c.p;
  TensorDescriptor bad;
  ASSERT_EQ(
      cudnnSetTensor4dDescriptor(bad.d, CUDNN_TENSOR_NCHW, c.type, p.n, p.k, p.oh() + 1, p.ow()),
      CUDNN_STATUS_SUCCESS);
  std::vector<T> y(size_t(p.n) * p.k * (p.oh() + 1) * p.ow());
  const T one = 1, zero = 0;
  expect_refused(CUDNN_STATUS_BAD_PARAM, "y dims", [&] {
    return cudnnConvolutionForward(c.h, &one, c.d.x, c.x.data(), c.d.w, c.w.data(), c.d.conv,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &zero,
                                   bad.d, y.data());
  });
}

template <class T>
void expect_wrong_input_channels_refused(const Conv<T>& c) {
  const Shape& p = c.p;
  TensorDescriptor bad;
  ASSERT_EQ(cudnnSetTensor4dDescriptor(bad.d, CUDNN_TENSOR_NCHW, c.type, p.n, p.c + 1, p.h, p.w),
            CUDNN_STATUS_SUCCESS);
  size_t need = 0;
  expect_refused(CUDNN_STATUS_BAD_PARAM, "x C=", [&] {
    return cudnnGetConvolutionForwardWorkspaceSize(c.h, bad.d, c.d.w, c.d.conv, c.d.y,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &need);
  });
}

// dx starts as NaN: beta == 0 must not read it.
template <class T>
void expect_backward_data_transposes_forward(const Conv<T>& c) {
  const T one = 1, zero = 0;
  int checked = 0;
  for (const cudnnConvolutionBwdDataAlgoPerf_t& algo : supported(backward_data_list(c))) {
    SCOPED_TRACE(algo_name("backward data", algo.algo));
    size_t need = 0;
    EXPECT_EQ(cudnnGetConvolutionBackwardDataWorkspaceSize(c.h, c.d.w, c.d.y, c.d.conv, c.d.x,
                                                           algo.algo, &need),
              CUDNN_STATUS_SUCCESS);
    std::vector<unsigned char> ws(need);
    std::vector<T> dx(c.x.size(), T(kNaN));
    ASSERT_EQ(
        cudnnConvolutionBackwardData(c.h, &one, c.d.w, c.w.data(), c.d.y, c.dy.data(), c.d.conv,
                                     algo.algo, ws.data(), need, &zero, c.d.x, dx.data()),
        CUDNN_STATUS_SUCCESS);
    EXPECT_NEAR(dot(c.x, dx), c.y_ref_dot_dy, 100 * c.tol);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// dw starts as NaN: beta == 0 must not read it.
template <class T>
void expect_backward_filter_transposes_forward(const Conv<T>& c) {
  const T one = 1, zero = 0;
  int checked = 0;
  for (const cudnnConvolutionBwdFilterAlgoPerf_t& algo : supported(backward_filter_list(c))) {
    SCOPED_TRACE(algo_name("backward filter", algo.algo));
    size_t need = 0;
    EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(c.h, c.d.x, c.d.y, c.d.conv, c.d.w,
                                                             algo.algo, &need),
              CUDNN_STATUS_SUCCESS);
    std::vector<unsigned char> ws(need);
    std::vector<T> dw(c.w.size(), T(kNaN));
    ASSERT_EQ(
        cudnnConvolutionBackwardFilter(c.h, &one, c.d.x, c.x.data(), c.d.y, c.dy.data(), c.d.conv,
                                       algo.algo, ws.data(), need, &zero, c.d.w, dw.data()),
        CUDNN_STATUS_SUCCESS);
    EXPECT_NEAR(dot(c.w, dw), c.y_ref_dot_dy, 100 * c.tol);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

class FakeCudnn : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetStream(handle_, nullptr), CUDNN_STATUS_SUCCESS);
  }
  void TearDown() override {
    if (handle_ != nullptr) {
      EXPECT_EQ(cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS);
    }
  }

  // Runs check on every problem, each in the precisions it is checked in: grouped and strided;
  // dilated and padded by 2 with a non-square filter; depthwise 1x1.
  template <class F>
  void for_each_conv(F check) {
    //                  n  c  h  w  k  r  s  g pad stride dil
    const Shape grouped{2, 4, 7, 6, 6, 3, 3, 2, 1, 2, 1};
    run<float>(grouped, check);
    run<double>(grouped, check);
    run<double>({1, 3, 9, 8, 2, 3, 2, 1, 2, 1, 2}, check);
    run<float>({3, 6, 5, 5, 6, 1, 1, 6, 0, 1, 1}, check);
  }

  template <class T, class F>
  void run(const Shape& p, F check) {
    SCOPED_TRACE(describe<T>(p));
    const Conv<T> c(handle_, p);
    ASSERT_NO_FATAL_FAILURE(set_descriptors(c));
    check(c);
  }

  cudnnHandle_t handle_ = nullptr;
};

TEST_F(FakeCudnn, ReportsTheHeaderVersionAndStatusNames) {
  EXPECT_EQ(cudnnGetVersion(), size_t{CUDNN_VERSION});
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
}

TEST_F(FakeCudnn, OutputDimsFollowTheConvolutionArithmetic) {
  for_each_conv([](const auto& c) { expect_output_dims(c); });
}

TEST_F(FakeCudnn, ForwardMatchesADirectReference) {
  for_each_conv([](const auto& c) { expect_forward_matches_reference(c); });
}

TEST_F(FakeCudnn, ForwardScalesByAlphaAndAddsBetaTimesY) {
  for_each_conv([](const auto& c) { expect_forward_scales_and_accumulates(c); });
}

TEST_F(FakeCudnn, ForwardPoisonsExactlyTheWorkspaceItAsksFor) {
  for_each_conv([](const auto& c) { expect_forward_poisons_exactly_its_workspace(c); });
}

TEST_F(FakeCudnn, BackwardDataSatisfiesTheTransposeIdentity) {
  for_each_conv([](const auto& c) { expect_backward_data_transposes_forward(c); });
}

TEST_F(FakeCudnn, BackwardFilterSatisfiesTheTransposeIdentity) {
  for_each_conv([](const auto& c) { expect_backward_filter_transposes_forward(c); });
}

TEST_F(FakeCudnn, RefusesTheForwardAlgorithmsTheHeuristicMarksUnsupported) {
  for_each_conv([](const auto& c) { expect_listed_unsupported_forward_refused(c); });
}

TEST_F(FakeCudnn, RefusesAForwardAlgorithmItDoesNotImplement) {
  for_each_conv([](const auto& c) { expect_unlisted_forward_refused(c); });
}

TEST_F(FakeCudnn, RejectsTooSmallWorkspace) {
  for_each_conv([](const auto& c) { expect_too_small_workspace_refused(c); });
}

TEST_F(FakeCudnn, RejectsANullWorkspace) {
  for_each_conv([](const auto& c) { expect_null_workspace_refused(c); });
}

TEST_F(FakeCudnn, RejectsAnOutputDescriptorOfTheWrongSize) {
  for_each_conv([](const auto& c) { expect_wrong_output_dims_refused(c); });
}

TEST_F(FakeCudnn, RejectsInputChannelsTheFilterAndGroupsDoNotMatch) {
  for_each_conv([](const auto& c) { expect_wrong_input_channels_refused(c); });
}

// tunecnn queues all its GPU work on one cudaStreamNonBlocking stream. Work on the legacy default
// stream does not wait for such a stream on a GPU, so the emulation aborts on it. Each case runs
// in a death test's child, so the stream it creates leaves the other tests' default-stream calls
// alone.
cudaStream_t create_nonblocking_stream() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) std::abort();
  return stream;
}

// Calls work(stream) once a non-blocking stream exists. (A call, so that the commas inside the
// lambda do not split the death-test macro's arguments.)
template <class Work>
void with_a_nonblocking_stream(Work work) {
  work(create_nonblocking_stream());
}

// C = A B on 1 x 1 matrices, on a handle given `stream`, or no stream at all.
void one_by_one_sgemm(const cudaStream_t* stream) {
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) std::abort();
  if (stream != nullptr && cublasSetStream(handle, *stream) != CUBLAS_STATUS_SUCCESS) std::abort();
  const float a = 2, b = 3, one = 1, zero = 0;
  float c = 0;
  if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &a, 1, &b, 1, &zero, &c, 1) !=
          CUBLAS_STATUS_SUCCESS || c != 6)
    std::abort();
}

// Every kind of queued work on the stream; exits 0 when each call succeeds.
void queue_everything_on(cudaStream_t stream) {
  float host = 1, *device = nullptr;
  cudaEvent_t event = nullptr;
  const bool ok = cudaMalloc(reinterpret_cast<void**>(&device), 4) == cudaSuccess &&
                  cudaMemsetAsync(device, 0, 4, stream) == cudaSuccess &&
                  cudaMemcpyAsync(&host, device, 4, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
                  cudaEventCreate(&event) == cudaSuccess &&
                  cudaEventRecord(event, stream) == cudaSuccess && host == 0;
  emu::launch(dim3(2), dim3(32), 0, stream, [] {});
  one_by_one_sgemm(&stream);
  std::exit(ok ? 0 : 1);
}

TEST(FakeCudaStreams, WorkOnTheNonBlockingStreamRuns) {
  EXPECT_EXIT(with_a_nonblocking_stream(queue_everything_on), ::testing::ExitedWithCode(0), "");
}

TEST(FakeCudaStreams, DefaultStreamWorkAbortsOnceANonBlockingStreamExists) {
  static float host = 0, device = 0;  // static: the lambdas below need no capture
  const std::string race = " on the legacy default stream while a cudaStreamNonBlocking stream exists";
  EXPECT_DEATH(with_a_nonblocking_stream([](cudaStream_t) {
                 cudaMemsetAsync(&device, 0, 4, nullptr);
               }),
               "cudaMemsetAsync" + race);
  EXPECT_DEATH(with_a_nonblocking_stream([](cudaStream_t) {
                 cudaMemcpyAsync(&host, &device, 4, cudaMemcpyDeviceToHost, nullptr);
               }),
               "cudaMemcpyAsync" + race);
  EXPECT_DEATH(with_a_nonblocking_stream([](cudaStream_t) {
                 cudaMemcpy(&host, &device, 4, cudaMemcpyDeviceToHost);
               }),
               "cudaMemcpy" + race);
  EXPECT_DEATH(with_a_nonblocking_stream([](cudaStream_t) {
                 cudaEvent_t event = nullptr;
                 cudaEventCreate(&event);
                 cudaEventRecord(event, nullptr);
               }),
               "cudaEventRecord" + race);
  EXPECT_DEATH(with_a_nonblocking_stream([](cudaStream_t) {
                 emu::launch(dim3(1), dim3(1), 0, nullptr, [] {});
               }),
               "a kernel launch" + race);
  EXPECT_DEATH(with_a_nonblocking_stream([](cudaStream_t) { one_by_one_sgemm(nullptr); }),
               "cublasSgemm_v2" + race);
}

TEST_F(FakeCudnn, ConvolutionOnAHandleWithoutAStreamAbortsOnceANonBlockingStreamExists) {
  //                      n  c  h  w  k  r  s  g pad stride dil
  const Conv<float> c(handle_, {1, 2, 4, 4, 2, 3, 3, 1, 1, 1, 1});
  ASSERT_NO_FATAL_FAILURE(set_descriptors(c));
  std::vector<float> y(size_t(c.p.n) * c.p.k * c.p.oh() * c.p.ow());
  EXPECT_DEATH(with_a_nonblocking_stream([&](cudaStream_t) {
                 forward(c, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, 1.0f, 0.0f, nullptr, 0, &y);
               }),
               "cudnnConvolutionForward on the legacy default stream");
}

}  // namespace
}  // namespace tunecnn
