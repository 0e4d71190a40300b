// depthwise_direct in NHWC (the solver is depthwise_direct.cpp): channels in the SIMD lanes, a
// task per output row (fwd) or input row (bwd_data, a gather over the dO rows that read it);
// bwd_weights a task per (chunk, block of channels).
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

}  // namespace

namespace depthwise {

template <class T>
void nhwc_forward(const ConvProblem& p, const T* src, const T* wt, T* dst) {
  const std::ptrdiff_t C = p.ic;
  nhwc_gather(fwd_axis(p.ih, p.oh(), p.kh, p.sh, p.ph, p.kw * C, p.iw * C),
              fwd_axis(p.iw, p.ow(), p.kw, p.sw, p.pw, C, C), p.mb, p.ic, src,
              plane_size(p.ih, p.iw) * C, wt, dst);
}

template <class T>
void nhwc_backward_data(const ConvProblem& p, const T* diff_dst, const T* wt, T* diff_src) {
  const std::ptrdiff_t C = p.ic;
  nhwc_gather(bwd_axis(p.ih, p.oh(), p.kh, p.sh, p.ph, p.kw * C, p.ow() * C),
              bwd_axis(p.iw, p.ow(), p.kw, p.sw, p.pw, C, C), p.mb, p.ic, diff_dst,
              plane_size(p.oh(), p.ow()) * C, wt, diff_src);
}

template <class T>
void nhwc_weight_partials(const ConvProblem& p, const T* src, const T* diff_dst, T* partials) {
  const Chunks chunks(p);
  const std::size_t stride = filter_bytes(p) / sizeof(T);
  const int blocks = (p.ic + kLanes<T> - 1) / kLanes<T>;
  tbb::parallel_for(0, chunks.count * blocks, [&](int i) {
    const int k = i / blocks;
    nhwc_weights_task(p, src, diff_dst, chunks.at(k), i % blocks, partials + k * stride);
  });
}

template void nhwc_forward<float>(const ConvProblem&, const float*, const float*, float*);
template void nhwc_forward<double>(const ConvProblem&, const double*, const double*, double*);
template void nhwc_backward_data<float>(const ConvProblem&, const float*, const float*, float*);
template void nhwc_backward_data<double>(const ConvProblem&, const double*, const double*, double*);
template void nhwc_weight_partials<float>(const ConvProblem&, const float*, const float*, float*);
template void nhwc_weight_partials<double>(const ConvProblem&, const double*, const double*, double*);

}  // namespace depthwise
}  // namespace tunecnn
