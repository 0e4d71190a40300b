// Host emulation of the cuDNN legacy convolution API tunecnn calls: descriptors are heap objects,
// data and workspace pointers are host memory, and the three convolutions are naive loops over
// 4-D tensors (any strides) with groups, padding, stride and dilation, accumulated in double.
// Compiled against the real cudnn.h, so the compiler checks each signature.
// Calls are validated as cuDNN does; a rejected call prints one line to stderr saying what was
// wrong and returns CUDNN_STATUS_BAD_PARAM (or CUDNN_STATUS_NOT_SUPPORTED for an algorithm or a
// data-type configuration that is not supported). Before computing, the workspace bytes the
// algorithm asks for are overwritten with 0xFF (NaN), so a caller that relies on them is caught.
#include <cudnn.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <vector>

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
  int ns = 0, cs = 0, hs = 0, ws = 0;  // strides in elements
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;  // NCHW: KCRS, NHWC: KRSC
  int k = 0, c = 0, h = 0, w = 0;
};

struct cudnnConvolutionStruct {
  bool set = false;
  int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

extern "C" void tunecnn_emu_check_stream(cudaStream_t, const char* call);  // cudart.cpp

namespace {

cudnnStatus_t fail(cudnnStatus_t status, const char* fn, const char* fmt, ...) {
  std::fprintf(stderr, "fake cuDNN: %s: ", fn);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, " -> %s\n", cudnnGetErrorString(status));
  return status;
}

bool known_type(cudnnDataType_t t) { return t >= CUDNN_DATA_FLOAT && t <= CUDNN_DATA_UINT32; }

// One convolution's shapes, from its four descriptors.
struct Geo {
  int N, C, H, W, K, R, S, OH, OW, G, Cg, Kg;
  int ph, pw, sh, sw, dh, dw;
  bool flip;  // CUDNN_CONVOLUTION: the filter is applied rotated by 180 degrees
  cudnnDataType_t type;
  const cudnnTensorStruct *x, *y;
  const cudnnFilterStruct* w;
  size_t elem() const { return type == CUDNN_DATA_DOUBLE ? 8 : 4; }
};

int out_dim(int in, int pad, int filter, int dil, int stride) {
  return (in + 2 * pad - ((filter - 1) * dil + 1)) / stride + 1;
}

// Checks the descriptors of one convolution against each other, as cuDNN does. `type_ok` is set
// to whether the data-type configuration is one cuDNN (and this emulation) computes: all FLOAT
// with FLOAT compute, or all DOUBLE with DOUBLE compute.
cudnnStatus_t geometry(const char* fn, cudnnHandle_t handle, const cudnnTensorStruct* x,
                       const cudnnFilterStruct* w, const cudnnConvolutionStruct* cv,
                       const cudnnTensorStruct* y, Geo* g, bool* type_ok) {
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null handle");
  if (x == nullptr || w == nullptr || cv == nullptr || y == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null descriptor");
  if (!x->set || !w->set || !cv->set || !y->set)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "a descriptor was created but never set");
  if (x->type != w->type || x->type != y->type)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "data types differ: x %d, w %d, y %d", x->type,
                w->type, y->type);
  if (x->c != w->c * cv->groups)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "x C=%d != filter C=%d * groups=%d", x->c, w->c,
                cv->groups);
  if (w->k % cv->groups != 0)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "filter K=%d not divisible by groups=%d", w->k,
                cv->groups);
  const int oh = out_dim(x->h, cv->pad_h, w->h, cv->dil_h, cv->u);
  const int ow = out_dim(x->w, cv->pad_w, w->w, cv->dil_w, cv->v);
  if (x->h + 2 * cv->pad_h < (w->h - 1) * cv->dil_h + 1 ||
      x->w + 2 * cv->pad_w < (w->w - 1) * cv->dil_w + 1)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "dilated filter %dx%d larger than padded input %dx%d",
                (w->h - 1) * cv->dil_h + 1, (w->w - 1) * cv->dil_w + 1, x->h + 2 * cv->pad_h,
                x->w + 2 * cv->pad_w);
  if (y->n != x->n || y->c != w->k || y->h != oh || y->w != ow)
    return fail(CUDNN_STATUS_BAD_PARAM, fn,
                "y dims %dx%dx%dx%d != convolution output dims %dx%dx%dx%d", y->n, y->c, y->h,
                y->w, x->n, w->k, oh, ow);
  *g = Geo{x->n, x->c, x->h, x->w, w->k, w->h, w->w, oh, ow, cv->groups,
           w->c, w->k / cv->groups, cv->pad_h, cv->pad_w, cv->u, cv->v, cv->dil_h, cv->dil_w,
           cv->mode == CUDNN_CONVOLUTION, x->type, x, y, w};
  *type_ok = (x->type == CUDNN_DATA_FLOAT && cv->compute == CUDNN_DATA_FLOAT) ||
             (x->type == CUDNN_DATA_DOUBLE && cv->compute == CUDNN_DATA_DOUBLE);
  return CUDNN_STATUS_SUCCESS;
}

enum Dir { kFwd, kBwdData, kBwdFilter };
const char* const kDirName[] = {"forward", "backward data", "backward filter"};

// The heuristic's list per direction, best first, unsupported last; an algorithm may appear once
// per math type, as in real cuDNN.
struct Entry {
  int algo;
  cudnnMathType_t math;
  bool supported;
  cudnnDeterminism_t determinism;
};
const std::vector<Entry> kAlgos[] = {
    {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_FMA_MATH, true, CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_DEFAULT_MATH, true, CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_FMA_MATH, true, CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_TENSOR_OP_MATH, true,
      CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, CUDNN_DEFAULT_MATH, false,
      CUDNN_DETERMINISTIC}},
    {{CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_FMA_MATH, true, CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, CUDNN_DEFAULT_MATH, true, CUDNN_NON_DETERMINISTIC},
     {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_TENSOR_OP_MATH, true, CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING, CUDNN_DEFAULT_MATH, false,
      CUDNN_DETERMINISTIC}},
    {{CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_FMA_MATH, true, CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_DEFAULT_MATH, true, CUDNN_NON_DETERMINISTIC},
     {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, CUDNN_FMA_MATH, true, CUDNN_NON_DETERMINISTIC},
     {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_TENSOR_OP_MATH, true, CUDNN_DETERMINISTIC},
     {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED, CUDNN_DEFAULT_MATH, false,
      CUDNN_DETERMINISTIC}}};
const int kAlgoCount[] = {CUDNN_CONVOLUTION_FWD_ALGO_COUNT, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT};

bool supported(Dir d, int algo) {
  for (const Entry& e : kAlgos[d])
    if (e.algo == algo && e.supported) return true;
  return false;
}

// Workspace the algorithm asks for: none for the implicit-GEMM-like ones, a lowered image, a
// filter copy or an index table for the others.
size_t workspace(Dir d, int algo, const Geo& g) {
  const size_t filter = size_t(g.K) * g.Cg * g.R * g.S;
  const size_t lowered = size_t(g.C) * g.R * g.S * g.OH * g.OW;
  switch (d) {
    case kFwd:
      if (algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
        return sizeof(int) * (size_t(g.Cg) * g.R * g.S + 64);
      if (algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM) return g.elem() * lowered;
      return 0;
    case kBwdData:
      return algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_1 ? g.elem() * filter : 0;
    case kBwdFilter:
      if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1) return g.elem() * lowered;
      if (algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3) return 4 * g.elem() * filter;
      return 0;
  }
  return 0;
}

// The workspace-size query of one direction.
cudnnStatus_t query(const char* fn, Dir d, cudnnHandle_t h, const cudnnTensorStruct* x,
                    const cudnnFilterStruct* w, const cudnnConvolutionStruct* cv,
                    const cudnnTensorStruct* y, int algo, size_t* bytes) {
  Geo g;
  bool type_ok = false;
  if (const cudnnStatus_t s = geometry(fn, h, x, w, cv, y, &g, &type_ok); s != CUDNN_STATUS_SUCCESS)
    return s;
  if (bytes == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null sizeInBytes");
  if (algo < 0 || algo >= kAlgoCount[d])
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "algo %d is not a %s algorithm", algo, kDirName[d]);
  // Not printed: asking whether an algorithm supports a problem is how callers filter the list.
  if (!type_ok || !supported(d, algo)) return CUDNN_STATUS_NOT_SUPPORTED;
  *bytes = workspace(d, algo, g);
  return CUDNN_STATUS_SUCCESS;
}

// The heuristic query (cudnnGet*Algorithm_v7) of one direction.
template <class Perf, class Algo>
cudnnStatus_t heuristic(const char* fn, Dir d, cudnnHandle_t h, const cudnnTensorStruct* x,
                        const cudnnFilterStruct* w, const cudnnConvolutionStruct* cv,
                        const cudnnTensorStruct* y, int requested, int* returned, Perf* results) {
  Geo g;
  bool type_ok = false;
  if (const cudnnStatus_t s = geometry(fn, h, x, w, cv, y, &g, &type_ok); s != CUDNN_STATUS_SUCCESS)
    return s;
  if (returned == nullptr || results == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null returnedAlgoCount or perfResults");
  if (requested <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "requestedAlgoCount %d <= 0", requested);
  const std::vector<Entry>& list = kAlgos[d];
  *returned = std::min<int>(requested, static_cast<int>(list.size()));
  for (int i = 0; i < *returned; ++i) {
    const Entry& e = list[i];
    const bool ok = e.supported && type_ok;
    Perf p{};
    p.algo = static_cast<Algo>(e.algo);
    p.status = ok ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
    p.time = -1.0f;  // a heuristic, not a measurement
    p.memory = ok ? workspace(d, e.algo, g) : 0;
    p.determinism = e.determinism;
    p.mathType = e.math;
    results[i] = p;
  }
  return CUDNN_STATUS_SUCCESS;
}

// Offsets of every element of a tensor or filter, in dense NCHW (KCRS) order.
std::vector<size_t> offsets(const cudnnTensorStruct& t) {
  std::vector<size_t> o;
  o.reserve(size_t(t.n) * t.c * t.h * t.w);
  for (int n = 0; n < t.n; ++n)
    for (int c = 0; c < t.c; ++c)
      for (int h = 0; h < t.h; ++h)
        for (int w = 0; w < t.w; ++w)
          o.push_back(size_t(n) * t.ns + size_t(c) * t.cs + size_t(h) * t.hs + size_t(w) * t.ws);
  return o;
}

std::vector<size_t> offsets(const cudnnFilterStruct& f) {
  const bool nhwc = f.format == CUDNN_TENSOR_NHWC;
  cudnnTensorStruct t;
  t.n = f.k, t.c = f.c, t.h = f.h, t.w = f.w;
  t.ns = f.c * f.h * f.w;
  t.cs = nhwc ? 1 : f.h * f.w;
  t.hs = nhwc ? f.w * f.c : f.w;
  t.ws = nhwc ? f.c : 1;
  return offsets(t);
}

// Calls f(x index, w index, y index) (dense NCHW / KCRS / NKHW) for every multiply of the
// convolution.
template <class F>
void for_each_tap(const Geo& g, F f) {
  for (int n = 0; n < g.N; ++n)
    for (int k = 0; k < g.K; ++k) {
      const int group = k / g.Kg;
      for (int oh = 0; oh < g.OH; ++oh)
        for (int ow = 0; ow < g.OW; ++ow) {
          const size_t yi = ((size_t(n) * g.K + k) * g.OH + oh) * g.OW + ow;
          for (int c = 0; c < g.Cg; ++c) {
            const int ci = group * g.Cg + c;
            for (int r = 0; r < g.R; ++r) {
              const int ih = oh * g.sh - g.ph + r * g.dh;
              if (ih < 0 || ih >= g.H) continue;
              const int rr = g.flip ? g.R - 1 - r : r;
              for (int s = 0; s < g.S; ++s) {
                const int iw = ow * g.sw - g.pw + s * g.dw;
                if (iw < 0 || iw >= g.W) continue;
                const int ss = g.flip ? g.S - 1 - s : s;
                f(((size_t(n) * g.C + ci) * g.H + ih) * g.W + iw,
                  ((size_t(k) * g.Cg + c) * g.R + rr) * g.S + ss, yi);
              }
            }
          }
        }
    }
}

// out = alpha * acc + beta * out, out read only when beta != 0.
template <class T>
void store(void* out, const std::vector<size_t>& o, const std::vector<double>& acc,
           const void* alpha, const void* beta) {
  T* p = static_cast<T*>(out);
  const double a = *static_cast<const T*>(alpha), b = *static_cast<const T*>(beta);
  for (size_t i = 0; i < acc.size(); ++i)
    p[o[i]] = static_cast<T>(a * acc[i] + (b == 0 ? 0.0 : b * static_cast<double>(p[o[i]])));
}

template <class T>
void compute(Dir d, const Geo& g, const void* in1, const void* in2, void* out, const void* alpha,
             const void* beta) {
  const std::vector<size_t> xo = offsets(*g.x), wo = offsets(*g.w), yo = offsets(*g.y);
  const T* a = static_cast<const T*>(in1);
  const T* b = static_cast<const T*>(in2);
  switch (d) {
    case kFwd: {  // in1 = x, in2 = w, out = y
      std::vector<double> acc(yo.size());
      for_each_tap(g, [&](size_t xi, size_t wi, size_t yi) {
        acc[yi] += double(a[xo[xi]]) * double(b[wo[wi]]);
      });
      return store<T>(out, yo, acc, alpha, beta);
    }
    case kBwdData: {  // in1 = w, in2 = dy, out = dx
      std::vector<double> acc(xo.size());
      for_each_tap(g, [&](size_t xi, size_t wi, size_t yi) {
        acc[xi] += double(a[wo[wi]]) * double(b[yo[yi]]);
      });
      return store<T>(out, xo, acc, alpha, beta);
    }
    case kBwdFilter: {  // in1 = x, in2 = dy, out = dw
      std::vector<double> acc(wo.size());
      for_each_tap(g, [&](size_t xi, size_t wi, size_t yi) {
        acc[wi] += double(a[xo[xi]]) * double(b[yo[yi]]);
      });
      return store<T>(out, wo, acc, alpha, beta);
    }
  }
}

// One convolution call of any direction: validation, workspace scribble, computation.
cudnnStatus_t convolve(const char* fn, Dir d, cudnnHandle_t h, const void* alpha,
                       const cudnnTensorStruct* x, const cudnnFilterStruct* w,
                       const cudnnConvolutionStruct* cv, const cudnnTensorStruct* y, int algo,
                       void* ws, size_t ws_bytes, const void* beta, const void* in1,
                       const void* in2, void* out) {
  Geo g;
  bool type_ok = false;
  if (const cudnnStatus_t s = geometry(fn, h, x, w, cv, y, &g, &type_ok); s != CUDNN_STATUS_SUCCESS)
    return s;
  tunecnn_emu_check_stream(h->stream, fn);  // a handle never given a stream uses stream 0
  if (alpha == nullptr || beta == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null alpha or beta");
  if (in1 == nullptr || in2 == nullptr || out == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null data pointer");
  if (algo < 0 || algo >= kAlgoCount[d])
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "algo %d is not a %s algorithm", algo, kDirName[d]);
  if (!type_ok)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                "data type %d with compute type %d (only FLOAT/FLOAT and DOUBLE/DOUBLE)", g.type,
                cv->compute);
  if (!supported(d, algo))
    return fail(CUDNN_STATUS_NOT_SUPPORTED, fn,
                "%s algo %d is listed NOT_SUPPORTED by the heuristic for this problem",
                kDirName[d], algo);
  const size_t need = workspace(d, algo, g);
  if (ws_bytes < need)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "workSpaceSizeInBytes %zu < %zu needed by algo %d",
                ws_bytes, need, algo);
  if (need > 0 && ws == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null workSpace, algo %d needs %zu bytes", algo, need);
  if (need > 0) std::memset(ws, 0xFF, need);
  if (g.type == CUDNN_DATA_DOUBLE)
    compute<double>(d, g, in1, in2, out, alpha, beta);
  else
    compute<float>(d, g, in1, in2, out, alpha, beta);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

size_t CUDNNWINAPI cudnnGetVersion(void) { return CUDNN_VERSION; }
const char* CUDNNWINAPI cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED: return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER: return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_INTERNAL_ERROR: return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED: return "CUDNN_STATUS_EXECUTION_FAILED";
    default: return "CUDNN_UNKNOWN_STATUS_FOUND";
  }
}

cudnnStatus_t CUDNNWINAPI cudnnCreate(cudnnHandle_t* handle) {
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreate", "null handle pointer");
  *handle = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetStream", "null handle");
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

// ---- tensor descriptors ----

cudnnStatus_t CUDNNWINAPI cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  if (desc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateTensorDescriptor", "null pointer");
  *desc = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc,
                                                       cudnnDataType_t type, int n, int c, int h,
                                                       int w, int nStride, int cStride,
                                                       int hStride, int wStride) {
  const char* fn = "cudnnSetTensor4dDescriptorEx";
  if (desc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null descriptor");
  if (!known_type(type)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown data type %d", type);
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "dims %dx%dx%dx%d not all positive", n, c, h, w);
  if (nStride <= 0 || cStride <= 0 || hStride <= 0 || wStride <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "strides %d,%d,%d,%d not all positive", nStride,
                cStride, hStride, wStride);
  *desc = cudnnTensorStruct{true, type, n, c, h, w, nStride, cStride, hStride, wStride};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc,
                                                     cudnnTensorFormat_t format,
                                                     cudnnDataType_t type, int n, int c, int h,
                                                     int w) {
  if (format == CUDNN_TENSOR_NCHW)
    return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, c * h * w, h * w, w, 1);
  if (format == CUDNN_TENSOR_NHWC)
    return cudnnSetTensor4dDescriptorEx(desc, type, n, c, h, w, h * w * c, 1, w * c, c);
  return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetTensor4dDescriptor",
              "format %d (the emulation knows NCHW and NHWC)", format);
}

// ---- filter descriptors ----

cudnnStatus_t CUDNNWINAPI cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  if (desc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateFilterDescriptor", "null pointer");
  *desc = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc,
                                                     cudnnDataType_t type,
                                                     cudnnTensorFormat_t format, int k, int c,
                                                     int h, int w) {
  const char* fn = "cudnnSetFilter4dDescriptor";
  if (desc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null descriptor");
  if (!known_type(type)) return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown data type %d", type);
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "format %d (the emulation knows NCHW and NHWC)", format);
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "dims %dx%dx%dx%d not all positive", k, c, h, w);
  *desc = cudnnFilterStruct{true, type, format, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}

// ---- convolution descriptors ----

cudnnStatus_t CUDNNWINAPI cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  if (desc == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnCreateConvolutionDescriptor", "null pointer");
  *desc = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc,
                                                          int pad_h, int pad_w, int u, int v,
                                                          int dilation_h, int dilation_w,
                                                          cudnnConvolutionMode_t mode,
                                                          cudnnDataType_t computeType) {
  const char* fn = "cudnnSetConvolution2dDescriptor";
  if (desc == nullptr) return fail(CUDNN_STATUS_BAD_PARAM, fn, "null descriptor");
  if (pad_h < 0 || pad_w < 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "negative padding %d,%d", pad_h, pad_w);
  if (u <= 0 || v <= 0) return fail(CUDNN_STATUS_BAD_PARAM, fn, "stride %d,%d not positive", u, v);
  if (dilation_h <= 0 || dilation_w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "dilation %d,%d not positive", dilation_h, dilation_w);
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "mode %d", mode);
  if (!known_type(computeType))
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "unknown compute type %d", computeType);
  desc->set = true;
  desc->pad_h = pad_h, desc->pad_w = pad_w, desc->u = u, desc->v = v;
  desc->dil_h = dilation_h, desc->dil_w = dilation_w, desc->mode = mode, desc->compute = computeType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc,
                                                        int groupCount) {
  if (desc == nullptr || groupCount <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount",
                "null descriptor or groupCount %d <= 0", groupCount);
  desc->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                                      cudnnMathType_t mathType) {
  if (desc == nullptr || mathType < CUDNN_DEFAULT_MATH || mathType > CUDNN_FMA_MATH)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType",
                "null descriptor or math type %d", mathType);
  desc->math = mathType;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t inputTensorDesc,
    const cudnnFilterDescriptor_t filterDesc, int* n, int* c, int* h, int* w) {
  const char* fn = "cudnnGetConvolution2dForwardOutputDim";
  const cudnnConvolutionStruct* cv = convDesc;
  const cudnnTensorStruct* x = inputTensorDesc;
  const cudnnFilterStruct* f = filterDesc;
  if (cv == nullptr || x == nullptr || f == nullptr || !cv->set || !x->set || !f->set)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null or unset descriptor");
  if (n == nullptr || c == nullptr || h == nullptr || w == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "null output pointer");
  if (x->c != f->c * cv->groups)
    return fail(CUDNN_STATUS_BAD_PARAM, fn, "x C=%d != filter C=%d * groups=%d", x->c, f->c,
                cv->groups);
  *n = x->n, *c = f->k;
  *h = out_dim(x->h, cv->pad_h, f->h, cv->dil_h, cv->u);
  *w = out_dim(x->w, cv->pad_w, f->w, cv->dil_w, cv->v);
  return CUDNN_STATUS_SUCCESS;
}

// ---- algorithm queries ----

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t handle,
                                                                      int* count) {
  if (handle == nullptr || count == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionForwardAlgorithmMaxCount", "null pointer");
  *count = static_cast<int>(kAlgos[kFwd].size());
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t handle,
                                                                           int* count) {
  if (handle == nullptr || count == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionBackwardDataAlgorithmMaxCount", "null pointer");
  *count = static_cast<int>(kAlgos[kBwdData].size());
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t handle,
                                                                             int* count) {
  if (handle == nullptr || count == nullptr)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount", "null pointer");
  *count = static_cast<int>(kAlgos[kBwdFilter].size());
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionFwdAlgoPerf_t* perfResults) {
  return heuristic<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      "cudnnGetConvolutionForwardAlgorithm_v7", kFwd, handle, srcDesc, filterDesc, convDesc,
      destDesc, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t filterDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnTensorDescriptor_t gradDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdDataAlgoPerf_t* perfResults) {
  return heuristic<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      "cudnnGetConvolutionBackwardDataAlgorithm_v7", kBwdData, handle, gradDesc, filterDesc,
      convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
    const cudnnTensorDescriptor_t diffDesc, const cudnnConvolutionDescriptor_t convDesc,
    const cudnnFilterDescriptor_t gradDesc, const int requestedAlgoCount, int* returnedAlgoCount,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfResults) {
  return heuristic<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      "cudnnGetConvolutionBackwardFilterAlgorithm_v7", kBwdFilter, handle, srcDesc, gradDesc,
      convDesc, diffDesc, requestedAlgoCount, returnedAlgoCount, perfResults);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnFilterDescriptor_t wDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc,
    cudnnConvolutionFwdAlgo_t algo, size_t* sizeInBytes) {
  return query("cudnnGetConvolutionForwardWorkspaceSize", kFwd, handle, xDesc, wDesc, convDesc,
               yDesc, algo, sizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* sizeInBytes) {
  return query("cudnnGetConvolutionBackwardDataWorkspaceSize", kBwdData, handle, dxDesc, wDesc,
               convDesc, dyDesc, algo, sizeInBytes);
}

cudnnStatus_t CUDNNWINAPI cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t dyDesc,
    const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t gradDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* sizeInBytes) {
  return query("cudnnGetConvolutionBackwardFilterWorkspaceSize", kBwdFilter, handle, xDesc,
               gradDesc, convDesc, dyDesc, algo, sizeInBytes);
}

// ---- convolutions ----

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(
    cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes,
    const void* beta, const cudnnTensorDescriptor_t yDesc, void* y) {
  return convolve("cudnnConvolutionForward", kFwd, handle, alpha, xDesc, wDesc, convDesc, yDesc,
                  algo, workSpace, workSpaceSizeInBytes, beta, x, w, y);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc, const void* w,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
    void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
    const cudnnTensorDescriptor_t dxDesc, void* dx) {
  return convolve("cudnnConvolutionBackwardData", kBwdData, handle, alpha, dxDesc, wDesc, convDesc,
                  dyDesc, algo, workSpace, workSpaceSizeInBytes, beta, w, dy, dx);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
    void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
    const cudnnFilterDescriptor_t dwDesc, void* dw) {
  return convolve("cudnnConvolutionBackwardFilter", kBwdFilter, handle, alpha, xDesc, dwDesc,
                  convDesc, dyDesc, algo, workSpace, workSpaceSizeInBytes, beta, x, dy, dw);
}

}  // extern "C"
