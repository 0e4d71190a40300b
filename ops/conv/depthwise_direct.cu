// Depthwise convolution on the GPU, the specialised kernel of Qin et al. (PAPERS.md section 3;
// TensorFlow's DepthwiseConv2dNative), in NCHW and NHWC. fwd: a thread per output sums its
// channel's kh x kw taps. bwd_data: a thread per input pixel gathers the outputs that read it (no
// atomics, nothing to clear). bwd_weights: a block owns one tap of a few channels over a fixed
// chunk of (image, output pixel) positions and adds them in double with a fixed tree; a second
// kernel adds the chunks in order. No atomics anywhere, so every run gives the same bits. NHWC
// puts the channel in the fastest thread index, so a warp reads consecutive addresses there.
// 3x3 and 5x5 kernels are compile-time sizes (the taps unroll); other sizes loop.
// Constraints: NCHW or NHWC on the GPU, f32/f64, depthwise with multiplier 1 (g == ic == oc), any
// kernel, stride and padding. Tunables: none. Workspace: bwd_weights' per-chunk partial sums when
// a channel spans more than one chunk.
#include <algorithm>
#include <climits>

#include "core/cuda_elementwise.cuh"
#include "ops/conv/args.h"
#include "ops/conv/cuda_geometry.cuh"
#include "ops/conv/depthwise_direct.h"

namespace tunecnn {
namespace {

using Geometry = ConvKernelGeometry;

// bwd_weights: a block sums this many (image, output pixel) positions of its channels and tap. A
// constant, not a function of the GPU, so the sums' order (and bits) are the same on every GPU.
constexpr std::int64_t kChunkPositions = 8192;
constexpr int kWeightThreads = 256;
// NHWC bwd_weights: at most a warp's width of consecutive channels per block, for coalescing.
constexpr int kNhwcChannelLanes = 32;

// An element of an activation tensor, by its logical coordinates.
struct Position {
  std::int64_t n;
  int c, y, x;
};

// A 4-D activation's sizes and where (n, c, y, x) lies in its layout, and back. One image has at
// most INT_MAX elements (applicable() checks), so only the image index needs 64-bit division.
template <bool kNhwc>
struct ActivationIndex {
  int channels, height, width;

  __device__ std::int64_t offset(std::int64_t n, int c, int y, int x) const {
    if constexpr (kNhwc) {
      return ((n * height + y) * width + x) * channels + c;
    } else {
      return ((n * channels + c) * height + y) * width + x;
    }
  }
  // The inverse of offset().
  __device__ Position position(std::int64_t e) const {
    const int image = channels * height * width;
    const std::int64_t n = e / image;
    const int r = static_cast<int>(e - n * image);
    if constexpr (kNhwc) {
      const int pixel = r / channels;
      return {n, r - pixel * channels, pixel / width, pixel % width};
    } else {
      const int row = r / width;
      return {n, row / height, row % height, r - row * width};
    }
  }
};

template <bool kNhwc>
__device__ ActivationIndex<kNhwc> src_index(const Geometry& p) {
  return {p.ic, p.ih, p.iw};
}
template <bool kNhwc>
__device__ ActivationIndex<kNhwc> dst_index(const Geometry& p) {
  return {p.oc, p.oh, p.ow};
}

// K > 0: the kernel is K x K, known at compile time; K == 0: read it from the geometry.
template <int K>
__device__ int kernel_rows(const Geometry& p) {
  return K > 0 ? K : p.kh;
}
template <int K>
__device__ int kernel_cols(const Geometry& p) {
  return K > 0 ? K : p.kw;
}

// dst[n, c, y, x] = sum over the taps inside the input of w[c, ki, kj] * src[n, c, iy, ix].
template <class T, bool kNhwc, int K>
__global__ void depthwise_fwd_kernel(Geometry p, const T* __restrict__ src,
                                     const T* __restrict__ wei, T* __restrict__ dst) {
  const ActivationIndex<kNhwc> in = src_index<kNhwc>(p), out = dst_index<kNhwc>(p);
  const int kh = kernel_rows<K>(p), kw = kernel_cols<K>(p);
  const std::int64_t total = static_cast<std::int64_t>(p.mb) * p.oc * p.oh * p.ow;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const Position o = out.position(e);
    const T* w = wei + static_cast<std::int64_t>(o.c) * kh * kw;
    const int top = o.y * p.sh - p.ph, left = o.x * p.sw - p.pw;
    T acc = 0;
#pragma unroll
    for (int ki = 0; ki < kh; ++ki) {
      const int iy = top + ki;
      if (iy < 0 || iy >= p.ih) continue;
#pragma unroll
      for (int kj = 0; kj < kw; ++kj) {
        const int ix = left + kj;
        if (ix < 0 || ix >= p.iw) continue;
        acc += w[ki * kw + kj] * src[in.offset(o.n, o.c, iy, ix)];
      }
    }
    dst[e] = acc;
  }
}

// diff_src[n, c, iy, ix] = sum over the outputs (y, x) that read it through tap (ki, kj), i.e.
// y * sh - ph + ki == iy, of w[c, ki, kj] * diff_dst[n, c, y, x]: a gather, one writer each.
template <class T, bool kNhwc, int K>
__global__ void depthwise_bwd_data_kernel(Geometry p, const T* __restrict__ diff_dst,
                                          const T* __restrict__ wei, T* __restrict__ diff_src) {
  const ActivationIndex<kNhwc> in = src_index<kNhwc>(p), out = dst_index<kNhwc>(p);
  const int kh = kernel_rows<K>(p), kw = kernel_cols<K>(p);
  const std::int64_t total = static_cast<std::int64_t>(p.mb) * p.ic * p.ih * p.iw;
  for (std::int64_t e = first_index(); e < total; e += grid_stride()) {
    const Position i = in.position(e);
    const T* w = wei + static_cast<std::int64_t>(i.c) * kh * kw;
    T acc = 0;
#pragma unroll
    for (int ki = 0; ki < kh; ++ki) {
      const int ty = i.y + p.ph - ki;
      if (ty < 0 || ty % p.sh != 0 || ty / p.sh >= p.oh) continue;
#pragma unroll
      for (int kj = 0; kj < kw; ++kj) {
        const int tx = i.x + p.pw - kj;
        if (tx < 0 || tx % p.sw != 0 || tx / p.sw >= p.ow) continue;
        acc += w[ki * kw + kj] * diff_dst[out.offset(i.n, i.c, ty / p.sh, tx / p.sw)];
      }
    }
    diff_src[e] = acc;
  }
}

template <class T, bool kNhwc, int K>
void launch_gather(const ConvProblem& problem, const ConvArgs& args) {
  const Geometry p(problem);
  const cudaStream_t stream = cuda_stream();
  if (problem.dir == Direction::fwd) {
    depthwise_fwd_kernel<T, kNhwc, K><<<cuda_blocks(args.dst.numel()), kCudaThreads, 0, stream>>>(
        p, static_cast<const T*>(args.src.raw_data()), static_cast<const T*>(args.wei.raw_data()),
        writable<T>(args.dst));
  } else {
    depthwise_bwd_data_kernel<T, kNhwc, K>
        <<<cuda_blocks(args.diff_src.numel()), kCudaThreads, 0, stream>>>(
            p, static_cast<const T*>(args.diff_dst.raw_data()),
            static_cast<const T*>(args.wei.raw_data()), writable<T>(args.diff_src));
  }
  TUNECNN_CUDA_CHECK_LAUNCH();
}

template <class T, bool kNhwc>
void run_gather(const ConvProblem& p, const ConvArgs& args) {
  if (p.kh == 3 && p.kw == 3) return launch_gather<T, kNhwc, 3>(p, args);
  if (p.kh == 5 && p.kw == 5) return launch_gather<T, kNhwc, 5>(p, args);
  launch_gather<T, kNhwc, 0>(p, args);
}

// ---- bwd_weights ---------------------------------------------------------------------------

std::int64_t weight_positions(const ConvProblem& p) {
  return static_cast<std::int64_t>(p.mb) * p.oh() * p.ow();
}

std::int64_t chunk_count(const ConvProblem& p) {
  return (weight_positions(p) + kChunkPositions - 1) / kChunkPositions;
}

// NCHW (the most blocks of the two layouts: one channel each): chunks x channels x taps.
std::int64_t most_weight_blocks(const ConvProblem& p) {
  return chunk_count(p) * p.ic * p.kh * p.kw;
}

// How bwd_weights splits the work. Block b owns tap b % taps of channel block b / taps %
// channel_blocks over chunk b / (taps * channel_blocks). Its threads are `lanes` consecutive
// channels (1 in NCHW, where consecutive positions are adjacent; up to a warp in NHWC, where
// channels are) by `rows` threads striding over the chunk's positions.
struct WeightBlocks {
  int lanes, rows, tree, channel_blocks, taps;
  std::int64_t positions, chunks;

  WeightBlocks(const ConvProblem& p, bool nhwc)
      : lanes(nhwc ? std::min(p.ic, kNhwcChannelLanes) : 1),
        rows(kWeightThreads / lanes),
        tree(1),
        channel_blocks((p.ic + lanes - 1) / lanes),
        taps(p.kh * p.kw),
        positions(weight_positions(p)),
        chunks(chunk_count(p)) {
    while (tree < rows) tree *= 2;
  }
  int threads() const { return lanes * rows; }
  std::int64_t blocks() const { return chunks * channel_blocks * taps; }
};

// sums[row * lanes + lane] for rows [0, rows) folded into row 0 by a fixed tree (`tree` is the
// power of two at or above rows): the same additions in the same order on every run.
__device__ void fold_rows(double* sums, const WeightBlocks& b, int row) {
  for (int half = b.tree / 2; half > 0; half /= 2) {
    if (row < half && row + half < b.rows) sums[threadIdx.x] += sums[threadIdx.x + half * b.lanes];
    __syncthreads();
  }
}

// out[(chunk * C + c) * taps + tap] = the block's chunk's sum of diff_dst[n, c, y, x] *
// src[n, c, y * sh - ph + ki, x * sw - pw + kj] over positions whose tap lies inside the input.
// Out is double for partials the next kernel adds, T when one chunk covers everything.
template <class T, class Out, bool kNhwc>
__global__ void depthwise_weights_kernel(Geometry p, WeightBlocks b, const T* __restrict__ src,
                                         const T* __restrict__ diff_dst, Out* __restrict__ out) {
  __shared__ double sums[kWeightThreads];
  const ActivationIndex<kNhwc> in = src_index<kNhwc>(p), grad = dst_index<kNhwc>(p);
  std::int64_t block = blockIdx.x;
  const int tap = static_cast<int>(block % b.taps);
  block /= b.taps;
  const int lane = threadIdx.x % b.lanes, row = threadIdx.x / b.lanes;
  const int c = static_cast<int>(block % b.channel_blocks) * b.lanes + lane;
  const std::int64_t chunk = block / b.channel_blocks;
  const int ki = tap / p.kw, kj = tap % p.kw;
  const std::int64_t first = chunk * kChunkPositions;
  const std::int64_t last =
      b.positions - first < kChunkPositions ? b.positions : first + kChunkPositions;
  const std::int64_t ohw = p.ohw();
  double acc = 0;
  if (c < p.ic) {
    for (std::int64_t q = first + row; q < last; q += b.rows) {
      const std::int64_t n = q / ohw;
      const int j = static_cast<int>(q - n * ohw), y = j / p.ow, x = j - y * p.ow;
      const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + kj;
      if (iy < 0 || iy >= p.ih || ix < 0 || ix >= p.iw) continue;
      acc += static_cast<double>(diff_dst[grad.offset(n, c, y, x)]) *
             static_cast<double>(src[in.offset(n, c, iy, ix)]);
    }
  }
  sums[threadIdx.x] = acc;
  __syncthreads();
  fold_rows(sums, b, row);
  if (row == 0 && c < p.ic) out[(chunk * p.ic + c) * b.taps + tap] = static_cast<Out>(sums[lane]);
}

// diff_wei[i] = the chunks' partials[k][i] added in chunk order.
template <class T>
__global__ void add_chunks_kernel(std::int64_t chunks, std::int64_t count,
                                  const double* __restrict__ partials, T* __restrict__ diff_wei) {
  for (std::int64_t i = first_index(); i < count; i += grid_stride()) {
    double acc = 0;
    for (std::int64_t k = 0; k < chunks; ++k) acc += partials[k * count + i];
    diff_wei[i] = static_cast<T>(acc);
  }
}

// One chunk writes the gradient itself; more write double partials that a second kernel adds.
template <class T, bool kNhwc>
void run_weights(const ConvProblem& problem, const ConvArgs& args, Workspace ws) {
  const Geometry p(problem);
  const WeightBlocks b(problem, kNhwc);
  const cudaStream_t stream = cuda_stream();
  const T* src = static_cast<const T*>(args.src.raw_data());
  const T* diff_dst = static_cast<const T*>(args.diff_dst.raw_data());
  T* diff_wei = writable<T>(args.diff_wei);
  const auto grid = static_cast<unsigned>(b.blocks());
  if (b.chunks == 1) {
    depthwise_weights_kernel<T, T, kNhwc>
        <<<grid, b.threads(), 0, stream>>>(p, b, src, diff_dst, diff_wei);
    TUNECNN_CUDA_CHECK_LAUNCH();
    return;
  }
  double* partials = ws.as<double>();
  depthwise_weights_kernel<T, double, kNhwc>
      <<<grid, b.threads(), 0, stream>>>(p, b, src, diff_dst, partials);
  TUNECNN_CUDA_CHECK_LAUNCH();
  const std::int64_t count = static_cast<std::int64_t>(problem.ic) * b.taps;
  add_chunks_kernel<T>
      <<<cuda_blocks(count), kCudaThreads, 0, stream>>>(b.chunks, count, partials, diff_wei);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

template <class T>
void run_typed(const ConvProblem& p, bool nhwc, const ConvArgs& args, Workspace ws) {
  if (p.dir == Direction::bwd_weights)
    return nhwc ? run_weights<T, true>(p, args, ws) : run_weights<T, false>(p, args, ws);
  nhwc ? run_gather<T, true>(p, args) : run_gather<T, false>(p, args);
}

}  // namespace

bool DepthwiseDirectCudaSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (p.device != Device::cuda)
    return reject(why, "a CUDA solver; the problem runs on " + std::string(to_string(p.device)));
  if (!one_filter_per_channel(p, why)) return false;
  if (static_cast<std::int64_t>(p.ic) * p.ih * p.iw > INT_MAX ||
      static_cast<std::int64_t>(p.oc) * p.oh() * p.ow() > INT_MAX)
    return reject(why,
                  "an image of more than 2^31 - 1 elements: the kernels index within one in int");
  if (p.dir == Direction::bwd_weights && most_weight_blocks(p) > INT_MAX)
    return reject(why, "bwd_weights would need more than 2^31 - 1 blocks in one grid");
  return true;
}

// bwd_weights' double partials, one [C][kh*kw] slab per chunk, when there is more than one chunk.
// The same in both layouts, since the size cannot depend on the layout.
std::size_t DepthwiseDirectCudaSolver::workspace_bytes(const ConvProblem& p,
                                                       const TuneConfig&) const {
  if (p.dir != Direction::bwd_weights || chunk_count(p) == 1) return 0;
  return align_workspace(static_cast<std::size_t>(chunk_count(p)) * p.ic * p.kh * p.kw *
                         sizeof(double));
}

void DepthwiseDirectCudaSolver::run(const ConvProblem& p, const TuneConfig& config,
                                    const ConvArgs& args, Workspace ws) const {
  TUNECNN_CHECK(p.device == Device::cuda, "depthwise_direct (CUDA) runs GPU problems only, got ",
                p.key(), " on ", to_string(p.device));
  const Tensor& input = p.dir == Direction::bwd_data ? args.diff_dst : args.src;
  const bool nhwc = input.defined() && input.layout() == Layout::NHWC;
  check_conv_args(p, args, nhwc ? Layout::NHWC : Layout::NCHW);
  std::string why;
  TUNECNN_CHECK(applicable(p, &why), "depthwise_direct (CUDA): ", why, ": ", p.key());
  const std::size_t need = workspace_bytes(p, config);
  TUNECNN_CHECK(ws.bytes >= need, "depthwise_direct (CUDA) needs ", need, " workspace bytes, got ",
                ws.bytes, " for ", p.key());
  if (p.dt == DType::f64) return run_typed<double>(p, nhwc, args, ws);
  run_typed<float>(p, nhwc, args, ws);
}

}  // namespace tunecnn
