// Direct convolution on CHWN activations on the GPU, cuda-convnet's scheme (Li et al., SC'16,
// shared/PAPERS.md sec. 2). Memory is [c][h][w][n]: the 32 lanes of a warp take 32 consecutive
// images, so every load of a pixel is one coalesced row, and each thread keeps B images (its
// lane, +32, ...) x F channels of sums in registers: a loaded pixel serves F channels, a weight
// B images.
//   fwd:         a warp per output pixel; a block's 4 warps share F filters, whose weights are
//                staged in shared memory a tile of input channels at a time.
//   bwd_data:    the transposed gather: a warp per input pixel sums the outputs that read it,
//                with F input channels' weights staged a tile of output channels at a time. A
//                thread owns its pixels' sums: no atomics, nothing cleared first.
//   bwd_weights: a block per F filters x 1 input channel x 4 taps (x 1 of S slices of the
//                output pixels); lanes sum their images, warps their pixels, then a shuffle tree
//                and the warps in order reduce the block; S > 1 writes S partial gradients that
//                a second kernel adds in order. Fixed sums, no atomics: the same bits every run.
// Constraints: CHWN on the GPU, f32/f64, groups 1, any kernel, stride and padding, as long as one
// channel's kh x kw weights for F channels fit in 48 KiB of shared memory (fwd, bwd_data).
// Tunables: "B" images per thread and "F" channels per thread (configs() says which are offered);
// bwd_weights "S", the pixel slices.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "core/cuda_check.h"
#include "core/cuda_elementwise.cuh"
#include "ops/conv/args.h"
#include "ops/conv/cuda_geometry.cuh"
#include "ops/conv/direct_chwn.h"

namespace tunecnn {
namespace {

using Geometry = ConvKernelGeometry;

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarp = 0xffffffffu;
// Four warps per block: four pixels share each staged weight tile, and small layers still give
// many blocks.
constexpr int kWarps = 4;
constexpr int kThreads = kWarpSize * kWarps;
// bwd_weights: the taps of one block. Each loaded diff_dst row serves them all; more would cost
// registers (F x kTapTile sums per thread).
constexpr int kTapTile = 4;
// fwd and bwd_data stage as many reduction channels as fit in kTileBytes (at least one); one
// channel's weights must fit in the 48 KiB a block gets without opting in to more.
constexpr std::size_t kTileBytes = 16 * 1024;
constexpr std::size_t kMaxTileBytes = 48 * 1024;

constexpr int kImagesPerThread[] = {1, 2, 4};
constexpr int kChannelsPerThread[] = {1, 2, 4, 8};
constexpr int kPixelSlices[] = {1, 4, 16};

// Batches and planes stay below this, so the kernels' int indices can step past the end.
constexpr std::int64_t kMaxIndex = INT_MAX / 2;

int ceil_div(std::int64_t a, std::int64_t b) {
  return static_cast<int>((a + b - 1) / b);
}

// ---- configs ---------------------------------------------------------------------------------

struct Blocking {
  int images, channels, slices;  // B, F, S
};

// The channels a direction writes, the ones F splits among threads.
int channels_written(const ConvProblem& p) {
  return p.dir == Direction::bwd_data ? p.ic : p.oc;
}

// fwd and bwd_data: the shared-memory bytes of one reduction channel's weights for F channels.
std::size_t tile_bytes_per_channel(const ConvProblem& p, int f) {
  return static_cast<std::size_t>(f) * p.kh * p.kw * dtype_size(p.dt);
}

bool tile_fits(const ConvProblem& p, int f) {
  return p.dir == Direction::bwd_weights || tile_bytes_per_channel(p, f) <= kMaxTileBytes;
}

// A block of v per thread only when half of it would not already cover `count`: otherwise its
// upper half is padding in every thread, registers spent on nothing.
bool worth_blocking(int v, int per_v, int count) {
  return v == 1 || static_cast<std::int64_t>(per_v) * (v / 2) < count;
}

std::vector<int> offered_images(const ConvProblem& p) {
  std::vector<int> out;
  for (int b : kImagesPerThread)
    if (worth_blocking(b, kWarpSize, p.mb)) out.push_back(b);
  return out;
}

std::vector<int> offered_channels(const ConvProblem& p) {
  std::vector<int> out;
  for (int f : kChannelsPerThread)
    if (worth_blocking(f, 1, channels_written(p)) && tile_fits(p, f)) out.push_back(f);
  return out;
}

// More slices than output pixels leave slices empty.
std::vector<int> offered_slices(const ConvProblem& p) {
  if (p.dir != Direction::bwd_weights) return {};
  std::vector<int> out;
  for (int s : kPixelSlices)
    if (s <= static_cast<std::int64_t>(p.oh()) * p.ow()) out.push_back(s);
  return out;
}

// The untuned default: the most images per thread offered (the fewest weight loads per image),
// up to 4 channels per thread (cuda-convnet's usual filters per thread), one slice (no
// workspace).
Blocking default_blocking(const ConvProblem& p) {
  int f = 1;
  for (int v : offered_channels(p))
    if (v <= 4) f = v;
  return {offered_images(p).back(), f, 1};
}

TuneConfig config_of(const ConvProblem& p, const Blocking& b) {
  TuneConfig c{{{"B", b.images}, {"F", b.channels}}};
  if (p.dir == Direction::bwd_weights) c.values.emplace_back("S", b.slices);
  return c;
}

template <std::size_t N>
bool one_of(const int (&values)[N], int v) {
  return std::find(std::begin(values), std::end(values), v) != std::end(values);
}

// The config's blocking, absent keys taking the default's; throws on values the kernels lack.
Blocking blocking_of(const ConvProblem& p, const TuneConfig& config) {
  const Blocking d = default_blocking(p);
  const Blocking b{config.get("B", d.images), config.get("F", d.channels),
                   p.dir == Direction::bwd_weights ? config.get("S", d.slices) : 1};
  TUNECNN_CHECK(
      one_of(kImagesPerThread, b.images) && one_of(kChannelsPerThread, b.channels) && b.slices >= 1,
      "direct_chwn (CUDA): config [", config.str(),
      "] is not B in {1, 2, 4}, F in {1, 2, 4, 8}, S >= 1, for ", p.key());
  TUNECNN_CHECK(tile_fits(p, b.channels), "direct_chwn (CUDA): F=", b.channels, " needs ",
                tile_bytes_per_channel(p, b.channels), " bytes of shared memory per channel, over ",
                kMaxTileBytes, ", for ", p.key());
  return b;
}

// ---- device helpers --------------------------------------------------------------------------

struct Range {
  int lo, hi;  // [lo, hi)
};

// Kernel taps k whose input pos * stride - pad + k lies in [0, in).
__device__ Range taps_inside(int pos, int stride, int pad, int k, int in) {
  const int base = pos * stride - pad;
  return {max(0, -base), min(k, in - base)};
}

// Output positions o in [0, out) that read input pos, through tap pos + pad - o * stride < k.
__device__ Range outputs_of_input(int pos, int stride, int pad, int k, int out) {
  const int t = pos + pad, first = t - (k - 1);  // bounds on o * stride
  const int lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  return {lo, max(lo, min(out, t / stride + 1))};
}

__device__ int lane_id() {
  return static_cast<int>(threadIdx.x) % kWarpSize;
}
__device__ int warp_id() {
  return static_cast<int>(threadIdx.x) / kWarpSize;
}

// The block's dynamic shared memory (the weight tile), aligned for doubles.
__device__ unsigned char* dynamic_shared() {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  return shared_bytes;
}

// Lane 0 gets the sum of the warp's values, always in the same tree order.
template <class T>
__device__ T warp_sum(T v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    v += __shfl_down_sync(kFullWarp, v, offset);
  return v;
}

// ---- fwd and bwd_data: a warp per pixel written --------------------------------------------

// The block tasks of fwd and bwd_data, cut from a block-stride loop's index: groups of kWarps
// pixels (a warp each) fastest, then chunks of 32*B images, then blocks of F channels, so blocks
// running together share their weights in L2.
struct PixelTasks {
  int pixels, pixel_groups, image_chunks, channel_blocks;
  __host__ __device__ std::int64_t count() const {
    return static_cast<std::int64_t>(pixel_groups) * image_chunks * channel_blocks;
  }
};

PixelTasks pixel_tasks(int pixels, int images, int channels, int b, int f) {
  return {pixels, ceil_div(pixels, kWarps), ceil_div(images, kWarpSize * b), ceil_div(channels, f)};
}

// A thread's share of a task: the block's first channel, the thread's first image, the warp's
// pixel (past the last pixel in the last group: such warps only help stage the weights).
struct PixelTask {
  int channel0, image0, pixel;
};

template <int B, int F>
__device__ PixelTask pixel_task(const PixelTasks& t, std::int64_t index) {
  const int group = static_cast<int>(index % t.pixel_groups);
  const std::int64_t rest = index / t.pixel_groups;
  const int chunk = static_cast<int>(rest % t.image_chunks);
  const int block = static_cast<int>(rest / t.image_chunks);
  return {block * F, chunk * kWarpSize * B + lane_id(), group * kWarps + warp_id()};
}

// A thread's register block: F channels x B images (image0 + 32 b).
template <class T, int B, int F>
struct Sums {
  T v[F][B] = {};

  // One pixel's images (zero past the batch) times the F channels' weights of one tap.
  __device__ void add(const T* pixel, int image0, int images, const T* weights) {
    T x[B];
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const int n = image0 + b * kWarpSize;
      x[b] = n < images ? pixel[n] : T(0);
    }
#pragma unroll
    for (int f = 0; f < F; ++f) {
      const T w = weights[f];
#pragma unroll
      for (int b = 0; b < B; ++b) v[f][b] += w * x[b];
    }
  }

  // `out` is the written pixel of channel 0; channels are `plane` apart.
  __device__ void store(T* out, std::int64_t plane, int channel0, int channels, int image0,
                        int images) const {
#pragma unroll
    for (int f = 0; f < F; ++f) {
      if (channel0 + f >= channels) break;
#pragma unroll
      for (int b = 0; b < B; ++b) {
        const int n = image0 + b * kWarpSize;
        if (n < images) out[(channel0 + f) * plane + n] = v[f][b];
      }
    }
  }
};

// tile[(cc * taps + t) * F + f] = wei[k0 + f][c0 + cc][t] for cc < cs, zero past the filters.
// One filter's cs channels are contiguous in wei, so consecutive threads read consecutive words.
template <class T, int F>
__device__ void stage_fwd_weights(const Geometry& p, const T* wei, int k0, int c0, int cs,
                                  T* tile) {
  const int taps = p.kh * p.kw, run = cs * taps;
  for (int e = threadIdx.x; e < F * run; e += blockDim.x) {
    const int f = e / run, r = e % run, k = k0 + f;
    tile[r * F + f] = k < p.oc ? wei[(static_cast<std::int64_t>(k) * p.ic + c0) * taps + r] : T(0);
  }
}

// dst[k0 + f][y][x][n] for the block's F filters, the warp's output pixel and the thread's images.
template <class T, int B, int F>
__global__ void __launch_bounds__(kThreads)
    chwn_fwd_kernel(Geometry p, PixelTasks tasks, int tile_channels, const T* __restrict__ src,
                    const T* __restrict__ wei, T* __restrict__ dst) {
  T* tile = reinterpret_cast<T*>(dynamic_shared());
  const int taps = p.kh * p.kw;
  const std::int64_t src_plane = static_cast<std::int64_t>(p.ih) * p.iw * p.mb;
  for (std::int64_t index = blockIdx.x; index < tasks.count(); index += gridDim.x) {
    const PixelTask task = pixel_task<B, F>(tasks, index);
    const bool active = task.pixel < tasks.pixels;
    const int y = task.pixel / p.ow, x = task.pixel % p.ow;
    const Range rows = taps_inside(y, p.sh, p.ph, p.kh, p.ih);
    const Range cols = taps_inside(x, p.sw, p.pw, p.kw, p.iw);
    Sums<T, B, F> sums;
    for (int c0 = 0; c0 < p.ic; c0 += tile_channels) {
      const int cs = min(tile_channels, p.ic - c0);
      __syncthreads();  // no warp still reads the previous tile
      stage_fwd_weights<T, F>(p, wei, task.channel0, c0, cs, tile);
      __syncthreads();
      if (!active) continue;
      for (int cc = 0; cc < cs; ++cc) {
        const T* plane = src + (c0 + cc) * src_plane;
        const T* w = tile + cc * taps * F;
        for (int ki = rows.lo; ki < rows.hi; ++ki) {
          const int iy = y * p.sh - p.ph + ki;
          for (int kj = cols.lo; kj < cols.hi; ++kj) {
            const int ix = x * p.sw - p.pw + kj;
            sums.add(plane + (static_cast<std::int64_t>(iy) * p.iw + ix) * p.mb, task.image0, p.mb,
                     w + (ki * p.kw + kj) * F);
          }
        }
      }
    }
    if (active)
      sums.store(dst + static_cast<std::int64_t>(task.pixel) * p.mb,
                 static_cast<std::int64_t>(tasks.pixels) * p.mb, task.channel0, p.oc, task.image0,
                 p.mb);
  }
}

// tile[(kk * taps + t) * F + f] = wei[k0 + kk][c0 + f][t] for kk < ks, zero past the channels.
// For one filter the F channels' weights are contiguous in wei.
template <class T, int F>
__device__ void stage_bwd_data_weights(const Geometry& p, const T* wei, int k0, int ks, int c0,
                                       T* tile) {
  const int taps = p.kh * p.kw, run = F * taps;
  for (int e = threadIdx.x; e < ks * run; e += blockDim.x) {
    const int kk = e / run, r = e % run, f = r / taps, t = r % taps;
    tile[(kk * taps + t) * F + f] =
        c0 + f < p.ic ? wei[(static_cast<std::int64_t>(k0 + kk) * p.ic + c0) * taps + r] : T(0);
  }
}

// diff_src[c0 + f][iy][ix][n]: the sum over every output that read the warp's input pixel.
template <class T, int B, int F>
__global__ void __launch_bounds__(kThreads)
    chwn_bwd_data_kernel(Geometry p, PixelTasks tasks, int tile_channels,
                         const T* __restrict__ diff_dst, const T* __restrict__ wei,
                         T* __restrict__ diff_src) {
  T* tile = reinterpret_cast<T*>(dynamic_shared());
  const int taps = p.kh * p.kw;
  const std::int64_t dst_plane = static_cast<std::int64_t>(p.oh) * p.ow * p.mb;
  for (std::int64_t index = blockIdx.x; index < tasks.count(); index += gridDim.x) {
    const PixelTask task = pixel_task<B, F>(tasks, index);
    const bool active = task.pixel < tasks.pixels;
    const int iy = task.pixel / p.iw, ix = task.pixel % p.iw;
    const Range ys = outputs_of_input(iy, p.sh, p.ph, p.kh, p.oh);
    const Range xs = outputs_of_input(ix, p.sw, p.pw, p.kw, p.ow);
    Sums<T, B, F> sums;
    for (int k0 = 0; k0 < p.oc; k0 += tile_channels) {
      const int ks = min(tile_channels, p.oc - k0);
      __syncthreads();  // no warp still reads the previous tile
      stage_bwd_data_weights<T, F>(p, wei, k0, ks, task.channel0, tile);
      __syncthreads();
      if (!active) continue;
      for (int kk = 0; kk < ks; ++kk) {
        const T* plane = diff_dst + (k0 + kk) * dst_plane;
        const T* w = tile + kk * taps * F;
        for (int y = ys.lo; y < ys.hi; ++y) {
          const int ki = iy + p.ph - y * p.sh;
          for (int x = xs.lo; x < xs.hi; ++x) {
            const int kj = ix + p.pw - x * p.sw;
            sums.add(plane + (static_cast<std::int64_t>(y) * p.ow + x) * p.mb, task.image0, p.mb,
                     w + (ki * p.kw + kj) * F);
          }
        }
      }
    }
    if (active)
      sums.store(diff_src + static_cast<std::int64_t>(task.pixel) * p.mb,
                 static_cast<std::int64_t>(tasks.pixels) * p.mb, task.channel0, p.ic, task.image0,
                 p.mb);
  }
}

// ---- bwd_weights: a block per tile of weights ------------------------------------------------

// The block tasks of bwd_weights: tap tiles fastest, then filter blocks, then pixel slices, then
// input channels, so blocks running together read the same src rows.
struct WeightTasks {
  int tap_tiles, filter_blocks, slices, channels;
  __host__ __device__ std::int64_t count() const {
    return static_cast<std::int64_t>(tap_tiles) * filter_blocks * slices * channels;
  }
};

struct WeightTask {
  int tap0, filter0, slice, channel;
};

template <int F>
__device__ WeightTask weight_task(const WeightTasks& t, std::int64_t index) {
  const int tile = static_cast<int>(index % t.tap_tiles);
  std::int64_t rest = index / t.tap_tiles;
  const int block = static_cast<int>(rest % t.filter_blocks);
  rest /= t.filter_blocks;
  return {tile * kTapTile, block * F, static_cast<int>(rest % t.slices),
          static_cast<int>(rest / t.slices)};
}

// Output pixels [slice_begin(s), slice_begin(s + 1)) belong to slice s.
__device__ int slice_begin(int pixels, int slices, int s) {
  return static_cast<int>(static_cast<std::int64_t>(pixels) * s / slices);
}

// out[slice][k][c][t] (slices of oc*ic*kh*kw; one slice is diff_wei itself) for the block's F
// filters x kTapTile taps: the sum over the slice's pixels and every image. Lanes take images,
// warps pixels; the block then reduces in a fixed order.
template <class T, int B, int F>
__global__ void __launch_bounds__(kThreads)
    chwn_bwd_weights_kernel(Geometry p, WeightTasks tasks, const T* __restrict__ src,
                            const T* __restrict__ diff_dst, T* __restrict__ out) {
  __shared__ T warp_sums[kWarps][F * kTapTile];
  const int taps = p.kh * p.kw, pixels = p.oh * p.ow, lane = lane_id(), warp = warp_id();
  const std::int64_t src_plane = static_cast<std::int64_t>(p.ih) * p.iw * p.mb;
  const std::int64_t dst_plane = static_cast<std::int64_t>(pixels) * p.mb;
  const std::int64_t weights = static_cast<std::int64_t>(p.oc) * p.ic * taps;
  for (std::int64_t index = blockIdx.x; index < tasks.count(); index += gridDim.x) {
    const WeightTask task = weight_task<F>(tasks, index);
    int ki[kTapTile], kj[kTapTile];
#pragma unroll
    for (int j = 0; j < kTapTile; ++j) {
      const int t = min(task.tap0 + j, taps - 1);  // taps past the kernel are never read
      ki[j] = t / p.kw;
      kj[j] = t % p.kw;
    }
    T sums[F][kTapTile] = {};
    const int end = slice_begin(pixels, tasks.slices, task.slice + 1);
    for (int pixel = slice_begin(pixels, tasks.slices, task.slice) + warp; pixel < end;
         pixel += kWarps) {
      const int y = pixel / p.ow, x = pixel % p.ow;
      // Each tap's src pixel, or -1 where it falls in the padding or past the kernel.
      std::int64_t at[kTapTile];
#pragma unroll
      for (int j = 0; j < kTapTile; ++j) {
        const int iy = y * p.sh - p.ph + ki[j], ix = x * p.sw - p.pw + kj[j];
        const bool inside = task.tap0 + j < taps && iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw;
        at[j] = inside
                    ? task.channel * src_plane + (static_cast<std::int64_t>(iy) * p.iw + ix) * p.mb
                    : -1;
      }
      const T* grad = diff_dst + static_cast<std::int64_t>(pixel) * p.mb;
      // B images per step, one after another: each sum adds them in image order, and only one
      // image's F + kTapTile values are live (all B at once took 168 registers at F=8, f32).
      for (int n0 = lane; n0 < p.mb; n0 += kWarpSize * B) {
#pragma unroll
        for (int b = 0; b < B; ++b) {
          const int n = n0 + b * kWarpSize;
          if (n >= p.mb) break;
          T g[F], s[kTapTile];
#pragma unroll
          for (int f = 0; f < F; ++f) {
            const int k = task.filter0 + f;
            g[f] = k < p.oc ? grad[k * dst_plane + n] : T(0);
          }
#pragma unroll
          for (int j = 0; j < kTapTile; ++j) s[j] = at[j] >= 0 ? src[at[j] + n] : T(0);
#pragma unroll
          for (int f = 0; f < F; ++f)
#pragma unroll
            for (int j = 0; j < kTapTile; ++j) sums[f][j] += g[f] * s[j];
        }
      }
    }
#pragma unroll
    for (int f = 0; f < F; ++f)
#pragma unroll
      for (int j = 0; j < kTapTile; ++j) sums[f][j] = warp_sum(sums[f][j]);
    __syncthreads();  // the previous task's warp sums are read
    if (lane == 0) {
#pragma unroll
      for (int f = 0; f < F; ++f)
#pragma unroll
        for (int j = 0; j < kTapTile; ++j) warp_sums[warp][f * kTapTile + j] = sums[f][j];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < F * kTapTile; e += blockDim.x) {
      const int k = task.filter0 + e / kTapTile, t = task.tap0 + e % kTapTile;
      if (k >= p.oc || t >= taps) continue;
      T total = warp_sums[0][e];
      for (int w = 1; w < kWarps; ++w) total += warp_sums[w][e];
      out[task.slice * weights + (static_cast<std::int64_t>(k) * p.ic + task.channel) * taps + t] =
          total;
    }
  }
}

// diff_wei[e] = the slices' partial gradients added in slice order.
template <class T>
__global__ void sum_slices_kernel(std::int64_t weights, int slices, const T* __restrict__ partial,
                                  T* __restrict__ diff_wei) {
  for (std::int64_t e = first_index(); e < weights; e += grid_stride()) {
    T total = partial[e];
    for (int s = 1; s < slices; ++s) total += partial[s * weights + e];
    diff_wei[e] = total;
  }
}

// ---- launches --------------------------------------------------------------------------------

// A block per task up to the grid's limit; the kernels' block-stride loops take the rest.
int grid_for(std::int64_t tasks) {
  return static_cast<int>(std::clamp<std::int64_t>(tasks, 1, INT_MAX));
}

// Reduction channels per shared-memory tile: as many as fit in kTileBytes, at least one.
int tile_channels(const ConvProblem& p, int f, int reduced) {
  return static_cast<int>(
      std::clamp<std::size_t>(kTileBytes / tile_bytes_per_channel(p, f), 1, reduced));
}

template <class T>
struct FwdLaunch {
  const ConvProblem& problem;
  const T* src;
  const T* wei;
  T* dst;

  template <int B, int F>
  void run() const {
    const Geometry p(problem);
    const PixelTasks tasks = pixel_tasks(p.oh * p.ow, p.mb, p.oc, B, F);
    const int channels = tile_channels(problem, F, p.ic);
    const std::size_t bytes = channels * tile_bytes_per_channel(problem, F);
    chwn_fwd_kernel<T, B, F><<<grid_for(tasks.count()), kThreads, bytes, cuda_stream()>>>(
        p, tasks, channels, src, wei, dst);
    TUNECNN_CUDA_CHECK_LAUNCH();
  }
};

template <class T>
struct BwdDataLaunch {
  const ConvProblem& problem;
  const T* diff_dst;
  const T* wei;
  T* diff_src;

  template <int B, int F>
  void run() const {
    const Geometry p(problem);
    const PixelTasks tasks = pixel_tasks(p.ih * p.iw, p.mb, p.ic, B, F);
    const int channels = tile_channels(problem, F, p.oc);
    const std::size_t bytes = channels * tile_bytes_per_channel(problem, F);
    chwn_bwd_data_kernel<T, B, F><<<grid_for(tasks.count()), kThreads, bytes, cuda_stream()>>>(
        p, tasks, channels, diff_dst, wei, diff_src);
    TUNECNN_CUDA_CHECK_LAUNCH();
  }
};

template <class T>
struct BwdWeightsLaunch {
  const ConvProblem& problem;
  int slices;
  const T* src;
  const T* diff_dst;
  T* out;  // diff_wei, or the slices' partials

  template <int B, int F>
  void run() const {
    const Geometry p(problem);
    const WeightTasks tasks{ceil_div(p.kh * p.kw, kTapTile), ceil_div(p.oc, F), slices, p.ic};
    chwn_bwd_weights_kernel<T, B, F>
        <<<grid_for(tasks.count()), kThreads, 0, cuda_stream()>>>(p, tasks, src, diff_dst, out);
    TUNECNN_CUDA_CHECK_LAUNCH();
  }
};

// Calls launch.template run<B, F>() with the blocking's B and F as compile-time constants.
template <int B, class Launch>
void with_channels(int f, const Launch& launch) {
  switch (f) {
    case 1:
      return launch.template run<B, 1>();
    case 2:
      return launch.template run<B, 2>();
    case 4:
      return launch.template run<B, 4>();
    case 8:
      return launch.template run<B, 8>();
  }
  TUNECNN_FAIL("direct_chwn (CUDA): no kernel for F=", f);
}

template <class Launch>
void with_blocking(const Blocking& b, const Launch& launch) {
  switch (b.images) {
    case 1:
      return with_channels<1>(b.channels, launch);
    case 2:
      return with_channels<2>(b.channels, launch);
    case 4:
      return with_channels<4>(b.channels, launch);
  }
  TUNECNN_FAIL("direct_chwn (CUDA): no kernel for B=", b.images);
}

template <class T>
const T* input(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

std::size_t partial_bytes(const ConvProblem& p, int slices) {
  if (p.dir != Direction::bwd_weights || slices <= 1) return 0;
  return align_workspace(static_cast<std::size_t>(slices) * p.oc * p.ic * p.kh * p.kw *
                         dtype_size(p.dt));
}

// One slice writes diff_wei itself; more write their partials into the workspace first.
template <class T>
void run_bwd_weights(const ConvProblem& p, const Blocking& b, const T* src, const T* diff_dst,
                     T* diff_wei, Workspace ws) {
  T* out = b.slices > 1 ? ws.as<T>() : diff_wei;
  with_blocking(b, BwdWeightsLaunch<T>{p, b.slices, src, diff_dst, out});
  if (b.slices == 1) return;
  const std::int64_t weights = static_cast<std::int64_t>(p.oc) * p.ic * p.kh * p.kw;
  sum_slices_kernel<T>
      <<<cuda_blocks(weights), kCudaThreads, 0, cuda_stream()>>>(weights, b.slices, out, diff_wei);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

template <class T>
void run_typed(const ConvProblem& p, const Blocking& b, const ConvArgs& args, Workspace ws) {
  switch (p.dir) {
    case Direction::fwd:
      return with_blocking(
          b, FwdLaunch<T>{p, input<T>(args.src), input<T>(args.wei), writable<T>(args.dst)});
    case Direction::bwd_data:
      return with_blocking(b, BwdDataLaunch<T>{p, input<T>(args.diff_dst), input<T>(args.wei),
                                               writable<T>(args.diff_src)});
    case Direction::bwd_weights:
      return run_bwd_weights<T>(p, b, input<T>(args.src), input<T>(args.diff_dst),
                                writable<T>(args.diff_wei), ws);
  }
}

}  // namespace

bool DirectChwnCudaSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (p.device != Device::cuda)
    return reject(why, "a CUDA solver; the problem runs on " + std::string(to_string(p.device)));
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.g != 1)
    return reject(why,
                  "direct_chwn (CUDA) needs groups == 1; grouped and depthwise convs go to "
                  "other solvers");
  if (p.mb > kMaxIndex || static_cast<std::int64_t>(p.ih) * p.iw > kMaxIndex ||
      static_cast<std::int64_t>(p.oh()) * p.ow() > kMaxIndex ||
      static_cast<std::int64_t>(p.kh) * p.kw > kMaxIndex)
    return reject(why,
                  "a batch, image or kernel of more than 2^30 elements: the kernels index "
                  "them with int");
  if (!tile_fits(p, 1))
    return reject(why, "one channel's " + std::to_string(p.kh) + "x" + std::to_string(p.kw) +
                           " weights take more than the 48 KiB of shared memory of a block");
  return true;
}

// Every offered B x F (x S) combination, the default first: the tuner climbs from it one
// tunable at a time.
std::vector<TuneConfig> DirectChwnCudaSolver::configs(const ConvProblem& p) const {
  const Blocking d = default_blocking(p);
  std::vector<TuneConfig> out = {config_of(p, d)};
  const std::vector<int> slices =
      p.dir == Direction::bwd_weights ? offered_slices(p) : std::vector<int>{1};
  for (int b : offered_images(p))
    for (int f : offered_channels(p))
      for (int s : slices)
        if (b != d.images || f != d.channels || s != d.slices)
          out.push_back(config_of(p, {b, f, s}));
  return out;
}

std::size_t DirectChwnCudaSolver::workspace_bytes(const ConvProblem& p,
                                                  const TuneConfig& config) const {
  return partial_bytes(p, blocking_of(p, config).slices);
}

void DirectChwnCudaSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                               Workspace ws) const {
  TUNECNN_CHECK(p.device == Device::cuda, "direct_chwn (CUDA) runs GPU problems only, got ",
                p.key(), " on ", to_string(p.device));
  TUNECNN_CHECK(p.g == 1, "direct_chwn (CUDA) needs groups == 1, got ", p.key());
  check_conv_args(p, args, Layout::CHWN);
  const Blocking b = blocking_of(p, config);
  const std::size_t bytes = partial_bytes(p, b.slices);
  TUNECNN_CHECK(ws.bytes >= bytes, "direct_chwn (CUDA) [", config.str(), "] needs ", bytes,
                " workspace bytes, got ", ws.bytes, " for ", p.key());
  if (p.dt == DType::f64) return run_typed<double>(p, b, args, ws);
  run_typed<float>(p, b, args, ws);
}

}  // namespace tunecnn
