#pragma once
#include <memory>

#include "core/module.h"
#include "models/registry.h"

namespace tunecnn {

// AlexNet (Krizhevsky et al. 2012) as one tower on 3x227x227 input, without LRN. See alexnet.cpp.
std::shared_ptr<Sequential> build_alexnet(const ModelOptions& options, Rng& rng);

}  // namespace tunecnn
