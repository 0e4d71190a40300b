// Layout transforms on the GPU, the tuned kernel (Li et al., PAPERS.md section 2). Every transform
// is a batch of strided 2-D transposes (transpose_shape.h), and each transpose moves 32 x 32 tiles
// through shared memory: a warp reads 32 consecutive elements of a source row and writes 32
// consecutive elements of a destination row, so both sides are coalesced, where the simple
// index-map kernel (transform.cu, the reference it is tested against) reads with a stride. The
// tile has 33 columns so that the 32 threads reading one of its columns hit 32 different banks.
// Not yet here: the paper's float2 loads for CHWN <-> NCHW when N >= 64.
#include <algorithm>
#include <climits>

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

template <class T>
void transpose_as(const Tensor& src, Tensor& dst) {
  const TransposeShape t = transpose_for(src.layout(), dst.layout(), src.shape());
  const std::int64_t row_tiles = (t.rows + kTile - 1) / kTile, col_tiles = (t.cols + kTile - 1) / kTile;
  if (t.batch == 0 || row_tiles == 0 || col_tiles == 0) return;
  TUNECNN_CHECK(row_tiles * col_tiles <= INT_MAX, "convert_layout: ", src.describe(),
                " has more 32 x 32 tiles than one grid launches");
  const dim3 grid(static_cast<unsigned>(row_tiles * col_tiles),
                  static_cast<unsigned>(std::min<std::int64_t>(t.batch, kMaxGridY)));
  transpose_tiles<T><<<grid, dim3(kTile, kTileRows), 0, cuda_stream()>>>(
      static_cast<const T*>(src.raw_data()), static_cast<T*>(dst.raw_data()), t, col_tiles);
  TUNECNN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void convert_layout_into(const Tensor& src, Tensor& dst) {
  if (src.dtype() == DType::f64) return transpose_as<double>(src, dst);
  transpose_as<float>(src, dst);
}

}  // namespace tunecnn::cuda
