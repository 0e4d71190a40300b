#include "apps/training/memory_budget.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "datasets/data_loader.h"
#include "core/rng.h"
#include "core/variable.h"
#include "models/registry.h"

namespace tunecnn {
namespace {

std::size_t at_peak(const StepPeak& peak, MemoryUse use) { return peak.by_use[static_cast<int>(use)]; }

std::string what_the_peak_holds(const StepPeak& peak) {
  std::string text;
  for (std::size_t use = 0; use < kMemoryUses; ++use)
    if (peak.by_use[use] > 0)
      text += (text.empty() ? "" : ", ") + std::string(to_string(static_cast<MemoryUse>(use))) + " " +
              mebibytes(peak.by_use[use]);
  return text;
}

std::string layers_keeping_most(const StepPeak& peak) {
  std::string text;
  const std::size_t shown = std::min<std::size_t>(peak.layers_keeping.size(), 5);
  for (std::size_t i = 0; i < shown; ++i)
    text += (i ? ", " : "") + peak.layers_keeping[i].first + " " + mebibytes(peak.layers_keeping[i].second);
  return text.empty() ? "none named" : text;
}

// What planning changed to lower the peak, joined by `separator`; empty when nothing.
std::string changes(const MemoryBudgetFit& fit, const char* separator) {
  std::string text = fit.recomputed_activations ? "activations recomputed" : "";
  if (fit.workspace_cap != SIZE_MAX)
    text += (text.empty() ? "" : separator) + std::string("conv workspaces at most ") + mebibytes(fit.workspace_cap);
  return text;
}

// What was tried, for the message when nothing fits.
std::string what_was_tried(const MemoryBudgetFit& fit) {
  const std::string tried = changes(fit, " and ");
  return tried.empty() ? "as planned" : "with " + tried;
}

[[noreturn]] void fail(std::size_t budget, const MemoryBudgetFit& fit) {
  const StepPeak& peak = fit.predicted;
  TUNECNN_FAIL("--memory-budget ", mebibytes(budget), " is too small: the step's predicted peak is ",
               mebibytes(peak.bytes), " ", what_was_tried(fit), ", ", mebibytes(peak.bytes - budget),
               " over (", peak.in_backward ? "in backward" : "in the forward pass", "; it holds ",
               what_the_peak_holds(peak), "). The layers keeping the most then: ", layers_keeping_most(peak),
               ". A smaller batch or a larger budget would fit.");
}

}  // namespace

MemoryBudgetPlanning network_budget_planning(const StepMemoryQuery& query, Module& model, const Shape& input,
                                             std::shared_ptr<TunedPlanner> tuner, std::size_t max_workspace,
                                             std::function<void(const NetworkPlanReport&)> replanned) {
  MemoryBudgetPlanning planning{[query] { return predict_step_peak(query); }, {}};
  if (tuner)
    planning.replan = [&model, input, tuner, max_workspace, replanned](std::size_t cap) {
      tuner->set_max_workspace(std::min(cap, max_workspace));
      const NetworkPlanReport report = NetworkPlanner(tuner).plan(model, input);
      if (replanned) replanned(report);
    };
  return planning;
}

StepMemoryQuery model_step_query(const std::string& name, Module& model, const Shape& input, int batch, int classes,
                                 const SgdOptions& sgd) {
  StepMemoryQuery query;
  query.make_model = [=] {
    Rng rng(1);
    ModelOptions options;
    options.input_shape = input;
    options.num_classes = classes;
    return std::shared_ptr<Module>(build_model(name, options, rng));
  };
  query.model = &model;
  query.input = input;
  query.batch = batch;
  query.classes = classes;
  query.sgd = sgd;
  return query;
}

int train_batches_in_flight(Device device) {
  return device == Device::cpu ? DataLoaderOptions{}.prefetch + 2 : 1;
}

std::string mebibytes(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", bytes / 1048576.0);
  return text;
}

std::string MemoryBudgetFit::describe(std::size_t budget) const {
  const std::string how = changes(*this, "; ");
  return "predicted peak " + mebibytes(predicted.bytes) + " within " + mebibytes(budget) +
         (how.empty() ? " as planned" : " (" + how + ")");
}

MemoryBudgetFit fit_memory_budget(std::size_t budget, const MemoryBudgetPlanning& planning, Device device) {
  MemoryBudgetFit fit;
  fit.recomputed_activations = recompute_activations();
  fit.predicted = planning.predict();
  const auto over = [&] { return fit.predicted.bytes > budget ? fit.predicted.bytes - budget : 0; };
  // Recomputing costs one pass per BatchNorm; kept only where it lowers the peak (a network
  // without BatchNorm has nothing to recompute).
  if (over() > 0 && !fit.recomputed_activations && at_peak(fit.predicted, MemoryUse::activations) > 0) {
    set_recompute_activations(true);
    const StepPeak recomputed = planning.predict();
    if (recomputed.bytes < fit.predicted.bytes) {
      fit.recomputed_activations = true;
      fit.predicted = recomputed;
    } else {
      set_recompute_activations(false);
    }
  }
  // Then, while the peak is in a conv call, a lower workspace limit: each time what leaves that
  // call room, until the limit would not go lower.
  while (over() > 0 && planning.replan) {
    const std::size_t workspace = at_peak(fit.predicted, MemoryUse::workspaces);
    const std::size_t cap = workspace > over() ? workspace - over() : 0;
    if (workspace == 0 || cap >= fit.workspace_cap) break;
    fit.workspace_cap = cap;
    planning.replan(cap);
    fit.predicted = planning.predict();
  }
  if (over() > 0) fail(budget, fit);
  // The optimizer's state its first step makes lives for good, outside the region.
  Allocator& allocator = allocator_for(device);
  const std::size_t state_live = allocator.stats().current_by_use[static_cast<int>(MemoryUse::optimizer_state)];
  const std::size_t state_to_come = at_peak(fit.predicted, MemoryUse::optimizer_state) - std::min(
      at_peak(fit.predicted, MemoryUse::optimizer_state), state_live);
  allocator.set_cache_policy(CachePolicy::bounded);
  allocator.set_cache_limit(budget, state_to_come);
  return fit;
}

}  // namespace tunecnn
