#include "autotune/threshold_plan.h"

#include <algorithm>
#include <optional>

#include "ops/conv/registry.h"

namespace tunecnn {
namespace {

constexpr Direction kDirections[] = {Direction::fwd, Direction::bwd_data, Direction::bwd_weights};

std::vector<const ConvSolver*> solvers_where(Device device, bool (*wanted)(const UntunedRoles&)) {
  std::vector<const ConvSolver*> out;
  for (const ConvSolver* solver : conv_solvers(device))
    if (wanted(solver->untuned_roles())) out.push_back(solver);
  return out;
}

// The configs with "T" set to the calibrated mec_t (the solver's own default stays without one).
std::vector<TuneConfig> calibrated_configs(const ConvSolver& solver, const ConvProblem& p,
                                           const DeviceThresholds& thresholds) {
  std::vector<TuneConfig> configs = solver.configs(p);
  if (!thresholds.mec_t) return configs;
  for (TuneConfig& config : configs)
    for (auto& [name, value] : config.values)
      if (name == "T") value = *thresholds.mec_t;
  return configs;
}

// The first of `solvers` (each with its configs in order) that runs `p` within the budget.
std::optional<ConvPlan> first_fitting(const ConvProblem& p, Layout layout,
                                      const std::vector<const ConvSolver*>& solvers,
                                      const DeviceThresholds& thresholds, std::size_t budget) {
  for (const ConvSolver* solver : solvers) {
    if (!solver->applicable(p, nullptr)) continue;
    for (const TuneConfig& config : calibrated_configs(*solver, p, thresholds))
      if (solver->workspace_bytes(p, config) <= budget) return ConvPlan{solver, config, layout};
  }
  return std::nullopt;
}

ConvPlan& slot(ConvLayerPlan& plan, Direction dir) {
  if (dir == Direction::fwd) return plan.fwd;
  return dir == Direction::bwd_data ? plan.bwd_data : plan.bwd_weights;
}

// All three directions from `solvers` in one layout, or nullopt when a direction has none.
std::optional<ConvLayerPlan> layer_from(const ConvProblem& fwd, Layout layout,
                                        const std::vector<const ConvSolver*>& solvers,
                                        const DeviceThresholds& thresholds, std::size_t budget) {
  ConvLayerPlan plan;
  for (Direction dir : kDirections) {
    const auto chosen = first_fitting(fwd.with_dir(dir), layout, solvers, thresholds, budget);
    if (!chosen) return std::nullopt;
    slot(plan, dir) = *chosen;
  }
  return plan;
}

std::optional<ConvLayerPlan> low_memory_plan(const ConvProblem& fwd, const DeviceThresholds& thresholds,
                                             std::size_t budget) {
  for (const ConvSolver* solver : solvers_where(fwd.device, [](const UntunedRoles& r) { return r.low_memory; })) {
    const std::vector<Layout> layouts = solver->layouts(fwd);
    if (layouts.empty()) continue;
    if (auto plan = layer_from(fwd, layouts.front(), {solver}, thresholds, budget)) return plan;
  }
  return std::nullopt;
}

}  // namespace

std::vector<const ConvSolver*> untuned_nchw_chain(Device device) {
  std::vector<const ConvSolver*> chain =
      solvers_where(device, [](const UntunedRoles& r) { return r.nchw_order > 0; });
  std::stable_sort(chain.begin(), chain.end(), [](const ConvSolver* a, const ConvSolver* b) {
    return a->untuned_roles().nchw_order < b->untuned_roles().nchw_order;
  });
  return chain;
}

std::vector<const ConvSolver*> layout_baseline_solvers(Device device) {
  return solvers_where(device, [](const UntunedRoles& r) { return r.layout_baseline; });
}

const ConvSolver* chwn_threshold_solver(Device device) {
  const std::vector<const ConvSolver*> found =
      solvers_where(device, [](const UntunedRoles& r) { return r.chwn; });
  return found.empty() ? nullptr : found.front();
}

Layout threshold_layout(const ConvProblem& fwd, const DeviceThresholds& thresholds) {
  if (chwn_threshold_solver(fwd.device) == nullptr) return Layout::NCHW;
  if (thresholds.ct && fwd.ic < *thresholds.ct) return Layout::CHWN;
  if (thresholds.nt && fwd.mb >= *thresholds.nt) return Layout::CHWN;
  return Layout::NCHW;
}

ConvLayerPlan threshold_plan(const ConvProblem& fwd, const DeviceThresholds& thresholds,
                             std::size_t max_workspace_bytes) {
  const std::size_t budget = max_workspace_bytes;
  std::optional<ConvLayerPlan> plan;
  if (threshold_layout(fwd, thresholds) == Layout::CHWN)
    plan = layer_from(fwd, Layout::CHWN, {chwn_threshold_solver(fwd.device)}, thresholds, budget);
  std::vector<const ConvSolver*> chain = untuned_nchw_chain(fwd.device);
  if (!plan) plan = layer_from(fwd, Layout::NCHW, chain, thresholds, budget);
  if (!plan) plan = low_memory_plan(fwd, thresholds, budget);
  if (!plan && !conv_solvers(fwd.device).empty()) {
    chain.push_back(&direct_conv_solver(fwd.device));
    plan = layer_from(fwd, Layout::NCHW, chain, thresholds, budget);
  }
  TUNECNN_CHECK(plan.has_value(), "no ", to_string(fwd.device), " conv solver runs ", fwd.key(),
                " within ", max_workspace_bytes, " workspace bytes");
  plan->validate(fwd);
  return *plan;
}

}  // namespace tunecnn
