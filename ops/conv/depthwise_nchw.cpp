// depthwise_direct in NCHW (the solver is depthwise_direct.cpp): a task per (image, channel)
// plane, columns in SIMD lanes, each output summed in registers over unrolled 3x3/5x5 taps;
// "same" stride-1 planes run as one flattened loop; borders use per-call tap ranges. bwd_data
// gathers (stride 1: the same kernel with the flipped filter; else zero-stuffed dO rows).
// bwd_weights: a task per (chunk, channel), vector sums over the chunk's rows.
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/conv/depthwise_common.h"
#include "ops/conv/simd.h"

namespace tunecnn {
namespace {

using namespace depthwise;
using simd::kVectorBytes;
using simd::lane_sum;
using simd::load;
using simd::store;
using simd::Vec;

template <class T, int L, std::size_t... I>
Vec<T, L> evens(const Vec<T, L>& a, const Vec<T, L>& b, std::index_sequence<I...>) {
  return __builtin_shufflevector(a, b, (2 * I)...);
}
// p[0], p[S], ..., p[(L - 1) * S] for S = 1 or 2; reads p[0, L * S).
template <class T, int L, int S>
Vec<T, L> load_strided(const T* p) {
  static_assert(S == 1 || S == 2);
  if constexpr (S == 1) {
    return load<T, L>(p);
  } else {
    return evens<T, L>(load<T, L>(p), load<T, L>(p + L), std::make_index_sequence<L>{});
  }
}

template <class T>
struct Taps {
  const T* w;
  std::ptrdiff_t step;
  T operator[](int t) const { return w[t * step]; }
};

// One channel's correlation out[y][x] = sum w[ki][kj] * in[y * sh - ph + ki][x * sw - pw + kj].
// fwd is the problem's; stride-1 bwd_data correlates dO with the flipped filter at padding
// k - 1 - p.
struct Plane {
  int ih, iw, oh, ow, kh, kw, sh, sw, ph, pw;
};

// What every plane of a call shares, computed once so that borders cost no divisions: the
// outputs all of whose taps lie inside the input, the valid taps of each output row and column,
// and the output columns each kj reaches.
struct PlaneMap {
  Plane g;
  Range rows, cols;
  std::vector<Range> row_taps, col_taps, tap_cols;
  // Stride 1 and ow == iw ("same" padding): the interior rows are one run of the flattened
  // plane, a long vector loop even for 7x7 planes, where the columns that wrap are redone.
  bool flat;

  explicit PlaneMap(const Plane& plane)
      : g(plane),
        rows(interior_outputs(g.ih, g.oh, g.sh, g.ph, g.kh)),
        cols(interior_outputs(g.iw, g.ow, g.sw, g.pw, g.kw)),
        flat(g.sh == 1 && g.sw == 1 && g.ow == g.iw && rows.lo < rows.hi && cols.lo < cols.hi) {
    for (int y = 0; y < g.oh; ++y) row_taps.push_back(valid_taps(g.ih, g.kh, g.sh, g.ph, y));
    for (int x = 0; x < g.ow; ++x) col_taps.push_back(valid_taps(g.iw, g.kw, g.sw, g.pw, x));
    for (int kj = 0; kj < g.kw; ++kj) tap_cols.push_back(valid_outputs(g.iw, g.ow, g.sw, g.pw, kj));
  }
  // The plane offset of input (y * sh - ph + ki, x * sw - pw + kj); negative off the plane.
  std::ptrdiff_t at(int y, int ki, int x, int kj) const {
    return static_cast<std::ptrdiff_t>(y * g.sh - g.ph + ki) * g.iw + x * g.sw - g.pw + kj;
  }
  // at() relative to the flattened output index o = y * ow + x, for flat maps.
  std::ptrdiff_t flat_base() const { return -(static_cast<std::ptrdiff_t>(g.ph) * g.iw + g.pw); }
};

// One output over its valid taps: the border rows and columns, and kernels without an unrolled
// version. W is a contiguous filter or Taps.
template <class T, class W>
T correlate_point(const PlaneMap& m, const T* in, const W& w, int y, int x) {
  const Range kr = m.row_taps[y], kc = m.col_taps[x];
  T acc = 0;
  for (int ki = kr.lo; ki < kr.hi; ++ki)
    for (int kj = kc.lo; kj < kc.hi; ++kj) acc += w[ki * m.g.kw + kj] * in[m.at(y, ki, x, kj)];
  return acc;
}

// Columns [x0, x1) of an output row, all of whose kw taps lie inside the input, over R input
// rows from in[base] (the first row's column -pw). Sizes and stride are constants, so GCC unrolls
// the taps and vectorises over x with every output summed in a register.
template <class T, int R, int KW, int SW>
void correlate_cols(const T* in, std::ptrdiff_t base, int iw, const T* w, T* __restrict out, int x0,
                    int x1) {
  std::array<T, R * KW> wk;
  for (int t = 0; t < R * KW; ++t) wk[t] = w[t];
  for (int x = x0; x < x1; ++x) {
    T acc = 0;
    for (int r = 0; r < R; ++r)
      for (int kj = 0; kj < KW; ++kj) acc += wk[r * KW + kj] * in[base + r * iw + x * SW + kj];
    out[x] = acc;
  }
}

// correlate_cols over the `rows` valid filter rows of a border row (any count up to KH).
template <class T, int KH, int KW, int SW, int R = KH>
void correlate_rows(int rows, const T* in, std::ptrdiff_t base, int iw, const T* w, T* out, int x0,
                    int x1) {
  if constexpr (R == 0) {
    std::fill(out + x0, out + x1, T(0));
  } else if (rows == R) {
    correlate_cols<T, R, KW, SW>(in, base, iw, w, out, x0, x1);
  } else {
    correlate_rows<T, KH, KW, SW, R - 1>(rows, in, base, iw, w, out, x0, x1);
  }
}

// Outputs [o0, o1) of the flattened plane: input o + base + ki * iw + kj. Columns whose taps
// wrap into a neighbouring row come out wrong and are recomputed by the caller.
template <class T, int KH, int KW>
void correlate_flat(const T* in, std::ptrdiff_t base, int iw, const std::array<T, KH * KW>& w,
                    T* __restrict out, std::ptrdiff_t o0, std::ptrdiff_t o1) {
  for (std::ptrdiff_t o = o0; o < o1; ++o) {
    T acc = 0;
    for (int ki = 0; ki < KH; ++ki)
      for (int kj = 0; kj < KW; ++kj) acc += w[ki * KW + kj] * in[o + base + ki * iw + kj];
    out[o] = acc;
  }
}

template <class T, int KH, int KW, int SW>
void correlate_plane(const PlaneMap& m, const T* in, Taps<T> taps, T* out) {
  const Plane& g = m.g;
  std::array<T, KH * KW> w;
  for (int t = 0; t < KH * KW; ++t) w[t] = taps[t];
  const auto points = [&](int y, int x0, int x1) {
    for (int x = x0; x < x1; ++x) out[y * g.ow + x] = correlate_point(m, in, w, y, x);
  };
  const auto whole_row = [&](int y) {
    const Range kr = m.row_taps[y];
    points(y, 0, m.cols.lo);
    correlate_rows<T, KH, KW, SW>(kr.hi - kr.lo, in, m.at(y, kr.lo, 0, 0), g.iw,
                                  w.data() + kr.lo * KW, out + y * g.ow, m.cols.lo, m.cols.hi);
    points(y, m.cols.hi, g.ow);
  };
  if constexpr (SW == 1) {
    if (m.flat) {
      for (int y = 0; y < g.oh; ++y)
        if (!m.rows.contains(y)) whole_row(y);
      correlate_flat<T, KH, KW>(in, m.flat_base(), g.iw, w, out, m.rows.lo * g.ow + m.cols.lo,
                                (m.rows.hi - 1) * g.ow + m.cols.hi);
      for (int y = m.rows.lo; y < m.rows.hi; ++y) {
        points(y, 0, m.cols.lo);
        points(y, m.cols.hi, g.ow);
      }
      return;
    }
  }
  for (int y = 0; y < g.oh; ++y) whole_row(y);
}

template <class T>
void correlate_plane_any(const PlaneMap& m, const T* in, Taps<T> taps, T* out) {
  for (int y = 0; y < m.g.oh; ++y)
    for (int x = 0; x < m.g.ow; ++x) out[y * m.g.ow + x] = correlate_point(m, in, taps, y, x);
}

template <class T>
using PlaneKernel = void (*)(const PlaneMap&, const T*, Taps<T>, T*);

template <class T>
PlaneKernel<T> plane_kernel(const Plane& g) {
  if (g.kh == 3 && g.kw == 3 && g.sw == 1) return &correlate_plane<T, 3, 3, 1>;
  if (g.kh == 3 && g.kw == 3 && g.sw == 2) return &correlate_plane<T, 3, 3, 2>;
  if (g.kh == 5 && g.kw == 5 && g.sw == 1) return &correlate_plane<T, 5, 5, 1>;
  if (g.kh == 5 && g.kw == 5 && g.sw == 2) return &correlate_plane<T, 5, 5, 2>;
  return &correlate_plane_any<T>;
}

Plane fwd_plane(const ConvProblem& p) {
  return {p.ih, p.iw, p.oh(), p.ow(), p.kh, p.kw, p.sh, p.sw, p.ph, p.pw};
}

// bwd_data for strides above 1 (or padding beyond the kernel): a gather, each task owning its
// diff_src plane. Every dO row is zero-stuffed to stride sw and padded by kw - 1 - pw, so that
// input row iy is a plain stride-1 correlation of the dO rows that reach it with the flipped
// filter rows: no borders and no column phases, at the price of multiplying the stuffed zeros.
struct StuffedRows {
  int width, offset;  // a stuffed row: dO[y][x] at offset + x * sw, zeros elsewhere
  std::vector<std::vector<std::pair<int, int>>> taps;  // per input row: (ki, dO row y)

  explicit StuffedRows(const ConvProblem& p)
      : width(p.iw + p.kw - 1), offset(p.kw - 1 - p.pw), taps(p.ih) {
    for (int iy = 0; iy < p.ih; ++iy)
      for (int ki = 0; ki < p.kh; ++ki) {
        const int ty = iy + p.ph - ki;
        if (ty >= 0 && ty % p.sh == 0 && ty / p.sh < p.oh()) taps[iy].emplace_back(ki, ty / p.sh);
      }
  }
  template <class T>
  void stuff(const ConvProblem& p, const T* dy, T* rows) const {
    const int ow = p.ow();
    for (int y = 0; y < p.oh(); ++y) {
      T* row = rows + static_cast<std::ptrdiff_t>(y) * width;
      std::fill(row, row + width, T(0));
      for (int x = 0; x < ow; ++x) {
        const int c = offset + x * p.sw;
        if (c >= 0 && c < width) row[c] = dy[static_cast<std::ptrdiff_t>(y) * ow + x];
      }
    }
  }
};

// out[ix] = sum over the R rows and KW taps of w[r][kj] * rows[r][ix + KW - 1 - kj].
template <class T, int R, int KW>
void stuffed_correlate(const std::array<const T*, R>& rows, const std::array<T, R * KW>& w,
                       T* __restrict out, int n) {
  for (int ix = 0; ix < n; ++ix) {
    T acc = 0;
    for (int r = 0; r < R; ++r)
      for (int kj = 0; kj < KW; ++kj) acc += w[r * KW + kj] * rows[r][ix + KW - 1 - kj];
    out[ix] = acc;
  }
}

template <class T, int KW, int R = 5>
void stuffed_row(const std::vector<std::pair<int, int>>& taps, const T* rows, int width, Taps<T> w,
                 T* out, int n) {
  if constexpr (R == 0) {
    std::fill(out, out + n, T(0));
  } else if (static_cast<int>(taps.size()) == R) {
    std::array<const T*, R> row;
    std::array<T, R * KW> wk;
    for (int r = 0; r < R; ++r) {
      row[r] = rows + static_cast<std::ptrdiff_t>(taps[r].second) * width;
      for (int kj = 0; kj < KW; ++kj) wk[r * KW + kj] = w[taps[r].first * KW + kj];
    }
    stuffed_correlate<T, R, KW>(row, wk, out, n);
  } else {
    stuffed_row<T, KW, R - 1>(taps, rows, width, w, out, n);
  }
}

template <class T>
void stuffed_row_any(const std::vector<std::pair<int, int>>& taps, const T* rows, int width, int kw,
                     Taps<T> w, T* out, int n) {
  std::fill(out, out + n, T(0));
  for (const auto& [ki, y] : taps) {
    const T* row = rows + static_cast<std::ptrdiff_t>(y) * width;
    for (int kj = 0; kj < kw; ++kj) {
      const T wv = w[ki * kw + kj];
      for (int ix = 0; ix < n; ++ix) out[ix] += wv * row[ix + kw - 1 - kj];
    }
  }
}

// acc[t] += d * the input tap t of output (y, x) reads, over its valid taps.
template <class T, class Acc>
void add_point_weights(const PlaneMap& m, const T* plane, T d, int y, int x, Acc& acc) {
  const Range kr = m.row_taps[y], kc = m.col_taps[x];
  const std::ptrdiff_t base = m.at(y, 0, x, 0);
  for (int ki = kr.lo; ki < kr.hi; ++ki)
    for (int kj = kc.lo; kj < kc.hi; ++kj)
      acc[ki * m.g.kw + kj] += d * plane[base + ki * m.g.iw + kj];
}

template <class T>
using IntOf = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;

// One channel over output rows r: kh x kw sums of dO times the input each tap reads, in vector
// registers until the end. Row by row, a vector of dO columns feeds every tap at once; on flat
// maps the interior rows of an image are one run, where lanes whose tap wraps into a neighbouring
// row have dO masked to zero (an infinite input there would give NaN, not the reference's
// finite value). Whatever the vectors leave goes point by point into scalar sums.
template <class T, int KH, int KW, int SW, int L>
void nchw_weights_task(const PlaneMap& m, int channels, const T* src, const T* diff_dst, int c,
                       Range r, T* out) {
  using V = Vec<T, L>;
  using IV = Vec<IntOf<T>, L>;
  const Plane& g = m.g;
  // A vector of columns from x reads input columns up to (x + L) * SW + KW - 2 - pw.
  const int vec_end = std::min(m.cols.hi, std::max(0, (g.iw + 1 + g.pw - KW) / SW));
  V vacc[KH * KW] = {};
  std::array<T, KH * KW> acc{};
  const auto by_rows = [&](const T* plane, const T* dy, int y) {
    const Range kr = m.row_taps[y];
    const std::ptrdiff_t base = m.at(y, 0, 0, 0);
    int x = m.cols.lo;
    for (; x + L <= vec_end; x += L) {
      const V d = load<T, L>(dy + x);
      for (int ki = 0; ki < KH; ++ki) {
        if (!kr.contains(ki)) continue;
        for (int kj = 0; kj < KW; ++kj)
          vacc[ki * KW + kj] +=
              d * load_strided<T, L, SW>(plane + (base + ki * g.iw + x * SW + kj));
      }
    }
    if (kr.lo == 0 && kr.hi == KH) {
      for (; x < m.cols.hi; ++x)
        for (int ki = 0; ki < KH; ++ki)
          for (int kj = 0; kj < KW; ++kj)
            acc[ki * KW + kj] += dy[x] * plane[base + ki * g.iw + x * SW + kj];
    }
    for (int i = 0; i < m.cols.lo; ++i) add_point_weights(m, plane, dy[i], y, i, acc);
    for (; x < g.ow; ++x) add_point_weights(m, plane, dy[x], y, x, acc);
  };
  const auto flat = [&](const T* plane, const T* dy, int y0, int y1) {
    const std::ptrdiff_t o0 = y0 * g.ow + m.cols.lo, o1 = (y1 - 1) * g.ow + m.cols.hi;
    const std::ptrdiff_t base = m.flat_base();
    IV xs;
    for (int j = 0; j < L; ++j) xs[j] = static_cast<IntOf<T>>((o0 + j) % g.ow);
    const IntOf<T> step = L % g.ow, ow = g.ow;
    std::ptrdiff_t o = o0;
    for (; o + L <= o1; o += L) {
      const V d = load<T, L>(dy + o);
      V dk[KW];
      for (int kj = 0; kj < KW; ++kj)
        dk[kj] = (xs >= m.tap_cols[kj].lo && xs < m.tap_cols[kj].hi) ? d : V{};
      for (int ki = 0; ki < KH; ++ki)
        for (int kj = 0; kj < KW; ++kj)
          vacc[ki * KW + kj] += dk[kj] * load<T, L>(plane + (o + base + ki * g.iw + kj));
      xs += step;
      xs = xs >= ow ? xs - ow : xs;
    }
    for (; o < o1; ++o) add_point_weights(m, plane, dy[o], o / g.ow, o % g.ow, acc);
    for (int x = 0; x < m.cols.lo; ++x) add_point_weights(m, plane, dy[y0 * g.ow + x], y0, x, acc);
    for (int x = m.cols.hi; x < g.ow; ++x)
      add_point_weights(m, plane, dy[(y1 - 1) * g.ow + x], y1 - 1, x, acc);
  };
  for (int row = r.lo; row < r.hi;) {
    const int n = row / g.oh, y0 = row % g.oh, y1 = std::min(g.oh, y0 + (r.hi - row));
    const std::ptrdiff_t image = static_cast<std::ptrdiff_t>(n) * channels + c;
    const T* plane = src + image * plane_size(g.ih, g.iw);
    const T* dy = diff_dst + image * plane_size(g.oh, g.ow);
    const int yi0 = std::max(y0, m.rows.lo), yi1 = std::min(y1, m.rows.hi);
    const bool flat_run = SW == 1 && m.flat && yi0 < yi1;
    for (int y = y0; y < y1; ++y)
      if (!flat_run || y < yi0 || y >= yi1) by_rows(plane, dy + y * g.ow, y);
    if (flat_run) flat(plane, dy, yi0, yi1);
    row += y1 - y0;
  }
  for (int t = 0; t < KH * KW; ++t)
    out[static_cast<std::ptrdiff_t>(t) * channels] = lane_sum<T, L>(vacc[t]) + acc[t];
}

template <class T>
void nchw_weights_task_any(const PlaneMap& m, int channels, const T* src, const T* diff_dst, int c,
                           Range r, T* out) {
  const Plane& g = m.g;
  std::vector<T> acc(g.kh * g.kw, T(0));
  for (int row = r.lo; row < r.hi; ++row) {
    const int n = row / g.oh, y = row % g.oh;
    const std::ptrdiff_t image = static_cast<std::ptrdiff_t>(n) * channels + c;
    const T* plane = src + image * plane_size(g.ih, g.iw);
    const T* dy = diff_dst + image * plane_size(g.oh, g.ow) + y * g.ow;
    for (int x = 0; x < g.ow; ++x) add_point_weights(m, plane, dy[x], y, x, acc);
  }
  for (int t = 0; t < g.kh * g.kw; ++t) out[static_cast<std::ptrdiff_t>(t) * channels] = acc[t];
}

template <class T>
using WeightsTask = void (*)(const PlaneMap&, int, const T*, const T*, int, Range, T*);

// The widest vectors that the rows' interior columns fill at least once (flat runs are long).
template <class T, int KH, int KW, int SW>
WeightsTask<T> nchw_weights_lanes(const PlaneMap& m) {
  constexpr int L = kLanes<T>;
  const int width = std::min(m.cols.hi, (m.g.iw + 1 + m.g.pw - KW) / SW) - m.cols.lo;
  if (m.flat || width >= L) return &nchw_weights_task<T, KH, KW, SW, L>;
  if (width >= L / 2) return &nchw_weights_task<T, KH, KW, SW, L / 2>;
  return &nchw_weights_task<T, KH, KW, SW, L / 4>;
}

template <class T>
WeightsTask<T> nchw_weights_kernel(const PlaneMap& m) {
  const Plane& g = m.g;
  if (g.kh == 3 && g.kw == 3 && g.sw == 1) return nchw_weights_lanes<T, 3, 3, 1>(m);
  if (g.kh == 3 && g.kw == 3 && g.sw == 2) return nchw_weights_lanes<T, 3, 3, 2>(m);
  if (g.kh == 5 && g.kw == 5 && g.sw == 1) return nchw_weights_lanes<T, 5, 5, 1>(m);
  if (g.kh == 5 && g.kw == 5 && g.sw == 2) return nchw_weights_lanes<T, 5, 5, 2>(m);
  return &nchw_weights_task_any<T>;
}

}  // namespace

namespace depthwise {

template <class T>
void nchw_forward(const ConvProblem& p, const T* src, const T* wt, T* dst) {
  const PlaneMap m(fwd_plane(p));
  const PlaneKernel<T> kernel = plane_kernel<T>(m.g);
  tbb::parallel_for(0, p.mb * p.ic, [&](int task) {
    kernel(m, src + task * plane_size(p.ih, p.iw), Taps<T>{wt + task % p.ic, p.ic},
           dst + task * plane_size(p.oh(), p.ow()));
  });
}

template <class T>
void nchw_backward_data(const ConvProblem& p, const T* diff_dst, const T* wt, T* diff_src) {
  const int taps = p.kh * p.kw;
  const std::ptrdiff_t in_plane = plane_size(p.ih, p.iw), out_plane = plane_size(p.oh(), p.ow());
  if (p.sh == 1 && p.sw == 1 && p.ph < p.kh && p.pw < p.kw) {
    const PlaneMap m(
        Plane{p.oh(), p.ow(), p.ih, p.iw, p.kh, p.kw, 1, 1, p.kh - 1 - p.ph, p.kw - 1 - p.pw});
    const PlaneKernel<T> kernel = plane_kernel<T>(m.g);
    tbb::parallel_for(0, p.mb * p.ic, [&](int task) {
      const Taps<T> flipped{wt + static_cast<std::ptrdiff_t>(taps - 1) * p.ic + task % p.ic, -p.ic};
      kernel(m, diff_dst + task * out_plane, flipped, diff_src + task * in_plane);
    });
    return;
  }
  const StuffedRows s(p);
  const bool unrolled = (p.kw == 3 && p.kh <= 5) || (p.kw == 5 && p.kh <= 5);
  tbb::parallel_for(tbb::blocked_range<int>(0, p.mb * p.ic), [&](const tbb::blocked_range<int>& r) {
    std::vector<T> rows(static_cast<std::size_t>(p.oh()) * s.width);
    for (int task = r.begin(); task < r.end(); ++task) {
      const Taps<T> w{wt + task % p.ic, p.ic};
      s.stuff(p, diff_dst + task * out_plane, rows.data());
      for (int iy = 0; iy < p.ih; ++iy) {
        T* out = diff_src + task * in_plane + static_cast<std::ptrdiff_t>(iy) * p.iw;
        if (!unrolled)
          stuffed_row_any(s.taps[iy], rows.data(), s.width, p.kw, w, out, p.iw);
        else if (p.kw == 3)
          stuffed_row<T, 3>(s.taps[iy], rows.data(), s.width, w, out, p.iw);
        else
          stuffed_row<T, 5>(s.taps[iy], rows.data(), s.width, w, out, p.iw);
      }
    }
  });
}

template <class T>
void nchw_weight_partials(const ConvProblem& p, const T* src, const T* diff_dst, T* partials) {
  const Chunks chunks(p);
  const std::size_t stride = filter_bytes(p) / sizeof(T);
  const PlaneMap m(fwd_plane(p));
  const WeightsTask<T> task = nchw_weights_kernel<T>(m);
  tbb::parallel_for(0, chunks.count * p.ic, [&](int i) {
    const int k = i / p.ic, c = i % p.ic;
    task(m, p.ic, src, diff_dst, c, chunks.at(k), partials + k * stride + c);
  });
}

template void nchw_forward<float>(const ConvProblem&, const float*, const float*, float*);
template void nchw_forward<double>(const ConvProblem&, const double*, const double*, double*);
template void nchw_backward_data<float>(const ConvProblem&, const float*, const float*, float*);
template void nchw_backward_data<double>(const ConvProblem&, const double*, const double*, double*);
template void nchw_weight_partials<float>(const ConvProblem&, const float*, const float*, float*);
template void nchw_weight_partials<double>(const ConvProblem&, const double*, const double*, double*);

}  // namespace depthwise
}  // namespace tunecnn
