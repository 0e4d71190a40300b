#pragma once
// Made-up images for timing runs and smoke tests where no real data is at hand (`train --data
// synthetic`): each class has a fixed random pattern and each example is its class's pattern
// (random blocks of a 4x4 grid) plus its own per-pixel noise, so a model can learn it and the loss falls. Nothing is stored per example;
// example `i` is recomputed from (seed, i) on every access, so any size costs no memory.
#include <cstdint>
#include <vector>

#include "datasets/dataset.h"

namespace tunecnn {

struct SyntheticOptions {
  Shape example_shape{3, 32, 32};  // C, H, W
  int num_classes = 10;
  std::int64_t size = 1024;
  std::uint64_t seed = 0;  // the class patterns; train and test share them, not their noise
  std::uint64_t noise_seed = 0;
  std::string name = "synthetic";
};

class SyntheticDataset final : public Dataset {
 public:
  explicit SyntheticDataset(SyntheticOptions options);
  std::int64_t size() const override { return options_.size; }
  Shape example_shape() const override { return options_.example_shape; }
  int num_classes() const override { return options_.num_classes; }
  std::string describe() const override;
  std::int32_t get(std::int64_t index, float* out) const override;

 private:
  SyntheticOptions options_;
  std::int64_t example_size_;
  std::vector<float> patterns_;  // num_classes x example_size, values in [-1, 1)
};

}  // namespace tunecnn
