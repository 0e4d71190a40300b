#pragma once
// The reference convolution: plain loops over NCHW tensors, every direction, any geometry.
#include "ops/conv/solver.h"

namespace tunecnn {

class DirectConvSolver final : public ConvSolver {
 public:
  std::string_view name() const override { return "direct"; }
  bool applicable(const ConvProblem& problem, std::string* why) const override;
  void run(const ConvProblem& problem, const TuneConfig& config, const ConvArgs& args,
           Workspace workspace) const override;
};

// Guard clauses shared by the NCHW CPU solvers: the problem is well formed (groups divide the
// channels, the kernel fits the padded input).
bool nchw_problem_applicable(const ConvProblem& problem, std::string* why);
// Throws unless the tensors the problem's direction reads and writes are defined, CPU, NCHW,
// of the problem's dtype and shapes.
void check_nchw_args(const ConvProblem& problem, const ConvArgs& args);
// ConvArgs holds its outputs by const reference; after check_nchw_args they are known writable.
template <class T>
T* writable(const Tensor& t) {
  return static_cast<T*>(t.raw_data());
}

}  // namespace tunecnn
