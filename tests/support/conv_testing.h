#pragma once
// Shared by the conv suites: the shapes every solver is tested on, random arguments, running a
// solver in any of its layouts, and a relative comparison.
#include <gtest/gtest.h>

#include <ostream>
#include <vector>

#include "ops/conv/plan.h"
#include "ops/conv/verify.h"

namespace tunecnn::testing {

struct ConvShape {
  std::string name;
  ConvProblem problem;  // forward, f32
  ConvProblem with(Direction dir, DType dt) const {
    ConvProblem p = problem.with_dir(dir);
    p.dt = dt;
    return p;
  }
};
inline void PrintTo(const ConvShape& shape, std::ostream* os) {
  *os << shape.name;
}

// Hand-written edge cases: batch 1, odd and non-square sizes, padding beyond the kernel
// radius, strides, 1x1 kernels, groups and depthwise.
const std::vector<ConvShape>& edge_case_shapes();
// Every layer of models/conv_layers.txt at batch 2, scaled down (spatial size first, then
// channels; kernel, stride and padding kept) until the reference runs in a few milliseconds.
// Layers that scale to the same problem appear once, under the first name.
const std::vector<ConvShape>& model_layer_shapes();
// The scaling rule itself: halves sizes until problem.macs() <= max_macs.
ConvProblem scaled_down(ConvProblem problem, std::int64_t max_macs);

inline constexpr Direction kAllDirections[] = {Direction::fwd, Direction::bwd_data,
                                               Direction::bwd_weights};

// Random inputs, NaN-filled outputs (so an element a solver forgets to write shows up), all
// NCHW.
ConvArgs make_conv_args(const ConvProblem& p, std::uint64_t seed);
// Converts args to `layout`, runs the plan and returns the output converted back to NCHW.
Tensor run_in_layout(const ConvPlan& plan, const ConvProblem& p, const ConvArgs& nchw_args,
                     Layout layout);
// The same problem on another device.
ConvProblem on_device(ConvProblem p, Device device);
// Max |got - want| <= tol * max |want|: rounding errors grow with the sums' magnitude.
::testing::AssertionResult close_relative(const Tensor& got, const Tensor& want, double tol);

}  // namespace tunecnn::testing
