// Diagonalwise refactorization (Qin et al., PAPERS.md section 3): the C channels are split into
// G = C/S groups of S; W_hat[o, j] = (j == o % S) ? W[o, 0] : 0 puts each group's S filters on the
// diagonal of an S x (S*kh*kw) matrix, so the depthwise convolution is exactly the grouped
// convolution {g = C/S, weights W_hat [C, S, kh, kw]}, run by im2col_gemm's lowering (chunk 1).
// bwd_weights computes the dense grouped gradient and keeps its diagonal (the masked gradient).
// Constraints: NCHW on the CPU, f32/f64, depthwise with multiplier 1 (g == ic == oc > 1), C with a
// divisor in [min(8, C), 256]; any stride and padding. Tunable: "S", the group size.
// The extra zeros cost S times the depthwise multiply-adds in exchange for one GEMM per group.
#include "ops/conv/diagonal.h"

#include <tbb/parallel_for.h>

#include <algorithm>

#include "ops/conv/args.h"
#include "ops/conv/im2col_gemm.h"

namespace tunecnn {
namespace {

constexpr int kMinGroupSize = 8, kMaxGroupSize = 256;
const TuneConfig kInnerConfig{{{"chunk", 1}}};

int group_size(const ConvProblem& p, const TuneConfig& config) {
  const int s = config.get("S", 0);
  TUNECNN_CHECK(s > 0 && p.ic % s == 0, "diagonal: group size S=", s, " does not divide C=", p.ic,
                " (config '", config.str(), "') for ", p.key());
  return s;
}

// The grouped convolution the depthwise problem becomes.
ConvProblem refactorized(const ConvProblem& p, int s) {
  ConvProblem q = p;
  q.g = p.ic / s;
  return q;
}

// Workspace: [W_hat, or the dense weight gradient for bwd_weights | the lowering's workspace].
std::size_t dense_weight_bytes(const ConvProblem& p, int s) {
  return align_workspace(static_cast<std::size_t>(p.oc) * s * p.kh * p.kw * dtype_size(p.dt));
}

template <class T>
void build_w_hat(const ConvProblem& p, int s, const T* wei, T* w_hat) {
  const std::size_t taps = static_cast<std::size_t>(p.kh) * p.kw;
  tbb::parallel_for(0, p.oc, [&](int o) {
    T* row = w_hat + o * s * taps;
    std::fill(row, row + s * taps, T(0));
    std::copy_n(wei + o * taps, taps, row + (o % s) * taps);
  });
}

template <class T>
void take_diagonal(const ConvProblem& p, int s, const T* dense, T* diff_wei) {
  const std::size_t taps = static_cast<std::size_t>(p.kh) * p.kw;
  for (int o = 0; o < p.oc; ++o)
    std::copy_n(dense + (o * s + o % s) * taps, taps, diff_wei + o * taps);
}

template <class T>
void run_typed(const ConvProblem& p, int s, const ConvArgs& args, Workspace ws) {
  const ConvProblem q = refactorized(p, s);
  T* dense = ws.as<T>();
  const std::size_t dense_bytes = dense_weight_bytes(p, s);
  const Workspace inner{ws.as<char>() + dense_bytes, ws.bytes - dense_bytes};
  switch (p.dir) {
    case Direction::fwd:
      build_w_hat(p, s, args.wei.data<T>(), dense);
      run_im2col_gemm(
          q, kInnerConfig,
          ConvBuffers<T>{.src = args.src.data<T>(), .wei = dense, .dst = writable<T>(args.dst)},
          inner);
      return;
    case Direction::bwd_data:
      build_w_hat(p, s, args.wei.data<T>(), dense);
      run_im2col_gemm(q, kInnerConfig,
                      ConvBuffers<T>{.wei = dense,
                                     .diff_dst = args.diff_dst.data<T>(),
                                     .diff_src = writable<T>(args.diff_src)},
                      inner);
      return;
    case Direction::bwd_weights:
      run_im2col_gemm(
          q, kInnerConfig,
          ConvBuffers<T>{
              .src = args.src.data<T>(), .diff_dst = args.diff_dst.data<T>(), .diff_wei = dense},
          inner);
      take_diagonal(p, s, dense, writable<T>(args.diff_wei));
      return;
  }
}

}  // namespace

bool DiagonalSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.g != p.ic)
    return reject(why, "not depthwise: diagonal needs groups == ic, got g" + std::to_string(p.g) +
                           " ic" + std::to_string(p.ic));
  if (p.ic == 1)
    return reject(why, "a single channel is an ordinary convolution: im2col_gemm runs it");
  if (p.oc != p.ic)
    return reject(why, "depthwise multiplier oc/ic = " + std::to_string(p.oc / p.ic) +
                           ": only multiplier 1 (oc == ic) is supported");
  if (configs(p).empty())
    return reject(why, "no group size S in [" + std::to_string(kMinGroupSize) + ", " +
                           std::to_string(kMaxGroupSize) + "] divides C=" + std::to_string(p.ic));
  return true;
}

std::vector<TuneConfig> DiagonalSolver::configs(const ConvProblem& p) const {
  std::vector<TuneConfig> configs;
  for (int s = std::min(kMinGroupSize, p.ic); s <= std::min(kMaxGroupSize, p.ic); ++s)
    if (p.ic % s == 0) configs.push_back(TuneConfig{{{"S", s}}});
  return configs;
}

std::size_t DiagonalSolver::workspace_bytes(const ConvProblem& p, const TuneConfig& config) const {
  const int s = group_size(p, config);
  return dense_weight_bytes(p, s) + im2col_gemm_workspace_bytes(refactorized(p, s), kInnerConfig);
}

void DiagonalSolver::run(const ConvProblem& p, const TuneConfig& config, const ConvArgs& args,
                         Workspace ws) const {
  const int s = group_size(p, config);
  check_conv_args(p, args, Layout::NCHW);
  const std::size_t need = workspace_bytes(p, config);
  TUNECNN_CHECK(ws.bytes >= need, "diagonal needs ", need, " workspace bytes, got ", ws.bytes,
                " for ", p.key());
  dispatch_dtype(p.dt, [&]<class T>() { run_typed<T>(p, s, args, ws); });
}

}  // namespace tunecnn
