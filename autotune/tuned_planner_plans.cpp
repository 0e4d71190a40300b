// From a layer's resolved entries to the plans the layers run: a conv or pooling layer's plan in
// a given layout (the layout DP's choice), a layer planned alone (the ConvPlanner and PoolPlanner
// overrides), the `off` plan without entries, and the softmax solver.
#include <optional>
#include <string>

#include "autotune/calibration.h"
#include "autotune/tuned_planner.h"
#include "autotune/tuned_planner_internal.h"
#include "ops/conv/registry.h"
#include "ops/layout/to_layout.h"
#include "ops/pool/registry.h"
#include "ops/softmax/registry.h"

namespace tunecnn {
using tuned_planner_internal::kDirections;
using tuned_planner_internal::kPoolDirections;
namespace {

PoolPlan& pool_slot(PoolLayerPlan& plan, Direction dir) {
  return dir == Direction::fwd ? plan.fwd : plan.bwd_data;
}

std::optional<ConvPlan> first_applicable_in(const ConvProblem& problem, Layout layout) {
  for (const ConvSolver* solver : conv_solvers(problem.device))
    if (contains_layout(solver->layouts(problem), layout) && solver->applicable(problem, nullptr))
      return ConvPlan{solver, solver->configs(problem).front(), layout};
  return std::nullopt;
}

ConvPlan& slot(ConvLayerPlan& plan, Direction dir) {
  return dir == Direction::fwd ? plan.fwd : dir == Direction::bwd_data ? plan.bwd_data : plan.bwd_weights;
}

}  // namespace

std::optional<ConvLayerPlan> TunedPlanner::plan_in_layout(const ConvProblem& fwd_problem,
                                                          const LayerEntries& entries,
                                                          Layout layout) const {
  ConvLayerPlan plan;
  for (Direction dir : kDirections) {
    const TuningEntry& entry = entries[static_cast<int>(dir)];
    const ConvProblem problem = fwd_problem.with_dir(dir);
    if (entry.key.empty()) {  // never run: any solver of this layout will do
      std::optional<ConvPlan> any = first_applicable_in(problem, layout);
      if (!any) return std::nullopt;
      slot(plan, dir) = *any;
      continue;
    }
    const CandidateResult* best = best_in_layout(entry, conv_subject(problem), layout);
    if (best == nullptr) return std::nullopt;
    slot(plan, dir) = {solver_named(best->solver, problem.device), best->config, layout};
  }
  return plan;
}

ConvLayerPlan TunedPlanner::untimed_plan(const ConvProblem& fwd_problem) {
  std::lock_guard lock(mutex_);
  const DeviceThresholds thresholds = cache_.thresholds(device_id_);
  if (thresholds.ct || thresholds.nt || thresholds.mec_t)
    return threshold_plan(fwd_problem, thresholds, options_.max_workspace_bytes);
  return FirstApplicablePlanner(Layout::NCHW).plan(fwd_problem);
}

ConvLayerPlan TunedPlanner::plan(const ConvProblem& fwd_problem) {
  const std::optional<LayerEntries> entries = layer_entries(fwd_problem);
  flush();  // a layer planned alone is a pass of its own
  if (!entries) return untimed_plan(fwd_problem);
  // A layer alone: NCHW in, its layout, NCHW out (the consumer's cost is the same either way).
  LayoutNode consumer{fwd_problem.dst_shape(), {0, kCannotRun, kCannotRun}};
  const LayoutAssignment chosen =
      choose_layouts({layout_node(fwd_problem, *entries), consumer},
                     [this](const Shape& s, Layout a, Layout b) { return transform_cost(s, a, b); });
  return *plan_in_layout(fwd_problem, *entries, chosen.layouts[0]);
}

std::optional<PoolLayerPlan> TunedPlanner::pool_plan_in_layout(const PoolProblem& fwd_problem,
                                                               const PoolEntries& entries,
                                                               Layout layout) const {
  if (!contains_layout(pool_layouts(fwd_problem), layout)) return std::nullopt;
  // Directions never run (inference) get the default in this layout.
  PoolLayerPlan plan = FirstApplicablePoolPlanner().plan(fwd_problem, layout);
  for (Direction dir : kPoolDirections) {
    const TuningEntry& entry = entries[static_cast<int>(dir)];
    if (entry.key.empty()) continue;
    const CandidateResult* best = best_in_layout(entry, pool_subject(fwd_problem.with_dir(dir)), layout);
    if (best == nullptr) return std::nullopt;
    pool_slot(plan, dir) = {find_pool_solver(best->solver, fwd_problem.device), best->config};
  }
  return plan;
}

PoolLayerPlan TunedPlanner::plan(const PoolProblem& fwd_problem, Layout layout) {
  const std::optional<PoolEntries> entries = pool_entries(fwd_problem);
  flush();  // a layer planned alone is a pass of its own
  if (entries)
    if (std::optional<PoolLayerPlan> planned = pool_plan_in_layout(fwd_problem, *entries, layout))
      return *planned;
  return FirstApplicablePoolPlanner().plan(fwd_problem, layout);
}

// Asked on every training step, so each problem's answer is kept.
const SoftmaxSolver& TunedPlanner::plan(const SoftmaxProblem& problem) {
  std::lock_guard lock(mutex_);
  const std::string key = problem.key() + " " + std::string(to_string(problem.device));
  if (auto it = softmax_plans_.find(key); it != softmax_plans_.end()) return *it->second;
  const Subject subject = softmax_subject(problem);
  const SoftmaxSolver* chosen = &FirstApplicableSoftmaxPlanner().plan(problem);
  if (const TuningEntry* entry = resolve(subject))
    if (const CandidateResult* best = best_in_layout(*entry, subject, Layout::NCHW))
      chosen = find_softmax_solver(best->solver, problem.device);
  flush();
  return *(softmax_plans_[key] = chosen);
}

}  // namespace tunecnn
