#pragma once
// Finite-difference gradient checking in double precision. For a function f of several tensors,
// backward is seeded with a fixed random probe R, so the analytic gradients are those of
// sum(f(x) * R); each is compared with central differences of that same scalar.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/variable.h"

namespace tunecnn::testing {

using GraphFn = std::function<Variable(const std::vector<Variable>& inputs)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-7;
  double rtol = 1e-5;
  std::uint64_t seed = 7;
  std::vector<bool> differentiable;  // per input; empty = all inputs
};

// Inputs must be f64. Reports the worst element of each input on failure.
::testing::AssertionResult gradcheck(const GraphFn& fn, const std::vector<Tensor>& inputs,
                                     const GradcheckOptions& options = {});

}  // namespace tunecnn::testing
