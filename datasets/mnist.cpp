// Loads an MNIST-style split from its two idx files and checks that they agree with each other,
// which neither file can check alone.
#include "datasets/mnist.h"

#include <array>
#include <string>
#include <utility>

#include "core/error.h"
#include "datasets/idx.h"

namespace tunecnn {
namespace {

constexpr int kNumClasses = 10;

struct Normalisation {
  std::string_view name;
  float mean;
  float stddev;
};

// Per-pixel statistics of each training set, the values the reference models were trained with.
constexpr std::array<Normalisation, 2> kNormalisations{{
    {"MNIST", 0.1307f, 0.3081f},
    {"Fashion-MNIST", 0.2860f, 0.3530f},
}};

// Zalando's names for Fashion-MNIST's labels 0-9.
const std::vector<std::string> kFashionNames = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

const Normalisation& normalisation_for(std::string_view name) {
  for (const Normalisation& n : kNormalisations)
    if (n.name == name) return n;
  TUNECNN_FAIL("unknown idx dataset '", name, "': expected MNIST or Fashion-MNIST");
}

// Plain first: it is the cheaper read when someone has already unpacked the archive.
std::filesystem::path find_file(const std::filesystem::path& dir, const std::string& stem,
                                std::string_view what) {
  const std::filesystem::path plain = dir / stem;
  const std::filesystem::path gzip = dir / (stem + ".gz");
  if (std::filesystem::is_regular_file(plain)) return plain;
  if (std::filesystem::is_regular_file(gzip)) return gzip;
  TUNECNN_FAIL(what, " not found in ", dir.string(), ": tried ", plain.filename().string(), " and ",
               gzip.filename().string());
}

std::vector<std::int32_t> checked_labels(const std::filesystem::path& path,
                                         const std::vector<std::uint8_t>& bytes) {
  std::vector<std::int32_t> labels(bytes.begin(), bytes.end());
  for (std::size_t i = 0; i < labels.size(); ++i)
    TUNECNN_CHECK(labels[i] < kNumClasses, path.string(), ": label out of range at index ", i,
                  ": value ", labels[i], ", expected 0..", kNumClasses - 1);
  return labels;
}

}  // namespace

std::shared_ptr<ImageDataset> load_mnist(const std::filesystem::path& dir, MnistSplit split,
                                         std::string_view name) {
  const Normalisation& norm = normalisation_for(name);
  const std::string prefix = split == MnistSplit::train ? "train" : "t10k";
  const std::string split_name = split == MnistSplit::train ? "train" : "test";
  const std::string what = std::string(name) + " " + split_name;
  const auto images_path = find_file(dir, prefix + "-images-idx3-ubyte", what + " images");
  const auto labels_path = find_file(dir, prefix + "-labels-idx1-ubyte", what + " labels");

  IdxArray images = read_idx(images_path, {3, "images", "pixels"});
  IdxArray labels = read_idx(labels_path, {1, "labels", "labels"});
  TUNECNN_CHECK(images.dims[0] == labels.dims[0],
                "image/label count mismatch: ", images_path.string(), " holds ", images.dims[0],
                " images but ", labels_path.string(), " holds ", labels.dims[0], " labels");

  const Shape shape{1, images.dims[1], images.dims[2]};
  const std::string description = what + " (" + std::to_string(images.dims[0]) + " images, 1x" +
                                  std::to_string(shape[1]) + "x" + std::to_string(shape[2]) + ")";
  auto dataset =
      std::make_shared<ImageDataset>(description, shape, kNumClasses, std::move(images.data),
                                     checked_labels(labels_path, labels.data));
  dataset->set_normalisation({norm.mean}, {norm.stddev});
  if (name == "Fashion-MNIST") dataset->set_class_names(kFashionNames);  // MNIST's are its digits
  return dataset;
}

ChannelAffine mnist_normalisation(std::string_view name) {
  const Normalisation& norm = normalisation_for(name);
  ChannelAffine affine;
  affine.scale[0] = 1.0f / (255.0f * norm.stddev);
  affine.shift[0] = -norm.mean / norm.stddev;
  return affine;
}

}  // namespace tunecnn
