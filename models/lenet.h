#pragma once
#include <memory>

#include "core/module.h"
#include "models/registry.h"

namespace tunecnn {

// LeNet with the layer shapes of Li et al. (SC'16) Table 1.
std::shared_ptr<Sequential> build_lenet(const ModelOptions& options, Rng& rng);

}  // namespace tunecnn
