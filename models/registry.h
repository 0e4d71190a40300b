#pragma once
// Models are plain builders returning a Sequential, looked up by name.
#include <memory>
#include <string>
#include <vector>

#include "core/module.h"
#include "core/rng.h"
#include "ops/planners.h"

namespace tunecnn {

struct ModelOptions {
  Shape input_shape{1, 28, 28};  // C, H, W of one example
  int num_classes = 10;
  // Shared by the model's dropout layers; the trainer keeps it in its checkpoints, so a resumed
  // run drops the same units. Null: the model seeds its own from the build RNG.
  std::shared_ptr<Rng> dropout_rng;
  // What the conv and pooling layers ask for a shape without an installed plan (the untuned
  // defaults unless the caller hands over the autotuner's); build_model passes them to every layer.
  Planners planners;
};

// `name` is a built-in network's name or an ONNX file's path (NAME.onnx, models/onnx_import.h:
// its network with its weights; its input and class count must be the options').
std::shared_ptr<Sequential> build_model(const std::string& name, const ModelOptions& options, Rng& rng);
// True when `name` names an ONNX file (ends in ".onnx").
bool names_onnx_file(const std::string& name);
// The names build_model knows; "mobilenet" also takes a width and resolution
// ("mobilenet-0.5-128", see models/mobilenet.h).
std::vector<std::string> model_names();
// C, H, W of the example the model is built for: LeNet 1x28x28, the CIFAR net 3x24x24, AlexNet
// 3x227x227, a MobileNet 3xRxR at its resolution. Throws Error for an unknown name.
Shape model_input_shape(const std::string& name);

// What `train` uses for a model unless --lr or --warmup-epochs says otherwise (SGD, momentum 0.9,
// the default schedule and batch): one set does not fit every network.
struct TrainingDefaults {
  double lr = 0.02;
  double warmup_epochs = 0;
  std::string why;  // why they differ from the common ones; empty where they do not
};
TrainingDefaults training_defaults(const std::string& name);

}  // namespace tunecnn
