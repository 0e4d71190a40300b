// "pool_tiled" on the GPU: pooling with thread coarsening (Li et al., SC'16, PAPERS.md section 2).
// NCHW and CHWN, max and average, forward and bwd_data, any window, stride and padding that
// PoolProblem::validate() accepts, f32 and f64; at most 2^31 - 1 elements per tensor (32-bit index
// arithmetic: every thread divides its index three times, and 64-bit division is emulated on GPUs).
//
// Memory order, as in tiled.cpp: planes of pixels of V contiguous values, NCHW V = 1 over N*C
// planes, CHWN V = N over C planes. Consecutive threads take consecutive values of a pixel, so in
// CHWN a warp reads 32 consecutive images of one pixel (coalesced); in NCHW, where V = 1, they
// take consecutive groups of one row.
//
// Coarsening, config {"fx", F}, F in {1, 2, 4, 8} up to the row's length (1 first, where the
// tuner's climb starts). Forward: a thread computes F consecutive outputs of one output row. It
// walks the input columns their windows cover once, left to right, and folds each value into
// every window that holds it, so with overlapped windows (kw > sw) an input shared by neighbouring
// outputs is loaded once per thread instead of once per output, and the F results stay in
// registers (F is a template parameter: the loops over it unroll). Backward: a thread gathers the
// gradients of F consecutive input pixels of one row, so each window's argmax (max) or divisor
// (average) is worked out once per thread instead of once per pixel it holds.
//
// Results are pool_direct's. Each window is scanned in row-major order with its rules (the first
// maximum wins, a NaN wins; sums start at 0 and add in row-major order). Backward needs no atomics:
// a pixel's gradient adds the outputs whose windows hold it in row-major output order, the order
// pool_direct's scatter adds them in, so the sums round as on the CPU.
#include <algorithm>
#include <climits>
#include <cmath>

#include "core/cuda_elementwise.cuh"
#include "ops/pool/cuda_window.cuh"
#include "ops/pool/tiled.h"

namespace tunecnn {
namespace {

// The problem's sizes and its layout's memory order, passed to kernels by value. Value `lane` of
// pixel (y, x) of plane i is at i * h * w * lanes + (y * w + x) * lanes + lane, input and output
// alike (h, w: the tensor's height and width).
struct Geometry : WindowGeometry {
  int planes, lanes;
};

Geometry geometry_of(const PoolProblem& p, Layout layout) {
  const bool chwn = layout == Layout::CHWN;
  return {window_geometry(p), chwn ? p.c : p.mb * p.c, chwn ? p.mb : 1};
}

// One thread's work item: `lane` of F consecutive positions of `row` of `plane`, from position
// group * F (outputs forward, input pixels backward).
struct Item {
  int lane, group, row, plane;
};

// The lane varies fastest, so consecutive threads read consecutive values of a pixel.
__device__ Item item_at(int i, int lanes, int groups, int rows) {
  Item item;
  item.lane = i % lanes;
  i /= lanes;
  item.group = i % groups;
  i /= groups;
  item.row = i % rows;
  item.plane = i / rows;
  return item;
}

// pool_direct's rule: v replaces the maximum m when strictly greater, or when v is the first NaN.
template <class T>
__device__ bool takes(T v, T m) {
  return v > m || (v != v && m == m);
}

// Input values go through the read-only cache: a thread's neighbours re-read them.
template <class T>
__device__ T load(const T* p) {
  return __ldg(p);
}

// The pixel index (y * iw + x) of the first maximum of `w`, as pool_direct's argmax_in.
template <class T>
__device__ int argmax_in(const T* plane, const Geometry& g, const Window& w) {
  int best = w.y0 * g.iw + w.x0;
  T best_value = load(plane + best * g.lanes);
  for (int y = w.y0; y < w.y1; ++y)
    for (int x = w.x0; x < w.x1; ++x) {
      const T v = load(plane + (y * g.iw + x) * g.lanes);
      if (takes(v, best_value)) best = y * g.iw + x, best_value = v;
    }
  return best;
}

// Forward: outputs group * F ... of one output row, the last group of a row possibly short.
// A max starts from -infinity rather than the window's first pixel: the first pixel then replaces
// it unless it is -infinity itself, which has a single bit pattern, so the value is the same.
template <class T, int F>
__device__ void forward_group(const Geometry& g, bool is_max, const T* src, T* dst, int i) {
  const int groups = (g.ow + F - 1) / F;
  const Item item = item_at(i, g.lanes, groups, g.oh);
  const int ox0 = item.group * F, count = min(F, g.ow - ox0);
  const T* in = src + item.plane * g.ih * g.iw * g.lanes + item.lane;
  const int ys = item.row * g.sh - g.ph;
  const int y0 = max(ys, 0), y1 = min(ys + g.kh, g.ih);
  int x0[F], x1[F];
  T acc[F];
#pragma unroll
  for (int j = 0; j < F; ++j) {
    const int xs = (ox0 + j) * g.sw - g.pw;
    x0[j] = max(xs, 0);
    x1[j] = j < count ? min(xs + g.kw, g.iw) : x0[j];  // past the row's end: an empty window
    acc[j] = is_max ? static_cast<T>(-INFINITY) : T(0);
  }
  // The columns of the first to the last real window; windows never start after the input ends.
  const int first = x0[0], last = min((ox0 + count - 1) * g.sw - g.pw + g.kw, g.iw);
  for (int y = y0; y < y1; ++y)
    for (int x = first; x < last; ++x) {
      const T v = load(in + (y * g.iw + x) * g.lanes);
#pragma unroll
      for (int j = 0; j < F; ++j)
        if (x >= x0[j] && x < x1[j]) {
          if (!is_max)
            acc[j] += v;
          else if (takes(v, acc[j]))
            acc[j] = v;
        }
    }
  T* out = dst + item.plane * g.oh * g.ow * g.lanes + item.lane;
#pragma unroll
  for (int j = 0; j < F; ++j) {
    if (j >= count) break;
    const int at = (item.row * g.ow + ox0 + j) * g.lanes;
    out[at] = is_max ? acc[j] : acc[j] / static_cast<T>(divisor(g, {y0, y1, x0[j], x1[j]}));
  }
}

// Backward: input pixels group * F ... of one input row. The windows holding pixel x0 + j form a
// contiguous range of output columns that moves right with j, so the outputs from the first
// pixel's first column to the last pixel's last column cover them all; a window holding none of
// the pixels adds to none.
template <class T, int F>
__device__ void backward_group(const Geometry& g, bool is_max, const T* src, const T* diff_dst,
                               T* diff_src, int i) {
  const int groups = (g.iw + F - 1) / F;
  const Item item = item_at(i, g.lanes, groups, g.ih);
  const int x0 = item.group * F, count = min(F, g.iw - x0), y = item.row;
  const int in_plane = g.ih * g.iw * g.lanes;
  const T* in = is_max ? src + item.plane * in_plane + item.lane : nullptr;
  const T* grad = diff_dst + item.plane * g.oh * g.ow * g.lanes + item.lane;
  const Span rows = outputs_holding(y, g.ph, g.kh, g.sh, g.oh);
  const int col_first = outputs_holding(x0, g.pw, g.kw, g.sw, g.ow).first;
  const int col_last = outputs_holding(x0 + count - 1, g.pw, g.kw, g.sw, g.ow).last;
  T total[F];
#pragma unroll
  for (int j = 0; j < F; ++j) total[j] = 0;
  for (int oy = rows.first; oy <= rows.last; ++oy)
    for (int ox = col_first; ox <= col_last; ++ox) {
      const Window w = window_at(g, oy, ox);
      const T dy = load(grad + (oy * g.ow + ox) * g.lanes);
      if (is_max) {
        // The argmax lies in row y or another; only a pixel of this group in row y matches.
        const int column = argmax_in(in, g, w) - y * g.iw - x0;
#pragma unroll
        for (int j = 0; j < F; ++j)
          if (j == column && j < count) total[j] += dy;
        continue;
      }
      const T share = dy / static_cast<T>(divisor(g, w));
#pragma unroll
      for (int j = 0; j < F; ++j)
        if (j < count && x0 + j >= w.x0 && x0 + j < w.x1) total[j] += share;
    }
  T* out = diff_src + item.plane * in_plane + item.lane;
#pragma unroll
  for (int j = 0; j < F; ++j) {
    if (j >= count) break;
    out[(y * g.iw + x0 + j) * g.lanes] = total[j];
  }
}

// One thread per group of F positions of each row, lane by lane.
int work_items(const Geometry& g, int rows, int row_length, int factor) {
  const std::int64_t groups = (row_length + factor - 1) / factor;
  return static_cast<int>(static_cast<std::int64_t>(g.planes) * rows * groups * g.lanes);
}

template <class T, int F>
void forward(const PoolProblem& p, Layout layout, const Tensor& src_t, Tensor& dst_t) {
  const Geometry g = geometry_of(p, layout);
  const bool is_max = p.kind == PoolKind::max;
  const T* src = static_cast<const T*>(src_t.raw_data());
  T* dst = static_cast<T*>(dst_t.raw_data());
  launch_elementwise(work_items(g, g.oh, g.ow, F), [=] __device__(std::int64_t i) {
    forward_group<T, F>(g, is_max, src, dst, static_cast<int>(i));
  });
}

template <class T, int F>
void backward(const PoolProblem& p, Layout layout, const Tensor& src_t, const Tensor& diff_dst_t,
              Tensor& diff_src_t) {
  const Geometry g = geometry_of(p, layout);
  const bool is_max = p.kind == PoolKind::max;
  const T* src = is_max ? static_cast<const T*>(src_t.raw_data()) : nullptr;
  const T* diff_dst = static_cast<const T*>(diff_dst_t.raw_data());
  T* diff_src = static_cast<T*>(diff_src_t.raw_data());
  launch_elementwise(work_items(g, g.ih, g.iw, F), [=] __device__(std::int64_t i) {
    backward_group<T, F>(g, is_max, src, diff_dst, diff_src, static_cast<int>(i));
  });
}

template <class T, int F>
void run_coarsened(const PoolProblem& p, Layout layout, const PoolArgs& a) {
  if (p.dir == Direction::fwd) {
    Tensor dst = a.dst;  // PoolArgs is const, the storage it names is not
    return forward<T, F>(p, layout, a.src, dst);
  }
  Tensor diff_src = a.diff_src;
  backward<T, F>(p, layout, a.src, a.diff_dst, diff_src);
}

// The factor is a template argument so that the F accumulators live in registers.
template <class T>
void run_typed(const PoolProblem& p, int factor, Layout layout, const PoolArgs& a) {
  switch (factor) {
    case 1: return run_coarsened<T, 1>(p, layout, a);
    case 2: return run_coarsened<T, 2>(p, layout, a);
    case 4: return run_coarsened<T, 4>(p, layout, a);
    case 8: return run_coarsened<T, 8>(p, layout, a);
  }
  TUNECNN_FAIL("pool_tiled (cuda): no kernel for coarsening factor ", factor, " (", p.key(), ")");
}

// The row a factor coarsens: output rows forward, input rows backward.
int coarsened_row_length(const PoolProblem& p) {
  return p.dir == Direction::fwd ? p.ow() : p.iw;
}

}  // namespace

bool CudaTiledPoolSolver::applicable(const PoolProblem& problem, std::string* why) const {
  if (!runs_here(problem, why)) return false;
  if (problem.dir == Direction::bwd_weights) return reject(why, "pooling has no weights");
  const std::int64_t src =
      static_cast<std::int64_t>(problem.mb) * problem.c * problem.ih * problem.iw;
  const std::int64_t dst =
      static_cast<std::int64_t>(problem.mb) * problem.c * problem.oh() * problem.ow();
  if (std::max(src, dst) > INT_MAX)
    return reject(why, "more than 2^31 - 1 elements in a tensor (the kernels index in 32 bits)");
  return true;
}

std::vector<Layout> CudaTiledPoolSolver::layouts(const PoolProblem&) const {
  return {Layout::NCHW, Layout::CHWN};
}

std::vector<TuneConfig> CudaTiledPoolSolver::configs(const PoolProblem& problem) const {
  std::vector<TuneConfig> configs;
  for (int factor : kGpuPoolFactors)
    if (factor == 1 || factor <= coarsened_row_length(problem))
      configs.push_back(TuneConfig{{{"fx", factor}}});
  return configs;
}

void CudaTiledPoolSolver::run(const PoolProblem& problem, const TuneConfig& config,
                              const PoolArgs& args) const {
  problem.validate();
  std::string why;
  TUNECNN_CHECK(applicable(problem, &why), "pool_tiled (cuda): ", problem.key(), ": ", why);
  const int factor = config.get("fx", 1);
  const Tensor& first = reads_src(problem) ? args.src : args.diff_dst;
  const Layout layout = first.defined() ? first.layout() : Layout::NCHW;
  TUNECNN_CHECK(layout == Layout::NCHW || layout == Layout::CHWN,
                "pool_tiled (cuda) does not run layout ", to_string(layout));
  check_args(problem, args, layout);
  if (problem.dt == DType::f64) return run_typed<double>(problem, factor, layout, args);
  run_typed<float>(problem, factor, layout, args);
}

}  // namespace tunecnn
