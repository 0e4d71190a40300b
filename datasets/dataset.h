#pragma once
// A labelled image dataset: random access to one example, stored as float32 CHW in [0, 1]
// before normalisation. Loaders batch and shuffle on top of this.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace tunecnn {

struct Batch {
  Tensor images;                      // f32 [B, C, H, W], NCHW
  std::vector<std::int32_t> labels;   // B labels in [0, classes)
  std::int64_t first_index = 0;       // position of the batch in the epoch, in examples
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  virtual Shape example_shape() const = 0;  // {C, H, W}
  virtual int num_classes() const = 0;
  virtual std::string describe() const = 0;  // "Fashion-MNIST train, 60000 images 1x28x28"
  // Writes example `index` (C*H*W floats) to `out` and returns its label. Thread-safe.
  virtual std::int32_t get(std::int64_t index, float* out) const = 0;
};

}  // namespace tunecnn
