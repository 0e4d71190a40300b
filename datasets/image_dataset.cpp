#include "datasets/image_dataset.h"

#include "core/error.h"

namespace tunecnn {

ImageDataset::ImageDataset(std::string description, Shape example_shape, int num_classes,
                           std::vector<std::uint8_t> pixels, std::vector<std::int32_t> labels)
    : description_(std::move(description)),
      example_shape_(std::move(example_shape)),
      num_classes_(num_classes),
      example_size_(shape_numel(example_shape_)),
      pixels_(std::move(pixels)),
      labels_(std::move(labels)) {
  TUNECNN_CHECK(example_shape_.size() == 3, description_, ": example shape must be C,H,W");
  TUNECNN_CHECK(static_cast<std::int64_t>(pixels_.size()) == size() * example_size_, description_,
                ": ", pixels_.size(), " pixel bytes for ", size(), " examples of ",
                shape_str(example_shape_));
  for (std::int32_t label : labels_)
    TUNECNN_CHECK(label >= 0 && label < num_classes_, description_, ": label ", label,
                  " outside 0..", num_classes_ - 1);
  set_normalisation(std::vector<float>(example_shape_[0], 0.0f),
                    std::vector<float>(example_shape_[0], 1.0f));
}

void ImageDataset::set_normalisation(std::vector<float> mean, std::vector<float> stddev) {
  const std::size_t channels = static_cast<std::size_t>(example_shape_[0]);
  TUNECNN_CHECK(mean.size() == channels && stddev.size() == channels, description_,
                ": normalisation needs one mean and stddev per channel");
  scale_.resize(channels);
  shift_.resize(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    TUNECNN_CHECK(stddev[c] > 0, description_, ": normalisation stddev must be positive");
    scale_[c] = 1.0f / (255.0f * stddev[c]);
    shift_[c] = -mean[c] / stddev[c];
  }
}

std::int32_t ImageDataset::get(std::int64_t index, float* out) const {
  TUNECNN_CHECK(index >= 0 && index < size(), description_, ": example ", index, " out of range");
  const std::uint8_t* src = pixels_.data() + index * example_size_;
  const std::int64_t plane = example_size_ / example_shape_[0];
  for (std::int64_t c = 0; c < example_shape_[0]; ++c)
    for (std::int64_t i = 0; i < plane; ++i)
      out[c * plane + i] = src[c * plane + i] * scale_[c] + shift_[c];
  return labels_[index];
}

void ImageDataset::set_class_names(std::vector<std::string> names) {
  TUNECNN_CHECK(names.empty() || static_cast<int>(names.size()) == num_classes_, describe(), ": ", names.size(),
                " class names for ", num_classes_, " classes");
  class_names_ = std::move(names);
}

}  // namespace tunecnn
