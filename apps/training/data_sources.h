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
DataSplits load_data(const std::string& data, const std::filesystem::path& dir);

}  // namespace tunecnn
