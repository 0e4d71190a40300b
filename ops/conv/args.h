#pragma once
// Checks every CPU conv solver shares: the problem is well formed, and the tensors of a call are
// the ones its direction reads and writes, in the solver's layout.
#include "ops/conv/solver.h"

namespace tunecnn {

// Guard clauses for any solver: sizes positive, groups divide both channel counts, the kernel
// fits the padded input.
bool conv_problem_well_formed(const ConvProblem& problem, std::string* why);
// Throws unless the tensors the problem's direction reads and writes are defined, on the
// problem's device, of its dtype and logical shapes, and stored in `layout`. Weights are always
// [oc, ic/g, kh, kw] row-major (NCHW-tagged), whatever the activations' layout.
void check_conv_args(const ConvProblem& problem, const ConvArgs& args, Layout layout);
// ConvArgs holds its outputs by const reference; after check_conv_args they are known writable.
template <class T>
T* writable(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

}  // namespace tunecnn
