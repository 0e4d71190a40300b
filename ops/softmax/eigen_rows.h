#pragma once
// Eigen row maps for the softmax code (the solvers and the evaluation-time softmax).
#include "ops/eigen_core.h"

namespace tunecnn {

// One row of logits or gradients as an Eigen array over existing memory.
template <class T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using MutRow = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

}  // namespace tunecnn
