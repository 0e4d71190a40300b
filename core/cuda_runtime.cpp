#include "core/cuda_runtime.h"

#include <algorithm>
#include <cstring>

#include "core/allocator.h"
#include "core/error.h"

#ifdef TUNECNN_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace tunecnn {

#ifdef TUNECNN_HAVE_CUDA

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
      // The failure is also the runtime's last error, which the next launch check
      // (cudaGetLastError) would report as its own: clear it, as cuda_device_count() does.
      cudaGetLastError();
      release_cached();  // give the cache back and try once more before failing
      status = cudaMalloc(&ptr, bytes);
      if (status != cudaSuccess) cudaGetLastError();  // the Error thrown below may be caught
      TUNECNN_CHECK(status == cudaSuccess, "cudaMalloc of ", bytes,
                    " bytes failed: ", cudaGetErrorString(status));
    }
    return ptr;
  }
  void system_free(void* ptr, std::size_t) override {
    // Unchecked (at exit the runtime may be gone), but a failure must not linger as the last
    // error for the next launch check to misreport.
    if (cudaFree(ptr) != cudaSuccess) cudaGetLastError();
  }
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

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess) return count > 0 ? "" : "cudaGetDeviceCount found no CUDA device";
  cudaGetLastError();
  return std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(status) +
         " (is the NVIDIA driver loaded, and as new as this build's CUDA runtime?)";
}

Allocator& cuda_allocator() {
  TUNECNN_CHECK(cuda_device_count() > 0, "no CUDA device is available (is the NVIDIA driver loaded?)");
  static CudaAllocator allocator;
  return allocator;
}

cudaStream_t cuda_stream() {
  static const cudaStream_t stream = [] {
    cudaStream_t created = nullptr;
    TUNECNN_CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    return created;
  }();
  return stream;
}

int cuda_blocks(std::int64_t n, int threads) {
  static const int most = [] {
    int device = 0, sms = 0;
    TUNECNN_CUDA_CHECK(cudaGetDevice(&device));
    TUNECNN_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms * 32;  // enough resident blocks to hide latency; grid-stride loops do the rest
  }();
  const std::int64_t needed = (n + threads - 1) / threads;
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(needed, most)));
}

// Ordered on the compute stream, so a copy sees every kernel queued before it, and synchronous, so
// the host may read or reuse its buffer when this returns.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, std::size_t bytes) {
  if (dst_device == Device::cpu && src_device == Device::cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
  if (bytes == 0) return;
  TUNECNN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cuda_stream()));
  TUNECNN_CUDA_CHECK(cudaStreamSynchronize(cuda_stream()));
}

void cuda_synchronize() { TUNECNN_CUDA_CHECK(cudaStreamSynchronize(cuda_stream())); }

#else

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }
std::string cuda_unavailable_reason() {
  return "this build has no CUDA backend (reconfigure with -DTUNECNN_CUDA=ON)";
}

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
