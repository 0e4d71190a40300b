#include "autotune/device_clock.h"

#include <chrono>
#include <memory>

#include "core/cuda_runtime.h"
#include "core/error.h"

#ifdef TUNECNN_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace tunecnn {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#ifdef TUNECNN_HAVE_CUDA
// Consecutive intervals summed in double: cudaEventElapsedTime's float milliseconds since a
// fixed origin would lose microseconds after a few minutes.
class CudaEventClock {
 public:
  CudaEventClock() {
    TUNECNN_CUDA_CHECK(cudaEventCreate(&previous_));
    TUNECNN_CUDA_CHECK(cudaEventCreate(&now_));
    TUNECNN_CUDA_CHECK(cudaEventRecord(previous_, cuda_stream()));
  }
  ~CudaEventClock() {
    cudaEventDestroy(previous_);
    cudaEventDestroy(now_);
  }
  CudaEventClock(const CudaEventClock&) = delete;
  CudaEventClock& operator=(const CudaEventClock&) = delete;

  double read() {
    TUNECNN_CUDA_CHECK(cudaEventRecord(now_, cuda_stream()));
    TUNECNN_CUDA_CHECK(cudaEventSynchronize(now_));
    float ms = 0;
    TUNECNN_CUDA_CHECK(cudaEventElapsedTime(&ms, previous_, now_));
    seconds_ += ms / 1e3;
    std::swap(previous_, now_);
    return seconds_;
  }

 private:
  cudaEvent_t previous_ = nullptr, now_ = nullptr;
  double seconds_ = 0;
};
#endif

}  // namespace

std::function<double()> device_clock(Device device) {
  if (device == Device::cpu) return steady_seconds;
#ifdef TUNECNN_HAVE_CUDA
  TUNECNN_CHECK(cuda_device_count() > 0, "timing on the GPU: no CUDA device is available");
  auto clock = std::make_shared<CudaEventClock>();
  return [clock] { return clock->read(); };
#else
  TUNECNN_FAIL("timing on the GPU: this build of tunecnn has no CUDA backend; reconfigure with "
               "-DTUNECNN_CUDA=ON");
#endif
}

}  // namespace tunecnn
