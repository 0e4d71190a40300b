// Crops (and mirrors) each example out of the base's full-size one, decoded per call into a
// per-thread buffer, so the wrapper holds no copy of the data.
#include "datasets/random_crop.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace tunecnn {

RandomCropDataset::RandomCropDataset(std::shared_ptr<const Dataset> base, int side)
    : base_(std::move(base)), side_(side) {
  TUNECNN_CHECK(base_ != nullptr, "random_crop needs a dataset to crop");
  const Shape shape = base_->example_shape();
  TUNECNN_CHECK(shape.size() == 3, base_->describe(), ": random_crop needs C,H,W examples, got ",
                shape_str(shape));
  channels_ = shape[0];
  height_ = shape[1];
  width_ = shape[2];
  TUNECNN_CHECK(side > 0 && side <= height_ && side <= width_, base_->describe(), ": cannot take ",
                side, "x", side, " crops of ", shape_str(shape),
                " examples; the crop side must be between 1 and ", std::min(height_, width_));
}

std::string RandomCropDataset::describe() const {
  // One wrapper serves both views, so it names both: the loader decides which one a split gets.
  const std::string crop = std::to_string(side_) + "x" + std::to_string(side_);
  return base_->describe() + ", " + crop + " crops (random with flips in training, centre in evaluation)";
}

std::int32_t RandomCropDataset::get(std::int64_t index, float* out) const {
  return get_crop(index, out, {(height_ - side_) / 2, (width_ - side_) / 2, false});
}

std::int32_t RandomCropDataset::get_augmented(std::int64_t index, float* out,
                                              std::uint64_t draw) const {
  return get_crop(index, out, crop_for(draw));
}

// The draw numbers the 2 * positions outcomes; `draw` is already well mixed by the loader, and
// the modulo's bias (outcomes / 2^64) is far below anything training could notice.
RandomCropDataset::Crop RandomCropDataset::crop_for(std::uint64_t draw) const {
  const auto across = static_cast<std::uint64_t>(width_ - side_ + 1);
  const auto down = static_cast<std::uint64_t>(height_ - side_ + 1);
  const std::uint64_t outcome = draw % (2 * across * down);
  const std::uint64_t position = outcome / 2;
  return {static_cast<std::int64_t>(position / across),
          static_cast<std::int64_t>(position % across), outcome % 2 == 1};
}

std::int32_t RandomCropDataset::get_crop(std::int64_t index, float* out, const Crop& crop) const {
  // One full example per thread: the loader calls this from many TBB threads at once.
  thread_local std::vector<float> full;
  full.resize(static_cast<std::size_t>(channels_ * height_ * width_));
  const std::int32_t label = base_->get(index, full.data());
  for (std::int64_t c = 0; c < channels_; ++c)
    for (std::int64_t y = 0; y < side_; ++y) {
      const float* row = full.data() + (c * height_ + crop.top + y) * width_ + crop.left;
      float* dst = out + (c * side_ + y) * side_;
      for (std::int64_t x = 0; x < side_; ++x) dst[x] = row[crop.flipped ? side_ - 1 - x : x];
    }
  return label;
}

std::shared_ptr<RandomCropDataset> random_crop(std::shared_ptr<const Dataset> base, int side) {
  return std::make_shared<RandomCropDataset>(std::move(base), side);
}

}  // namespace tunecnn
