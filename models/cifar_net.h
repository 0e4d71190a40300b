#pragma once
#include <memory>

#include "core/module.h"
#include "models/registry.h"

namespace tunecnn {

// The cuda-convnet CIFAR-10 net of Li et al. (SC'16) on 3x24x24 crops: conv 5x5 3->64, pool 3/2,
// conv 5x5 64->64, pool 3/2, then TensorFlow's CIFAR-10 classifier: fully connected 2304->384,
// ReLU, 384->192, ReLU, 192->classes. See cifar_net.cpp.
std::shared_ptr<Sequential> build_cifar_net(const ModelOptions& options, Rng& rng);

}  // namespace tunecnn
