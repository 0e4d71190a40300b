#pragma once
// Softmax with cross-entropy loss: the loss and its gradient come from one solver call
// (ops/softmax/: the fused one-pass solver by default, the five-pass baseline, or whichever the
// autotuner's planner picks for the problem), and the softmax is never a separate layer.
#include <cstdint>
#include <vector>

#include "core/variable.h"

namespace tunecnn {

// Mean loss over the rows of logits [B, classes]; writes (softmax - onehot) / B into grad. Runs
// the solver default_softmax_planner() plans for the problem (ops/softmax/plan.h).
double softmax_cross_entropy_forward(const Tensor& logits, const std::vector<std::int32_t>& labels,
                                     Tensor& grad);
// Row-wise softmax for evaluation; allocates probs when it is undefined.
void softmax(const Tensor& logits, Tensor& probs);
// The index of each row's largest logit (the first on ties), for accuracy.
std::vector<std::int32_t> argmax_rows(const Tensor& logits);

// The mean loss as a one-element tensor [1].
Variable softmax_cross_entropy(const Variable& logits, const std::vector<std::int32_t>& labels);

}  // namespace tunecnn
