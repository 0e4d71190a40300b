// im2col + GEMM on the GPU (Chellapilla et al. 2006; Caffe's GPU convolution), NCHW, all three
// directions, on cuBLAS. A chunk of images is lowered into one column buffer laid out
// [ic][kh][kw][image][oh*ow]: group g's rows are a K x (chunk*oh*ow) block (K = ic/g*kh*kw), and
// one image's columns a K x (oh*ow) sub-matrix of it. Then, per chunk:
//   fwd          dst_(n,g) = W_g col_(n,g)            one strided-batched GEMM per image or group
//   bwd_data     col_(n,g) = W_g^T dO_(n,g), col2im   (the same batching), col2im a gather
//   bwd_weights  dW_g += dO_g col_g^T                 one strided-batched GEMM over the groups,
//                                                     K = chunk*oh*ow, dO first gathered per group
// cuBLAS is column-major: a row-major r x c matrix with leading dimension ld is its c x r
// transpose, so every product is written transposed (C^T = B^T A^T) on the same memory.
// Constraints: NCHW on the GPU, f32/f64, any stride, padding and groups, depthwise included.
// Tunable: "chunk", images lowered together (powers of two up to min(mb, 64), as on the CPU);
// the workspace is the chunk's column buffer (plus, for bwd_weights, the chunk's dO gathered by
// group), so memory grows with it while the GEMMs get wider and fewer.
#include <algorithm>
#include <climits>

#include "core/cuda_elementwise.cuh"
#include "ops/conv/args.h"
#include "ops/conv/cuda_geometry.cuh"
#include "ops/conv/im2col_gemm.h"
#include "ops/cuda_libraries.h"

namespace tunecnn {
namespace {

// The untuned default lowers the most images (a power of two) whose columns fit in this.
constexpr std::size_t kDefaultColumnBytes = std::size_t{64} << 20;

int chunk_of(const ConvProblem& p, const TuneConfig& config) {
  return std::clamp(config.get("chunk", 1), 1, p.mb);
}

using Geometry = ConvKernelGeometry;

// The lowered problem and its workspace: [columns][dO by group: bwd_weights only].
struct Lowering {
  int g, icg, ocg, k, ohw, chunk, chunks;
  std::size_t col_bytes, tmp_bytes;

  Lowering(const ConvProblem& p, const TuneConfig& config)
      : g(p.g),
        icg(p.ic / p.g),
        ocg(p.oc / p.g),
        k(icg * p.kh * p.kw),
        ohw(p.oh() * p.ow()),
        chunk(chunk_of(p, config)),
        chunks((p.mb + chunk - 1) / chunk) {
    const std::size_t elem = dtype_size(p.dt), columns = static_cast<std::size_t>(chunk) * ohw;
    col_bytes = align_workspace(static_cast<std::size_t>(p.ic) * p.kh * p.kw * columns * elem);
    tmp_bytes = p.dir == Direction::bwd_weights
                    ? align_workspace(static_cast<std::size_t>(p.oc) * columns * elem)
                    : 0;
  }
  int ld() const { return chunk * ohw; }  // a row of the columns: one chunk's output positions
  std::size_t total_bytes() const { return col_bytes + tmp_bytes; }
  template <class T>
  T* col(Workspace ws) const {
    return ws.as<T>();
  }
  template <class T>
  T* tmp(Workspace ws) const {
    return reinterpret_cast<T*>(ws.as<char>() + col_bytes);
  }
};

// The images [first, first + count) of one chunk.
struct Chunk {
  int first, count;
};

// col[r][n][j] for r = (ci, ki, kj), image n < count of the chunk (src points at its first),
// output position j; rows are chunk*ohw apart. Zero where the window hangs over the padding.
template <class T>
__global__ void im2col_kernel(Geometry p, const T* src, int count, int chunk, T* col) {
  const std::int64_t ohw = p.ohw();
  const std::int64_t total = static_cast<std::int64_t>(p.ic) * p.kh * p.kw * count * ohw;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const std::int64_t j = e % ohw, n = e / ohw % count, r = e / (ohw * count);
    const int kj = static_cast<int>(r % p.kw), ki = static_cast<int>(r / p.kw % p.kh);
    const std::int64_t ci = r / (static_cast<std::int64_t>(p.kw) * p.kh);
    const int iy = static_cast<int>(j / p.ow) * p.sh - p.ph + ki;
    const int ix = static_cast<int>(j % p.ow) * p.sw - p.pw + kj;
    const bool inside = iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw;
    col[(r * chunk + n) * ohw + j] = inside ? src[((n * p.ic + ci) * p.ih + iy) * p.iw + ix] : T(0);
  }
}

// The adjoint of im2col as a gather: each diff_src element of the chunk sums the column entries
// copied from it, so no thread writes another's element and nothing needs clearing first.
template <class T>
__global__ void col2im_kernel(Geometry p, const T* col, int count, int chunk, T* diff_src) {
  const std::int64_t ohw = p.ohw();
  const std::int64_t total = static_cast<std::int64_t>(count) * p.ic * p.ih * p.iw;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int ix = static_cast<int>(e % p.iw), iy = static_cast<int>(e / p.iw % p.ih);
    const std::int64_t ci = e / (static_cast<std::int64_t>(p.iw) * p.ih) % p.ic;
    const std::int64_t n = e / (static_cast<std::int64_t>(p.iw) * p.ih * p.ic);
    T acc = 0;
    for (int ki = 0; ki < p.kh; ++ki)
      for (int kj = 0; kj < p.kw; ++kj) {
        const int ty = iy + p.ph - ki, tx = ix + p.pw - kj;
        if (ty < 0 || tx < 0 || ty % p.sh != 0 || tx % p.sw != 0) continue;
        const int y = ty / p.sh, x = tx / p.sw;
        if (y >= p.oh || x >= p.ow) continue;
        const std::int64_t r = (ci * p.kh + ki) * p.kw + kj;
        acc += col[(r * chunk + n) * ohw + static_cast<std::int64_t>(y) * p.ow + x];
      }
    diff_src[e] = acc;
  }
}

// tmp[co][n][j] = dO[n][co][j] for the chunk's images (dO points at its first): each group's
// gradient becomes an ocg x (chunk*ohw) block with the same column order as the columns.
template <class T>
__global__ void gather_by_group_kernel(Geometry p, const T* diff_dst, int count, int chunk,
                                       T* tmp) {
  const std::int64_t ohw = p.ohw();
  const std::int64_t total = static_cast<std::int64_t>(p.oc) * count * ohw;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const std::int64_t j = e % ohw, n = e / ohw % count, co = e / (ohw * count);
    tmp[(co * chunk + n) * ohw + j] = diff_dst[(n * p.oc + co) * ohw + j];
  }
}

// A column-major operand of the (group, image) GEMMs: base, leading dimension and the offsets of
// the next group and the next image.
template <class P>
struct Operand {
  P base;
  int ld;
  std::int64_t group_step, image_step;
  P at(int group, int image) const { return base + group * group_step + image * image_step; }
};

// C_(g,n) = op(A_(g,n)) op(B_(g,n)) + beta C_(g,n) for every group and image, as strided-batched
// calls over whichever of the two is larger, looping over the other.
template <class T>
struct GroupImageGemm {
  cublasOperation_t ta, tb;
  int m, n, k;
  Operand<const T*> a, b;
  T beta;
  Operand<T*> c;

  void run(int groups, int images) const {
    const T alpha = 1;
    const bool batch_groups = groups >= images;
    const int loops = batch_groups ? images : groups, batch = batch_groups ? groups : images;
    for (int i = 0; i < loops; ++i) {
      const int gi = batch_groups ? 0 : i, ni = batch_groups ? i : 0;
      const auto step = [&](const auto& op) {
        return batch_groups ? op.group_step : op.image_step;
      };
      gemm_strided_batched(ta, tb, m, n, k, &alpha, a.at(gi, ni), a.ld, step(a), b.at(gi, ni), b.ld,
                           step(b), &beta, c.at(gi, ni), c.ld, step(c), batch);
    }
  }
};

template <class T>
void lower_chunk(const ConvProblem& problem, const Lowering& l, const Chunk& c, const T* src,
                 T* col) {
  const Geometry p(problem);
  const std::int64_t n = static_cast<std::int64_t>(p.ic) * p.kh * p.kw * c.count * l.ohw;
  im2col_kernel<T><<<cuda_blocks(n), kCudaThreads, 0, cuda_stream()>>>(
      p, src + c.first * static_cast<std::int64_t>(p.ic) * p.ih * p.iw, c.count, l.chunk, col);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

template <class T>
void fwd_chunk(const ConvProblem& p, const Lowering& l, const ConvArgs& args, const Chunk& c,
               T* col) {
  lower_chunk(p, l, c, static_cast<const T*>(args.src.raw_data()), col);
  const std::int64_t dst_image = static_cast<std::int64_t>(p.oc) * l.ohw;
  const GroupImageGemm<T> gemm{
      CUBLAS_OP_N,
      CUBLAS_OP_N,
      l.ohw,
      l.ocg,
      l.k,
      {col, l.ld(), static_cast<std::int64_t>(l.k) * l.ld(), l.ohw},
      {static_cast<const T*>(args.wei.raw_data()), l.k, static_cast<std::int64_t>(l.ocg) * l.k, 0},
      T(0),
      {writable<T>(args.dst) + c.first * dst_image, l.ohw, static_cast<std::int64_t>(l.ocg) * l.ohw,
       dst_image}};
  gemm.run(l.g, c.count);
}

template <class T>
void bwd_data_chunk(const ConvProblem& problem, const Lowering& l, const ConvArgs& args,
                    const Chunk& c, T* col) {
  const Geometry p(problem);
  const std::int64_t dst_image = static_cast<std::int64_t>(p.oc) * l.ohw;
  const GroupImageGemm<T> gemm{
      CUBLAS_OP_N,
      CUBLAS_OP_T,
      l.ohw,
      l.k,
      l.ocg,
      {static_cast<const T*>(args.diff_dst.raw_data()) + c.first * dst_image, l.ohw,
       static_cast<std::int64_t>(l.ocg) * l.ohw, dst_image},
      {static_cast<const T*>(args.wei.raw_data()), l.k, static_cast<std::int64_t>(l.ocg) * l.k, 0},
      T(0),
      {col, l.ld(), static_cast<std::int64_t>(l.k) * l.ld(), l.ohw}};
  gemm.run(l.g, c.count);
  const std::int64_t src_image = static_cast<std::int64_t>(p.ic) * p.ih * p.iw;
  col2im_kernel<T><<<cuda_blocks(c.count * src_image), kCudaThreads, 0, cuda_stream()>>>(
      p, col, c.count, l.chunk, writable<T>(args.diff_src) + c.first * src_image);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

// dW_g (ocg x K, row-major) = sum over the chunk's columns of dO_g col_g^T; column-major that is
// dW_g^T (K x ocg) = col_g^T(op T on the K x chunk*ohw block) times dO_g^T. The first chunk
// overwrites dW (beta 0), later ones add: one stream, so the sum's order is fixed.
template <class T>
void bwd_weights_chunk(const ConvProblem& problem, const Lowering& l, const ConvArgs& args,
                       const Chunk& c, T* col, T* tmp) {
  const Geometry p(problem);
  lower_chunk(problem, l, c, static_cast<const T*>(args.src.raw_data()), col);
  const std::int64_t n = static_cast<std::int64_t>(p.oc) * c.count * l.ohw;
  gather_by_group_kernel<T><<<cuda_blocks(n), kCudaThreads, 0, cuda_stream()>>>(
      p, static_cast<const T*>(args.diff_dst.raw_data()) + c.first * p.ohw() * p.oc, c.count,
      l.chunk, tmp);
  TUNECNN_CUDA_CHECK_LAUNCH();
  const GroupImageGemm<T> gemm{
      CUBLAS_OP_T,
      CUBLAS_OP_N,
      l.k,
      l.ocg,
      c.count * l.ohw,
      {col, l.ld(), static_cast<std::int64_t>(l.k) * l.ld(), 0},
      {tmp, l.ld(), static_cast<std::int64_t>(l.ocg) * l.ld(), 0},
      c.first == 0 ? T(0) : T(1),
      {writable<T>(args.diff_wei), l.k, static_cast<std::int64_t>(l.ocg) * l.k, 0}};
  gemm.run(l.g, 1);
}

template <class T>
void run_typed(const ConvProblem& p, const Lowering& l, const ConvArgs& args, Workspace ws) {
  for (int i = 0; i < l.chunks; ++i) {
    const Chunk c{i * l.chunk, std::min(l.chunk, p.mb - i * l.chunk)};
    switch (p.dir) {
      case Direction::fwd:
        fwd_chunk<T>(p, l, args, c, l.col<T>(ws));
        break;
      case Direction::bwd_data:
        bwd_data_chunk<T>(p, l, args, c, l.col<T>(ws));
        break;
      case Direction::bwd_weights:
        bwd_weights_chunk<T>(p, l, args, c, l.col<T>(ws), l.tmp<T>(ws));
        break;
    }
  }
}

std::size_t column_bytes(const ConvProblem& p, int chunk) {
  return static_cast<std::size_t>(p.ic) * p.kh * p.kw * chunk * p.oh() * p.ow() * dtype_size(p.dt);
}

}  // namespace

bool Im2colGemmCudaSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (p.device != Device::cuda)
    return reject(why, "a CUDA solver; the problem runs on " + std::string(to_string(p.device)));
  if (!conv_problem_well_formed(p, why)) return false;
  if (static_cast<std::int64_t>(p.mb) * p.oh() * p.ow() > INT_MAX ||
      static_cast<std::int64_t>(p.ic) * p.kh * p.kw > INT_MAX)
    return reject(why, "the column buffer's sides are too large for 32-bit cuBLAS dimensions");
  return true;
}

// The CPU's chunk list, with the untuned default first: the most images whose columns take at
// most kDefaultColumnBytes, since on the GPU wider GEMMs and fewer launches win until memory runs
// short (chunk 1 when even one image's columns are larger).
std::vector<TuneConfig> Im2colGemmCudaSolver::configs(const ConvProblem& p) const {
  std::vector<TuneConfig> configs = im2col_gemm_configs(p);
  auto fits = [&](const TuneConfig& c) {
    return column_bytes(p, c.get("chunk", 1)) <= kDefaultColumnBytes;
  };
  auto last_fitting = std::find_if(configs.rbegin(), configs.rend(), fits);
  if (last_fitting != configs.rend())
    std::rotate(configs.begin(), std::prev(last_fitting.base()), last_fitting.base());
  return configs;
}

std::size_t Im2colGemmCudaSolver::workspace_bytes(const ConvProblem& p,
                                                  const TuneConfig& config) const {
  return Lowering(p, config).total_bytes();
}

void Im2colGemmCudaSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                               Workspace ws) const {
  TUNECNN_CHECK(p.device == Device::cuda, "im2col_gemm (CUDA) runs GPU problems only, got ",
                p.key(), " on ", to_string(p.device));
  check_conv_args(p, args, Layout::NCHW);
  const Lowering l(p, config);
  TUNECNN_CHECK(ws.bytes >= l.total_bytes(), "im2col_gemm (CUDA) [", config.str(), "] needs ",
                l.total_bytes(), " workspace bytes, got ", ws.bytes, " for ", p.key());
  if (p.dt == DType::f64) return run_typed<double>(p, l, args, ws);
  run_typed<float>(p, l, args, ws);
}

}  // namespace tunecnn
