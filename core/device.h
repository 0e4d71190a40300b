#pragma once
// Where an operation runs is decided by where its tensors live. Each op that has a GPU version
// starts with TUNECNN_ON_CUDA(tensor, cuda::the_op(args...)): in a CUDA build that returns the GPU
// version's result for a tensor on the GPU; without the CUDA backend it refuses GPU tensors with
// a message saying how to get one. The GPU versions are declared in the op's header, in namespace
// tunecnn::cuda, and defined in its .cu file, which only CUDA builds compile.
#include <string>

#include "core/error.h"
#include "core/types.h"

#ifdef TUNECNN_HAVE_CUDA
#define TUNECNN_ON_CUDA(tensor, call) \
  if ((tensor).device() == ::tunecnn::Device::cuda) return call
#else
#define TUNECNN_ON_CUDA(tensor, call)                                                       \
  TUNECNN_CHECK((tensor).device() == ::tunecnn::Device::cpu, (tensor).describe(),          \
                ": this build of tunecnn has no CUDA backend; reconfigure with -DTUNECNN_CUDA=ON")
#endif

namespace tunecnn {

// Every tensor of one call must live on the same device.
template <class First, class... Rest>
void check_same_device(const char* op, const First& first, const Rest&... rest) {
  if (((rest.device() == first.device()) && ...)) return;
  std::string list = first.describe();
  ((list += ", " + rest.describe()), ...);
  TUNECNN_FAIL(op, ": tensors on different devices: ", list);
}

}  // namespace tunecnn
