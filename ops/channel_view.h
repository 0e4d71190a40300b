#pragma once
// A 4-D activation's memory as [outer, C, inner]: channel c of outer index o is the contiguous run
// of `inner` values at (o * C + c) * inner. NCHW is outer N and inner H*W, CHWN outer 1 and inner
// H*W*N, NHWC outer N*H*W and inner 1. Ops that work per channel or across channels (BatchNorm,
// local response normalisation) read every layout through it and so never convert their input.
#include <cstdint>

#include "core/error.h"
#include "core/tensor.h"

namespace tunecnn {

struct ChannelView {
  std::int64_t outer, channels, inner;
};

// `op` names the caller in the error for a tensor that is not 4-D.
inline ChannelView channel_view(const Tensor& x, const char* op) {
  TUNECNN_CHECK(x.ndim() == 4, op, " expects a 4-D input [N, C, H, W], got ", x.describe());
  const std::int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  switch (x.layout()) {
    case Layout::NCHW:
      return {n, c, hw};
    case Layout::CHWN:
      return {1, c, hw * n};
    case Layout::NHWC:
      return {n * hw, c, 1};
  }
  TUNECNN_FAIL(op, ": unknown layout of ", x.describe());
}

}  // namespace tunecnn
