// require_device: the shared "no GPU here" message of train, bench and autotune.
#include "apps/common/device_check.h"

#include "core/cuda_runtime.h"
#include "core/error.h"

namespace tunecnn {

void require_device(Device device, const std::string& option) {
  if (device == Device::cpu) return;
  TUNECNN_CHECK(cuda_built(), option, " cuda: this build has no CUDA: rebuild with -DTUNECNN_CUDA=ON "
                "(needs the CUDA toolkit)");
  TUNECNN_CHECK(cuda_device_count() > 0, option, " cuda: no usable GPU: ", cuda_unavailable_reason());
}

}  // namespace tunecnn
