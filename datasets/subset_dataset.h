#pragma once
// The first `count` examples of another dataset: quick runs and tests on a slice of real data.
#include <memory>

#include "datasets/dataset.h"

namespace tunecnn {

class SubsetDataset final : public Dataset {
 public:
  SubsetDataset(std::shared_ptr<const Dataset> base, std::int64_t count);
  std::int64_t size() const override { return count_; }
  Shape example_shape() const override { return base_->example_shape(); }
  int num_classes() const override { return base_->num_classes(); }
  std::string describe() const override;
  std::int32_t get(std::int64_t index, float* out) const override;
  std::int32_t get_augmented(std::int64_t index, float* out, std::uint64_t draw) const override;
  std::int64_t skipped_files() const override { return base_->skipped_files(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }

 private:
  std::shared_ptr<const Dataset> base_;
  std::int64_t count_;
};

}  // namespace tunecnn
