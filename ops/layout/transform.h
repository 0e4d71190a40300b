#pragma once
// Fast layout transforms between NCHW, CHWN and NHWC. Every pair is a batch of strided 2-D
// transposes (CHWN <-> NCHW is one transpose of [N][C*H*W], as in Li et al.; NCHW <-> NHWC is N
// transposes of [C][H*W]; NHWC <-> CHWN is H*W transposes of [N][C]), run in cache-sized tiles
// so both the reads and the writes stream. convert_layout_reference (reference.h) is the
// obviously-right loop they are tested against.
#include "core/tensor.h"

namespace tunecnn {

// A new CPU tensor with src's logical shape and values, stored in `layout`. Returns src itself
// (shared storage) when it is already in `layout`. Only 4-D tensors have layouts other than NCHW.
Tensor convert_layout(const Tensor& src, Layout layout);

// Writes src into dst, which has the same logical shape and dtype; dst.layout() is the target.
void convert_layout_into(const Tensor& src, Tensor& dst);

}  // namespace tunecnn
