#include "core/pinned_upload.h"

#include <cstring>

#include "core/cuda_runtime.h"
#include "core/error.h"

#ifdef TUNECNN_HAVE_CUDA
#include "core/cuda_check.h"
#endif

namespace tunecnn {

#ifdef TUNECNN_HAVE_CUDA

// One pinned buffer and the event that says its last copy has finished.
struct PinnedUploader::Staging {
  void* host = nullptr;
  std::size_t capacity = 0;
  cudaEvent_t copied = nullptr;

  Staging() { TUNECNN_CUDA_CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming)); }
  ~Staging() {
    if (host != nullptr) cudaFreeHost(host);
    cudaEventDestroy(copied);
  }
  // Grows to `bytes` (batches only shrink at the end of an epoch, so this happens once).
  void reserve(std::size_t bytes) {
    if (bytes <= capacity) return;
    if (host != nullptr) TUNECNN_CUDA_CHECK(cudaFreeHost(host));
    host = nullptr;
    capacity = 0;
    TUNECNN_CUDA_CHECK(cudaMallocHost(&host, bytes));
    capacity = bytes;
  }
};

PinnedUploader::PinnedUploader() {
  TUNECNN_CHECK(cuda_device_count() > 0, "uploading batches to the GPU: no CUDA device is available");
  for (auto& s : staging_) s = std::make_unique<Staging>();
}

PinnedUploader::~PinnedUploader() = default;

Tensor PinnedUploader::upload(const Tensor& host) {
  TUNECNN_CHECK(host.device() == Device::cpu, "PinnedUploader::upload takes a CPU tensor, got ",
                host.describe());
  Staging& s = *staging_[next_];
  next_ = 1 - next_;
  TUNECNN_CUDA_CHECK(cudaEventSynchronize(s.copied));  // its previous copy is done
  s.reserve(host.nbytes());
  std::memcpy(s.host, host.raw_data(), host.nbytes());
  Tensor device = Tensor::empty(host.shape(), host.dtype(), Device::cuda, host.layout());
  TUNECNN_CUDA_CHECK(cudaMemcpyAsync(device.raw_data(), s.host, host.nbytes(),
                                     cudaMemcpyHostToDevice, cuda_stream()));
  TUNECNN_CUDA_CHECK(cudaEventRecord(s.copied, cuda_stream()));
  return device;
}

#else

struct PinnedUploader::Staging {};

PinnedUploader::PinnedUploader() {
  TUNECNN_FAIL("uploading batches to the GPU: this build of tunecnn has no CUDA backend; "
               "reconfigure with -DTUNECNN_CUDA=ON");
}

PinnedUploader::~PinnedUploader() = default;

Tensor PinnedUploader::upload(const Tensor& host) { return host; }

#endif

}  // namespace tunecnn
