#include "datasets/synthetic.h"

#include "core/error.h"
#include "core/rng.h"

namespace tunecnn {
namespace {

// Uniform in [-1, 1) from the top 24 bits, exact in float.
float signed_unit(std::uint64_t bits) {
  return static_cast<float>(bits >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

constexpr std::int64_t kGrid = 4;

}  // namespace

SyntheticDataset::SyntheticDataset(SyntheticOptions options)
    : options_(std::move(options)), example_size_(shape_numel(options_.example_shape)) {
  TUNECNN_CHECK(options_.example_shape.size() == 3 && example_size_ > 0,
                "synthetic data needs a C,H,W example shape, got ", shape_str(options_.example_shape));
  TUNECNN_CHECK(options_.num_classes >= 2, "synthetic data needs at least 2 classes, got ",
                options_.num_classes);
  TUNECNN_CHECK(options_.size > 0, "synthetic data needs at least 1 example, got ", options_.size);
  patterns_.resize(static_cast<std::size_t>(options_.num_classes * example_size_));
  // Blocks of a 4x4 grid per channel: coarse enough that convolutions and pooling keep the
  // pattern while they average the per-pixel noise away, as with real images' shapes.
  const std::int64_t channels = options_.example_shape[0], height = options_.example_shape[1],
                     width = options_.example_shape[2];
  std::vector<float> grid(static_cast<std::size_t>(options_.num_classes * channels * kGrid * kGrid));
  std::uint64_t state = splitmix64(options_.seed);
  for (float& value : grid) value = signed_unit(state = splitmix64(state));
  for (std::int64_t plane = 0; plane < options_.num_classes * channels; ++plane)
    for (std::int64_t y = 0; y < height; ++y)
      for (std::int64_t x = 0; x < width; ++x)
        patterns_[(plane * height + y) * width + x] =
            grid[(plane * kGrid + y * kGrid / height) * kGrid + x * kGrid / width];
}

std::string SyntheticDataset::describe() const {
  return options_.name + ", " + std::to_string(options_.size) + " made-up images " +
         shape_str(options_.example_shape) + ", " + std::to_string(options_.num_classes) + " classes";
}

std::int32_t SyntheticDataset::get(std::int64_t index, float* out) const {
  TUNECNN_CHECK(index >= 0 && index < options_.size, describe(), ": example ", index, " out of range");
  const auto label = static_cast<std::int32_t>(index % options_.num_classes);
  const float* pattern = patterns_.data() + label * example_size_;
  std::uint64_t state =
      splitmix64(options_.noise_seed ^ splitmix64(static_cast<std::uint64_t>(index)));
  for (std::int64_t i = 0; i < example_size_; ++i)
    out[i] = pattern[i] + signed_unit(state = splitmix64(state));
  return label;
}

}  // namespace tunecnn
