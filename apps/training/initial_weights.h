#pragma once
// `train --init-from FILE`: a new run that starts from another run's weights instead of random
// ones (fine-tuning). FILE is a training checkpoint (or its folder) or an ONNX file. Weights are
// matched to the model's in order, parameters then buffers, since an ONNX file's layers carry
// other names than the built-in networks'. When only the classifier's rows differ (the data has
// another class count), the classifier keeps its fresh initialisation and the run says so.
#include <filesystem>
#include <string>
#include <vector>

#include "core/module.h"

namespace tunecnn {

struct InitialWeights {
  std::string source;                 // "checkpoint FILE" or "ONNX file FILE", for messages
  std::vector<NamedTensor> parameters;  // in the network's order
  std::vector<NamedTensor> buffers;     // batch norm's running statistics
};

// Reads FILE (a checkpoint, a folder holding last.ckpt, or NAME.onnx). Throws Error naming the
// file when it cannot be read or holds no network's weights.
InitialWeights read_initial_weights(const std::filesystem::path& file);

// Copies the weights into `model`. Returns what the user should be told: empty when everything
// was copied, else which layer starts afresh and why. Throws Error naming the file and both
// tensors when the networks differ elsewhere; `model` is then unchanged.
std::string load_initial_weights(Module& model, const InitialWeights& weights);

}  // namespace tunecnn
