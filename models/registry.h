#pragma once
// Models are plain builders returning a Sequential, looked up by name.
#include <memory>
#include <string>
#include <vector>

#include "core/module.h"
#include "core/rng.h"

namespace tunecnn {

struct ModelOptions {
  Shape input_shape{1, 28, 28};  // C, H, W of one example
  int num_classes = 10;
};

std::shared_ptr<Sequential> build_model(const std::string& name, const ModelOptions& options, Rng& rng);
std::vector<std::string> model_names();

}  // namespace tunecnn
