#pragma once
#include <memory>

#include "core/module.h"
#include "models/registry.h"

namespace tunecnn {

// AlexNet (Krizhevsky et al. 2012) as the original single tower on 3x227x227 input, with local
// response normalisation after conv1 and conv2. See alexnet.cpp.
std::shared_ptr<Sequential> build_alexnet(const ModelOptions& options, Rng& rng);

}  // namespace tunecnn
