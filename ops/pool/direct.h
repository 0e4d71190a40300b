#pragma once
// The reference pooling solver, "pool_direct": NCHW, max and average, any window, stride and
// padding, forward and backward. Always applicable on its device, so it is last in the registry.
// The CUDA solver of the same name (direct.cu) computes the same values on the GPU.
#include "ops/pool/solver.h"

namespace tunecnn {

class DirectPoolSolver final : public PoolSolver {
 public:
  std::string_view name() const override { return "pool_direct"; }
  bool applicable(const PoolProblem& problem, std::string* why) const override;
  void run(const PoolProblem& problem, const TuneConfig& config,
           const PoolArgs& args) const override;
};

// The GPU twin, defined in direct.cu (CUDA builds only): one thread per output forward, one per
// input pixel backward, each summing in pool_direct's order, so results match it bit for bit.
class CudaDirectPoolSolver final : public PoolSolver {
 public:
  std::string_view name() const override { return "pool_direct"; }
  Device device() const override { return Device::cuda; }
  bool applicable(const PoolProblem& problem, std::string* why) const override;
  void run(const PoolProblem& problem, const TuneConfig& config,
           const PoolArgs& args) const override;
};

}  // namespace tunecnn
