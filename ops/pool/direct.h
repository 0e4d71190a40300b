#pragma once
// The reference pooling solver, "pool_direct": NCHW, max and average, any window, stride and
// padding, forward and backward. Always applicable, so it is last in the registry.
#include "ops/pool/solver.h"

namespace tunecnn {

class DirectPoolSolver final : public PoolSolver {
 public:
  std::string_view name() const override { return "pool_direct"; }
  bool applicable(const PoolProblem& problem, std::string* why) const override;
  void run(const PoolProblem& problem, const TuneConfig& config,
           const PoolArgs& args) const override;
};

}  // namespace tunecnn
