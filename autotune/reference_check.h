#pragma once
// How the tuners check a candidate against a reference: ReferenceCheck, for the families whose
// candidates run in a layout (conv, pool), and what_went_wrong, the part softmax's own check
// (a double-precision reference, no layouts) shares with it. Internal to autotune/.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>

#include "core/rng.h"
#include "core/tensor.h"
#include "ops/conv/verify.h"
#include "ops/layout/reference.h"

namespace tunecnn {

// What went wrong in `check` (a callable returning the mismatch, empty when none): its answer, or
// the Error it threw. A candidate that throws on the problem is wrong, not fatal to the search.
template <class Check>
std::string what_went_wrong(const Check& check) {
  try {
    return check();
  } catch (const Error& e) {
    return std::string("it threw: ") + e.what();
  }
}

// Checks candidates (solver, config, layout) against the family's reference output, computed
// once per problem. The reference is the CPU's reference solver whatever the problem's device; a
// GPU candidate runs on copies of the same arguments, and its output comes back to be compared.
// The family's traits (ConvFamily in conv_tuner.cpp, PoolFamily in pool_tuner.cpp) supply:
//   Problem, Solver, Args                       the family's types
//   random_args(problem, rng)                   inputs random, outputs NaN, NCHW, on the CPU
//   in_layout(args, layout, device)             the same arguments in `layout`, on `device`
//   output(args, dir)                           the tensor a direction writes
//   reference_solver()                          the CPU reference
//   run_plan(solver, config, layout, problem, args)   one call through the family's plan
//   tolerance(dtype)                            relative_mismatch's, for that dtype
template <class Family>
class ReferenceCheck {
 public:
  using Problem = typename Family::Problem;
  using Solver = typename Family::Solver;
  using Args = typename Family::Args;

  ReferenceCheck(const Problem& problem, std::uint64_t seed) : problem_(problem) {
    Rng rng(seed);
    Problem on_cpu = problem_;
    on_cpu.device = Device::cpu;
    args_ = Family::random_args(on_cpu, rng);
    Args ref = Family::in_layout(args_, Layout::NCHW, Device::cpu);
    Family::run_plan(Family::reference_solver(), TuneConfig{}, Layout::NCHW, on_cpu, ref);
    reference_ = Family::output(ref, problem_.dir);
  }
  const Problem& problem() const { return problem_; }

  // Empty when the candidate agrees with the reference; otherwise what went wrong.
  std::string check(const Solver& solver, const TuneConfig& config, Layout layout) {
    return what_went_wrong([&] {
      Args& args = args_in(layout);
      Tensor output = Family::output(args, problem_.dir);
      output.fill(std::nan(""));  // an element the candidate forgets to write shows up
      Family::run_plan(solver, config, layout, problem_, args);
      const Tensor got = Family::output(args, problem_.dir).to(Device::cpu);
      return relative_mismatch(got, reference_in(got.layout()), Family::tolerance(problem_.dt));
    });
  }

 private:
  // The arguments in each layout, converted once: every config of every solver reuses them.
  Args& args_in(Layout layout) {
    auto it = in_layout_.find(layout);
    if (it == in_layout_.end())
      it = in_layout_.emplace(layout, Family::in_layout(args_, layout, problem_.device)).first;
    return it->second;
  }

  // The reference output in the candidate's layout, converted once per layout: comparing in the
  // candidate's memory order costs no conversion per candidate.
  const Tensor& reference_in(Layout layout) {
    auto it = reference_in_.find(layout);
    if (it == reference_in_.end())
      it = reference_in_.emplace(layout, convert_layout_reference(reference_, layout)).first;
    return it->second;
  }

  Problem problem_;
  Args args_;  // NCHW, on the CPU
  std::map<Layout, Args> in_layout_;
  Tensor reference_;  // NCHW
  std::map<Layout, Tensor> reference_in_;
};

}  // namespace tunecnn
