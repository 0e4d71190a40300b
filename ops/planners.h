#pragma once
// The planners a network's layers and its loss ask how to run, handed explicitly to whatever
// builds or runs the network (build_model through ModelOptions, the trainer, autotune, bench).
// There is no process-wide planner: two models in one process, or two tests, never see each
// other's, and nothing has to be restored afterwards.
#include <memory>

#include "ops/conv/plan.h"
#include "ops/pool/plan.h"
#include "ops/softmax/plan.h"

namespace tunecnn {

class Module;

struct Planners {
  // The untuned defaults: the first applicable solver of each family in registry order.
  std::shared_ptr<ConvPlanner> conv = std::make_shared<FirstApplicablePlanner>();
  std::shared_ptr<PoolPlanner> pool = std::make_shared<FirstApplicablePoolPlanner>();
  std::shared_ptr<SoftmaxPlanner> softmax = std::make_shared<FirstApplicableSoftmaxPlanner>();

  // One object planning all three families (the autotuner's TunedPlanner).
  template <class Planner>
  static Planners all(const std::shared_ptr<Planner>& planner) {
    return {planner, planner, planner};
  }
};

// Hands the conv and pooling planners to every Conv2d and Pool2d in `model`, nested Sequentials
// included; plans the layers made with their previous planners are forgotten.
void use_planners(Module& model, const Planners& planners);

}  // namespace tunecnn
