#pragma once
// The pooling window arithmetic the GPU's pool_direct (direct.cu) and pool_tiled (tiled.cu)
// share: the problem's sizes passed to kernels by value, the window of an output clipped to the
// image, and its divisor for average pooling.
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

}  // namespace tunecnn
