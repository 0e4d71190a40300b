#pragma once
// Every layout transform between NCHW, CHWN and NHWC as a batch of strided 2-D transposes, shared
// by the CPU transform (transform.cpp) and the GPU's tiled kernel (transform_tiled.cu).
#include <cstdint>

#include "core/tensor.h"

namespace tunecnn {

// dst[b][j][i] = src[b][i][j] for i < rows, j < cols, with leading dimensions and batch offsets.
struct TransposeShape {
  std::int64_t batch, rows, cols;
  std::int64_t src_ld, dst_ld;                  // row strides of src and dst
  std::int64_t src_batch_step, dst_batch_step;  // offset between consecutive batch items
};

// The transpose that takes a 4-D `shape` (logical N, C, H, W) from `from` to `to` (they differ):
// CHWN <-> NCHW is one transpose of [N][C*H*W], NCHW <-> NHWC is N transposes of [C][H*W], and
// NHWC <-> CHWN is H*W transposes of [N][C].
TransposeShape transpose_for(Layout from, Layout to, const Shape& shape);

}  // namespace tunecnn
