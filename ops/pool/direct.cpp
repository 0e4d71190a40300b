// Direct NCHW pooling: each output scans its window clipped to the image, so padding costs nothing
// and average pooling divides by the real pixels unless count_include_pad. Constraints: NCHW,
// any window/stride/padding that PoolProblem::validate() accepts. No tunables.
// Max backward recomputes each window's argmax from src instead of keeping indices from forward:
// forward and backward solvers then stay independent (a coarsened or CHWN forward pairs with any
// backward), and no index buffer adds to peak memory; src is kept alive anyway, usually as the
// previous ReLU's output. Both directions share argmax_in(), so ties go to the first maximum in
// row-major window order in both. A NaN in a window wins, so divergence is not masked.
// Planes (n, c) run as TBB tasks; each writes only its own plane, in a fixed order, so results
// (including overlapping-window gradient sums) do not depend on scheduling.
#include "ops/pool/direct.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>

namespace tunecnn {
namespace {

// The window of output (oy, ox), clipped to the image: rows [y0, y1), columns [x0, x1).
struct Window {
  int y0, y1, x0, x1;
};

Window window_at(const PoolProblem& p, int oy, int ox) {
  const int ys = oy * p.sh - p.ph, xs = ox * p.sw - p.pw;
  return {std::max(ys, 0), std::min(ys + p.kh, p.ih), std::max(xs, 0), std::min(xs + p.kw, p.iw)};
}

int divisor(const PoolProblem& p, const Window& w) {
  return p.count_include_pad ? p.kh * p.kw : (w.y1 - w.y0) * (w.x1 - w.x0);
}

template <class T>
int argmax_in(const T* plane, int iw, const Window& w) {
  int best = w.y0 * iw + w.x0;
  T best_value = plane[best];
  for (int y = w.y0; y < w.y1; ++y)
    for (int x = w.x0; x < w.x1; ++x) {
      const T v = plane[y * iw + x];
      const bool nan_first = v != v && best_value == best_value;
      if (v > best_value || nan_first) best = y * iw + x, best_value = v;
    }
  return best;
}

template <class T>
void max_fwd(const PoolProblem& p, const T* src, T* dst) {
  for (int oy = 0; oy < p.oh(); ++oy)
    for (int ox = 0; ox < p.ow(); ++ox)
      dst[oy * p.ow() + ox] = src[argmax_in(src, p.iw, window_at(p, oy, ox))];
}

template <class T>
void max_bwd(const PoolProblem& p, const T* src, const T* diff_dst, T* diff_src) {
  std::fill(diff_src, diff_src + p.ih * p.iw, T(0));
  for (int oy = 0; oy < p.oh(); ++oy)
    for (int ox = 0; ox < p.ow(); ++ox)
      diff_src[argmax_in(src, p.iw, window_at(p, oy, ox))] += diff_dst[oy * p.ow() + ox];
}

template <class T>
void avg_fwd(const PoolProblem& p, const T* src, T* dst) {
  for (int oy = 0; oy < p.oh(); ++oy)
    for (int ox = 0; ox < p.ow(); ++ox) {
      const Window w = window_at(p, oy, ox);
      T total = 0;
      for (int y = w.y0; y < w.y1; ++y)
        for (int x = w.x0; x < w.x1; ++x) total += src[y * p.iw + x];
      dst[oy * p.ow() + ox] = total / static_cast<T>(divisor(p, w));
    }
}

template <class T>
void avg_bwd(const PoolProblem& p, const T* diff_dst, T* diff_src) {
  std::fill(diff_src, diff_src + p.ih * p.iw, T(0));
  for (int oy = 0; oy < p.oh(); ++oy)
    for (int ox = 0; ox < p.ow(); ++ox) {
      const Window w = window_at(p, oy, ox);
      const T share = diff_dst[oy * p.ow() + ox] / static_cast<T>(divisor(p, w));
      for (int y = w.y0; y < w.y1; ++y)
        for (int x = w.x0; x < w.x1; ++x) diff_src[y * p.iw + x] += share;
    }
}

// Runs body(plane) for every (n, c) plane, several small planes per task.
template <class Body>
void for_planes(const PoolProblem& p, Body body) {
  const std::int64_t planes = static_cast<std::int64_t>(p.mb) * p.c;
  const std::int64_t grain =
      std::max<std::int64_t>(1, 16384 / (static_cast<std::int64_t>(p.ih) * p.iw));
  tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, planes, grain),
                    [&](const tbb::blocked_range<std::int64_t>& r) {
                      for (std::int64_t i = r.begin(); i < r.end(); ++i) body(i);
                    });
}

template <class T>
void run_typed(const PoolProblem& p, const PoolArgs& a) {
  const std::int64_t in_plane = static_cast<std::int64_t>(p.ih) * p.iw;
  const std::int64_t out_plane = static_cast<std::int64_t>(p.oh()) * p.ow();
  const bool max = p.kind == PoolKind::max;
  if (p.dir == Direction::fwd) {
    const T* src = a.src.data<T>();
    Tensor dst_handle = a.dst;  // PoolArgs is const, the storage it names is not
    T* dst = dst_handle.data<T>();
    for_planes(p, [&](std::int64_t i) {
      if (max)
        max_fwd(p, src + i * in_plane, dst + i * out_plane);
      else
        avg_fwd(p, src + i * in_plane, dst + i * out_plane);
    });
    return;
  }
  const T* diff_dst = a.diff_dst.data<T>();
  Tensor diff_src_handle = a.diff_src;
  T* diff_src = diff_src_handle.data<T>();
  const T* src = max ? a.src.data<T>() : nullptr;
  for_planes(p, [&](std::int64_t i) {
    if (max)
      max_bwd(p, src + i * in_plane, diff_dst + i * out_plane, diff_src + i * in_plane);
    else
      avg_bwd(p, diff_dst + i * out_plane, diff_src + i * in_plane);
  });
}

}  // namespace

bool DirectPoolSolver::applicable(const PoolProblem& problem, std::string* why) const {
  if (!runs_here(problem, why)) return false;
  if (problem.dir == Direction::bwd_weights) return reject(why, "pooling has no weights");
  return true;
}

void DirectPoolSolver::run(const PoolProblem& problem, const TuneConfig&,
                           const PoolArgs& args) const {
  problem.validate();
  check_args(problem, args, Layout::NCHW);
  dispatch_dtype(problem.dt, [&]<class T>() { run_typed<T>(problem, args); });
}

}  // namespace tunecnn
