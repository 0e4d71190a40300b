// Depthwise direct convolution, the specialised kernel TensorFlow runs for MobileNet (Qin et al.,
// PAPERS.md section 3), in two layouts. NCHW: a task per (image, channel) plane, columns in SIMD
// lanes, each output summed in registers over unrolled 3x3/5x5 taps; "same" stride-1 planes run
// as one flattened loop; borders use per-call tap ranges. bwd_data gathers (stride 1: the same
// kernel with the flipped filter; else zero-stuffed dO rows). NHWC: channels in the lanes, a task
// per row. bwd_weights adds fixed chunks of output rows in chunk order: no thread-count effect.
// Constraints: NCHW or NHWC on the CPU, f32/f64, depthwise with multiplier 1 (g == ic == oc), any
// kernel, stride and padding. Tunables: none.
// Each layout's kernels are in depthwise_nchw.cpp and depthwise_nhwc.cpp.
#include "ops/conv/depthwise_direct.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include "ops/conv/args.h"
#include "ops/conv/depthwise_common.h"

namespace tunecnn {
namespace {

using namespace depthwise;

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
  (layout == Layout::NCHW ? nchw_weight_partials<T> : nhwc_weight_partials<T>)(p, src, diff_dst,
                                                                              ws.as<T>());
  sum_partials(p, Chunks(p), ws, diff_wei);
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
    (nchw ? nchw_forward<T> : nhwc_forward<T>)(p, args.src.data<T>(), wt, writable<T>(args.dst));
  } else {
    (nchw ? nchw_backward_data<T> : nhwc_backward_data<T>)(p, args.diff_dst.data<T>(), wt,
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
