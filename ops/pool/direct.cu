// "pool_direct" on the GPU: NCHW, max and average, any window, stride and padding that
// PoolProblem::validate() accepts, forward and backward; no tunables (the coarsened kernels of Li
// et al. are part two). Forward: one thread per output scans its window clipped to the image.
// Backward: one thread per input pixel gathers from the outputs whose windows hold it, in
// row-major output order, which is the order pool_direct's scatter adds them in, so no atomics
// are needed and the sums round exactly as on the CPU. Max backward recomputes each window's
// argmax from src with the CPU's rules (first maximum in row-major window order, a NaN wins).
#include "core/cuda_elementwise.cuh"
#include "ops/pool/cuda_window.cuh"
#include "ops/pool/direct.h"

namespace tunecnn {
namespace {

using Geometry = WindowGeometry;

Geometry geometry_of(const PoolProblem& p) { return window_geometry(p); }

template <class T>
__device__ int argmax_in(const T* plane, int iw, const Window& w) {
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
void forward(const PoolProblem& p, const Tensor& src_t, Tensor& dst_t) {
  const Geometry g = geometry_of(p);
  const bool is_max = p.kind == PoolKind::max;
  const T* src = static_cast<const T*>(src_t.raw_data());
  T* dst = static_cast<T*>(dst_t.raw_data());
  launch_elementwise(dst_t.numel(), [=] __device__(std::int64_t i) {
    const std::int64_t out_plane = static_cast<std::int64_t>(g.oh) * g.ow;
    const std::int64_t plane = i / out_plane;
    const int oy = static_cast<int>(i % out_plane) / g.ow, ox = static_cast<int>(i % out_plane) % g.ow;
    const T* in = src + plane * g.ih * g.iw;
    const Window w = window_at(g, oy, ox);
    if (is_max) {
      dst[i] = in[argmax_in(in, g.iw, w)];
      return;
    }
    T total = 0;
    for (int y = w.y0; y < w.y1; ++y)
      for (int x = w.x0; x < w.x1; ++x) total += in[y * g.iw + x];
    dst[i] = total / static_cast<T>(divisor(g, w));
  });
}

template <class T>
void backward(const PoolProblem& p, const Tensor& src_t, const Tensor& diff_dst_t,
              Tensor& diff_src_t) {
  const Geometry g = geometry_of(p);
  const bool is_max = p.kind == PoolKind::max;
  const T* src = is_max ? static_cast<const T*>(src_t.raw_data()) : nullptr;
  const T* diff_dst = static_cast<const T*>(diff_dst_t.raw_data());
  T* diff_src = static_cast<T*>(diff_src_t.raw_data());
  launch_elementwise(diff_src_t.numel(), [=] __device__(std::int64_t i) {
    const std::int64_t in_plane = static_cast<std::int64_t>(g.ih) * g.iw;
    const std::int64_t plane = i / in_plane;
    const int pixel = static_cast<int>(i % in_plane);
    const int y = pixel / g.iw, x = pixel % g.iw;
    const T* in = is_max ? src + plane * in_plane : nullptr;
    const T* grad = diff_dst + plane * g.oh * g.ow;
    const Span rows = outputs_holding(y, g.ph, g.kh, g.sh, g.oh);
    const Span cols = outputs_holding(x, g.pw, g.kw, g.sw, g.ow);
    T total = 0;
    for (int oy = rows.first; oy <= rows.last; ++oy)
      for (int ox = cols.first; ox <= cols.last; ++ox) {
        const Window w = window_at(g, oy, ox);
        if (is_max) {
          if (argmax_in(in, g.iw, w) == pixel) total += grad[oy * g.ow + ox];
        } else {
          total += grad[oy * g.ow + ox] / static_cast<T>(divisor(g, w));
        }
      }
    diff_src[i] = total;
  });
}

template <class T>
void run_typed(const PoolProblem& p, const PoolArgs& a) {
  if (p.dir == Direction::fwd) {
    Tensor dst = a.dst;  // PoolArgs is const, the storage it names is not
    return forward<T>(p, a.src, dst);
  }
  Tensor diff_src = a.diff_src;
  backward<T>(p, a.src, a.diff_dst, diff_src);
}

}  // namespace

bool CudaDirectPoolSolver::applicable(const PoolProblem& problem, std::string* why) const {
  if (!runs_here(problem, why)) return false;
  if (problem.dir == Direction::bwd_weights) return reject(why, "pooling has no weights");
  return true;
}

void CudaDirectPoolSolver::run(const PoolProblem& problem, const TuneConfig&,
                               const PoolArgs& args) const {
  problem.validate();
  check_args(problem, args, Layout::NCHW);
  if (problem.dt == DType::f64) return run_typed<double>(problem, args);
  run_typed<float>(problem, args);
}

}  // namespace tunecnn
