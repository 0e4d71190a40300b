#include "models/registry.h"

#include <functional>
#include <map>
#include <optional>

#include "core/error.h"
#include "models/alexnet.h"
#include "models/cifar_net.h"
#include "models/lenet.h"
#include "models/mobilenet.h"

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
               "; mobilenet also as mobilenet-W or mobilenet-W-R, e.g. mobilenet-0.5-128)");
}
}  // namespace

std::shared_ptr<Sequential> build_model(const std::string& name, const ModelOptions& options,
                                        Rng& rng) {
  std::shared_ptr<Sequential> model;
  if (const std::optional<MobileNetConfig> config = parse_mobilenet_name(name)) {
    model = build_mobilenet(*config, options, rng);
  } else {
    auto it = fixed_models().find(name);
    if (it == fixed_models().end()) fail_unknown(name);
    model = it->second.build(options, rng);
  }
  use_planners(*model, options.planners);
  return model;
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : fixed_models()) names.push_back(name);
  names.push_back("mobilenet");
  return names;
}

TrainingDefaults training_defaults(const std::string& name) {
  if (parse_mobilenet_name(name)) return {};
  auto it = fixed_models().find(name);
  if (it == fixed_models().end()) fail_unknown(name);
  return it->second.defaults;
}

Shape model_input_shape(const std::string& name) {
  if (const std::optional<MobileNetConfig> config = parse_mobilenet_name(name))
    return {3, config->resolution, config->resolution};
  auto it = fixed_models().find(name);
  if (it == fixed_models().end()) fail_unknown(name);
  return it->second.input;
}

}  // namespace tunecnn
