#pragma once
// "pool_onednn": oneDNN's pooling (Debian's libdnnl) as a CPU pool solver beside ours, in NCHW and
// NHWC, max and average, forward and bwd_data, f32. Built only with oneDNN (cmake/onednn.cmake).
// Measured before adding it (docs/BENCHMARKS.md, issue 27): on AlexNet's first pool (55x55x96,
// 3/2, batch 64, 1 thread) oneDNN's max pooling takes 6.1 ms forward in NHWC against pool_tiled's
// best 12.0 (CHWN), while pool_tiled wins the smaller pools; the tuner picks per layer.
// Max backward needs the argmax, which oneDNN keeps in a workspace its forward writes and our
// solver contract does not carry from forward to backward: backward runs oneDNN's forward again
// into scratch memory first (timed with it). Ties go to the first maximum as in pool_direct; a
// NaN in a window need not win, unlike in pool_direct.
#include "ops/pool/solver.h"

namespace tunecnn {

class OneDnnPoolSolver final : public PoolSolver {
 public:
  std::string_view name() const override { return "pool_onednn"; }
  bool applicable(const PoolProblem& problem, std::string* why) const override;
  std::vector<Layout> layouts(const PoolProblem&) const override { return {Layout::NCHW, Layout::NHWC}; }
  void run(const PoolProblem& problem, const TuneConfig& config, const PoolArgs& args) const override;
};

}  // namespace tunecnn
