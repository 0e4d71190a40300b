#include "apps/training/data_sources.h"

#include "core/error.h"
#include "datasets/image_folder.h"
#include "datasets/mnist.h"

namespace tunecnn {

std::filesystem::path default_data_dir(const std::string& data) {
  // Debian's dataset-fashion-mnist package installs here.
  if (data == "fashion-mnist") return "/usr/share/datasets/fashion-mnist";
  return {};
}

DataSplits load_data(const std::string& data, const std::filesystem::path& dir, int image_side) {
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
  if (data == "imagenet") {
    TUNECNN_CHECK(!folder.empty(), "--data imagenet needs --data-dir DIR, a folder holding train/ "
                  "and val/, each with one folder per class (the same class folders in both) of "
                  ".JPEG, .jpg or .png images, as ImageNet and Imagenette are laid out");
    const ImageFolderOptions options{.side = image_side, .warn = {}};
    auto train = load_image_folder(folder, "train", options);
    auto val = load_image_folder(folder, "val", options);
    TUNECNN_CHECK(train->num_classes() == val->num_classes(), "data folder ", folder.string(),
                  ": train has ", train->num_classes(), " class folders but val has ",
                  val->num_classes(), "; both need the same ones");
    return {train, val};
  }
  TUNECNN_FAIL("unknown data set '", data, "' (expected mnist, fashion-mnist or imagenet)");
}

}  // namespace tunecnn
