// Pointwise (1x1) convolution as a single GEMM (MobileNet's pointwise layers, 95% of its
// multiply-adds). With P = N*H*W pixels, NHWC activations are a row-major [P, C] matrix and CHWN
// ones a [C, P] matrix, so no lowering or copy is needed:
//   NHWC: dst = src W^T,  diff_src = diff_dst W,   diff_wei = diff_dst^T src
//   CHWN: dst = W src,    diff_src = W^T diff_dst, diff_wei = diff_dst src^T
// fwd and bwd_data split the long P dimension over the threads (ops/blas.h). bwd_weights sums
// over P: it is cut into fixed slices, one per thread, each writing its own partial (slice 0
// straight into diff_wei), added in slice order, so results depend only on the thread count.
// Constraints: NHWC or CHWN on the CPU, f32/f64, kh = kw = 1, stride 1, no padding, groups 1.
// Tunables: none. Source: the 1x1 case of im2col (Chellapilla et al. 2006) without the copy.
#include "ops/conv/pointwise_gemm.h"

#include <tbb/parallel_for.h>

#include <algorithm>

#include "core/threading.h"
#include "ops/blas.h"
#include "ops/conv/args.h"

namespace tunecnn {
namespace {

// A slice of the pixel sum smaller than this is not worth a partial of its own.
constexpr std::int64_t kMinSlicePixels = 1024;

std::int64_t pixels(const ConvProblem& p) {
  return static_cast<std::int64_t>(p.mb) * p.ih * p.iw;
}

int weight_slices(const ConvProblem& p) {
  const std::int64_t by_size = std::max<std::int64_t>(1, pixels(p) / kMinSlicePixels);
  return static_cast<int>(std::min<std::int64_t>(by_size, num_threads()));
}

template <class T>
void forward(const ConvProblem& p, Layout layout, const T* src, const T* wei, T* dst) {
  const int n = static_cast<int>(pixels(p));
  if (layout == Layout::NHWC) {
    gemm<T>(false, true, n, p.oc, p.ic, T(1), src, p.ic, wei, p.ic, T(0), dst, p.oc);
  } else {
    gemm<T>(false, false, p.oc, n, p.ic, T(1), wei, p.ic, src, n, T(0), dst, n);
  }
}

template <class T>
void backward_data(const ConvProblem& p, Layout layout, const T* diff_dst, const T* wei, T* diff_src) {
  const int n = static_cast<int>(pixels(p));
  if (layout == Layout::NHWC) {
    gemm<T>(false, false, n, p.ic, p.oc, T(1), diff_dst, p.oc, wei, p.ic, T(0), diff_src, p.ic);
  } else {
    gemm<T>(true, false, p.ic, n, p.oc, T(1), wei, p.ic, diff_dst, n, T(0), diff_src, n);
  }
}

// diff_wei [oc, ic] over the pixels [begin, end).
template <class T>
void weight_slice(const ConvProblem& p, Layout layout, const T* src, const T* diff_dst,
                  std::int64_t begin, std::int64_t end, T* out) {
  const int k = static_cast<int>(end - begin);
  const int n = static_cast<int>(pixels(p));
  if (layout == Layout::NHWC) {
    gemm_serial<T>(true, false, p.oc, p.ic, k, T(1), diff_dst + begin * p.oc, p.oc, src + begin * p.ic,
                   p.ic, T(0), out, p.ic);
  } else {
    gemm_serial<T>(false, true, p.oc, p.ic, k, T(1), diff_dst + begin, n, src + begin, n, T(0), out, p.ic);
  }
}

template <class T>
void backward_weights(const ConvProblem& p, Layout layout, const T* src, const T* diff_dst, T* diff_wei,
                      Workspace ws) {
  const int slices = weight_slices(p);
  const std::int64_t total = pixels(p), step = (total + slices - 1) / slices;
  const std::size_t count = static_cast<std::size_t>(p.oc) * p.ic;
  const auto partial = [&](int s) { return s == 0 ? diff_wei : ws.as<T>() + (s - 1) * count; };
  tbb::parallel_for(0, slices, [&](int s) {
    const std::int64_t begin = s * step, end = std::min(total, begin + step);
    if (begin < end) {
      weight_slice(p, layout, src, diff_dst, begin, end, partial(s));
    } else {
      std::fill(partial(s), partial(s) + count, T(0));
    }
  });
  for (int s = 1; s < slices; ++s)
    for (std::size_t i = 0; i < count; ++i) diff_wei[i] += partial(s)[i];
}

}  // namespace

bool PointwiseGemmSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.kh != 1 || p.kw != 1) return reject(why, "pointwise_gemm needs a 1x1 kernel");
  if (p.sh != 1 || p.sw != 1) return reject(why, "pointwise_gemm needs stride 1");
  if (p.ph != 0 || p.pw != 0) return reject(why, "pointwise_gemm needs no padding");
  if (p.g != 1) return reject(why, "pointwise_gemm needs groups == 1");
  if (pixels(p) > INT32_MAX) return reject(why, "pointwise_gemm: more than 2^31 pixels in the batch");
  return true;
}

std::size_t PointwiseGemmSolver::workspace_bytes(const ConvProblem& p, const TuneConfig&) const {
  if (p.dir != Direction::bwd_weights) return 0;
  return static_cast<std::size_t>(weight_slices(p) - 1) * p.oc * p.ic * dtype_size(p.dt);
}

void PointwiseGemmSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                              Workspace ws) const {
  const Layout layout = p.dir == Direction::bwd_data ? args.diff_dst.layout() : args.src.layout();
  TUNECNN_CHECK(layout == Layout::NHWC || layout == Layout::CHWN, "pointwise_gemm runs in NHWC or CHWN, got ",
                to_string(layout), " for ", p.key());
  check_conv_args(p, args, layout);
  TUNECNN_CHECK(ws.bytes >= workspace_bytes(p, config), "pointwise_gemm needs ", workspace_bytes(p, config),
                " workspace bytes, got ", ws.bytes, " for ", p.key());
  dispatch_dtype(p.dt, [&]<class T>() {
    switch (p.dir) {
      case Direction::fwd:
        forward(p, layout, args.src.data<T>(), args.wei.data<T>(), writable<T>(args.dst));
        return;
      case Direction::bwd_data:
        backward_data(p, layout, args.diff_dst.data<T>(), args.wei.data<T>(), writable<T>(args.diff_src));
        return;
      case Direction::bwd_weights:
        backward_weights(p, layout, args.src.data<T>(), args.diff_dst.data<T>(), writable<T>(args.diff_wei), ws);
        return;
    }
  });
}

}  // namespace tunecnn
