#pragma once
// Fast layout transforms between NCHW, CHWN and NHWC. Every pair is a batch of strided 2-D
// transposes (CHWN <-> NCHW is one transpose of [N][C*H*W], as in Li et al.; NCHW <-> NHWC is N
// transposes of [C][H*W]; NHWC <-> CHWN is H*W transposes of [N][C]). Each transpose runs in
// units of about 128 x 128 spread over the TBB threads; inside a unit, blocks are transposed in
// registers (AVX2 8x8 f32 / 4x4 f64; a scalar loop elsewhere and for the edges), in an order chosen
// by the strides, and destinations larger than the cache are written with non-temporal stores
// (transform.cpp says why and what each choice measured). `bench layout` reports GB/s against
// memcpy. convert_layout_reference (reference.h) is the obviously-right loop they are tested
// against.
#include "core/tensor.h"

namespace tunecnn {

// A new tensor on src's device with src's logical shape and values, stored in `layout`. Returns
// src itself (shared storage) when it is already in `layout`. Only 4-D tensors have layouts other
// than NCHW.
Tensor convert_layout(const Tensor& src, Layout layout);

// Writes src into dst, which has the same logical shape, dtype and device; dst.layout() is the
// target.
void convert_layout_into(const Tensor& src, Tensor& dst);

// The naive transform on the tensors' device, as convert_layout_into's reference and baseline:
// convert_layout_reference's loop on the CPU, the one-thread-per-element kernel on the GPU.
void convert_layout_naive_into(const Tensor& src, Tensor& dst);

namespace cuda {
// The GPU versions, for two tensors on the GPU in different layouts; callers use
// convert_layout_into. The tuned one (transform_tiled.cu) transposes 32 x 32 tiles through shared
// memory; the naive one (transform.cu), a plain 4-D index map with one thread per element, is its
// reference.
void convert_layout_into(const Tensor& src, Tensor& dst);
void convert_layout_naive_into(const Tensor& src, Tensor& dst);
}  // namespace cuda

}  // namespace tunecnn
