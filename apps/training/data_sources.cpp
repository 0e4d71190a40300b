#include "apps/training/data_sources.h"

#include "core/error.h"
#include "datasets/mnist.h"

namespace tunecnn {

std::filesystem::path default_data_dir(const std::string& data) {
  // Debian's dataset-fashion-mnist package installs here.
  if (data == "fashion-mnist") return "/usr/share/datasets/fashion-mnist";
  return {};
}

DataSplits load_data(const std::string& data, const std::filesystem::path& dir) {
  std::filesystem::path folder = dir.empty() ? default_data_dir(data) : dir;
  if (data == "mnist" || data == "fashion-mnist") {
    const char* name = data == "mnist" ? "MNIST" : "Fashion-MNIST";
    TUNECNN_CHECK(!folder.empty(), "--data ", data, " needs --data-dir DIR, a folder holding "
                  "train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz), t10k-images-idx3-ubyte(.gz) "
                  "and t10k-labels-idx1-ubyte(.gz)");
    TUNECNN_CHECK(std::filesystem::is_directory(folder), "data folder ", folder.string(),
                  " does not exist", data == "fashion-mnist"
                      ? " (install Debian's dataset-fashion-mnist package, or pass --data-dir)" : "");
    return {load_mnist(folder, MnistSplit::train, name), load_mnist(folder, MnistSplit::test, name)};
  }
  TUNECNN_FAIL("unknown data set '", data, "' (expected mnist or fashion-mnist)");
}

}  // namespace tunecnn
