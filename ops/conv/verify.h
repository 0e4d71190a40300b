#pragma once
// What checking a solver against the reference needs, shared by the tuner and the tests: random
// arguments, the same arguments in another layout, the output of a direction, and a relative
// comparison.
#include <string>

#include "core/rng.h"
#include "ops/conv/solver.h"

namespace tunecnn {

// Inputs uniform in [-1, 1) drawn in the order src, wei, diff_dst; outputs NaN-filled, so an
// element a solver forgets to write shows up. All NCHW.
ConvArgs random_conv_args(const ConvProblem& problem, Rng& rng);
// Activations converted to `layout` (reference transform); weights stay [oc, ic/g, kh, kw].
ConvArgs conv_args_in_layout(const ConvArgs& nchw, Layout layout);
// The same arguments on `device`: copies of every defined tensor (arguments are made on the CPU,
// where the random fill and the reference transform run, and then moved).
ConvArgs conv_args_on(const ConvArgs& args, Device device);
// The tensor a direction writes.
const Tensor& conv_output(const ConvArgs& args, Direction dir);
// Empty when max |got - want| <= tol * max |want| (rounding grows with the sums' magnitude);
// otherwise the first element that is off.
std::string relative_mismatch(const Tensor& got, const Tensor& want, double tol);

}  // namespace tunecnn
