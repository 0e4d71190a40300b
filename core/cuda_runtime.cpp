#include "core/cuda_runtime.h"

#include <cstring>

#include "core/allocator.h"
#include "core/error.h"

#ifdef TUNECNN_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace tunecnn {

#ifdef TUNECNN_HAVE_CUDA

#define TUNECNN_CUDA_CHECK(expr)                                                          \
  do {                                                                                    \
    cudaError_t status_ = (expr);                                                         \
    TUNECNN_CHECK(status_ == cudaSuccess, "CUDA call failed: ", cudaGetErrorString(status_)); \
  } while (0)

namespace {
class CudaAllocator final : public Allocator {
 public:
  ~CudaAllocator() override {
    // At process exit the driver may already be gone; freeing then only returns an error.
    release_cached();
  }

 protected:
  void* system_allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, bytes);
    if (status != cudaSuccess) {
      release_cached();  // give the cache back and try once more before failing
      TUNECNN_CUDA_CHECK(cudaMalloc(&ptr, bytes));
    }
    return ptr;
  }
  void system_free(void* ptr) override { cudaFree(ptr); }
};
}  // namespace

bool cuda_built() { return true; }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return count;
}

Allocator& cuda_allocator() {
  TUNECNN_CHECK(cuda_device_count() > 0, "no CUDA device is available (is the NVIDIA driver loaded?)");
  static CudaAllocator allocator;
  return allocator;
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  TUNECNN_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
}

void cuda_synchronize() { TUNECNN_CUDA_CHECK(cudaDeviceSynchronize()); }

#else

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }

Allocator& cuda_allocator() {
  TUNECNN_FAIL("this build of tunecnn has no CUDA backend; reconfigure with -DTUNECNN_CUDA=ON");
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  TUNECNN_CHECK(dst_device == Device::cpu && src_device == Device::cpu,
                "this build of tunecnn has no CUDA backend; reconfigure with -DTUNECNN_CUDA=ON");
  std::memcpy(dst, src, bytes);
}

void cuda_synchronize() {}

#endif

}  // namespace tunecnn
