#pragma once
// cuda-convnet's augmentation for CIFAR-10 (Krizhevsky's 24x24 crops of 32x32 images): a random
// square crop and a random horizontal flip for training, the centre crop for evaluation.
#include <memory>

#include "datasets/dataset.h"

namespace tunecnn {

// Wraps a dataset of C x H x W examples (H, W >= side) and serves C x side x side ones: get() is
// the centre crop, get_augmented() a crop at a position and a flip chosen by `draw`, each of the
// (H-side+1)*(W-side+1) positions and both flips equally likely. The base's own get_augmented is
// not used: the crop owns the draw.
class RandomCropDataset final : public Dataset {
 public:
  RandomCropDataset(std::shared_ptr<const Dataset> base, int side);

  std::int64_t size() const override { return base_->size(); }
  Shape example_shape() const override { return {channels_, side_, side_}; }
  int num_classes() const override { return base_->num_classes(); }
  std::string describe() const override;
  std::int32_t get(std::int64_t index, float* out) const override;
  std::int32_t get_augmented(std::int64_t index, float* out, std::uint64_t draw) const override;
  std::int64_t skipped_files() const override { return base_->skipped_files(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }

 private:
  struct Crop {
    std::int64_t top, left;
    bool flipped;
  };

  std::shared_ptr<const Dataset> base_;
  std::int64_t side_, channels_, height_, width_;

  Crop crop_for(std::uint64_t draw) const;
  std::int32_t get_crop(std::int64_t index, float* out, const Crop& crop) const;
};

// Throws Error when side is not positive or larger than the base's height or width.
std::shared_ptr<RandomCropDataset> random_crop(std::shared_ptr<const Dataset> base, int side);

}  // namespace tunecnn
