// Layout transforms on the GPU, the simple version, kept as the reference for the tiled kernel
// (transform_tiled.cu): one thread per destination element decodes its logical (n, c, h, w) from
// the destination's memory order and reads the source where its memory order puts that element.
// Writes are coalesced, reads are strided.
#include <array>

#include "core/cuda_elementwise.cuh"
#include "ops/layout/transform.h"

namespace tunecnn::cuda {
namespace {

// The logical dimensions (n, c, h, w) in the order `layout` stores them, outermost first.
std::array<int, 4> storage_order(Layout layout) {
  switch (layout) {
    case Layout::NCHW: return {0, 1, 2, 3};
    case Layout::CHWN: return {1, 2, 3, 0};
    case Layout::NHWC: return {0, 2, 3, 1};
  }
  TUNECNN_FAIL("convert_layout: unknown layout ", static_cast<int>(layout));
}

// Element strides of the logical dimensions (n, c, h, w) for `layout`.
std::array<std::int64_t, 4> strides_of(const Shape& s, Layout layout) {
  const std::array<int, 4> order = storage_order(layout);
  std::array<std::int64_t, 4> stride{};
  std::int64_t step = 1;
  for (int k = 3; k >= 0; --k) {
    stride[order[k]] = step;
    step *= s[order[k]];
  }
  return stride;
}

// What the kernel needs by value: the destination's dimensions innermost first (its extents and
// the source strides of those dimensions).
struct IndexMap {
  std::int64_t extent[4];      // destination dims, innermost first
  std::int64_t src_stride[4];  // the source stride of each of those dims
};

IndexMap index_map(const Tensor& src, Layout to) {
  const Shape& s = src.shape();
  const std::array<int, 4> order = storage_order(to);
  const std::array<std::int64_t, 4> from = strides_of(s, src.layout());
  IndexMap m{};
  for (int k = 0; k < 4; ++k) {
    const int dim = order[3 - k];
    m.extent[k] = s[dim];
    m.src_stride[k] = from[dim];
  }
  return m;
}

template <class T>
void transform_as(const Tensor& src, Tensor& dst) {
  const IndexMap m = index_map(src, dst.layout());
  const T* in = static_cast<const T*>(src.raw_data());
  T* out = static_cast<T*>(dst.raw_data());
  launch_elementwise(dst.numel(), [=] __device__(std::int64_t i) {
    std::int64_t rest = i, offset = 0;
    for (int k = 0; k < 4; ++k) {
      offset += (rest % m.extent[k]) * m.src_stride[k];
      rest /= m.extent[k];
    }
    out[i] = in[offset];
  });
}

}  // namespace

void convert_layout_naive_into(const Tensor& src, Tensor& dst) {
  if (src.dtype() == DType::f64) return transform_as<double>(src, dst);
  transform_as<float>(src, dst);
}

}  // namespace tunecnn::cuda
