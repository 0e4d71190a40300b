#pragma once
// The reference layout transform: a plain 4-D loop that copies every element of a logical
// (N, C, H, W) tensor into another memory order. Slow and obviously right, it is what tests and
// benchmark set-up use; fast transforms are checked against it.
#include "core/tensor.h"

namespace tunecnn {

// A new CPU tensor with the same logical shape and values, stored in `layout`. Tensors that are
// not 4-D only support NCHW.
Tensor convert_layout_reference(const Tensor& src, Layout layout);

}  // namespace tunecnn
