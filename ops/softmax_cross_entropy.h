#pragma once
// Softmax with cross-entropy loss: the loss and its gradient come from one solver call
// (ops/softmax/: the fused one-pass solver by default, the five-pass baseline, or whichever the
// autotuner's planner picks for the problem), and the softmax is never a separate layer.
#include <cstdint>
#include <vector>

#include "core/variable.h"

namespace tunecnn {

class SoftmaxPlanner;

// Mean loss over the rows of logits [B, classes]; writes (softmax - onehot) / B into grad (on the
// logits' device). Labels are on the host whatever the device. Runs the solver `planner` plans for
// the problem (ops/softmax/plan.h); without one, the untuned default.
double softmax_cross_entropy_forward(const Tensor& logits, const std::vector<std::int32_t>& labels,
                                     Tensor& grad);
double softmax_cross_entropy_forward(const Tensor& logits, const std::vector<std::int32_t>& labels,
                                     Tensor& grad, SoftmaxPlanner& planner);
// Row-wise softmax for evaluation, on the logits' device; allocates probs when it is undefined.
void softmax(const Tensor& logits, Tensor& probs);
// The index of each row's largest logit (the first on ties), for accuracy. GPU logits are copied
// to the host first: [B, classes] is small, and the answer is wanted there.
std::vector<std::int32_t> argmax_rows(const Tensor& logits);

// The mean loss as a one-element CPU tensor [1], whatever the logits' device: the loss is read on
// the host every step. Backward hands the gradient to the logits on their device.
Variable softmax_cross_entropy(const Variable& logits, const std::vector<std::int32_t>& labels);
Variable softmax_cross_entropy(const Variable& logits, const std::vector<std::int32_t>& labels,
                               SoftmaxPlanner& planner);

namespace cuda {  // the GPU version (ops/softmax_cross_entropy.cu); callers use softmax()
void softmax(const Tensor& logits, Tensor& probs);
}  // namespace cuda

}  // namespace tunecnn
