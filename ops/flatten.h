#pragma once
// [B, d1, d2, ...] -> [B, d1*d2*...]: a view of the same storage, for the step from
// convolutional features to fully connected layers.
#include "core/module.h"

namespace tunecnn {

Variable flatten(const Variable& x);

class Flatten : public Module {
 public:
  Variable forward(const Variable& input) override { return flatten(input); }
  std::string describe() const override { return "Flatten"; }
};

}  // namespace tunecnn
