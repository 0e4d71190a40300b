#pragma once
// A softmax cross-entropy problem as a value, like PoolProblem: logits [rows, classes] with one
// label per row, and a stable one-line key, e.g. "softmax_xent mb64 classes10" (" f64" appended
// for double). The loss and its gradient are one problem: the solvers compute both at once.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tunecnn {

struct SoftmaxProblem {
  int rows = 1, classes = 1;
  DType dt = DType::f32;
  // Where it runs. Not in the key: a tuning cache keeps each device's entries apart.
  Device device = Device::cpu;

  Shape logits_shape() const { return {rows, classes}; }
  // Stable: written to tuning caches.
  std::string key() const;
  void validate() const;  // throws Error naming the key and the bad field
  bool operator==(const SoftmaxProblem&) const = default;
};

// The inverse of SoftmaxProblem::key(): "softmax_xent mbN classesK" and an optional "f64". Throws
// Error naming the text and what is wrong.
SoftmaxProblem parse_softmax_key(std::string_view key);

// The problem of logits [rows, classes] on their device; throws Error for anything that is not a
// 2-D tensor with at least one class.
SoftmaxProblem softmax_problem_of(const Tensor& logits);

// The guard every solver's applicable() starts with: at least one row and one class.
bool softmax_problem_well_formed(const SoftmaxProblem& problem, std::string* why);

// The checks every solver's run() makes before touching memory: the problem is valid, logits and
// grad are tensors of its shape and dtype on its device, and each (host) label is a class index
// ("label 4 in row 2 is outside [0, 4)").
void check_softmax_call(const SoftmaxProblem& problem, const Tensor& logits,
                        const std::vector<std::int32_t>& labels, const Tensor& grad);

// Rows per TBB task: enough work to amortise a task, at least one row. Both solvers use it, so
// that comparing them measures fusion, not threading.
std::int64_t softmax_row_grain(int classes);

// The mean of per-row losses summed in row order (0 for none), so it does not depend on
// scheduling.
double mean_row_loss(const std::vector<double>& row_loss);

}  // namespace tunecnn
