#pragma once
// Which input rows and columns the output windows of pool_tiled's tiles cover, computed once per
// call (no division per row): what every pass of the kernel (tiled.cpp) and its row scans
// (row_scan.h) share.
#include <vector>

#include "ops/pool/problem.h"
#include "ops/pool/tile_math.h"

namespace tunecnn::pool_tiled {

template <class T>
class TileWindows {
 public:
  TileWindows(const PoolProblem& p, int v)
      : p_(p), v_(v), oh_(p.oh()), ow_(p.ow()),
        // Output columns [ix_lo_, ix_hi_) have their whole window inside the row.
        ix_lo_((p.pw + p.sw - 1) / p.sw),
        ix_hi_(std::min(p.ow(), floor_div(p.iw + p.pw - p.kw, p.sw) + 1)) {
    // Output rows [lo, hi) whose window holds input row y, once per call: no division per row.
    rows_lo_.resize(p.ih), rows_hi_.resize(p.ih);
    for (int y = 0; y < p.ih; ++y) {
      rows_lo_[y] = std::max(floor_div(y + p.ph - p.kh, p.sh) + 1, 0);
      rows_hi_[y] = std::min(floor_div(y + p.ph, p.sh) + 1, oh_);
    }
  }

 protected:
  const PoolProblem& p_;
  int v_, oh_, ow_, ix_lo_, ix_hi_;
  std::vector<int> rows_lo_, rows_hi_;

  // Input rows [lo, hi) some output row of the tile reads.
  Span band(const Tile& t) const {
    return {span(t.oy0, p_.sh, p_.ph, p_.kh, p_.ih).lo,
            span(t.oy0 + t.ny - 1, p_.sh, p_.ph, p_.kh, p_.ih).hi};
  }
  // The tile's output rows [r0, r1) (relative to oy0) whose window holds input row y.
  Span rows_of(int y, const Tile& t) const {
    return {std::max(rows_lo_[y] - t.oy0, 0), std::min(rows_hi_[y] - t.oy0, t.ny)};
  }
  // The first input row output row oy reads.
  int first_row(int oy) const { return std::max(oy * p_.sh - p_.ph, 0); }

  T divisor(const Span& wy, const Span& wx) const {
    return static_cast<T>(p_.count_include_pad ? p_.kh * p_.kw : (wy.hi - wy.lo) * (wx.hi - wx.lo));
  }
};

}  // namespace tunecnn::pool_tiled
