#include "ops/layout/transform.h"

#include <tbb/blocked_range3d.h>
#include <tbb/parallel_for.h>

#include <algorithm>

namespace tunecnn {
namespace {

// dst[b][j][i] = src[b][i][j] for i < rows, j < cols, with leading dimensions and batch offsets.
struct TransposeShape {
  std::int64_t batch, rows, cols;
  std::int64_t src_ld, dst_ld;                  // row strides of src and dst
  std::int64_t src_batch_step, dst_batch_step;  // offset between consecutive batch items
};

// 32 x 32 tiles: 4 KiB of f32 read and written per tile, well inside L1 on both sides.
constexpr std::int64_t kTile = 32;

template <class T>
void transpose_tile(const T* src, T* dst, const TransposeShape& t, std::int64_t i0, std::int64_t i1,
                    std::int64_t j0, std::int64_t j1) {
  for (std::int64_t i = i0; i < i1; ++i) {
    const T* in = src + i * t.src_ld;
    for (std::int64_t j = j0; j < j1; ++j) dst[j * t.dst_ld + i] = in[j];
  }
}

template <class T>
void transpose_batched(const T* src, T* dst, const TransposeShape& t) {
  const std::int64_t row_tiles = (t.rows + kTile - 1) / kTile;
  const std::int64_t col_tiles = (t.cols + kTile - 1) / kTile;
  tbb::parallel_for(
      tbb::blocked_range3d<std::int64_t>(0, t.batch, 0, row_tiles, 0, col_tiles),
      [&](const tbb::blocked_range3d<std::int64_t>& r) {
        for (std::int64_t b = r.pages().begin(); b < r.pages().end(); ++b)
          for (std::int64_t ri = r.rows().begin(); ri < r.rows().end(); ++ri)
            for (std::int64_t ci = r.cols().begin(); ci < r.cols().end(); ++ci)
              transpose_tile(src + b * t.src_batch_step, dst + b * t.dst_batch_step, t, ri * kTile,
                             std::min(t.rows, (ri + 1) * kTile), ci * kTile,
                             std::min(t.cols, (ci + 1) * kTile));
      });
}

// The transpose that takes `from` to `to` for a logical (N, C, S = H*W) tensor.
TransposeShape transpose_for(Layout from, Layout to, std::int64_t n, std::int64_t c, std::int64_t s) {
  const auto key = [](Layout a, Layout b) { return static_cast<int>(a) * 3 + static_cast<int>(b); };
  const int k = key(from, to);
  if (k == key(Layout::NCHW, Layout::CHWN)) return {1, n, c * s, c * s, n, 0, 0};
  if (k == key(Layout::CHWN, Layout::NCHW)) return {1, c * s, n, n, c * s, 0, 0};
  if (k == key(Layout::NCHW, Layout::NHWC)) return {n, c, s, s, c, c * s, c * s};
  if (k == key(Layout::NHWC, Layout::NCHW)) return {n, s, c, c, s, c * s, c * s};
  if (k == key(Layout::NHWC, Layout::CHWN)) return {s, n, c, s * c, s * n, c, n};
  if (k == key(Layout::CHWN, Layout::NHWC)) return {s, c, n, s * n, s * c, n, c};
  TUNECNN_FAIL("no transform from ", to_string(from), " to ", to_string(to));
}

}  // namespace

void convert_layout_into(const Tensor& src, Tensor& dst) {
  TUNECNN_CHECK(src.defined() && dst.defined() && src.device() == Device::cpu &&
                    dst.device() == Device::cpu,
                "convert_layout needs CPU tensors, got ", src.describe(), " -> ", dst.describe());
  TUNECNN_CHECK(src.shape() == dst.shape() && src.dtype() == dst.dtype(), "convert_layout: ",
                src.describe(), " and ", dst.describe(), " differ in shape or dtype");
  if (src.layout() == dst.layout()) {
    dst.copy_from(src);
    return;
  }
  TUNECNN_CHECK(src.ndim() == 4, "only 4-D tensors have a ", to_string(dst.layout()),
                " layout, got ", src.describe());
  const Shape& s = src.shape();
  const TransposeShape t = transpose_for(src.layout(), dst.layout(), s[0], s[1], s[2] * s[3]);
  dispatch_dtype(src.dtype(), [&]<class T>() { transpose_batched(src.data<T>(), dst.data<T>(), t); });
}

Tensor convert_layout(const Tensor& src, Layout layout) {
  TUNECNN_CHECK(src.defined(), "convert_layout: undefined tensor");
  if (src.layout() == layout) return src;
  Tensor dst = Tensor::empty(src.shape(), src.dtype(), src.device(), layout);
  convert_layout_into(src, dst);
  return dst;
}

}  // namespace tunecnn
