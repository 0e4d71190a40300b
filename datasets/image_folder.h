#pragma once
// ImageNet-style folders of JPEGs: ROOT/SPLIT/<class folder>/*.JPEG (any of .jpg .jpeg .png,
// case-insensitive), classes = the sorted folder names. Every image is decoded once (stb_image),
// converted to RGB (grayscale and RGBA too), resized so its shorter side is side * 256 / 224
// (bilinear) and centre-cropped to side x side, then kept in memory as uint8 and normalised with
// ImageNet's mean and standard deviation on access. Meant for small sets such as imagenette-mini;
// the streaming pipeline with augmentation is a separate loader.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "datasets/image_dataset.h"

namespace tunecnn {

struct ImageFolderOptions {
  int side = 224;  // the square crop every example ends up as
  // Called once per file that cannot be decoded (it names the file and stb_image's reason);
  // such files are skipped. Default: print to stderr.
  std::function<void(std::string_view)> warn;
};

// Throws Error naming the folder when it is missing, has no class folders, or holds no image
// that decodes.
std::shared_ptr<ImageDataset> load_image_folder(const std::filesystem::path& root,
                                                const std::string& split,
                                                const ImageFolderOptions& options = {});

}  // namespace tunecnn
