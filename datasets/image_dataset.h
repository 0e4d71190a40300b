#pragma once
// Examples held in memory as uint8 pixels (CHW), scaled to [0, 1] on access, optionally
// normalised per channel. MNIST, Fashion-MNIST and CIFAR-10 all fit this shape.
#include <string>
#include <vector>

#include "datasets/dataset.h"

namespace tunecnn {

class ImageDataset final : public Dataset {
 public:
  ImageDataset(std::string description, Shape example_shape, int num_classes,
               std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels);

  std::int64_t size() const override { return static_cast<std::int64_t>(labels_.size()); }
  Shape example_shape() const override { return example_shape_; }
  int num_classes() const override { return num_classes_; }
  std::string describe() const override { return description_; }
  std::int32_t get(std::int64_t index, float* out) const override;

  // out = (pixel / 255 - mean[c]) / stddev[c]; one value per channel.
  void set_normalisation(std::vector<float> mean, std::vector<float> stddev);
  // Names in label order (num_classes of them); until set, the labels as numbers.
  void set_class_names(std::vector<std::string> names);
  std::vector<std::string> class_names() const override {
    return class_names_.empty() ? Dataset::class_names() : class_names_;
  }
  const std::vector<std::int32_t>& labels() const { return labels_; }

 private:
  std::string description_;
  Shape example_shape_;
  int num_classes_;
  std::int64_t example_size_;
  std::vector<std::uint8_t> pixels_;
  std::vector<std::int32_t> labels_;
  std::vector<float> scale_, shift_;  // per channel: out = pixel * scale + shift
  std::vector<std::string> class_names_;
};

}  // namespace tunecnn
