#pragma once
// pool_tiled's row scans: one input row's reductions (max, sum, first argmax) over the window of
// each output column of a tile, with V = 1 interiors vectorised across the columns and the
// borders clipped. The kernel's passes (tiled.cpp) fold these rows into their outputs.
#include "ops/pool/tile_windows.h"

namespace tunecnn::pool_tiled {

template <class T>
class RowScan : public TileWindows<T> {
 public:
  using TileWindows<T>::TileWindows;

 protected:
  using TileWindows<T>::p_;
  using TileWindows<T>::v_;
  using TileWindows<T>::ix_lo_;
  using TileWindows<T>::ix_hi_;

  // h[j * V + i] = max or sum of row's window of output column ox0 + j, value i.
  template <bool kMax, int kN>
  void hreduce(const T* row, const Tile& t, T* h) const {
    if (v_ == 1) {
      // Columns whose window lies inside the row vectorise over j; the rest are clipped.
      const int ja = std::clamp(ix_lo_ - t.ox0, 0, t.nx);
      const int jb = std::clamp(ix_hi_ - t.ox0, ja, t.nx);
      for (int j = 0; j < ja; ++j) h[j] = hclipped<kMax>(row, t.ox0 + j);
      for (int j = jb; j < t.nx; ++j) h[j] = hclipped<kMax>(row, t.ox0 + j);
      if (jb > ja) {
        const T* base = row + (t.ox0 + ja) * p_.sw - p_.pw;
        if (ja == 0 && jb == t.nx)
          hinterior_n<kMax, kN>(base, h, jb - ja);
        else
          hinterior_n<kMax, 0>(base, h + ja, jb - ja);
      }
      return;
    }
    const int v = v_;
    for (int j = 0; j < t.nx; ++j) {
      const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
      T* hj = h + j * v;
      const T* first = row + static_cast<std::int64_t>(wx.lo) * v;
      std::copy(first, first + v, hj);
      for (int x = wx.lo + 1; x < wx.hi; ++x) {
        const T* px = row + static_cast<std::int64_t>(x) * v;
        if constexpr (kMax)
          fold_max(hj, px, v);
        else
          fold_sum(hj, px, v);
      }
    }
  }

  template <bool kMax, int kN>
  void hinterior_n(const T* base, T* h, int n) const {
    if (p_.sw == 1)
      hinterior<kMax, kN, 1>(base, h, n, 1);
    else if (p_.sw == 2)
      hinterior<kMax, kN, 2>(base, h, n, 2);
    else
      hinterior<kMax, kN, 0>(base, h, n, p_.sw);
  }

  // V = 1, windows inside the row: h[j] = reduce over kx of base[j * stride + kx]. kN and kStride
  // are the count and stride when known at compile time (0: use n and stride).
  template <bool kMax, int kN, int kStride>
  void hinterior(const T* __restrict base, T* __restrict h, int n_, int stride) const {
    const int s = kStride > 0 ? kStride : stride;
    const int n = kN > 0 ? kN : n_;
    const int kw = p_.kw;
    for (int j = 0; j < n; ++j) h[j] = base[j * s];
    for (int kx = 1; kx < kw; ++kx) {
      const T* b = base + kx;
      if constexpr (kMax && kN == 1) {
        h[0] = max_scalar(b[0], h[0]);
      } else if constexpr (kMax) {
        for (int j = 0; j < n; ++j) h[j] = pick(takes(b[j * s], h[j]), b[j * s], h[j]);
      } else {
        for (int j = 0; j < n; ++j) h[j] += b[j * s];
      }
    }
  }

  template <bool kMax>
  T hclipped(const T* row, int ox) const {
    const Span wx = span(ox, p_.sw, p_.pw, p_.kw, p_.iw);
    T m = row[wx.lo];
    for (int x = wx.lo + 1; x < wx.hi; ++x) {
      if constexpr (kMax)
        m = max_scalar(row[x], m);
      else
        m += row[x];
    }
    return m;
  }

  // V = 1, windows inside the row: the first maximum of b[j * stride + kx] over kx and its pixel
  // index (b is pixel `at0`). kN and kStride as in hinterior.
  template <int kN, int kStride>
  void hargmax_interior(const T* __restrict b, Idx<T> at0, T* __restrict hv,
                        Idx<T>* __restrict hi, int n_, int stride) const {
    const int s = kStride > 0 ? kStride : stride;
    const int n = kN > 0 ? kN : n_;
    const int kw = p_.kw;
    for (int j = 0; j < n; ++j) hv[j] = b[j * s], hi[j] = at0 + j * s;
    for (int kx = 1; kx < kw; ++kx)
      for (int j = 0; j < n; ++j) {
        const T val = b[j * s + kx];
        const bool take = takes(val, hv[j]);
        hv[j] = pick(take, val, hv[j]);
        hi[j] = pick(take, static_cast<Idx<T>>(at0 + j * s + kx), hi[j]);
      }
  }

  // The first maximum of row y's window of each output column of the tile, with its pixel index.
  void hargmax(const T* src, int y, const Tile& t, T* hval, Idx<T>* hidx) const {
    const int v = v_;
    const T* row = src + static_cast<std::int64_t>(y) * p_.iw * v;
    const Idx<T> base = static_cast<Idx<T>>(y) * p_.iw;
    if (v == 1) {
      // Border columns one by one; the interior vectorises over the tile's columns.
      const int ja = std::clamp(ix_lo_ - t.ox0, 0, t.nx);
      const int jb = std::clamp(ix_hi_ - t.ox0, ja, t.nx);
      auto clipped = [&](int j) {
        const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
        T m = row[wx.lo];
        Idx<T> at = base + wx.lo;
        for (int x = wx.lo + 1; x < wx.hi; ++x) argmax_scalar(row[x], m, base + x, at);
        hval[j] = m, hidx[j] = at;
      };
      for (int j = 0; j < ja; ++j) clipped(j);
      for (int j = jb; j < t.nx; ++j) clipped(j);
      if (jb <= ja) return;
      const int x0 = (t.ox0 + ja) * p_.sw - p_.pw;
      auto interior = [&]<int kN>() {
        if (p_.sw == 1)
          hargmax_interior<kN, 1>(row + x0, base + x0, hval + ja, hidx + ja, jb - ja, 1);
        else if (p_.sw == 2)
          hargmax_interior<kN, 2>(row + x0, base + x0, hval + ja, hidx + ja, jb - ja, 2);
        else
          hargmax_interior<kN, 0>(row + x0, base + x0, hval + ja, hidx + ja, jb - ja, p_.sw);
      };
      if (ja == 0 && jb == t.nx)
        with_width(jb - ja, interior);
      else
        interior.template operator()<0>();
      return;
    }
    for (int j = 0; j < t.nx; ++j) {
      const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
      T* hv = hval + j * v;
      Idx<T>* hi = hidx + j * v;
      const T* first = row + static_cast<std::int64_t>(wx.lo) * v;
      std::copy(first, first + v, hv);
      std::fill(hi, hi + v, base + wx.lo);
      for (int x = wx.lo + 1; x < wx.hi; ++x)
        fold_argmax_at(hv, hi, row + static_cast<std::int64_t>(x) * v, base + x, v);
    }
  }
};

}  // namespace tunecnn::pool_tiled
