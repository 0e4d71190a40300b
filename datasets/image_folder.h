#pragma once
// ImageNet-style folders of images, read as a stream: loading only lists the files; each access
// reads and decodes one file to RGB (JPEG by libjpeg-turbo, PNG by stb_image; grayscale, CMYK and
// RGBA come out RGB), resizes its shorter side to resize_side (datasets/image_resize.h), crops
// side x side and normalises with ImageNet's mean and standard deviation to float CHW. get() is the centre crop
// (evaluation); get_augmented() a crop anywhere in the resized image, mirrored half of the time
// (training). Two layouts of ROOT/SPLIT:
//   class folders: ROOT/SPLIT/<class>/*.{JPEG,jpg,jpeg,png} (case-insensitive); the classes are
//     the sorted folder names; an empty class folder is still a class (with a warning), so
//     labels agree with other splits and with wnid lists.
//   flat: ROOT/SPLIT/*.JPEG plus a labels file of `filename label` lines, label a class name
//     (wnid) or a 0-based class index; blank lines and # comments are ignored. The class list
//     comes from ImageFolderOptions::classes (the training split's classes()).
// A file that does not decode, or whose header claims more pixels than a photograph has (read
// before decoding), is named in one warning, counted (skipped_files()) and replaced by the next
// file (wrapping) that decodes, so a batch stays full and training goes on.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/image_resize.h"

namespace tunecnn {

// Members default-initialised with `= {}` so designated initialisers may leave them out without
// GCC's -Wmissing-field-initializers.
struct ImageFolderOptions {
  int side = 224;  // the square crop every example ends up as
  // The shorter side is resized to this before cropping; 0: round(side * 256 / 224), as
  // torchvision's ImageNet evaluation (256 for 224). Must be at least `side`.
  int resize_side = 0;
  // The flat layout's labels file. Empty: ROOT/SPLIT_labels.txt (e.g. ROOT/val_labels.txt), used
  // when SPLIT has no class folders.
  std::filesystem::path labels_file = {};
  // The class names, in label order. Empty: the sorted class folders of SPLIT. When given, a
  // class-folder split must have exactly these folders; a flat split needs them.
  std::vector<std::string> classes = {};
  // Called for each undecodable file (once, naming it and the decoder's reason), each empty class
  // folder, and images a labels file leaves out. Calls are serialised. Default: stderr.
  std::function<void(std::string_view)> warn = {};
};

// ImageNet's per-channel mean and standard deviation, as ImageFolderDataset normalises.
ChannelAffine imagenet_normalisation();
// The shorter side an evaluation crop of `side` is taken from: round(side * 256 / 224).
int default_resize_side(int side);
// One image file as the evaluation view shows an example: decoded to RGB, its shorter side
// resized to resize_side, the centre side x side crop, each channel mapped by `affine` (pixels
// 0..255), to 3 x side x side floats (CHW). Throws Error naming the file when it cannot be read or
// decoded, or claims more pixels than a photograph has.
void image_file_centre_crop(const std::filesystem::path& file, int side, int resize_side, const ChannelAffine& affine,
                            float* out);

struct ImageFile {
  std::filesystem::path path;
  std::int32_t label = 0;
};

struct DecodedImage;  // image_folder.cpp: one decoded file

class ImageFolderDataset final : public Dataset {
 public:
  // `files` in example order, labels in [0, classes.size()); `name` starts describe().
  ImageFolderDataset(std::string name, std::filesystem::path folder,
                     std::vector<std::string> classes, std::vector<ImageFile> files,
                     const ImageFolderOptions& options);

  std::int64_t size() const override { return static_cast<std::int64_t>(files_.size()); }
  Shape example_shape() const override { return {3, side_, side_}; }
  int num_classes() const override { return static_cast<int>(classes_.size()); }
  // "imagenette-mini train, 160 images, 10 classes, crops 3x224x224 from shorter side 256, 0
  // skipped"
  std::string describe() const override;
  // Throw Error naming the split folder when no file decodes at all.
  std::int32_t get(std::int64_t index, float* out) const override;
  std::int32_t get_augmented(std::int64_t index, float* out, std::uint64_t draw) const override;
  std::int64_t skipped_files() const override { return skipped_.load(); }
  std::vector<std::string> class_names() const override { return classes_; }

  const std::vector<std::string>& classes() const { return classes_; }
  const std::vector<ImageFile>& files() const { return files_; }
  const std::filesystem::path& folder() const { return folder_; }
  int resize_side() const { return resize_side_; }

 private:
  std::string name_;
  std::filesystem::path folder_;
  std::vector<std::string> classes_;
  std::vector<ImageFile> files_;
  int side_, resize_side_;
  std::function<void(std::string_view)> warn_;
  mutable std::mutex warn_mutex_;
  std::unique_ptr<std::atomic<bool>[]> bad_;  // per file: known not to decode
  mutable std::atomic<std::int64_t> skipped_{0};

  // Decodes `index`, or the first file after it that decodes; returns the served file's index.
  std::int64_t decode_or_replace(std::int64_t index, DecodedImage& image) const;
  void mark_bad(std::int64_t index, const std::string& reason) const;
  void warn(std::string_view message) const;
};

// Lists ROOT/SPLIT (decodes nothing). Throws Error naming the folder when it is missing or holds
// no image, and naming the labels file and line for a bad labels file.
std::shared_ptr<ImageFolderDataset> load_image_folder(const std::filesystem::path& root,
                                                      const std::string& split,
                                                      const ImageFolderOptions& options = {});

}  // namespace tunecnn
