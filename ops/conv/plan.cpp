#include "ops/conv/plan.h"

#include <algorithm>
#include <any>
#include <optional>

#include "core/allocation_trace.h"
#include "core/allocator.h"
#include "ops/conv/registry.h"

namespace tunecnn {
namespace {
bool runs_in(const ConvSolver& solver, const ConvProblem& problem, Layout layout) {
  const std::vector<Layout> layouts = solver.layouts(problem);
  return std::find(layouts.begin(), layouts.end(), layout) != layouts.end();
}

ConvPlan first_applicable(const ConvProblem& problem, Layout layout) {
  for (const ConvSolver* solver : conv_solvers(problem.device))
    if (runs_in(*solver, problem, layout) && solver->applicable(problem, nullptr))
      return {solver, solver->configs(problem).front(), layout};
  TUNECNN_FAIL("no ", to_string(problem.device), " conv solver is applicable to ", problem.key(),
               " in ", to_string(layout));
}

bool listed_for(const ConvSolver& solver, Device device) {
  const std::span<const ConvSolver* const> solvers = conv_solvers(device);
  return std::find(solvers.begin(), solvers.end(), &solver) != solvers.end();
}

// The registry is the device gate: CPU solvers do not look at problem.device, so a registered
// solver of one device must not run a problem of the other. Solvers in neither list (tests'
// fakes) pass.
void check_solver_device(const ConvSolver& solver, const ConvProblem& problem) {
  const Device other = problem.device == Device::cpu ? Device::cuda : Device::cpu;
  TUNECNN_CHECK(listed_for(solver, problem.device) || !listed_for(solver, other), "solver ",
                solver.name(), " is a ", to_string(other), " solver, but ", problem.key(),
                " runs on ", to_string(problem.device), " (solvers there: ",
                conv_solver_names(problem.device), ")");
}
}  // namespace

const ConvPlan& ConvLayerPlan::for_direction(Direction dir) const {
  switch (dir) {
    case Direction::fwd: return fwd;
    case Direction::bwd_data: return bwd_data;
    case Direction::bwd_weights: return bwd_weights;
  }
  return fwd;
}

void ConvLayerPlan::validate(const ConvProblem& fwd_problem) const {
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
    const ConvPlan& p = for_direction(dir);
    const ConvProblem problem = fwd_problem.with_dir(dir);
    TUNECNN_CHECK(p.solver != nullptr, "conv plan without a ", to_string(dir), " solver for ",
                  problem.key());
    TUNECNN_CHECK(p.layout == layout(), "conv plan for ", fwd_problem.key(), " mixes layouts: fwd ",
                  to_string(layout()), ", ", to_string(dir), " ", to_string(p.layout));
    TUNECNN_CHECK(runs_in(*p.solver, problem, p.layout), "solver ", p.solver->name(),
                  " does not run in ", to_string(p.layout), " (", problem.key(), ")");
  }
}

ConvLayerPlan FirstApplicablePlanner::plan(const ConvProblem& fwd_problem) {
  return {first_applicable(fwd_problem.with_dir(Direction::fwd), layout_),
          first_applicable(fwd_problem.with_dir(Direction::bwd_data), layout_),
          first_applicable(fwd_problem.with_dir(Direction::bwd_weights), layout_)};
}

void run_conv(const ConvPlan& plan, const ConvProblem& problem, const ConvArgs& args) {
  TUNECNN_CHECK(plan.solver != nullptr, "conv plan without a solver for ", problem.key());
  check_solver_device(*plan.solver, problem);
  std::string why;
  TUNECNN_CHECK(plan.solver->applicable(problem, &why), "solver ", plan.solver->name(),
                " is not applicable to ", problem.key(), ": ", why);
  const std::size_t bytes = plan.solver->workspace_bytes(problem, plan.config);
  // A recorded step (apps/training/step_memory.h) replays this call with another plan's workspace.
  std::optional<TraceMark> traced;
  if (active_allocation_trace() != nullptr) traced.emplace(std::any(problem));
  // Always one block, on the problem's device, even for 0 bytes (the workspace tests count it).
  const MemoryUseScope counted_as(MemoryUse::workspaces);
  Storage workspace(bytes, problem.device);
  plan.solver->run(problem, plan.config, args, Workspace{bytes ? workspace.data() : nullptr, bytes});
}

}  // namespace tunecnn
