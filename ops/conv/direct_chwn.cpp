// SCAFFOLD: replaced by the real solver; until then it is never applicable.
#include "ops/conv/direct_chwn.h"

#include "ops/conv/args.h"

namespace tunecnn {

bool DirectChwnSolver::applicable(const ConvProblem& problem, std::string* why) const {
  if (!conv_problem_well_formed(problem, why)) return false;
  return reject(why, "not implemented yet");
}

std::size_t DirectChwnSolver::workspace_bytes(const ConvProblem&, const TuneConfig&) const { return 0; }

void DirectChwnSolver::run(const ConvProblem& p, const TuneConfig&, const ConvArgs&, Workspace) const {
  TUNECNN_FAIL("direct_chwn is not implemented yet: ", p.key());
}

}  // namespace tunecnn
