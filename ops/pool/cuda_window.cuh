#pragma once
// The pooling window arithmetic the GPU's pool_direct (direct.cu) and pool_tiled (tiled.cu)
// share: the problem's sizes passed to kernels by value, the window of an output clipped to the
// image, its divisor for average pooling, and the outputs whose windows hold an input pixel.
#include "ops/pool/problem.h"

namespace tunecnn {

struct WindowGeometry {
  int ih, iw, oh, ow, kh, kw, sh, sw, ph, pw;
  bool include_pad;
};

inline WindowGeometry window_geometry(const PoolProblem& p) {
  return {p.ih, p.iw, p.oh(), p.ow(), p.kh, p.kw, p.sh, p.sw, p.ph, p.pw, p.count_include_pad};
}

// The window of output (oy, ox), clipped to the image: rows [y0, y1), columns [x0, x1).
struct Window {
  int y0, y1, x0, x1;
};

__device__ inline Window window_at(const WindowGeometry& g, int oy, int ox) {
  const int ys = oy * g.sh - g.ph, xs = ox * g.sw - g.pw;
  return {max(ys, 0), min(ys + g.kh, g.ih), max(xs, 0), min(xs + g.kw, g.iw)};
}

__device__ inline int divisor(const WindowGeometry& g, const Window& w) {
  return g.include_pad ? g.kh * g.kw : (w.y1 - w.y0) * (w.x1 - w.x0);
}

// The outputs along one axis whose windows hold input coordinate i: [first, last] (empty when
// first > last: a pixel that floor mode or a stride over the window leaves out).
struct Span {
  int first, last;
};

__device__ inline Span outputs_holding(int i, int pad, int kernel, int stride, int outputs) {
  const int low = i + pad - kernel + 1;  // the smallest window start that still reaches i
  const int first = low <= 0 ? 0 : (low + stride - 1) / stride;
  return {first, min(outputs - 1, (i + pad) / stride)};
}

}  // namespace tunecnn
