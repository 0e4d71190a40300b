#pragma once
// What depthwise_direct's two layouts share (depthwise_direct.cpp runs them; depthwise_nchw.cpp
// and depthwise_nhwc.cpp hold each layout's kernels): index ranges over the borders, the
// bwd_weights chunks, the transposed filters in the workspace, and each layout's entry points.
#include <algorithm>
#include <cstddef>

#include "ops/conv/simd.h"
#include "ops/conv/solver.h"

namespace tunecnn::depthwise {

template <class T>
constexpr int kLanes = simd::kVectorBytes / static_cast<int>(sizeof(T));

// A bwd_weights chunk covers whole output rows, about this many pixels: enough work per task to
// amortise writing its partial, few enough partials to add. A constant, not a function of the
// thread count, so the sums come out the same on any number of threads.
constexpr int kChunkPixels = 2048;

struct Range {
  int lo, hi;
  bool contains(int i) const { return i >= lo && i < hi; }
};

// The outputs o in [0, n_out) whose tap k reads input o * stride - pad + k inside [0, n_in).
inline Range valid_outputs(int n_in, int n_out, int stride, int pad, int k) {
  const int first = pad - k, last = n_in - 1 + pad - k;
  const int lo = std::min(n_out, first <= 0 ? 0 : (first + stride - 1) / stride);
  const int hi = last < 0 ? 0 : std::min(n_out, last / stride + 1);
  return {lo, std::max(lo, hi)};
}

// The outputs all of whose k_size taps read inside the input.
inline Range interior_outputs(int n_in, int n_out, int stride, int pad, int k_size) {
  const int lo = valid_outputs(n_in, n_out, stride, pad, 0).lo;
  return {lo, std::max(lo, valid_outputs(n_in, n_out, stride, pad, k_size - 1).hi)};
}

// The taps k in [0, k_size) through which output o reads inside [0, n_in).
inline Range valid_taps(int n_in, int k_size, int stride, int pad, int o) {
  const int start = o * stride - pad;
  const int lo = std::clamp(-start, 0, k_size);
  return {lo, std::clamp(n_in - start, lo, k_size)};
}

// One channel's filter: tap t (= ki * kw + kj) is w[t * step]. The workspace holds the filters as

inline std::ptrdiff_t plane_size(int h, int w) {
  return static_cast<std::ptrdiff_t>(h) * w;
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

inline std::size_t filter_bytes(const ConvProblem& p) {
  return align_workspace(static_cast<std::size_t>(p.kh) * p.kw * p.ic * dtype_size(p.dt));
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

// Each layout's kernels, for f32 and f64. fwd and bwd_data read the filters transposed to
// [kh * kw][C] (`wt`); bwd_weights writes chunk k's partial gradient, [kh * kw][C], at
// partials + k * filter_bytes(p) / sizeof(T).
template <class T>
void nchw_forward(const ConvProblem& p, const T* src, const T* wt, T* dst);
template <class T>
void nchw_backward_data(const ConvProblem& p, const T* diff_dst, const T* wt, T* diff_src);
template <class T>
void nchw_weight_partials(const ConvProblem& p, const T* src, const T* diff_dst, T* partials);
template <class T>
void nhwc_forward(const ConvProblem& p, const T* src, const T* wt, T* dst);
template <class T>
void nhwc_backward_data(const ConvProblem& p, const T* diff_dst, const T* wt, T* diff_src);
template <class T>
void nhwc_weight_partials(const ConvProblem& p, const T* src, const T* diff_dst, T* partials);

}  // namespace tunecnn::depthwise
