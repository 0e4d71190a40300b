// Layout transforms on the GPU, the tuned kernel (Li et al., PAPERS.md section 2). Every transform
// is a batch of strided 2-D transposes (transpose_shape.h), and each transpose moves 32 x 32 tiles
// through shared memory: a warp reads 32 consecutive elements of a source row and writes 32
// consecutive elements of a destination row, so both sides are coalesced, where the simple
// index-map kernel (transform.cu, the reference it is tested against) reads with a stride. The
// tile has 33 columns so that the 32 threads reading one of its columns hit 32 different banks.
// CHWN <-> NCHW in f32 with N >= 64 (even) moves the batch side as float2, as the paper does: the
// tile is 64 images x 32 elements, and each thread moves two consecutive images of the side where
// the batch is contiguous (CHWN's), halving the memory transactions there.
// A thin transpose (one side of at most kThin, e.g. NCHW <-> NHWC of a 3-channel image) fills
// only that many rows of a 32 x 32 tile: on an H100 those ran at 15% of a device-to-device copy
// (bench layout, cv5 and cv9, 2026-11-27). They take a kernel of their own with no shared memory:
// one thread per element of the long side moves its whole short row, so a warp reads (or writes)
// 32 consecutive elements for each of them and the other side's short rows are contiguous.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/cuda_check.h"
#include "ops/layout/transform.h"
#include "ops/layout/transpose_shape.h"

namespace tunecnn::cuda {
namespace {

constexpr int kTile = 32;     // a warp's width
constexpr int kTileRows = 8;  // a block is 32 x 8 threads; each thread moves 4 rows of the tile
constexpr int kMaxGridY = 65535;

// Block x takes tile (x / col_tiles, x % col_tiles) of every batch item y, y + gridDim.y, ...
template <class T>
__global__ void transpose_tiles(const T* __restrict__ src, T* __restrict__ dst, TransposeShape t,
                                std::int64_t col_tiles) {
  __shared__ T tile[kTile][kTile + 1];
  const std::int64_t r0 = blockIdx.x / col_tiles * kTile, c0 = blockIdx.x % col_tiles * kTile;
  for (std::int64_t b = blockIdx.y; b < t.batch; b += gridDim.y) {
    const T* s = src + b * t.src_batch_step;
    T* d = dst + b * t.dst_batch_step;
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const std::int64_t r = r0 + k, c = c0 + threadIdx.x;
      if (r < t.rows && c < t.cols) tile[k][threadIdx.x] = s[r * t.src_ld + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const std::int64_t c = c0 + k, r = r0 + threadIdx.x;
      if (c < t.cols && r < t.rows) d[c * t.dst_ld + r] = tile[threadIdx.x][k];
    }
    __syncthreads();  // the tile is refilled for the next batch item
  }
}

// The float2 tiles: kWide consecutive batch items (images) by kTile elements. kBatchInCols: the
// source's rows are contiguous along the batch (CHWN -> NCHW: rows C*H*W, cols N), so the reads
// are float2; otherwise the destination's are (NCHW -> CHWN: rows N, cols C*H*W), so the writes
// are. Element pairs run off the edge one by one. Requires an even N and 8-byte-aligned data.
constexpr int kWide = 2 * kTile;

template <bool kBatchInCols>
__global__ void transpose_tiles_float2(const float* __restrict__ src, float* __restrict__ dst,
                                       TransposeShape t, std::int64_t col_tiles) {
  constexpr int kTileR = kBatchInCols ? kTile : kWide, kTileC = kBatchInCols ? kWide : kTile;
  __shared__ float tile[kTileR][kTileC + 1];
  const std::int64_t r0 = blockIdx.x / col_tiles * kTileR, c0 = blockIdx.x % col_tiles * kTileC;
  const int tx = threadIdx.x;
  if (kBatchInCols) {  // read float2 along the batch, write single floats
    for (int k = threadIdx.y; k < kTileR; k += kTileRows) {
      const std::int64_t r = r0 + k, c = c0 + 2 * tx;
      if (r >= t.rows) continue;
      const float* at = src + r * t.src_ld + c;
      if (c + 1 < t.cols) {
        const float2 pair = *reinterpret_cast<const float2*>(at);
        tile[k][2 * tx] = pair.x, tile[k][2 * tx + 1] = pair.y;
      } else if (c < t.cols) {
        tile[k][2 * tx] = *at;
      }
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kTileC; k += kTileRows) {
      const std::int64_t c = c0 + k, r = r0 + tx;
      if (c < t.cols && r < t.rows) dst[c * t.dst_ld + r] = tile[tx][k];
    }
  } else {  // read single floats, write float2 along the batch
    for (int k = threadIdx.y; k < kTileR; k += kTileRows) {
      const std::int64_t r = r0 + k, c = c0 + tx;
      if (r < t.rows && c < t.cols) tile[k][tx] = src[r * t.src_ld + c];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kTileC; k += kTileRows) {
      const std::int64_t c = c0 + k, r = r0 + 2 * tx;
      if (c >= t.cols) continue;
      float* at = dst + c * t.dst_ld + r;
      if (r + 1 < t.rows)
        *reinterpret_cast<float2*>(at) = make_float2(tile[2 * tx][k], tile[2 * tx + 1][k]);
      else if (r < t.rows)
        *at = tile[2 * tx][k];
    }
  }
}

// The launch grid for tiles of tile_rows x tile_cols; {0, 0} when there is nothing to move.
struct TileGrid {
  dim3 grid;
  std::int64_t col_tiles = 0;
};

TileGrid tile_grid(const TransposeShape& t, int tile_rows, int tile_cols, const Tensor& src) {
  const std::int64_t row_tiles = (t.rows + tile_rows - 1) / tile_rows;
  const std::int64_t col_tiles = (t.cols + tile_cols - 1) / tile_cols;
  if (t.batch == 0 || row_tiles == 0 || col_tiles == 0) return {dim3(0, 0), 0};
  TUNECNN_CHECK(row_tiles * col_tiles <= INT_MAX, "convert_layout: ", src.describe(),
                " has more tiles than one grid launches");
  return {dim3(static_cast<unsigned>(row_tiles * col_tiles),
               static_cast<unsigned>(std::min<std::int64_t>(t.batch, kMaxGridY))),
          col_tiles};
}

bool aligned_for_float2(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % sizeof(float2) == 0; }

// CHWN <-> NCHW of f32 with N >= 64, even, on float2-aligned data: one transpose whose batch side
// (N) is contiguous in CHWN.
bool float2_applies(const Tensor& src, const Tensor& dst) {
  const bool chwn_nchw = (src.layout() == Layout::CHWN && dst.layout() == Layout::NCHW) ||
                         (src.layout() == Layout::NCHW && dst.layout() == Layout::CHWN);
  const std::int64_t n = src.shape()[0];
  return chwn_nchw && src.dtype() == DType::f32 && n >= kWide && n % 2 == 0 &&
         aligned_for_float2(src.raw_data()) && aligned_for_float2(dst.raw_data());
}

void transpose_float2(const Tensor& src, Tensor& dst) {
  const TransposeShape t = transpose_for(src.layout(), dst.layout(), src.shape());
  TUNECNN_CHECK(t.batch == 1, "convert_layout: the float2 kernel takes one transpose, got ", t.batch);
  const bool batch_in_cols = src.layout() == Layout::CHWN;  // [C*H*W][N] -> [N][C*H*W]
  const TileGrid g = tile_grid(t, batch_in_cols ? kTile : kWide, batch_in_cols ? kWide : kTile, src);
  if (g.col_tiles == 0) return;
  const auto* s = static_cast<const float*>(src.raw_data());
  auto* d = static_cast<float*>(dst.raw_data());
  if (batch_in_cols)
    transpose_tiles_float2<true><<<g.grid, dim3(kTile, kTileRows), 0, cuda_stream()>>>(s, d, t, g.col_tiles);
  else
    transpose_tiles_float2<false><<<g.grid, dim3(kTile, kTileRows), 0, cuda_stream()>>>(s, d, t, g.col_tiles);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

constexpr std::int64_t kThin = 8;  // the short side of a transpose that skips the tiles
constexpr int kThinThreads = 256;

// Thread k of batch item b moves the short row at long index k: dst[b][j][i] = src[b][i][j] for
// every i < rows (rows short) or every j < cols (cols short).
template <class T, bool kRowsShort>
__global__ void transpose_thin(const T* __restrict__ src, T* __restrict__ dst, TransposeShape t) {
  const std::int64_t longer = kRowsShort ? t.cols : t.rows, shorter = kRowsShort ? t.rows : t.cols;
  const std::int64_t total = t.batch * longer;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t x = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < total;
       x += stride) {
    const std::int64_t b = x / longer, k = x % longer;
    const T* s = src + b * t.src_batch_step;
    T* d = dst + b * t.dst_batch_step;
    for (std::int64_t m = 0; m < shorter; ++m) {
      const std::int64_t i = kRowsShort ? m : k, j = kRowsShort ? k : m;
      d[j * t.dst_ld + i] = s[i * t.src_ld + j];
    }
  }
}

template <class T>
void transpose_thin_as(const TransposeShape& t, const Tensor& src, Tensor& dst) {
  const std::int64_t work = t.batch * std::max(t.rows, t.cols);
  if (work == 0 || std::min(t.rows, t.cols) == 0) return;
  const auto blocks = static_cast<unsigned>(
      std::min<std::int64_t>((work + kThinThreads - 1) / kThinThreads, 65535));
  const auto* s = static_cast<const T*>(src.raw_data());
  auto* d = static_cast<T*>(dst.raw_data());
  if (t.rows <= t.cols)
    transpose_thin<T, true><<<blocks, kThinThreads, 0, cuda_stream()>>>(s, d, t);
  else
    transpose_thin<T, false><<<blocks, kThinThreads, 0, cuda_stream()>>>(s, d, t);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

template <class T>
void transpose_as(const Tensor& src, Tensor& dst) {
  const TransposeShape t = transpose_for(src.layout(), dst.layout(), src.shape());
  if (std::min(t.rows, t.cols) <= kThin) return transpose_thin_as<T>(t, src, dst);
  const TileGrid g = tile_grid(t, kTile, kTile, src);
  if (g.col_tiles == 0) return;
  transpose_tiles<T><<<g.grid, dim3(kTile, kTileRows), 0, cuda_stream()>>>(
      static_cast<const T*>(src.raw_data()), static_cast<T*>(dst.raw_data()), t, g.col_tiles);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void convert_layout_into(const Tensor& src, Tensor& dst) {
  if (float2_applies(src, dst)) return transpose_float2(src, dst);
  if (src.dtype() == DType::f64) return transpose_as<double>(src, dst);
  transpose_as<float>(src, dst);
}

}  // namespace tunecnn::cuda
