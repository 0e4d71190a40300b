// MEC (Cho and Brand, ICML 2017, Algorithm 2) on the GPU, NCHW activations, all three directions.
// The derivation is mec.cpp's; only the memory orders differ. A kernel lowers a chunk of NCHW
// images into the paper's L[n][w][h'][kj][c] (h' over the padded height), the weights are packed
// once per call as K (kh*kw*ic x oc, rows ki, kj, c), and output row h is O_h = L_h K, with L_h
// the columns [sh*h*kw*ic, sh*h*kw*ic + kh*kw*ic) of L. cuBLAS is column-major, so every product
// is written transposed on the same memory; partition h's operands are a fixed stride apart, so
// the oh GEMMs of a loop are ONE strided-batched call:
//   Solution A (ow <= T, |O| <= |L|, chunk > 1): per chunk one call over h, each GEMM all
//     chunk*ow rows; the result is h-k-n-w, copied into L (no longer needed) and permuted back
//     to NCHW, so A needs no memory of its own (as in the paper).
//   Solution B: per image one call over h, each GEMM ow rows, written straight into NCHW (row
//     (w, k) of image n, row h sits at a stride of oh*ow per k).
// bwd_data: dL_h = dO_h K^T. Partitions h and h+d overlap in L when d*sh < kh, so the rows are
// split into P = ceil(kh/sh) phases (h mod P), each one call whose GEMMs are disjoint, adding
// (beta 1) onto dL cleared first; then a gather sums dL back onto each input pixel.
// bwd_weights: dK = sum_h L_h^T dO_h: one call over h writes a partial per h (adding over
// images and chunks), and a kernel sums the partials in order of h while unpacking dK into
// [oc][ic][kh][kw]. Solution A's backward passes first copy a chunk's dO into h-k-n-w order.
// Constraints: NCHW on the GPU, f32/f64, groups == 1, any kernel, stride and padding (a row of
// L and mb*ow within int, for cuBLAS). Tunables: chunk and T, as on the CPU (mec.h); the
// workspace is L for a chunk, K (fwd, bwd_data), dO in h-k-n-w (A's backward) and the oh
// partials of dK (bwd_weights). Deterministic: one stream, fixed phases, fixed sums.
#include <algorithm>
#include <climits>

#include "core/cuda_elementwise.cuh"
#include "ops/conv/args.h"
#include "ops/conv/cuda_geometry.cuh"
#include "ops/conv/mec.h"
#include "ops/cuda_libraries.h"

namespace tunecnn {
namespace {

using Geometry = ConvKernelGeometry;

// One (n, w) row of the lowered matrix L: the padded input column, ihp*kw*ic.
__host__ __device__ std::int64_t lowered_row(const Geometry& p) {
  return static_cast<std::int64_t>(p.ihp()) * p.kw * p.ic;
}

// The images [first, first + count) of one chunk.
struct Chunk {
  int first, count;
};

// The lowered problem and its workspace, shared by run and workspace_bytes. Regions in order:
// [dO of a chunk as h-k-n-w: A's backward] [K: fwd, bwd_data] [oh partials of dK: bwd_weights]
// [L or dL of a chunk].
struct MecCudaPlan {
  Geometry geo;
  int mb, chunk, chunks;
  bool a;
  std::size_t out_bytes, weights_bytes, partial_bytes, lowered_bytes;

  MecCudaPlan(const ConvProblem& p, const TuneConfig& config)
      : geo(p),
        mb(p.mb),
        chunk(mec_chunk(p, config)),
        chunks((p.mb + chunk - 1) / chunk),
        a(mec_uses_solution_a(p, config)) {
    const std::size_t elem = dtype_size(p.dt);
    const std::size_t weights = static_cast<std::size_t>(geo.kd()) * p.oc;
    out_bytes = a && p.dir != Direction::fwd ? align_workspace(chunk * geo.image_out() * elem) : 0;
    weights_bytes = p.dir != Direction::bwd_weights ? align_workspace(weights * elem) : 0;
    partial_bytes = p.dir == Direction::bwd_weights ? align_workspace(geo.oh * weights * elem) : 0;
    lowered_bytes = align_workspace(chunk * p.ow() * lowered_row(geo) * elem);
  }
  std::size_t total_bytes() const {
    return out_bytes + weights_bytes + partial_bytes + lowered_bytes;
  }
  template <class T>
  T* out(Workspace ws) const {
    return ws.as<T>();
  }
  template <class T>
  T* weights(Workspace ws) const {
    return reinterpret_cast<T*>(ws.as<char>() + out_bytes);
  }
  template <class T>
  T* partials(Workspace ws) const {
    return reinterpret_cast<T*>(ws.as<char>() + out_bytes + weights_bytes);
  }
  template <class T>
  T* lowered(Workspace ws) const {
    return reinterpret_cast<T*>(ws.as<char>() + out_bytes + weights_bytes + partial_bytes);
  }
  // The offset from partition h to partition h+1 in L: sh rows of kw*ic.
  std::int64_t partition_step() const {
    return static_cast<std::int64_t>(geo.sh) * geo.kw * geo.ic;
  }
  Chunk chunk_at(int index) const { return {index * chunk, std::min(chunk, mb - index * chunk)}; }
};

template <class Kernel, class... Args>
void launch(std::int64_t n, Kernel kernel, Args... args) {
  if (n <= 0) return;
  kernel<<<cuda_blocks(n), kCudaThreads, 0, cuda_stream()>>>(n, args...);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

// kt[k][(ki*kw + kj)*ic + c] = wei[k][c][ki][kj]: column k of K, contiguous (K is kd x oc,
// leading dimension kd, column-major).
template <class T>
__global__ void pack_weights_kernel(std::int64_t total, Geometry p, const T* wei, T* kt) {
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int c = static_cast<int>(e % p.ic), tap = static_cast<int>(e / p.ic % (p.kh * p.kw));
    const std::int64_t k = e / p.kd();
    const int ki = tap / p.kw, kj = tap % p.kw;
    kt[e] = wei[((k * p.ic + c) * p.kh + ki) * p.kw + kj];
  }
}

// L[n][w][h'][kj][c] = Ip[n][c][h' - ph][sw*w + kj - pw] for the chunk's images (src points at
// the first), zero in the padding. Consecutive threads write consecutive elements of L.
template <class T>
__global__ void lower_kernel(std::int64_t total, Geometry p, const T* src, T* l) {
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int c = static_cast<int>(e % p.ic), kj = static_cast<int>(e / p.ic % p.kw);
    const int hp = static_cast<int>(e / (static_cast<std::int64_t>(p.ic) * p.kw) % p.ihp());
    const std::int64_t nw = e / lowered_row(p);
    const int w = static_cast<int>(nw % p.ow);
    const std::int64_t n = nw / p.ow;
    const int y = hp - p.ph, x = w * p.sw - p.pw + kj;
    const bool inside = y >= 0 && y < p.ih && x >= 0 && x < p.iw;
    l[e] = inside ? src[((n * p.ic + c) * p.ih + y) * p.iw + x] : T(0);
  }
}

// The adjoint of lower_kernel as a gather: diff_src[n][c][y][x] (the chunk's images) sums the
// entries of dL copied from that pixel, over the kj (and so w) that read it, in order of kj.
template <class T>
__global__ void unlower_kernel(std::int64_t total, Geometry p, const T* dl, T* diff_src) {
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int x = static_cast<int>(e % p.iw), y = static_cast<int>(e / p.iw % p.ih);
    const int c = static_cast<int>(e / (static_cast<std::int64_t>(p.iw) * p.ih) % p.ic);
    const std::int64_t n = e / p.image_in();
    T acc = 0;
    for (int kj = 0; kj < p.kw; ++kj) {
      const int t = x + p.pw - kj;
      if (t < 0 || t % p.sw != 0 || t / p.sw >= p.ow) continue;
      const std::int64_t w = t / p.sw;
      acc += dl[(((n * p.ow + w) * p.ihp() + y + p.ph) * p.kw + kj) * p.ic + c];
    }
    diff_src[e] = acc;
  }
}

// Between a chunk's NCHW block and the h-k-n-w order of Solution A's GEMMs (O_h is a
// (count*ow) x oc column-major matrix).
template <class T, bool kToNchw>
__global__ void permute_kernel(std::int64_t total, Geometry p, int count, const T* from, T* to) {
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int w = static_cast<int>(e % p.ow), h = static_cast<int>(e / p.ow % p.oh);
    const int k = static_cast<int>(e / (static_cast<std::int64_t>(p.ow) * p.oh) % p.oc);
    const std::int64_t n = e / p.image_out();
    const std::int64_t hknw = ((static_cast<std::int64_t>(h) * p.oc + k) * count + n) * p.ow + w;
    if constexpr (kToNchw) {
      to[e] = from[hknw];
    } else {
      to[hknw] = from[e];
    }
  }
}

// diff_wei[k][c][ki][kj] = sum over h, in order, of partial_h[k][(ki*kw + kj)*ic + c].
template <class T>
__global__ void reduce_weight_grad_kernel(std::int64_t total, Geometry p, const T* partials,
                                          T* diff_wei) {
  const std::int64_t per_partial = p.kd() * p.oc;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const int kj = static_cast<int>(e % p.kw), ki = static_cast<int>(e / p.kw % p.kh);
    const int c = static_cast<int>(e / (static_cast<std::int64_t>(p.kw) * p.kh) % p.ic);
    const std::int64_t k = e / p.kd();
    const std::int64_t at = k * p.kd() + (static_cast<std::int64_t>(ki) * p.kw + kj) * p.ic + c;
    double acc = 0;
    for (int h = 0; h < p.oh; ++h) acc += static_cast<double>(partials[h * per_partial + at]);
    diff_wei[e] = static_cast<T>(acc);
  }
}

// A column-major operand of one batched call: the first matrix, its leading dimension and the
// step to the next.
template <class P>
struct Strided {
  P first;
  int ld;
  long long step;
};

// C_i = op(A_i) op(B_i) + beta C_i for i < batch: the partitions of one loop, in one call.
template <class T>
void batched(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, Strided<const T*> a,
             Strided<const T*> b, T beta, Strided<T*> c, int batch) {
  if (batch <= 0) return;
  const T alpha = 1;
  gemm_strided_batched(ta, tb, m, n, k, &alpha, a.first, a.ld, a.step, b.first, b.ld, b.step, &beta,
                       c.first, c.ld, c.step, batch);
}

template <class T>
const T* input(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

template <class T>
void pack_weights(const MecCudaPlan& m, const ConvArgs& args, T* kt) {
  launch(m.geo.kd() * m.geo.oc, pack_weights_kernel<T>, m.geo, input<T>(args.wei), kt);
}

template <class T>
void lower(const MecCudaPlan& m, const Chunk& c, const ConvArgs& args, T* l) {
  launch(c.count * m.geo.ow * lowered_row(m.geo), lower_kernel<T>, m.geo,
         input<T>(args.src) + c.first * m.geo.image_in(), l);
}

// The chunk's dO as the partitions read it: Solution A needs it h-k-n-w, in its own region.
template <class T>
const T* partitioned_diff_dst(const MecCudaPlan& m, const Chunk& c, const ConvArgs& args,
                              Workspace ws) {
  const T* diff_dst = input<T>(args.diff_dst) + c.first * m.geo.image_out();
  if (!m.a) return diff_dst;
  launch(c.count * m.geo.image_out(), permute_kernel<T, false>, m.geo, c.count, diff_dst,
         m.out<T>(ws));
  return m.out<T>(ws);
}

template <class T>
void forward(const MecCudaPlan& m, const ConvArgs& args, Workspace ws) {
  const Geometry& p = m.geo;
  const int kd = static_cast<int>(p.kd()), row = static_cast<int>(lowered_row(p));
  T* kt = m.weights<T>(ws);
  T* l = m.lowered<T>(ws);
  pack_weights(m, args, kt);
  const Strided<const T*> weights{kt, kd, 0};
  for (int i = 0; i < m.chunks; ++i) {
    const Chunk c = m.chunk_at(i);
    lower(m, c, args, l);
    T* dst = writable<T>(args.dst) + c.first * p.image_out();
    if (m.a) {
      // O_h^T: (count*ow) x oc, column-major, h after h: h-k-n-w.
      const int rows = c.count * p.ow;
      batched<T>(CUBLAS_OP_T, CUBLAS_OP_N, rows, p.oc, kd, {l, row, m.partition_step()}, weights,
                 T(0), {dst, rows, static_cast<long long>(rows) * p.oc}, p.oh);
      const std::int64_t n = c.count * p.image_out();
      TUNECNN_CUDA_CHECK(
          cudaMemcpyAsync(l, dst, n * sizeof(T), cudaMemcpyDeviceToDevice, cuda_stream()));
      launch(n, permute_kernel<T, true>, p, c.count, static_cast<const T*>(l), dst);
      continue;
    }
    for (int j = 0; j < c.count; ++j)
      batched<T>(CUBLAS_OP_T, CUBLAS_OP_N, p.ow, p.oc, kd,
                 {l + j * p.ow * lowered_row(p), row, m.partition_step()}, weights, T(0),
                 {dst + j * p.image_out(), p.oh * p.ow, p.ow}, p.oh);
  }
}

template <class T>
void backward_data(const MecCudaPlan& m, const ConvArgs& args, Workspace ws) {
  const Geometry& p = m.geo;
  const int kd = static_cast<int>(p.kd()), row = static_cast<int>(lowered_row(p));
  T* kt = m.weights<T>(ws);
  T* dl = m.lowered<T>(ws);
  pack_weights(m, args, kt);
  const Strided<const T*> weights{kt, kd, 0};
  const int phases = (p.kh + p.sh - 1) / p.sh;
  for (int i = 0; i < m.chunks; ++i) {
    const Chunk c = m.chunk_at(i);
    const T* diff_dst = partitioned_diff_dst<T>(m, c, args, ws);
    // Every phase adds, and rows of dL no partition covers must read as zero in the gather.
    TUNECNN_CUDA_CHECK(cudaMemsetAsync(dl, 0, c.count * p.ow * lowered_row(p) * sizeof(T), cuda_stream()));
    for (int phase = 0; phase < std::min(phases, p.oh); ++phase) {
      const int batch = (p.oh - phase + phases - 1) / phases;
      const long long l_step = phases * m.partition_step();
      if (m.a) {
        const int rows = c.count * p.ow;
        const long long out_step = static_cast<long long>(rows) * p.oc;
        batched<T>(CUBLAS_OP_N, CUBLAS_OP_T, kd, rows, p.oc, weights,
                   {diff_dst + phase * out_step, rows, phases * out_step}, T(1),
                   {dl + phase * m.partition_step(), row, l_step}, batch);
        continue;
      }
      for (int j = 0; j < c.count; ++j)
        batched<T>(CUBLAS_OP_N, CUBLAS_OP_T, kd, p.ow, p.oc, weights,
                   {diff_dst + j * p.image_out() + phase * p.ow, p.oh * p.ow,
                    static_cast<long long>(phases) * p.ow},
                   T(1), {dl + j * p.ow * lowered_row(p) + phase * m.partition_step(), row, l_step},
                   batch);
    }
    launch(c.count * p.image_in(), unlower_kernel<T>, p, static_cast<const T*>(dl),
           writable<T>(args.diff_src) + c.first * p.image_in());
  }
}

template <class T>
void backward_weights(const MecCudaPlan& m, const ConvArgs& args, Workspace ws) {
  const Geometry& p = m.geo;
  const int kd = static_cast<int>(p.kd()), row = static_cast<int>(lowered_row(p));
  T* l = m.lowered<T>(ws);
  const Strided<T*> partials{m.partials<T>(ws), kd, static_cast<long long>(kd) * p.oc};
  for (int i = 0; i < m.chunks; ++i) {
    const Chunk c = m.chunk_at(i);
    lower(m, c, args, l);
    const T* diff_dst = partitioned_diff_dst<T>(m, c, args, ws);
    // partial_h (kd x oc) += L_h^T dO_h; the first product of the call overwrites.
    if (m.a) {
      const int rows = c.count * p.ow;
      batched<T>(CUBLAS_OP_N, CUBLAS_OP_N, kd, p.oc, rows, {l, row, m.partition_step()},
                 {diff_dst, rows, static_cast<long long>(rows) * p.oc}, i == 0 ? T(0) : T(1),
                 partials, p.oh);
      continue;
    }
    for (int j = 0; j < c.count; ++j)
      batched<T>(CUBLAS_OP_N, CUBLAS_OP_N, kd, p.oc, p.ow,
                 {l + j * p.ow * lowered_row(p), row, m.partition_step()},
                 {diff_dst + j * p.image_out(), p.oh * p.ow, p.ow}, i == 0 && j == 0 ? T(0) : T(1),
                 partials, p.oh);
  }
  launch(p.kd() * p.oc, reduce_weight_grad_kernel<T>, p, static_cast<const T*>(partials.first),
         writable<T>(args.diff_wei));
}

}  // namespace

bool MecCudaSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (p.device != Device::cuda)
    return reject(why, "a CUDA solver; the problem runs on " + std::string(to_string(p.device)));
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.g != 1)
    return reject(why, "mec needs groups == 1; grouped and depthwise convs go to other solvers");
  const Geometry geo(p);
  if (lowered_row(geo) > INT_MAX || static_cast<std::int64_t>(p.mb) * p.ow() > INT_MAX ||
      static_cast<std::int64_t>(p.oh()) * p.ow() > INT_MAX)
    return reject(why, "mec's lowered matrix is too large for 32-bit cuBLAS dimensions");
  return true;
}

// The CPU's list (default chunk first, then the whole batch and one image, each with the paper's
// T and, where A is possible, a T that flips the solution) without "mt": on the GPU the
// partitions of a loop always go into one call.
std::vector<TuneConfig> MecCudaSolver::configs(const ConvProblem& p) const {
  std::vector<TuneConfig> out;
  for (const TuneConfig& cpu : MecSolver().configs(p)) {
    TuneConfig config;
    for (const auto& [name, value] : cpu.values)
      if (name != "mt") config.values.emplace_back(name, value);
    if (std::find(out.begin(), out.end(), config) == out.end()) out.push_back(config);
  }
  return out;
}

std::size_t MecCudaSolver::workspace_bytes(const ConvProblem& problem,
                                           const TuneConfig& config) const {
  return MecCudaPlan(problem, config).total_bytes();
}

void MecCudaSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                        Workspace ws) const {
  TUNECNN_CHECK(p.device == Device::cuda, "mec (CUDA) runs GPU problems only, got ", p.key(),
                " on ", to_string(p.device));
  check_conv_args(p, args, Layout::NCHW);
  TUNECNN_CHECK(p.g == 1, "mec needs groups == 1, got ", p.key());
  const MecCudaPlan m(p, config);
  TUNECNN_CHECK(ws.bytes >= m.total_bytes(), "mec (CUDA) [", config.str(), "] needs ",
                m.total_bytes(), " workspace bytes, got ", ws.bytes, " for ", p.key());
  const bool f64 = p.dt == DType::f64;
  switch (p.dir) {
    case Direction::fwd:
      return f64 ? forward<double>(m, args, ws) : forward<float>(m, args, ws);
    case Direction::bwd_data:
      return f64 ? backward_data<double>(m, args, ws) : backward_data<float>(m, args, ws);
    case Direction::bwd_weights:
      return f64 ? backward_weights<double>(m, args, ws) : backward_weights<float>(m, args, ws);
  }
}

}  // namespace tunecnn
