// SCAFFOLD: replaced by the real solver; until then it is never applicable.
#include "ops/conv/mec.h"

#include "ops/conv/args.h"

namespace tunecnn {

bool MecSolver::applicable(const ConvProblem& problem, std::string* why) const {
  if (!conv_problem_well_formed(problem, why)) return false;
  return reject(why, "not implemented yet");
}

std::vector<TuneConfig> MecSolver::configs(const ConvProblem&) const { return {TuneConfig{}}; }

std::size_t MecSolver::workspace_bytes(const ConvProblem&, const TuneConfig&) const { return 0; }

void MecSolver::run(const ConvProblem& p, const TuneConfig&, const ConvArgs&, Workspace) const {
  TUNECNN_FAIL("mec is not implemented yet: ", p.key());
}

}  // namespace tunecnn
