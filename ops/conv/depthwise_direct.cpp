// Depthwise direct convolution, the specialised kernel TensorFlow runs for MobileNet (Qin et al.,
// PAPERS.md section 3), in two layouts. NCHW: a task per (image, channel) plane, columns in SIMD
// lanes, each output summed in registers over unrolled 3x3/5x5 taps; "same" stride-1 planes run
// as one flattened loop; borders use per-call tap ranges. bwd_data gathers (stride 1: the same
// kernel with the flipped filter; else zero-stuffed dO rows). NHWC: channels in the lanes, a task
// per row. bwd_weights adds fixed chunks of output rows in chunk order: no thread-count effect.
// Constraints: NCHW or NHWC on the CPU, f32/f64, depthwise with multiplier 1 (g == ic == oc), any
// kernel, stride and padding. Tunables: none.
#include "ops/conv/depthwise_direct.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/conv/args.h"
#include "ops/conv/simd.h"

namespace tunecnn {
namespace {

using simd::kVectorBytes;
using simd::lane_sum;
using simd::load;
using simd::store;
using simd::Vec;
template <class T>
constexpr int kLanes = kVectorBytes / static_cast<int>(sizeof(T));

// A bwd_weights chunk covers whole output rows, about this many pixels: enough work per task to
// amortise writing its partial, few enough partials to add. A constant, not a function of the
// thread count, so the sums come out the same on any number of threads.
constexpr int kChunkPixels = 2048;

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

struct Range {
  int lo, hi;
  bool contains(int i) const { return i >= lo && i < hi; }
};

// The outputs o in [0, n_out) whose tap k reads input o * stride - pad + k inside [0, n_in).
Range valid_outputs(int n_in, int n_out, int stride, int pad, int k) {
  const int first = pad - k, last = n_in - 1 + pad - k;
  const int lo = std::min(n_out, first <= 0 ? 0 : (first + stride - 1) / stride);
  const int hi = last < 0 ? 0 : std::min(n_out, last / stride + 1);
  return {lo, std::max(lo, hi)};
}

// The outputs all of whose k_size taps read inside the input.
Range interior_outputs(int n_in, int n_out, int stride, int pad, int k_size) {
  const int lo = valid_outputs(n_in, n_out, stride, pad, 0).lo;
  return {lo, std::max(lo, valid_outputs(n_in, n_out, stride, pad, k_size - 1).hi)};
}

// The taps k in [0, k_size) through which output o reads inside [0, n_in).
Range valid_taps(int n_in, int k_size, int stride, int pad, int o) {
  const int start = o * stride - pad;
  const int lo = std::clamp(-start, 0, k_size);
  return {lo, std::clamp(n_in - start, lo, k_size)};
}

// One channel's filter: tap t (= ki * kw + kj) is w[t * step]. The workspace holds the filters as
// [kh * kw][C], so step is C, or -C from the last tap for the flipped filter.
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

// The filters as [kh * kw][C]: every channel's taps a stride apart for NCHW, the channels
// contiguous per tap for NHWC. The workspace is thus the same in both layouts.
template <class T>
void transpose_filters(const ConvProblem& p, const T* wei, T* wt) {
  const int taps = p.kh * p.kw;
  for (int c = 0; c < p.ic; ++c)
    for (int t = 0; t < taps; ++t)
      wt[static_cast<std::ptrdiff_t>(t) * p.ic + c] = wei[c * taps + t];
}

// ---- NCHW ----------------------------------------------------------------------------------

std::ptrdiff_t plane_size(int h, int w) {
  return static_cast<std::ptrdiff_t>(h) * w;
}

Plane fwd_plane(const ConvProblem& p) {
  return {p.ih, p.iw, p.oh(), p.ow(), p.kh, p.kw, p.sh, p.sw, p.ph, p.pw};
}

template <class T>
void nchw_fwd(const ConvProblem& p, const T* src, const T* wt, T* dst) {
  const PlaneMap m(fwd_plane(p));
  const PlaneKernel<T> kernel = plane_kernel<T>(m.g);
  tbb::parallel_for(0, p.mb * p.ic, [&](int task) {
    kernel(m, src + task * plane_size(p.ih, p.iw), Taps<T>{wt + task % p.ic, p.ic},
           dst + task * plane_size(p.oh(), p.ow()));
  });
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

template <class T>
void nchw_bwd_data(const ConvProblem& p, const T* diff_dst, const T* wt, T* diff_src) {
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

// bwd_weights splits the mb * oh output rows into fixed chunks; chunk k owns the partial
// gradient at workspace slot k, [kh * kw][C] like the transposed filters.
struct Chunks {
  int rows, per_chunk, count;
  explicit Chunks(const ConvProblem& p)
      : rows(p.mb * p.oh()),
        per_chunk(std::max(1, kChunkPixels / p.ow())),
        count((rows + per_chunk - 1) / per_chunk) {}
  Range at(int k) const { return {k * per_chunk, std::min(rows, (k + 1) * per_chunk)}; }
};

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

// ---- NHWC ----------------------------------------------------------------------------------

// out[c] = sum over t of a[a_off[t] + c] * b[b_off[t] + c] for c in [0, C): blocks of four
// vectors, then single vectors, then single channels.
template <class T>
void gather_pixel(int channels, const T* a, const std::ptrdiff_t* a_off, const T* b,
                  const std::ptrdiff_t* b_off, int taps, T* out) {
  constexpr int L = kLanes<T>, kBlock = 4;
  using V = Vec<T, L>;
  int c = 0;
  for (; c + kBlock * L <= channels; c += kBlock * L) {
    V acc[kBlock] = {};
    for (int t = 0; t < taps; ++t) {
      const T* pa = a + a_off[t] + c;
      const T* pb = b + b_off[t] + c;
      for (int j = 0; j < kBlock; ++j) acc[j] += load<T, L>(pa + j * L) * load<T, L>(pb + j * L);
    }
    for (int j = 0; j < kBlock; ++j) store<T, L>(out + c + j * L, acc[j]);
  }
  for (; c + L <= channels; c += L) {
    V acc = {};
    for (int t = 0; t < taps; ++t)
      acc += load<T, L>(a + a_off[t] + c) * load<T, L>(b + b_off[t] + c);
    store<T, L>(out + c, acc);
  }
  for (; c < channels; ++c) {
    T acc = 0;
    for (int t = 0; t < taps; ++t) acc += a[a_off[t] + c] * b[b_off[t] + c];
    out[c] = acc;
  }
}

// Which taps reach each position along one axis of an NHWC gather, listed once per call: fwd
// maps an output row (column) to the input rows (columns) it reads, bwd_data an input row
// (column) to the dO rows (columns) that read it. A tap's weight offset in the [kh][kw][C]
// filters and data offset in the image are the sums of its row and column parts.
struct AxisTaps {
  struct Tap {
    std::ptrdiff_t w, data;
  };
  std::vector<std::vector<Tap>> at;
  int k;
  bool full(int i) const { return static_cast<int>(at[i].size()) == k; }
};

// Output o reads input o * stride - pad + j through tap j.
AxisTaps fwd_axis(int n_in, int n_out, int k, int stride, int pad, std::ptrdiff_t w_step,
                  std::ptrdiff_t data_step) {
  AxisTaps a{std::vector<std::vector<AxisTaps::Tap>>(n_out), k};
  for (int o = 0; o < n_out; ++o) {
    const Range r = valid_taps(n_in, k, stride, pad, o);
    for (int j = r.lo; j < r.hi; ++j)
      a.at[o].push_back({j * w_step, (o * stride - pad + j) * data_step});
  }
  return a;
}

// Input i is read through tap j by output (i + pad - j) / stride, where that divides and exists.
AxisTaps bwd_axis(int n_in, int n_out, int k, int stride, int pad, std::ptrdiff_t w_step,
                  std::ptrdiff_t data_step) {
  AxisTaps a{std::vector<std::vector<AxisTaps::Tap>>(n_in), k};
  for (int i = 0; i < n_in; ++i)
    for (int j = 0; j < k; ++j) {
      const int t = i + pad - j;
      if (t >= 0 && t % stride == 0 && t / stride < n_out)
        a.at[i].push_back({j * w_step, (t / stride) * data_step});
    }
  return a;
}

// out[y][x][c] = sum over the taps (row taps x column taps) of data[tap][c] * w[tap][c], a task
// per row of `out`. A pixel whose taps all reach inside uses one list of offsets relative to its
// first tap, computed once; border pixels list theirs.
template <class T>
void nhwc_gather(const AxisTaps& rows, const AxisTaps& cols, int images, int channels,
                 const T* data, std::ptrdiff_t data_image, const T* wt, T* out) {
  const int taps = rows.k * cols.k, n_rows = static_cast<int>(rows.at.size());
  const int n_cols = static_cast<int>(cols.at.size());
  std::vector<std::ptrdiff_t> full_data, full_w;
  int r0 = 0, c0 = 0;
  while (r0 < n_rows && !rows.full(r0)) ++r0;
  while (c0 < n_cols && !cols.full(c0)) ++c0;
  if (r0 < n_rows && c0 < n_cols) {
    const std::ptrdiff_t anchor = rows.at[r0][0].data + cols.at[c0][0].data;
    for (const AxisTaps::Tap& r : rows.at[r0])
      for (const AxisTaps::Tap& c : cols.at[c0]) {
        full_data.push_back(r.data + c.data - anchor);
        full_w.push_back(r.w + c.w);
      }
  }
  tbb::parallel_for(0, images * n_rows, [&](int task) {
    const int n = task / n_rows, y = task % n_rows;
    const T* image = data + n * data_image;
    T* out_row = out + static_cast<std::ptrdiff_t>(task) * n_cols * channels;
    std::vector<std::ptrdiff_t> data_off(taps), w_off(taps);
    for (int x = 0; x < n_cols; ++x) {
      T* pixel = out_row + static_cast<std::ptrdiff_t>(x) * channels;
      if (rows.full(y) && cols.full(x)) {
        gather_pixel(channels, image + (rows.at[y][0].data + cols.at[x][0].data), full_data.data(),
                     wt, full_w.data(), taps, pixel);
        continue;
      }
      int m = 0;
      for (const AxisTaps::Tap& r : rows.at[y])
        for (const AxisTaps::Tap& c : cols.at[x]) {
          data_off[m] = r.data + c.data;
          w_off[m++] = r.w + c.w;
        }
      gather_pixel(channels, image, data_off.data(), wt, w_off.data(), m, pixel);
    }
  });
}

template <class T>
void nhwc_fwd(const ConvProblem& p, const T* src, const T* wt, T* dst) {
  const std::ptrdiff_t C = p.ic;
  nhwc_gather(fwd_axis(p.ih, p.oh(), p.kh, p.sh, p.ph, p.kw * C, p.iw * C),
              fwd_axis(p.iw, p.ow(), p.kw, p.sw, p.pw, C, C), p.mb, p.ic, src,
              plane_size(p.ih, p.iw) * C, wt, dst);
}

template <class T>
void nhwc_bwd_data(const ConvProblem& p, const T* diff_dst, const T* wt, T* diff_src) {
  const std::ptrdiff_t C = p.ic;
  nhwc_gather(bwd_axis(p.ih, p.oh(), p.kh, p.sh, p.ph, p.kw * C, p.ow() * C),
              bwd_axis(p.iw, p.ow(), p.kw, p.sw, p.pw, C, C), p.mb, p.ic, diff_dst,
              plane_size(p.oh(), p.ow()) * C, wt, diff_src);
}

// Channels [c, c + W) over rows [r.lo, r.hi): the kh x kw gradient vectors stay in registers;
// interior pixels run every tap unguarded.
template <class T, int W, int KH, int KW>
void nhwc_weights_block(const ConvProblem& p, const T* src, const T* diff_dst, Range r, int c,
                        T* partial) {
  using V = Vec<T, W>;
  const int oh = p.oh(), ow = p.ow(), C = p.ic;
  const auto tap_offset = [&](int ki, int kj) {
    return (static_cast<std::ptrdiff_t>(ki) * p.iw + kj) * C;
  };
  V acc[KH * KW] = {};
  for (int row = r.lo; row < r.hi; ++row) {
    const int n = row / oh, y = row % oh;
    const Range rows = valid_taps(p.ih, KH, p.sh, p.ph, y);
    const T* dy = diff_dst + (static_cast<std::ptrdiff_t>(row) * ow) * C + c;
    for (int x = 0; x < ow; ++x) {
      const Range cols = valid_taps(p.iw, KW, p.sw, p.pw, x);
      const V d = load<T, W>(dy + static_cast<std::ptrdiff_t>(x) * C);
      const std::ptrdiff_t base =
          ((static_cast<std::ptrdiff_t>(n) * p.ih + y * p.sh - p.ph) * p.iw + x * p.sw - p.pw) * C +
          c;
      if (rows.lo == 0 && rows.hi == KH && cols.lo == 0 && cols.hi == KW) {
        for (int ki = 0; ki < KH; ++ki)
          for (int kj = 0; kj < KW; ++kj)
            acc[ki * KW + kj] += d * load<T, W>(src + (base + tap_offset(ki, kj)));
        continue;
      }
      for (int ki = 0; ki < KH; ++ki)
        for (int kj = 0; kj < KW; ++kj)
          if (rows.contains(ki) && cols.contains(kj))
            acc[ki * KW + kj] += d * load<T, W>(src + (base + tap_offset(ki, kj)));
    }
  }
  for (int t = 0; t < KH * KW; ++t)
    store<T, W>(partial + static_cast<std::ptrdiff_t>(t) * C + c, acc[t]);
}

// Any kernel size: the same sums kept in the partial itself.
template <class T>
void nhwc_weights_block_any(const ConvProblem& p, const T* src, const T* diff_dst, Range r, int c,
                            int width, T* partial) {
  const int oh = p.oh(), ow = p.ow(), C = p.ic;
  for (int t = 0; t < p.kh * p.kw; ++t)
    std::fill_n(partial + static_cast<std::ptrdiff_t>(t) * C + c, width, T(0));
  for (int row = r.lo; row < r.hi; ++row) {
    const int n = row / oh, y = row % oh;
    const Range rows = valid_taps(p.ih, p.kh, p.sh, p.ph, y);
    for (int x = 0; x < ow; ++x) {
      const Range cols = valid_taps(p.iw, p.kw, p.sw, p.pw, x);
      const T* dy = diff_dst + (static_cast<std::ptrdiff_t>(row) * ow + x) * C + c;
      for (int ki = rows.lo; ki < rows.hi; ++ki)
        for (int kj = cols.lo; kj < cols.hi; ++kj) {
          const int iy = y * p.sh - p.ph + ki, ix = x * p.sw - p.pw + kj;
          const T* in = src + ((static_cast<std::ptrdiff_t>(n) * p.ih + iy) * p.iw + ix) * C + c;
          T* g = partial + static_cast<std::ptrdiff_t>(ki * p.kw + kj) * C + c;
          for (int j = 0; j < width; ++j) g[j] += dy[j] * in[j];
        }
    }
  }
}

// Chunk k, channel block b: full vectors first, then the remaining channels one by one.
template <class T>
void nhwc_weights_task(const ConvProblem& p, const T* src, const T* diff_dst, Range r, int block,
                       T* partial) {
  constexpr int L = kLanes<T>;
  const int c = block * L, width = std::min(L, p.ic - c);
  const bool k3 = p.kh == 3 && p.kw == 3, k5 = p.kh == 5 && p.kw == 5;
  if (!k3 && !k5) return nhwc_weights_block_any(p, src, diff_dst, r, c, width, partial);
  if (width == L) {
    (k3 ? nhwc_weights_block<T, L, 3, 3> : nhwc_weights_block<T, L, 5, 5>)(p, src, diff_dst, r, c,
                                                                           partial);
    return;
  }
  for (int j = c; j < c + width; ++j)
    (k3 ? nhwc_weights_block<T, 1, 3, 3> : nhwc_weights_block<T, 1, 5, 5>)(p, src, diff_dst, r, j,
                                                                           partial);
}

// ---- shared by both layouts ----------------------------------------------------------------

std::size_t filter_bytes(const ConvProblem& p) {
  return align_workspace(static_cast<std::size_t>(p.kh) * p.kw * p.ic * dtype_size(p.dt));
}

// diff_wei[c][t] = the partials' [t][c] added in chunk order (into the first, in place).
template <class T>
void sum_partials(const ConvProblem& p, const Chunks& chunks, Workspace ws, T* diff_wei) {
  const int taps = p.kh * p.kw;
  const std::size_t stride = filter_bytes(p) / sizeof(T),
                    count = static_cast<std::size_t>(taps) * p.ic;
  T* first = ws.as<T>();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 4096), [&](const auto& range) {
    for (int k = 1; k < chunks.count; ++k) {
      const T* partial = first + k * stride;
      for (std::size_t i = range.begin(); i < range.end(); ++i) first[i] += partial[i];
    }
  });
  for (int c = 0; c < p.ic; ++c)
    for (int t = 0; t < taps; ++t)
      diff_wei[c * taps + t] = first[static_cast<std::size_t>(t) * p.ic + c];
}

template <class T>
void bwd_weights(const ConvProblem& p, Layout layout, const T* src, const T* diff_dst, Workspace ws,
                 T* diff_wei) {
  const Chunks chunks(p);
  const std::size_t stride = filter_bytes(p) / sizeof(T);
  T* partials = ws.as<T>();
  if (layout == Layout::NCHW) {
    const PlaneMap m(fwd_plane(p));
    const WeightsTask<T> task = nchw_weights_kernel<T>(m);
    tbb::parallel_for(0, chunks.count * p.ic, [&](int i) {
      const int k = i / p.ic, c = i % p.ic;
      task(m, p.ic, src, diff_dst, c, chunks.at(k), partials + k * stride + c);
    });
  } else {
    const int blocks = (p.ic + kLanes<T> - 1) / kLanes<T>;
    tbb::parallel_for(0, chunks.count * blocks, [&](int i) {
      const int k = i / blocks;
      nhwc_weights_task(p, src, diff_dst, chunks.at(k), i % blocks, partials + k * stride);
    });
  }
  sum_partials(p, chunks, ws, diff_wei);
}

template <class T>
void run_typed(const ConvProblem& p, Layout layout, const ConvArgs& args, Workspace ws) {
  if (p.dir == Direction::bwd_weights)
    return bwd_weights(p, layout, args.src.data<T>(), args.diff_dst.data<T>(), ws,
                       writable<T>(args.diff_wei));
  T* wt = ws.as<T>();
  transpose_filters(p, args.wei.data<T>(), wt);
  const bool nchw = layout == Layout::NCHW;
  if (p.dir == Direction::fwd) {
    (nchw ? nchw_fwd<T> : nhwc_fwd<T>)(p, args.src.data<T>(), wt, writable<T>(args.dst));
  } else {
    (nchw ? nchw_bwd_data<T> : nhwc_bwd_data<T>)(p, args.diff_dst.data<T>(), wt,
                                                 writable<T>(args.diff_src));
  }
}

}  // namespace

bool one_filter_per_channel(const ConvProblem& p, std::string* why) {
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.g != p.ic)
    return reject(why, "not depthwise: depthwise_direct needs groups == ic, got g" +
                           std::to_string(p.g) + " ic" + std::to_string(p.ic));
  if (p.oc != p.ic)
    return reject(why, "depthwise multiplier oc/ic = " + std::to_string(p.oc / p.ic) +
                           ": only multiplier 1 (oc == ic) is supported");
  return true;
}

bool DepthwiseDirectSolver::applicable(const ConvProblem& p, std::string* why) const {
  return one_filter_per_channel(p, why);
}

// The filters as [kh * kw][C] for fwd and bwd_data; for bwd_weights one such partial per chunk.
// The same in both layouts, since the size cannot depend on the layout.
std::size_t DepthwiseDirectSolver::workspace_bytes(const ConvProblem& p, const TuneConfig&) const {
  return p.dir == Direction::bwd_weights ? Chunks(p).count * filter_bytes(p) : filter_bytes(p);
}

void DepthwiseDirectSolver::run(const ConvProblem& p, const TuneConfig& config,
                                const ConvArgs& args, Workspace ws) const {
  const Tensor& input = p.dir == Direction::bwd_data ? args.diff_dst : args.src;
  const Layout layout =
      input.defined() && input.layout() == Layout::NHWC ? Layout::NHWC : Layout::NCHW;
  check_conv_args(p, args, layout);
  std::string why;
  TUNECNN_CHECK(applicable(p, &why), "depthwise_direct: ", why, ": ", p.key());
  const std::size_t need = workspace_bytes(p, config);
  TUNECNN_CHECK(ws.bytes >= need, "depthwise_direct needs ", need, " workspace bytes, got ",
                ws.bytes, " for ", p.key());
  dispatch_dtype(p.dt, [&]<class T>() { run_typed<T>(p, layout, args, ws); });
}

}  // namespace tunecnn
