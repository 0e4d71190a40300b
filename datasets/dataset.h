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
  // Examples in the whole job's batch: labels.size() unless the loader serves one shard of it.
  std::int64_t global_size = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  virtual Shape example_shape() const = 0;  // {C, H, W}
  virtual int num_classes() const = 0;
  virtual std::string describe() const = 0;  // "Fashion-MNIST train, 60000 images 1x28x28"
  // Writes example `index` (C*H*W floats) to `out` and returns its label. Thread-safe. This is
  // the evaluation view: no random transform (a centre crop where the data is cropped).
  virtual std::int32_t get(std::int64_t index, float* out) const = 0;
  // The training view: example `index` under random transform number `draw` (crop position,
  // flip). Loaders mix `draw` from (seed, epoch, index), so each epoch sees new crops while a
  // rerun or a resumed run sees the same ones. Thread-safe. Without random transforms: get().
  virtual std::int32_t get_augmented(std::int64_t index, float* out, std::uint64_t draw) const {
    (void)draw;
    return get(index, out);
  }
  // Files that could not be decoded so far and were replaced by another example (each named
  // in a warning when first met); 0 for data held in memory.
  virtual std::int64_t skipped_files() const { return 0; }
  // The classes' names in label order ("T-shirt/top", "n01440764", ...): what `train` keeps in
  // its checkpoints for `predict`. Default: the labels as numbers.
  virtual std::vector<std::string> class_names() const {
    std::vector<std::string> names;
    for (int c = 0; c < num_classes(); ++c) names.push_back(std::to_string(c));
    return names;
  }
};

}  // namespace tunecnn
