#pragma once
// Depthwise convolution one channel at a time: an im2col + GEMM per channel, the Caffe/PyTorch
// baseline of Qin et al.
#include "ops/conv/solver.h"

namespace tunecnn {

class ChannelByChannelSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "channel_by_channel"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<TuneConfig> configs(const ConvProblem& problem) const override;
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
