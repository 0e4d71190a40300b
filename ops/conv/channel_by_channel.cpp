// Channel by channel: a depthwise convolution as C groups of one channel, each lowered by im2col
// to a 1 x (kh*kw) by (kh*kw) x (oh*ow) GEMM, as Caffe and PyTorch ran MobileNet's Conv DW. It is
// im2col_gemm's grouped lowering itself (run_im2col_gemm), which leaves depthwise problems here.
// Constraints: NCHW on the CPU, f32/f64, depthwise with multiplier 1 (g == ic == oc > 1), any
// stride and padding. Tunable: im2col_gemm's "chunk" (images lowered together).
// Source: Qin et al., diagonalwise refactorization, the channel-by-channel baseline (PAPERS.md 3).
#include "ops/conv/channel_by_channel.h"

#include "ops/conv/args.h"
#include "ops/conv/im2col_gemm.h"

namespace tunecnn {

bool ChannelByChannelSolver::applicable(const ConvProblem& p, std::string* why) const {
  if (!conv_problem_well_formed(p, why)) return false;
  if (p.g != p.ic)
    return reject(why, "not depthwise: channel_by_channel needs groups == ic, got g" +
                           std::to_string(p.g) + " ic" + std::to_string(p.ic));
  if (p.ic == 1)
    return reject(why, "a single channel is an ordinary convolution: im2col_gemm runs it");
  if (p.oc != p.ic)
    return reject(why, "depthwise multiplier oc/ic = " + std::to_string(p.oc / p.ic) +
                           ": only multiplier 1 (oc == ic) is supported");
  return true;
}

std::vector<TuneConfig> ChannelByChannelSolver::configs(const ConvProblem& p) const {
  return im2col_gemm_configs(p);
}

std::size_t ChannelByChannelSolver::workspace_bytes(const ConvProblem& p,
                                                    const TuneConfig& config) const {
  return im2col_gemm_workspace_bytes(p, config);
}

void ChannelByChannelSolver::run(const ConvProblem& p, const TuneConfig& config,
                                 const ConvArgs& args, Workspace ws) const {
  run_im2col_gemm(p, config, args, ws);
}

}  // namespace tunecnn
