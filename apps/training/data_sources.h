#pragma once
// Data sets by name, as `train --data NAME --data-dir DIR` names them.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "datasets/dataset.h"

namespace tunecnn {

struct DataSplits {
  std::shared_ptr<const Dataset> train, test;
};

// "mnist, fashion-mnist, cifar10, imagenet or synthetic", for help and error messages.
std::string data_set_names();
std::filesystem::path default_data_dir(const std::string& data);  // empty when there is none
// Loads `data` for a model whose examples are `model_input` (C, H, W):
// - mnist, fashion-mnist: idx files in DIR, 1x28x28 whatever the model;
// - cifar10: the .tar.gz as distributed or its extracted folder; 32x32 images served as random
//   crops of the model's side (24 for the cifar net) with flips for training, centre crops for test;
// - imagenet: DIR/train and DIR/val, folders of JPEGs per class (datasets/image_folder.h),
//   decoded while training runs: shorter side resized to side * 256 / 224, random crops and flips
//   of the model's side for training, centre crops for evaluation; a flat DIR/val is labelled by
//   `val_labels` (default DIR/val_labels.txt);
// - synthetic: made-up learnable images of the model's shape (datasets/synthetic.h), no DIR.
DataSplits load_data(const std::string& data, const std::filesystem::path& dir, const Shape& model_input,
                     const std::filesystem::path& val_labels = {});

// An image file (JPEG, PNG) as an evaluation example of `data` for a model taking `example`
// (C, H, W), for `predict`: imagenet's centre crop of the shorter side resized as its test view
// resizes; cifar10's 32-pixel image (the shorter side resized to 32) cropped as its test view
// crops; mnist and fashion-mnist the centre square at 28x28, as grey (ITU-R 601 luma). Each with
// the data set's own normalisation. Throws Error naming the file when it does not decode.
using ImageFileView = std::function<void(const std::filesystem::path&, float*)>;
ImageFileView image_file_view(const std::string& data, const Shape& example);

}  // namespace tunecnn
