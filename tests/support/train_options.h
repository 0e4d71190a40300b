#pragma once
// Training options the suites share.
#include <cstdint>
#include <string>

#include "apps/training/trainer.h"

namespace tunecnn::testing {

// One epoch of `model` on synthetic data (the model's input shape, learnable classes).
inline TrainOptions synthetic_options(const std::string& model, std::int64_t train_limit, std::int64_t test_limit) {
  TrainOptions o;
  o.model = model;
  o.data = "synthetic";
  o.epochs = 1;
  o.train_limit = train_limit;
  o.test_limit = test_limit;
  return o;
}

}  // namespace tunecnn::testing
