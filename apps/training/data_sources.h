#pragma once
// Data sets by name, as `train --data NAME --data-dir DIR` names them.
#include <filesystem>
#include <memory>
#include <string>

#include "datasets/dataset.h"

namespace tunecnn {

struct DataSplits {
  std::shared_ptr<const Dataset> train, test;
};

std::filesystem::path default_data_dir(const std::string& data);  // empty when there is none
// mnist and fashion-mnist have a fixed size; "imagenet" (a folder DIR/train, DIR/val of class
// folders of JPEGs, datasets/image_folder.h) is cropped to image_side x image_side, the side of
// the model's input (models/registry.h model_input_shape).
DataSplits load_data(const std::string& data, const std::filesystem::path& dir, int image_side);

}  // namespace tunecnn
