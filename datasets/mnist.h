#pragma once
// MNIST and Fashion-MNIST: the same idx files (train-* and t10k-*, plain or .gz) and the same
// 1x28x28 shape, told apart only by name and the normalisation statistics.
#include <filesystem>
#include <memory>
#include <string_view>

#include "datasets/image_dataset.h"
#include "datasets/image_resize.h"

namespace tunecnn {

enum class MnistSplit { train, test };

// name is "MNIST" or "Fashion-MNIST"; throws Error naming the file and the problem.
std::shared_ptr<ImageDataset> load_mnist(const std::filesystem::path& dir, MnistSplit split,
                                         std::string_view name);
// The data set's normalisation as a pixel (0..255) map, channel 0: what its examples get.
ChannelAffine mnist_normalisation(std::string_view name);

}  // namespace tunecnn
