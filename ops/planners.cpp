#include "ops/planners.h"

#include "core/module.h"
#include "ops/conv/conv2d.h"
#include "ops/pool/pool2d.h"

namespace tunecnn {

void use_planners(Module& model, const Planners& planners) {
  if (auto* conv = dynamic_cast<Conv2d*>(&model)) conv->set_planner(planners.conv);
  if (auto* pool = dynamic_cast<Pool2d*>(&model)) pool->set_planner(planners.pool);
  for (const auto& [name, child] : model.children()) use_planners(*child, planners);
}

}  // namespace tunecnn
