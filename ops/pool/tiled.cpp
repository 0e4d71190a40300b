// Coarsened pooling in NCHW, CHWN and NHWC: see tiled.h for what it does and why.
#include "ops/pool/tiled.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tunecnn {
namespace {

// The index type kept beside a value in the argmax: as wide as the value, so both vectorise
// lane for lane.
template <class T>
using Idx = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;

// pool_direct's rule: v replaces the current maximum m when strictly greater, or when v is the
// first NaN. Two compares and a bitwise and keep the loops branch-free so they vectorise.
template <class T>
inline bool takes(T v, T m) {
  return !(v <= m) & (m == m);  // v > m, or v is NaN and m is not
}

// take ? a : b as a bit blend: branch-free also in the scalar remainders of vectorised loops,
// where the compiler would otherwise branch on data and mispredict.
template <class T>
inline T pick(bool take, T a, T b) {
  using U = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  const U mask = U(0) - static_cast<U>(take);
  return std::bit_cast<T>(static_cast<U>((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask)));
}

// Scalar code of the same rule: the compiler turns `takes(v, m) ? v : m` on scalars into
// branches, which mispredict on data; the compare-and-blend below is branch-free.
#if defined(__SSE2__)
inline float max_scalar(float v, float m) {
  const __m128 vv = _mm_set_ss(v), mm = _mm_set_ss(m);
  const __m128 take = _mm_and_ps(_mm_cmpnle_ss(vv, mm), _mm_cmpord_ss(mm, mm));
  return _mm_cvtss_f32(_mm_or_ps(_mm_and_ps(take, vv), _mm_andnot_ps(take, mm)));
}
inline double max_scalar(double v, double m) {
  const __m128d vv = _mm_set_sd(v), mm = _mm_set_sd(m);
  const __m128d take = _mm_and_pd(_mm_cmpnle_sd(vv, mm), _mm_cmpord_sd(mm, mm));
  return _mm_cvtsd_f64(_mm_or_pd(_mm_and_pd(take, vv), _mm_andnot_pd(take, mm)));
}
// The argmax form: the mask also picks the index (an integer select, a cmov).
template <class I>
inline void argmax_scalar(float v, float& m, I at, I& index) {
  const __m128 vv = _mm_set_ss(v), mm = _mm_set_ss(m);
  const __m128 take = _mm_and_ps(_mm_cmpnle_ss(vv, mm), _mm_cmpord_ss(mm, mm));
  m = _mm_cvtss_f32(_mm_or_ps(_mm_and_ps(take, vv), _mm_andnot_ps(take, mm)));
  index = (_mm_movemask_ps(take) & 1) ? at : index;
}
template <class I>
inline void argmax_scalar(double v, double& m, I at, I& index) {
  const __m128d vv = _mm_set_sd(v), mm = _mm_set_sd(m);
  const __m128d take = _mm_and_pd(_mm_cmpnle_sd(vv, mm), _mm_cmpord_sd(mm, mm));
  m = _mm_cvtsd_f64(_mm_or_pd(_mm_and_pd(take, vv), _mm_andnot_pd(take, mm)));
  index = (_mm_movemask_pd(take) & 1) ? at : index;
}
#else
template <class T>
inline T max_scalar(T v, T m) {
  return pick(takes(v, m), v, m);
}
template <class T, class I>
inline void argmax_scalar(T v, T& m, I at, I& index) {
  if (takes(v, m)) m = v, index = at;
}
#endif

// Lane loops over contiguous memory, with restrict pointers and a local count so they vectorise
// (a store through an int pointer could otherwise alias the kernel's int members and force a
// reload of the bound on every lane).
template <class T>
inline void fold_max(T* __restrict a, const T* __restrict h, int n) {
  if (n == 1) {
    a[0] = max_scalar(h[0], a[0]);
    return;
  }
  for (int i = 0; i < n; ++i) a[i] = pick(takes(h[i], a[i]), h[i], a[i]);
}
template <class T>
inline void fold_sum(T* __restrict a, const T* __restrict h, int n) {
  for (int i = 0; i < n; ++i) a[i] += h[i];
}
template <class T>
inline void fold_argmax(T* __restrict a, Idx<T>* __restrict ai, const T* __restrict h,
                        const Idx<T>* __restrict hi, int n) {
  if (n == 1) {
    argmax_scalar(h[0], a[0], hi[0], ai[0]);
    return;
  }
  for (int i = 0; i < n; ++i) {
    const bool take = takes(h[i], a[i]);
    a[i] = pick(take, h[i], a[i]);
    ai[i] = pick(take, hi[i], ai[i]);
  }
}
// The same with one index for every lane: the next pixel of a row.
template <class T>
inline void fold_argmax_at(T* __restrict a, Idx<T>* __restrict ai, const T* __restrict h,
                           Idx<T> at, int n) {
  if (n == 1) {
    argmax_scalar(h[0], a[0], at, ai[0]);
    return;
  }
  for (int i = 0; i < n; ++i) {
    const bool take = takes(h[i], a[i]);
    a[i] = pick(take, h[i], a[i]);
    ai[i] = pick(take, at, ai[i]);
  }
}
template <class T>
inline void divide(T* __restrict out, const T* __restrict in, T d, int n) {
  for (int i = 0; i < n; ++i) out[i] = in[i] / d;
}

// The memory order of one layout, as planes of pixels of V contiguous values: value v of pixel
// (y, x) of plane i is at i * H * W * V + (y * W + x) * V + v, input and output alike.
struct View {
  std::int64_t planes;
  int v;
};

View view_of(const PoolProblem& p, Layout layout) {
  switch (layout) {
    case Layout::NCHW:
      return {static_cast<std::int64_t>(p.mb) * p.c, 1};
    case Layout::CHWN:
      return {p.c, p.mb};
    case Layout::NHWC:
      return {p.mb, p.c};
  }
  TUNECNN_FAIL("pool_tiled: unknown layout");
}

// One output's window along an axis, clipped to the input: [lo, hi).
struct Span {
  int lo, hi;
};
inline Span span(int o, int stride, int pad, int k, int in) {
  const int start = o * stride - pad;
  return {std::max(start, 0), std::min(start + k, in)};
}

struct Tile {
  int oy0, ny, ox0, nx;
};

// Runs f.template operator()<N>() with N = n for the tile widths configs() offers, else N = 0
// (the width is only known at run time). A known width lets the compiler keep a V = 1 tile row in
// registers: the CPU form of the paper's compile-time coarsening factor.
template <class F>
inline void with_width(int n, F&& f) {
  switch (n) {
    case 1: return f.template operator()<1>();
    case 2: return f.template operator()<2>();
    case 3: return f.template operator()<3>();
    case 4: return f.template operator()<4>();
    case 6: return f.template operator()<6>();
    case 8: return f.template operator()<8>();
    case 12: return f.template operator()<12>();
    case 16: return f.template operator()<16>();
    default: return f.template operator()<0>();
  }
}

inline int floor_div(int a, int b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

template <class T>
class Kernel {
 public:
  Kernel(const PoolProblem& p, int v)
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

  // ---- forward -------------------------------------------------------------------------------
  // Writes the tile's outputs of one plane. acc holds ny * nx * V values, h nx * V.
  void fwd_tile(const T* in, T* out, const Tile& t, T* acc, T* h) const {
    const bool max = p_.kind == PoolKind::max;
    auto body = [&]<int kN>() {
      if (max)
        fwd_tile_impl<true, kN>(in, out, t, acc, h);
      else
        fwd_tile_impl<false, kN>(in, out, t, acc, h);
    };
    if (v_ == 1)
      with_width(t.nx, body);
    else
      body.template operator()<0>();
  }

  // ---- coarsening 1 with V = 1 ---------------------------------------------------------------
  // One output per step has nothing to share, so NCHW at fx = fy = 1 scans each window directly,
  // branch-free: the baseline the coarsened tiles are measured against.
  // Forward: output row oy of one plane.
  void fwd_single_row(const T* in, T* out, int oy) const {
    const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
    const bool max = p_.kind == PoolKind::max;
    for (int ox = 0; ox < ow_; ++ox) {
      const Span wx = span(ox, p_.sw, p_.pw, p_.kw, p_.iw);
      T m = in[static_cast<std::int64_t>(wy.lo) * p_.iw + wx.lo];
      T sum = 0;
      for (int y = wy.lo; y < wy.hi; ++y) {
        const T* row = in + static_cast<std::int64_t>(y) * p_.iw;
        for (int x = wx.lo; x < wx.hi; ++x) {
          if (max)
            m = max_scalar(row[x], m);
          else
            sum += row[x];
        }
      }
      out[static_cast<std::int64_t>(oy) * ow_ + ox] = max ? m : sum / divisor(wy, wx);
    }
  }
  // Backward: every output of one plane in row-major order, as pool_direct adds them.
  void bwd_single_plane(const T* src, const T* dd, T* ds) const {
    const bool max = p_.kind == PoolKind::max;
    for (int oy = 0; oy < oh_; ++oy) {
      const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
      for (int ox = 0; ox < ow_; ++ox) {
        const Span wx = span(ox, p_.sw, p_.pw, p_.kw, p_.iw);
        const T g = dd[static_cast<std::int64_t>(oy) * ow_ + ox];
        if (!max) {
          const T share = g / divisor(wy, wx);
          for (int y = wy.lo; y < wy.hi; ++y)
            for (int x = wx.lo; x < wx.hi; ++x) ds[static_cast<std::int64_t>(y) * p_.iw + x] += share;
          continue;
        }
        Idx<T> at = static_cast<Idx<T>>(wy.lo) * p_.iw + wx.lo;
        T m = src[at];
        for (int y = wy.lo; y < wy.hi; ++y)
          for (int x = wx.lo; x < wx.hi; ++x)
            argmax_scalar(src[static_cast<std::int64_t>(y) * p_.iw + x], m,
                          static_cast<Idx<T>>(y) * p_.iw + x, at);
        ds[at] += g;
      }
    }
  }

  // ---- max backward --------------------------------------------------------------------------
  // One row of tiles (all column tiles of output rows [oy0, oy0 + ny)) of one plane: the argmax of
  // every output first (idx: ny * ow * V pixel indices), then the gradients in row-major order,
  // pool_direct's order, so the sums round the same way.
  void max_bwd_rows(const T* src, const T* dd, T* ds, int oy0, int ny, int fx, Idx<T>* idx,
                    T* aval, T* hval, Idx<T>* hidx) const {
    const std::int64_t row_width = static_cast<std::int64_t>(ow_) * v_;
    for (int ox0 = 0; ox0 < ow_; ox0 += fx) {
      const Tile t{oy0, ny, ox0, std::min(fx, ow_ - ox0)};
      auto body = [&]<int kN>() { argmax_tile<kN>(src, t, idx, aval, hval, hidx); };
      if (v_ == 1)
        with_width(t.nx, body);
      else
        body.template operator()<0>();
    }
    const int v = v_, ow = ow_;
    for (int r = 0; r < ny; ++r) {
      const Idx<T>* __restrict ai = idx + r * row_width;
      const T* __restrict g = dd + static_cast<std::int64_t>(oy0 + r) * row_width;
      if (v == 1) {
        for (int ox = 0; ox < ow; ++ox) ds[ai[ox]] += g[ox];
        continue;
      }
      for (int ox = 0; ox < ow; ++ox) {
        const Idx<T>* __restrict ak = ai + static_cast<std::int64_t>(ox) * v;
        const T* __restrict gk = g + static_cast<std::int64_t>(ox) * v;
        for (int i = 0; i < v; ++i) ds[static_cast<std::int64_t>(ak[i]) * v + i] += gk[i];
      }
    }
  }

  // The argmax of every output of tile t into idx (rows of ow * V), aval as scratch.
  template <int kN>
  void argmax_tile(const T* src, const Tile& t, Idx<T>* idx, T* aval, T* hval,
                   Idx<T>* hidx) const {
    const std::int64_t row_width = static_cast<std::int64_t>(ow_) * v_;
    const int width = kN > 0 ? kN : t.nx * v_;  // kN > 0 only when V = 1
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      hargmax(src, y, t, hval, hidx);
      const auto [r0, r1] = rows_of(y, t);
      for (int r = r0; r < r1; ++r) {
        T* a = aval + static_cast<std::int64_t>(r) * width;
        Idx<T>* ai = idx + r * row_width + static_cast<std::int64_t>(t.ox0) * v_;
        if (y == first_row(t.oy0 + r)) {
          for (int i = 0; i < width; ++i) a[i] = hval[i], ai[i] = hidx[i];
        } else {
          fold_argmax(a, ai, hval, hidx, width);
        }
      }
    }
  }

  // ---- average backward ----------------------------------------------------------------------
  // Adds the tile's shares into ds: each output's share, summed per input row over the tile's
  // output rows whose window holds it, then spread over the row's window columns. share holds
  // ny * nx * V values, h nx * V.
  void avg_bwd_tile(const T* dd, T* ds, const Tile& t, T* share, T* h) const {
    const int v = v_, width = t.nx * v;
    for (int r = 0; r < t.ny; ++r) {
      const int oy = t.oy0 + r;
      const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
      const T* g = dd + (static_cast<std::int64_t>(oy) * ow_ + t.ox0) * v;
      T* s = share + static_cast<std::int64_t>(r) * width;
      for (int j = 0; j < t.nx; ++j)
        divide(s + j * v, g + j * v, divisor(wy, span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw)), v);
    }
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      const auto [r0, r1] = rows_of(y, t);
      if (r0 >= r1) continue;  // a row between windows (stride > window)
      const T* s0 = share + static_cast<std::int64_t>(r0) * width;
      std::copy(s0, s0 + width, h);
      for (int r = r0 + 1; r < r1; ++r) fold_sum(h, share + static_cast<std::int64_t>(r) * width, width);
      T* row = ds + static_cast<std::int64_t>(y) * p_.iw * v;
      for (int j = 0; j < t.nx; ++j) {
        const Span wx = span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw);
        for (int x = wx.lo; x < wx.hi; ++x)
          fold_sum(row + static_cast<std::int64_t>(x) * v, h + j * v, v);
      }
    }
  }

 private:
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

  template <bool kMax, int kN>
  void fwd_tile_impl(const T* in, T* out, const Tile& t, T* acc, T* h) const {
    const int v = v_;
    const int width = kN > 0 ? kN : t.nx * v;  // kN > 0 only when V = 1
    const auto [ylo, yhi] = band(t);
    for (int y = ylo; y < yhi; ++y) {
      hreduce<kMax, kN>(in + static_cast<std::int64_t>(y) * p_.iw * v, t, h);
      const auto [r0, r1] = rows_of(y, t);
      for (int r = r0; r < r1; ++r) {
        T* a = acc + static_cast<std::int64_t>(r) * width;
        if (y == first_row(t.oy0 + r)) {
          for (int i = 0; i < width; ++i) a[i] = h[i];
        } else if constexpr (kMax) {
          fold_max(a, h, width);
        } else {
          fold_sum(a, h, width);
        }
      }
    }
    for (int r = 0; r < t.ny; ++r) {
      const int oy = t.oy0 + r;
      const T* a = acc + static_cast<std::int64_t>(r) * width;
      T* o = out + (static_cast<std::int64_t>(oy) * ow_ + t.ox0) * v;
      if constexpr (kMax) {
        for (int i = 0; i < width; ++i) o[i] = a[i];
      } else {
        const Span wy = span(oy, p_.sh, p_.ph, p_.kh, p_.ih);
        for (int j = 0; j < t.nx; ++j)
          divide(o + j * v, a + j * v, divisor(wy, span(t.ox0 + j, p_.sw, p_.pw, p_.kw, p_.iw)), v);
      }
    }
  }

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

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

template <class T>
void run_typed(const PoolProblem& p, int fx, int fy, Layout layout, const PoolArgs& a) {
  const View view = view_of(p, layout);
  const int v = view.v, oh = p.oh(), ow = p.ow();
  const std::int64_t in_plane = static_cast<std::int64_t>(p.ih) * p.iw * v;
  const std::int64_t out_plane = static_cast<std::int64_t>(oh) * ow * v;
  const Kernel<T> kernel(p, v);
  const bool max = p.kind == PoolKind::max;
  const int tile_rows = ceil_div(oh, fy);
  const bool single = v == 1 && fx == 1 && fy == 1;  // coarsening 1 in NCHW
  const std::int64_t row_elems = static_cast<std::int64_t>(p.iw) * v;

  if (p.dir == Direction::fwd) {
    const T* src = a.src.data<T>();
    Tensor dst_handle = a.dst;  // PoolArgs is const, the storage it names is not
    T* dst = dst_handle.data<T>();
    const std::int64_t items = view.planes * tile_rows;
    const std::int64_t item_bytes = static_cast<std::int64_t>(fy) * p.sh * p.iw * v;
    const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, item_bytes));
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, items, grain),
                      [&](const tbb::blocked_range<std::int64_t>& range) {
                        std::vector<T> acc(static_cast<std::size_t>(fy) * fx * v), h(fx * v);
                        for (std::int64_t item = range.begin(); item < range.end(); ++item) {
                          const std::int64_t plane = item / tile_rows;
                          const int oy0 = static_cast<int>(item % tile_rows) * fy;
                          const int ny = std::min(fy, oh - oy0);
                          if (single) {
                            kernel.fwd_single_row(src + plane * in_plane, dst + plane * out_plane,
                                                  oy0);
                            continue;
                          }
                          for (int ox0 = 0; ox0 < ow; ox0 += fx)
                            kernel.fwd_tile(src + plane * in_plane, dst + plane * out_plane,
                                            Tile{oy0, ny, ox0, std::min(fx, ow - ox0)},
                                            acc.data(), h.data());
                        }
                      });
    return;
  }

  const T* diff_dst = a.diff_dst.data<T>();
  Tensor diff_src_handle = a.diff_src;
  T* diff_src = diff_src_handle.data<T>();
  const T* src = max ? a.src.data<T>() : nullptr;
  const std::int64_t grain = std::max<std::int64_t>(1, 16384 / std::max<std::int64_t>(1, in_plane));
  tbb::parallel_for(
      tbb::blocked_range<std::int64_t>(0, view.planes, grain),
      [&](const tbb::blocked_range<std::int64_t>& range) {
        std::vector<T> vals(static_cast<std::size_t>(fy) * fx * v), h(fx * v);
        std::vector<Idx<T>> idx, hidx;
        if (max) idx.resize(static_cast<std::size_t>(fy) * ow * v), hidx.resize(fx * v);
        for (std::int64_t plane = range.begin(); plane < range.end(); ++plane) {
          T* ds = diff_src + plane * in_plane;
          const T* dd = diff_dst + plane * out_plane;
          if (single) {
            std::fill(ds, ds + in_plane, T(0));
            kernel.bwd_single_plane(max ? src + plane * in_plane : nullptr, dd, ds);
            continue;
          }
          // Rows are zeroed just before the first tile row that adds into them, so the plane
          // is swept once while it is in cache rather than zeroed in a pass of its own.
          int zeroed = 0;
          auto zero_to = [&](int y) {
            if (y <= zeroed) return;
            std::fill(ds + static_cast<std::int64_t>(zeroed) * row_elems,
                      ds + static_cast<std::int64_t>(y) * row_elems, T(0));
            zeroed = y;
          };
          for (int oy0 = 0; oy0 < oh; oy0 += fy) {
            const int ny = std::min(fy, oh - oy0);
            zero_to(std::min((oy0 + ny - 1) * p.sh - p.ph + p.kh, p.ih));
            if (max) {
              kernel.max_bwd_rows(src + plane * in_plane, dd, ds, oy0, ny, fx, idx.data(),
                                  vals.data(), h.data(), hidx.data());
              continue;
            }
            for (int ox0 = 0; ox0 < ow; ox0 += fx)
              kernel.avg_bwd_tile(dd, ds, Tile{oy0, ny, ox0, std::min(fx, ow - ox0)},
                                  vals.data(), h.data());
          }
          zero_to(p.ih);  // rows below the last window
        }
      });
}

}  // namespace

bool TiledPoolSolver::applicable(const PoolProblem& problem, std::string* why) const {
  if (!runs_here(problem, why)) return false;
  if (problem.dir == Direction::bwd_weights) return reject(why, "pooling has no weights");
  return true;
}

std::vector<Layout> TiledPoolSolver::layouts(const PoolProblem&) const {
  return {Layout::NCHW, Layout::CHWN, Layout::NHWC};
}

std::vector<TuneConfig> TiledPoolSolver::configs(const PoolProblem& problem) const {
  std::vector<TuneConfig> configs;
  for (int fy : kPoolTileHeights) {
    if (fy > 1 && fy > problem.oh()) continue;
    for (int fx : kPoolTileWidths) {
      if (fx > 1 && fx > problem.ow()) continue;
      configs.push_back(TuneConfig{{{"fx", fx}, {"fy", fy}}});
    }
  }
  return configs;
}

void TiledPoolSolver::run(const PoolProblem& problem, const TuneConfig& config,
                          const PoolArgs& args) const {
  problem.validate();
  const int fx = config.get("fx", 1), fy = config.get("fy", 1);
  TUNECNN_CHECK(fx >= 1 && fy >= 1, "pool_tiled: bad config ", config.str(), " for ",
                problem.key());
  const Tensor& first = reads_src(problem) ? args.src : args.diff_dst;
  const Layout layout = first.defined() ? first.layout() : Layout::NCHW;
  const std::vector<Layout> accepted = layouts(problem);
  TUNECNN_CHECK(std::find(accepted.begin(), accepted.end(), layout) != accepted.end(),
                "pool_tiled does not run layout ", to_string(layout));
  check_args(problem, args, layout);
  dispatch_dtype(problem.dt,
                 [&]<class T>() { run_typed<T>(problem, fx, fy, layout, args); });
}

}  // namespace tunecnn
