#pragma once
// Named sets of convolution layers (models/conv_layers.txt, compiled in): the layers of LeNet,
// the CIFAR net, AlexNet and MobileNet, and the MEC paper's cv1-cv12. `bench conv` times them;
// the solver tests run them scaled down.
#include <string>
#include <string_view>
#include <vector>

#include "ops/conv/problem.h"

namespace tunecnn {

struct ConvLayer {
  std::string set, name;  // e.g. "mec-paper", "cv1"
  ConvProblem problem;    // forward, f32, with the batch the caller asked for
};

// Parses the shapes file format; `origin` names the text in errors ("conv_layers.txt:12: ...").
std::vector<ConvLayer> parse_conv_layers(std::string_view text, std::string_view origin, int batch);
// Every layer of the compiled-in file, at the given batch.
const std::vector<ConvLayer>& all_conv_layers();
std::vector<std::string> conv_layer_set_names();  // in file order
// The layers of one set; throws Error listing the known sets when `set` is unknown.
std::vector<ConvLayer> conv_layer_set(std::string_view set, int batch);

}  // namespace tunecnn
