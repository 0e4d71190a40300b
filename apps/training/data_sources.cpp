#include "apps/training/data_sources.h"

#include "core/error.h"
#include "datasets/cifar10.h"
#include "datasets/image_folder.h"
#include "datasets/mnist.h"
#include "datasets/random_crop.h"
#include "datasets/synthetic.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

// A data folder that is missing, or a file, is told apart: "does not exist" for a file misleads.
void require_data_folder(const fs::path& folder, const std::string& data, const std::string& hint = "") {
  TUNECNN_CHECK(fs::exists(folder), "data folder ", folder.string(), " does not exist", hint);
  TUNECNN_CHECK(fs::is_directory(folder), "--data-dir ", folder.string(), " is a file, not a folder: --data ",
                data, " reads the folder that holds its files");
}

DataSplits load_mnist_splits(const std::string& data, const fs::path& folder) {
  const char* name = data == "mnist" ? "MNIST" : "Fashion-MNIST";
  TUNECNN_CHECK(!folder.empty(), "--data ", data, " needs --data-dir DIR, a folder holding "
                "train-images-idx3-ubyte(.gz), train-labels-idx1-ubyte(.gz), t10k-images-idx3-ubyte(.gz) "
                "and t10k-labels-idx1-ubyte(.gz)");
  require_data_folder(folder, data, data == "fashion-mnist"
                                        ? " (install Debian's dataset-fashion-mnist package, or pass --data-dir)" : "");
  return {load_mnist(folder, MnistSplit::train, name), load_mnist(folder, MnistSplit::test, name)};
}

DataSplits load_cifar10_splits(const fs::path& path, const Shape& model_input) {
  TUNECNN_CHECK(!path.empty(), "--data cifar10 needs --data-dir PATH: cifar-10-binary.tar.gz as "
                "distributed, its extracted cifar-10-batches-bin folder, or a folder holding either");
  TUNECNN_CHECK(model_input.size() == 3 && model_input[0] == 3 && model_input[1] == model_input[2] &&
                    model_input[1] <= 32,
                "CIFAR-10 has 3x32x32 images, which cannot feed a model that takes ",
                shape_str(model_input), " (C,H,W); use --model cifar");
  const Cifar10Splits splits = load_cifar10(path);
  const int side = static_cast<int>(model_input[1]);
  return {random_crop(splits.train, side), random_crop(splits.test, side)};
}

DataSplits load_imagenet_splits(const fs::path& folder, const Shape& model_input,
                                const fs::path& val_labels) {
  TUNECNN_CHECK(!folder.empty(), "--data imagenet needs --data-dir DIR, a folder holding train/ "
                "and val/: train/ with one folder per class of .JPEG, .jpg or .png images, as "
                "ImageNet and Imagenette are laid out; val/ the same, or flat with a labels file "
                "DIR/val_labels.txt of 'filename wnid' or 'filename class-index' lines");
  TUNECNN_CHECK(model_input.size() == 3 && model_input[0] == 3 && model_input[1] == model_input[2],
                "ImageNet-style folders give square RGB crops, which cannot feed a model that takes ",
                shape_str(model_input), " (C,H,W)");
  require_data_folder(folder, "imagenet");
  ImageFolderOptions options;
  options.side = static_cast<int>(model_input[1]);
  auto train = load_image_folder(folder, "train", options);
  options.classes = train->classes();  // a flat val/ labels its files with these
  options.labels_file = val_labels;
  auto val = load_image_folder(folder, "val", options);
  return {train, val};
}

DataSplits make_synthetic_splits(const Shape& model_input) {
  SyntheticOptions options{.example_shape = model_input, .num_classes = 10, .size = 4096, .seed = 1,
                           .noise_seed = 2, .name = "synthetic train"};
  auto train = std::make_shared<SyntheticDataset>(options);
  options.size = 512;
  options.noise_seed = 3;
  options.name = "synthetic test";
  return {train, std::make_shared<SyntheticDataset>(options)};
}

}  // namespace

std::string data_set_names() { return "mnist, fashion-mnist, cifar10, imagenet or synthetic"; }

fs::path default_data_dir(const std::string& data) {
  // Debian's dataset-fashion-mnist package installs here.
  if (data == "fashion-mnist") return "/usr/share/datasets/fashion-mnist";
  return {};
}

DataSplits load_data(const std::string& data, const fs::path& dir, const Shape& model_input,
                     const fs::path& val_labels) {
  const fs::path folder = dir.empty() ? default_data_dir(data) : dir;
  TUNECNN_CHECK(val_labels.empty() || data == "imagenet", "a validation labels file (",
                val_labels.string(), ") applies to --data imagenet only, not ", data);
  if (data == "mnist" || data == "fashion-mnist") return load_mnist_splits(data, folder);
  if (data == "cifar10") return load_cifar10_splits(folder, model_input);
  if (data == "imagenet") return load_imagenet_splits(folder, model_input, val_labels);
  if (data == "synthetic") return make_synthetic_splits(model_input);
  TUNECNN_FAIL("unknown data set '", data, "' (expected ", data_set_names(), ")");
}

ImageFileView image_file_view(const std::string& data, const Shape& example) {
  TUNECNN_CHECK(example.size() == 3 && example[1] == example[2], "an image file needs a model with square C,H,W "
                "input, got ", shape_str(example));
  const int side = static_cast<int>(example[1]);
  if (data == "imagenet")
    return [side](const fs::path& file, float* out) {
      image_file_centre_crop(file, side, default_resize_side(side), imagenet_normalisation(), out);
    };
  if (data == "cifar10")
    return [side](const fs::path& file, float* out) { image_file_centre_crop(file, side, 32, cifar10_normalisation(), out); };
  if (data == "mnist" || data == "fashion-mnist") {
    const ChannelAffine norm = mnist_normalisation(data == "mnist" ? "MNIST" : "Fashion-MNIST");
    return [side, norm](const fs::path& file, float* out) {
      std::vector<float> rgb(static_cast<std::size_t>(3 * side * side));
      image_file_centre_crop(file, side, side, ChannelAffine{}, rgb.data());  // pixels 0..255
      const std::size_t plane = static_cast<std::size_t>(side * side);
      for (std::size_t i = 0; i < plane; ++i) {
        const float grey = 0.299f * rgb[i] + 0.587f * rgb[plane + i] + 0.114f * rgb[2 * plane + i];
        out[i] = grey * norm.scale[0] + norm.shift[0];
      }
    };
  }
  TUNECNN_FAIL("--data ", data, " has no image files to read examples from (", data_set_names(), ")");
}

}  // namespace tunecnn
