// SCAFFOLD: replaced by the real solver; until then it is never applicable.
#include "ops/conv/winograd_f2x3.h"

#include "ops/conv/args.h"

namespace tunecnn {

bool WinogradF2x3Solver::applicable(const ConvProblem& problem, std::string* why) const {
  if (!conv_problem_well_formed(problem, why)) return false;
  return reject(why, "not implemented yet");
}

std::size_t WinogradF2x3Solver::workspace_bytes(const ConvProblem&, const TuneConfig&) const { return 0; }

void WinogradF2x3Solver::run(const ConvProblem& p, const TuneConfig&, const ConvArgs&, Workspace) const {
  TUNECNN_FAIL("winograd_f2x3 is not implemented yet: ", p.key());
}

}  // namespace tunecnn
