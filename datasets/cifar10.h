#pragma once
// CIFAR-10's binary version: cifar-10-batches-bin/data_batch_1..5.bin (training) and
// test_batch.bin, each a run of 3073-byte records (1 label byte 0-9, then the 32x32 red, green
// and blue planes, row-major: CHW already), and batches.meta.txt with the class names.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "datasets/image_dataset.h"
#include "datasets/image_resize.h"

namespace tunecnn {

struct Cifar10Splits {
  std::shared_ptr<ImageDataset> train, test;
  std::vector<std::string> class_names;  // from batches.meta.txt; empty when it is absent
};

// `path` is any of: the .tar.gz as distributed, the cifar-10-batches-bin folder, or a folder that
// holds either of them. Both splits are read in one pass (an archive is decompressed once, in
// memory). Examples are 3x32x32, normalised per channel with the training set's mean and
// standard deviation. A batch file may hold any positive number of records. Throws Error naming
// the file (or the archive and member) and the problem: a missing batch, a size that is not a
// whole number of records, a label above 9, a damaged or truncated archive.
Cifar10Splits load_cifar10(const std::filesystem::path& path);
// The per-channel normalisation as a pixel (0..255) map: what every example gets.
ChannelAffine cifar10_normalisation();

}  // namespace tunecnn
