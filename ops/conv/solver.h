#pragma once
// The solver contract (MIOpen's, flattened): stateless, one const instance per algorithm, listed
// in an explicit registry. A plan (solver + config) is chosen once per layer and run every step.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ops/conv/problem.h"
#include "ops/vocabulary.h"

namespace tunecnn {

// The tensors of one call. Which ones are read and written depends on the direction:
//   fwd:         reads src, wei           writes dst
//   bwd_data:    reads diff_dst, wei      writes diff_src
//   bwd_weights: reads src, diff_dst      writes diff_wei
// Outputs are overwritten, never accumulated into. Layout tags say the memory order.
struct ConvArgs {
  Tensor src, wei, dst, diff_src, diff_wei, diff_dst;
};

// Scratch memory the caller allocates: exactly workspace_bytes() of it, starting on a cache line
// (kWorkspaceAlignment), as the allocator gives it.
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
  template <class T> T* as() const { return static_cast<T*>(data); }
};

// The parts a solver plays in the plan made without timing (`--tune off` from the device's
// thresholds, autotune/threshold_plan.h) and in the layout calibration. Both ask the registry
// for these instead of naming solvers: a new solver joins them by declaring its parts.
struct UntunedRoles {
  // > 0: in the NCHW chain each direction tries, lowest first; 0: not in it.
  int nchw_order = 0;
  // One of the NCHW solvers the layout thresholds (Ct, Nt) weigh CHWN against: calibration
  // times the fastest of them that runs.
  bool layout_baseline = false;
  // The CHWN solver the layout thresholds weigh against NCHW, and that CHWN layers run
  // (Li et al.'s direct convolution with the batch in the SIMD lanes).
  bool chwn = false;
  // Where a whole layer moves, in the solver's own layout, when the budget leaves some
  // direction without an NCHW chain solver.
  bool low_memory = false;

  static constexpr UntunedRoles nchw_chain(int order, bool layout_baseline = false) {
    return {order, layout_baseline, false, false};
  }
  static constexpr UntunedRoles chwn_solver() { return {0, false, true, false}; }
  static constexpr UntunedRoles low_memory_solver() { return {0, false, false, true}; }
};

class ConvSolver {
 public:
  virtual ~ConvSolver() = default;
  virtual std::string_view name() const = 0;  // stable id written to tuning caches; never rename
  // A column of guard clauses; on false, `why` (if given) says which guard failed.
  virtual bool applicable(const ConvProblem& problem, std::string* why) const = 0;
  virtual std::vector<Layout> layouts(const ConvProblem&) const { return {Layout::NCHW}; }
  virtual std::vector<TuneConfig> configs(const ConvProblem&) const { return {TuneConfig{}}; }
  // True when the tuner should time every config (a sweep) rather than hill-climb from the first:
  // for a tunable whose cost curve may have several dips, such as the depthwise group size.
  virtual bool sweep_configs() const { return false; }
  virtual std::size_t workspace_bytes(const ConvProblem&, const TuneConfig&) const { return 0; }
  // True when the same arguments give the same bits on every run; false for a config that adds
  // with atomics in a varying order (some of cuDNN's backward algorithms). Among candidates the
  // timings cannot tell apart, the tuner prefers a deterministic one.
  virtual bool deterministic(const ConvProblem&, const TuneConfig&) const { return true; }
  virtual UntunedRoles untuned_roles() const { return {}; }
  // The config as reports show it: config.str(), plus what a number stands for where it names
  // something a user would look up (oneDNN's implementation).
  virtual std::string describe(const ConvProblem&, const TuneConfig& config) const { return config.str(); }
  virtual void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
                   Workspace workspace) const = 0;
};

// Workspace regions start on a cache line, so slots of different threads never share one.
inline constexpr std::size_t kWorkspaceAlignment = 64;
constexpr std::size_t align_workspace(std::size_t bytes) {
  return (bytes + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
}

}  // namespace tunecnn
