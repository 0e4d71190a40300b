#pragma once
// The softmax cross-entropy solver contract, ConvSolver's flattened: stateless, one const
// instance per algorithm, listed in an explicit registry (ops/softmax/registry.h). There are no
// configs: the algorithms differ in how many sweeps over memory they make, not in tunables.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/softmax/problem.h"

namespace tunecnn {

class SoftmaxSolver {
 public:
  virtual ~SoftmaxSolver() = default;
  virtual std::string_view name() const = 0;  // stable id written to tuning caches; never rename
  // Where it runs; its registry is that device's (softmax_solvers(device)). A CUDA solver may
  // share a CPU solver's name: the device tells them apart.
  virtual Device device() const { return Device::cpu; }
  // A column of guard clauses, starting with runs_here(); on false, `why` (if given) says which
  // guard failed.
  virtual bool applicable(const SoftmaxProblem& problem, std::string* why) const = 0;
  // Reads logits [rows, classes] and one label per row; returns the mean loss over the rows and
  // overwrites grad (same shape and dtype) with (softmax - onehot(label)) / rows. Throws Error
  // (check_softmax_call) on a shape, dtype or label that does not fit the problem.
  // Labels are always on the host; logits and grad on the solver's device.
  virtual double run(const SoftmaxProblem& problem, const Tensor& logits,
                     const std::vector<std::int32_t>& labels, Tensor& grad) const = 0;

 protected:
  // The first guard of every applicable(): the problem lives on this solver's device.
  bool runs_here(const SoftmaxProblem& problem, std::string* why) const {
    if (problem.device == device()) return true;
    if (why != nullptr)
      *why = "runs on " + std::string(to_string(device())) + ", the problem is on " +
             std::string(to_string(problem.device));
    return false;
  }
};

}  // namespace tunecnn
