// Direct convolution on the GPU: the textbook sums of direct.cpp with one thread per output
// element, in every direction (fwd: per dst element; bwd_data: a gather per diff_src element;
// bwd_weights: per weight, over the whole batch). Each sum runs in the CPU reference's order and
// in double, so f32 results match the CPU's bit for bit (products of two floats are exact in
// double, whether fused or not) and f64 ones to rounding. It is the GPU reference and the
// always-applicable fallback, so it favours obvious code over speed.
// Constraints: NCHW on the GPU, f32/f64; any stride, padding and groups. Tunables: none.
// Source: the definition of convolution (e.g. Goodfellow et al., ch. 9).
#include "core/cuda_check.h"
#include "core/cuda_elementwise.cuh"
#include "ops/conv/args.h"
#include "ops/conv/cuda_geometry.cuh"
#include "ops/conv/direct.h"

namespace tunecnn {
namespace {

using Geometry = ConvKernelGeometry;

// dst[n, o, y, x] for each thread's elements.
template <class T>
__global__ void direct_fwd_kernel(Geometry p, const T* src, const T* wei, T* dst) {
  const std::int64_t total = static_cast<std::int64_t>(p.mb) * p.oc * p.oh * p.ow;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int x = static_cast<int>(e % p.ow), y = static_cast<int>(e / p.ow % p.oh);
    const int o = static_cast<int>(e / (static_cast<std::int64_t>(p.ow) * p.oh) % p.oc);
    const std::int64_t n = e / (static_cast<std::int64_t>(p.ow) * p.oh * p.oc);
    const int group = o / p.ocg;
    double acc = 0;
    for (int c = 0; c < p.icg; ++c)
      for (int ki = 0; ki < p.kh; ++ki)
        for (int kj = 0; kj < p.kw; ++kj) {
          const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + kj;
          if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
          const int ci = group * p.icg + c;
          acc += static_cast<double>(src[((n * p.ic + ci) * p.ih + iy) * p.iw + ix]) *
                 static_cast<double>(
                     wei[((static_cast<std::int64_t>(o) * p.icg + c) * p.kh + ki) * p.kw + kj]);
        }
    dst[e] = static_cast<T>(acc);
  }
}

// diff_src[n, ci, iy, ix]: the gather over every output the pixel fed.
template <class T>
__global__ void direct_bwd_data_kernel(Geometry p, const T* diff_dst, const T* wei, T* diff_src) {
  const std::int64_t total = static_cast<std::int64_t>(p.mb) * p.ic * p.ih * p.iw;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int ix = static_cast<int>(e % p.iw), iy = static_cast<int>(e / p.iw % p.ih);
    const int ci = static_cast<int>(e / (static_cast<std::int64_t>(p.iw) * p.ih) % p.ic);
    const std::int64_t n = e / (static_cast<std::int64_t>(p.iw) * p.ih * p.ic);
    const int group = ci / p.icg, c = ci % p.icg;
    double acc = 0;
    for (int o = group * p.ocg; o < (group + 1) * p.ocg; ++o)
      for (int ki = 0; ki < p.kh; ++ki)
        for (int kj = 0; kj < p.kw; ++kj) {
          const int ty = iy + p.ph - ki, tx = ix + p.pw - kj;
          if (ty < 0 || tx < 0 || ty % p.sh != 0 || tx % p.sw != 0) continue;
          const int y = ty / p.sh, x = tx / p.sw;
          if (y >= p.oh || x >= p.ow) continue;
          acc += static_cast<double>(diff_dst[((n * p.oc + o) * p.oh + y) * p.ow + x]) *
                 static_cast<double>(
                     wei[((static_cast<std::int64_t>(o) * p.icg + c) * p.kh + ki) * p.kw + kj]);
        }
    diff_src[e] = static_cast<T>(acc);
  }
}

// diff_wei[o, c, ki, kj]: a sum over the batch and every output position.
template <class T>
__global__ void direct_bwd_weights_kernel(Geometry p, const T* src, const T* diff_dst,
                                          T* diff_wei) {
  const std::int64_t total = static_cast<std::int64_t>(p.oc) * p.icg * p.kh * p.kw;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int kj = static_cast<int>(e % p.kw), ki = static_cast<int>(e / p.kw % p.kh);
    const int c = static_cast<int>(e / (static_cast<std::int64_t>(p.kw) * p.kh) % p.icg);
    const int o = static_cast<int>(e / (static_cast<std::int64_t>(p.kw) * p.kh * p.icg));
    const int ci = (o / p.ocg) * p.icg + c;
    double acc = 0;
    for (std::int64_t n = 0; n < p.mb; ++n)
      for (int y = 0; y < p.oh; ++y)
        for (int x = 0; x < p.ow; ++x) {
          const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + kj;
          if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
          acc += static_cast<double>(diff_dst[((n * p.oc + o) * p.oh + y) * p.ow + x]) *
                 static_cast<double>(src[((n * p.ic + ci) * p.ih + iy) * p.iw + ix]);
        }
    diff_wei[e] = static_cast<T>(acc);
  }
}

template <class T>
const T* input(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

template <class T>
void run_direct(const ConvProblem& problem, const ConvArgs& args) {
  const Geometry p(problem);
  const cudaStream_t stream = cuda_stream();
  switch (problem.dir) {
    case Direction::fwd:
      direct_fwd_kernel<T><<<cuda_blocks(args.dst.numel()), kCudaThreads, 0, stream>>>(
          p, input<T>(args.src), input<T>(args.wei), writable<T>(args.dst));
      break;
    case Direction::bwd_data:
      direct_bwd_data_kernel<T><<<cuda_blocks(args.diff_src.numel()), kCudaThreads, 0, stream>>>(
          p, input<T>(args.diff_dst), input<T>(args.wei), writable<T>(args.diff_src));
      break;
    case Direction::bwd_weights:
      direct_bwd_weights_kernel<T><<<cuda_blocks(args.diff_wei.numel()), kCudaThreads, 0, stream>>>(
          p, input<T>(args.src), input<T>(args.diff_dst), writable<T>(args.diff_wei));
      break;
  }
  TUNECNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool DirectCudaSolver::applicable(const ConvProblem& problem, std::string* why) const {
  if (problem.device != Device::cuda)
    return reject(why,
                  "a CUDA solver; the problem runs on " + std::string(to_string(problem.device)));
  return conv_problem_well_formed(problem, why);
}

void DirectCudaSolver::run(const ConvProblem& p, const TuneConfig&, const ConvArgs& args,
                           Workspace) const {
  TUNECNN_CHECK(p.device == Device::cuda, "direct (CUDA) runs GPU problems only, got ", p.key(),
                " on ", to_string(p.device));
  check_conv_args(p, args, Layout::NCHW);
  if (p.dt == DType::f64) return run_direct<double>(p, args);
  run_direct<float>(p, args);
}

}  // namespace tunecnn
