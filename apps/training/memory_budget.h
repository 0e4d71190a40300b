#pragma once
// Planning a training step within a memory budget (train and bench memory --memory-budget,
// issue 29). The step memory predictor (step_memory.h) says what the planned step will hold at
// its peak; while that is over the budget, the planner lowers what the peak is made of, the
// cheapest way first:
// - a conv call's workspace at the peak: the layers are planned again with every conv workspace
//   at most what leaves room (the tuner's next fastest candidates within it; the layout DP
//   weighs them as before);
// - activations at the peak: BatchNorm(+ReLU) outputs are recomputed in backward instead of kept
//   and so are depthwise conv outputs (--recompute-activations).
// Then the CPU allocator serves the step from one region of what the budget leaves beside the
// parameters (Allocator::set_cache_limit), so that what it holds stays within the budget without
// giving blocks back and making them again.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "apps/training/step_memory.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"

namespace tunecnn {

struct MemoryBudgetFit {
  StepPeak predicted;  // of the plan as installed
  bool recomputed_activations = false;
  std::size_t workspace_cap = SIZE_MAX;  // the conv workspace limit it planned with; SIZE_MAX: none
  // "predicted peak 189.3 MiB within 200.0 MiB (activations recomputed; conv workspaces at most 1.0 MiB)"
  std::string describe(std::size_t budget) const;
};

struct MemoryBudgetPlanning {
  std::function<StepPeak()> predict;  // the peak of the step as now planned
  // Plans the layers again with every conv workspace at most this many bytes; empty when the
  // layers cannot be planned again (the workspace is then left as it is).
  std::function<void(std::size_t)> replan;
};

// Lowers the planned step's peak until it fits `budget`, as above, and gives `device`'s allocator
// its region (on the GPU, of device memory). Leaves recompute_activations() on when it chose it.
// Throws Error when nothing fits, saying by how much it is over, what the peak holds and the
// layers that keep the most.
MemoryBudgetFit fit_memory_budget(std::size_t budget, const MemoryBudgetPlanning& planning,
                                  Device device = Device::cpu);

// The planning of `model`, planned by `tuner` at `input` (the batch first), for
// fit_memory_budget: the step predicted from `query`, and the layers planned again at `input` by
// the tuner under each workspace cap (never above `max_workspace`, the user's own limit).
// `replanned`, when given, sees each new plan's report.
MemoryBudgetPlanning network_budget_planning(const StepMemoryQuery& query, Module& model, const Shape& input,
                                             std::shared_ptr<TunedPlanner> tuner, std::size_t max_workspace = SIZE_MAX,
                                             std::function<void(const NetworkPlanReport&)> replanned = {});

// The query for model `name` (a built-in or an ONNX file, as build_model takes it), planned in
// `model`: its copies are built afresh with their own random weights and dropout stream.
StepMemoryQuery model_step_query(const std::string& name, Module& model, const Shape& input, int batch, int classes,
                                 const SgdOptions& sgd);

// The input batches `train` holds on `device` beside its step: on the CPU the loader's queue full,
// one more assembled and waiting for room, and the step's own; on the GPU the step's upload alone
// (the loader's batches are host memory). For StepMemoryQuery::batches_in_flight.
int train_batches_in_flight(Device device);

// "189.3 MiB"
std::string mebibytes(std::size_t bytes);

}  // namespace tunecnn
