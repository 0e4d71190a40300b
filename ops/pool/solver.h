#pragma once
// The pooling solver contract, the same as ConvSolver's: stateless, one const instance per
// algorithm, listed in an explicit registry (ops/pool/registry.h). Configs are tunables such as a
// coarsening factor; TuneConfig and reject() are the shared ops vocabulary.
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.h"
#include "ops/pool/problem.h"
#include "ops/vocabulary.h"

namespace tunecnn {

// The tensors of one call:
//   fwd:      reads src                  writes dst
//   bwd_data: reads diff_dst (and src,   writes diff_src
//             for max: the argmax is recomputed from it)
// Outputs are overwritten, never accumulated into. Layout tags say the memory order.
struct PoolArgs {
  Tensor src, dst, diff_src, diff_dst;
};

// Whether the call reads src: always forward, and backward for max (the argmax).
inline bool reads_src(const PoolProblem& p) { return p.dir == Direction::fwd || p.kind == PoolKind::max; }

class PoolSolver {
 public:
  virtual ~PoolSolver() = default;
  virtual std::string_view name() const = 0;  // stable id written to tuning caches; never rename
  // Where it runs; its registry is that device's (pool_solvers(device)). A CUDA solver may share
  // a CPU solver's name: the device tells them apart, as in the tuning cache's device sections.
  virtual Device device() const { return Device::cpu; }
  // A column of guard clauses, starting with runs_here(); on false, `why` (if given) says which
  // guard failed.
  virtual bool applicable(const PoolProblem& problem, std::string* why) const = 0;
  virtual std::vector<Layout> layouts(const PoolProblem&) const { return {Layout::NCHW}; }
  virtual std::vector<TuneConfig> configs(const PoolProblem&) const { return {TuneConfig{}}; }
  virtual void run(const PoolProblem& problem, const TuneConfig& config,
                   const PoolArgs& args) const = 0;

 protected:
  // The first guard of every applicable(): the problem lives on this solver's device.
  bool runs_here(const PoolProblem& problem, std::string* why) const {
    if (problem.device == device()) return true;
    return reject(why, "runs on " + std::string(to_string(device())) + ", the problem is on " +
                           std::string(to_string(problem.device)));
  }
  // Every tensor the call reads or writes (PoolArgs) is defined, of the problem's shape and
  // dtype, in `layout` and on this solver's device; the error names the solver, the tensor and
  // the problem.
  void check_args(const PoolProblem& problem, const PoolArgs& args, Layout layout) const;
};

}  // namespace tunecnn
