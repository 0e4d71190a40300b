#pragma once
// The small pieces pool_tiled's kernels are made of (tiled.cpp, tile_windows.h, row_scan.h):
// branch-free max and argmax steps that vectorise, folds of one row of values into another,
// windows clipped to the input, tiles, and compile-time tile widths.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tunecnn::pool_tiled {

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

}  // namespace tunecnn::pool_tiled
