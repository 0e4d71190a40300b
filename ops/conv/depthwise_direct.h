#pragma once
// Depthwise convolution by direct loops specialised for one filter per channel (TensorFlow's
// kernel in Qin et al.), in NCHW (vectorised over output columns) and NHWC (over channels); on the
// CPU (depthwise_direct.cpp) and on CUDA (depthwise_direct.cu).
#include "ops/conv/solver.h"

namespace tunecnn {

// What both devices' depthwise_direct accept: a well-formed problem with one filter per channel
// (groups == ic == oc). On false, `why` says which.
bool one_filter_per_channel(const ConvProblem& problem, std::string* why);

class DepthwiseDirectSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "depthwise_direct"; }
  UntunedRoles untuned_roles() const override { return UntunedRoles::nchw_chain(3); }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override {
    return {Layout::NCHW, Layout::NHWC};
  }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// The same on the GPU: a thread per output (fwd) or input pixel (bwd_data, a gather), bwd_weights
// by fixed-order block reductions, so every direction repeats bit for bit. Registered for
// Device::cuda.
class DepthwiseDirectCudaSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "depthwise_direct"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const ConvProblem&) const override {
    return {Layout::NCHW, Layout::NHWC};
  }
  std::size_t workspace_bytes(const ConvProblem& problem, const TuneConfig& config) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

}  // namespace tunecnn
