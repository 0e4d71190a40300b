#pragma once
// Plans every conv and pooling layer of a network for one input shape: walks the chain of layers
// (nested Sequentials flattened) to find each layer's input shape, resolves each distinct conv and
// pooling problem through the TunedPlanner (cache, profile or verify; each key at most once),
// then picks every layer's layout with the exact chain DP (layout_plan.h), charging measured
// transform costs, and installs the plans in the Conv2d and Pool2d layers. Under --tune off it
// times nothing: each conv layer gets its thresholds plan (calibration.h), pooling layers their
// default config, and transforms go where layers disagree.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autotune/tuned_planner.h"
#include "core/module.h"

namespace tunecnn {

// One conv layer's decision, for `autotune profile`'s table and `train`'s plan listing.
struct ConvLayerReport {
  std::string layer;   // its name in the model, e.g. "conv1" or "features.3"
  ConvProblem problem;  // the forward problem
  ConvLayerPlan plan;   // as installed
  int candidates = 0;   // timed candidates behind the decision, over the three directions
  double tuned_ms = 0;  // the plan's medians, three directions summed (0 when nothing was timed)
  double default_ms = 0;  // the untuned default's (first applicable NCHW) medians, when timed
  std::size_t workspace_bytes = 0;  // the largest of the directions that run
  bool input_gradient = true;  // false: bwd_data never runs (the layer's input is the data)
};

// One pooling layer's decision.
struct PoolLayerReport {
  std::string layer;
  PoolProblem problem;  // the forward problem
  PoolLayerPlan plan;   // as installed
  double tuned_ms = 0;  // the plan's medians, both directions (0 when nothing was timed)
  double default_ms = 0;  // coarsening 1 (the first config) in NCHW, when timed
};

struct NetworkPlanReport {
  std::vector<ConvLayerReport> layers;
  std::vector<PoolLayerReport> pools;
  // The loss on the network's logits, when they are [N, classes]: its problem and solver.
  std::optional<SoftmaxProblem> softmax;
  std::string softmax_solver;
  double transform_ms = 0;  // estimated transforms per training step under the chosen layouts
  double total_ms = 0;      // the DP's objective: conv and pooling layers plus transforms
};

class NetworkPlanner {
 public:
  explicit NetworkPlanner(std::shared_ptr<TunedPlanner> tuner);

  // Plans `model` for inputs of `input_shape` (batch first) and installs the plans. For
  // LayerUse::inference only the forward pass is tuned and costed.
  NetworkPlanReport plan(Module& model, const Shape& input_shape, LayerUse use = LayerUse::training);

  // Called before each key is profiled: (index from 1, keys to profile, key).
  std::function<void(int, int, const std::string&)> on_profile;

 private:
  std::shared_ptr<TunedPlanner> tuner_;
};

}  // namespace tunecnn
