#pragma once
// The one check every program makes before running on a device: `train`, `bench` and `autotune`
// refuse the GPU in the same words, before any work, when it cannot run here.
#include <string>

#include "core/types.h"

namespace tunecnn {

// Returns for the CPU. For the GPU, throws Error (exit status 1) when this build has no CUDA
// backend or this machine no usable GPU (cuda_unavailable_reason() says why); `option` is the
// command-line option that asked for it, named first in the message ("--device cuda: ...").
void require_device(Device device, const std::string& option = "--device");

}  // namespace tunecnn
