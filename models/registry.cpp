#include "models/registry.h"

#include <functional>
#include <map>
#include <optional>

#include "core/allocator.h"
#include "core/error.h"
#include "models/alexnet.h"
#include "models/cifar_net.h"
#include "models/lenet.h"
#include "models/mobilenet.h"
#ifdef TUNECNN_HAVE_ONNX
#include "models/onnx_import.h"
#endif

namespace tunecnn {
namespace {
using Builder = std::function<std::shared_ptr<Sequential>(const ModelOptions&, Rng&)>;

struct Entry {
  Builder build;
  Shape input;  // C, H, W the model is built for
  TrainingDefaults defaults = {};
};

// MobileNet is not in the table: its name carries a width and resolution
// (mobilenet[-W[-R]], models/mobilenet.h), so it is parsed rather than looked up.
const std::map<std::string, Entry>& fixed_models() {
  static const std::map<std::string, Entry> table = {
      {"lenet", {build_lenet, {1, 28, 28}}},
      // Measured on the real data (README, Training): without normalisation layers, the CIFAR net
      // stays at chance for an epoch at 0.02 unless the rate warms up, and AlexNet diverges
      // within 10 batches of ImageNet JPEGs at batch 8.
      {"cifar", {build_cifar_net, {3, 24, 24},
                 {0.02, 1, "it has no normalisation layers: at --lr 0.02 without a warm-up it stays at chance"}}},
      {"alexnet", {build_alexnet, {3, 227, 227},
                   {0.005, 0, "at --lr 0.02 it diverges within 10 batches (ImageNet, batch 8)"}}},
  };
  return table;
}

[[noreturn]] void fail_unknown(const std::string& name) {
  std::string known;
  for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  TUNECNN_FAIL("unknown model '", name, "' (known: ", known,
               "; mobilenet also as mobilenet-W or mobilenet-W-R, e.g. mobilenet-0.5-128; or an ONNX "
               "file, NAME.onnx)");
}

#ifdef TUNECNN_HAVE_ONNX
// The file's network; its class count must be the data's. Its weights onto a built-in network
// for other classes: --model NAME --init-from FILE (apps/training/initial_weights.h).
std::shared_ptr<Sequential> build_onnx(const std::string& file, const ModelOptions& options) {
  std::shared_ptr<Rng> dropout = options.dropout_rng ? options.dropout_rng : std::make_shared<Rng>(1);
  OnnxNetwork net = import_onnx(file, dropout);
  TUNECNN_CHECK(net.input == options.input_shape, file, ": the network takes ", shape_str(net.input),
                " examples, not ", shape_str(options.input_shape));
  TUNECNN_CHECK(net.classes > 0, file, ": the network ends in shape ", shape_str(net.output),
                " per example; tunecnn trains networks whose output is [batch, classes]");
  TUNECNN_CHECK(net.classes == options.num_classes, file, ": the network ends in ", net.classes,
                " classes, the data has ", options.num_classes,
                "; to train its weights on other classes, use --model with the built-in network it matches "
                "and --init-from ", file, " (the classifier then starts afresh)");
  return net.model;
}
#else
[[noreturn]] void fail_without_onnx(const std::string& name) {
  TUNECNN_FAIL("model '", name, "': this build of tunecnn cannot read ONNX files; install Debian's "
               "libonnx-dev and libprotobuf-dev and build again (cmake -DTUNECNN_ONNX=ON)");
}
#endif
}  // namespace

std::shared_ptr<Sequential> build_model(const std::string& name, const ModelOptions& options,
                                        Rng& rng) {
  const MemoryUseScope counted_as(MemoryUse::parameters);
  std::shared_ptr<Sequential> model;
  if (names_onnx_file(name)) {
#ifdef TUNECNN_HAVE_ONNX
    model = build_onnx(name, options);
#else
    fail_without_onnx(name);
#endif
  } else if (const std::optional<MobileNetConfig> config = parse_mobilenet_name(name)) {
    model = build_mobilenet(*config, options, rng);
  } else {
    auto it = fixed_models().find(name);
    if (it == fixed_models().end()) fail_unknown(name);
    model = it->second.build(options, rng);
  }
  use_planners(*model, options.planners);
  return model;
}

bool names_onnx_file(const std::string& name) {
  return name.size() > 5 && name.compare(name.size() - 5, 5, ".onnx") == 0;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : fixed_models()) names.push_back(name);
  names.push_back("mobilenet");
  return names;
}

TrainingDefaults training_defaults(const std::string& name) {
  if (names_onnx_file(name) || parse_mobilenet_name(name)) return {};
  auto it = fixed_models().find(name);
  if (it == fixed_models().end()) fail_unknown(name);
  return it->second.defaults;
}

Shape model_input_shape(const std::string& name) {
  if (names_onnx_file(name)) {
#ifdef TUNECNN_HAVE_ONNX
    return onnx_input_shape(name);
#else
    fail_without_onnx(name);
#endif
  }
  if (const std::optional<MobileNetConfig> config = parse_mobilenet_name(name))
    return {3, config->resolution, config->resolution};
  auto it = fixed_models().find(name);
  if (it == fixed_models().end()) fail_unknown(name);
  return it->second.input;
}

}  // namespace tunecnn
