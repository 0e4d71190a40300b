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
  // A column of guard clauses; on false, `why` (if given) says which guard failed.
  virtual bool applicable(const SoftmaxProblem& problem, std::string* why) const = 0;
  // Reads logits [rows, classes] and one label per row; returns the mean loss over the rows and
  // overwrites grad (same shape and dtype) with (softmax - onehot(label)) / rows. Throws Error
  // (check_softmax_call) on a shape, dtype or label that does not fit the problem.
  virtual double run(const SoftmaxProblem& problem, const Tensor& logits,
                     const std::vector<std::int32_t>& labels, Tensor& grad) const = 0;
};

}  // namespace tunecnn
