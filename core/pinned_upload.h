#pragma once
// Host batches to the GPU through page-locked (pinned) staging buffers, so each copy is a DMA
// that runs asynchronously on the compute stream while the host goes on (decoding the next batch,
// queueing kernels). Two buffers alternate: the host fills one while the other may still be in
// flight, and waits only if it comes round to a buffer whose copy has not finished.
#include <array>
#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace tunecnn {

class PinnedUploader {
 public:
  PinnedUploader();
  ~PinnedUploader();
  PinnedUploader(const PinnedUploader&) = delete;
  PinnedUploader& operator=(const PinnedUploader&) = delete;

  // A GPU tensor with the bytes, shape, dtype and layout of `host` (a CPU tensor). Work queued on
  // the compute stream after this call sees the data. Throws Error without a usable GPU.
  Tensor upload(const Tensor& host);

 private:
  struct Staging;
  std::array<std::unique_ptr<Staging>, 2> staging_;
  int next_ = 0;
};

}  // namespace tunecnn
