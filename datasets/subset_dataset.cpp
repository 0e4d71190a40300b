#include "datasets/subset_dataset.h"

#include <algorithm>

#include "core/error.h"

namespace tunecnn {

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, std::int64_t count)
    : base_(std::move(base)), count_(std::min(count, base_->size())) {
  TUNECNN_CHECK(count > 0, "a dataset subset needs a positive size, got ", count);
}

std::string SubsetDataset::describe() const {
  return base_->describe() + ", first " + std::to_string(count_);
}

std::int32_t SubsetDataset::get(std::int64_t index, float* out) const {
  TUNECNN_CHECK(index >= 0 && index < count_, describe(), ": example ", index, " out of range");
  return base_->get(index, out);
}

std::int32_t SubsetDataset::get_augmented(std::int64_t index, float* out, std::uint64_t draw) const {
  TUNECNN_CHECK(index >= 0 && index < count_, describe(), ": example ", index, " out of range");
  return base_->get_augmented(index, out, draw);
}

}  // namespace tunecnn
