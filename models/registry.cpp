#include "models/registry.h"

#include <functional>
#include <map>

#include "core/error.h"
#include "models/alexnet.h"
#include "models/cifar_net.h"
#include "models/lenet.h"

namespace tunecnn {
namespace {
using Builder = std::function<std::shared_ptr<Sequential>(const ModelOptions&, Rng&)>;

const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"lenet", build_lenet},
      {"cifar", build_cifar_net},
      {"alexnet", build_alexnet},
  };
  return table;
}
}  // namespace

std::shared_ptr<Sequential> build_model(const std::string& name, const ModelOptions& options, Rng& rng) {
  auto it = builders().find(name);
  if (it == builders().end()) {
    std::string known;
    for (const std::string& n : model_names()) known += (known.empty() ? "" : ", ") + n;
    TUNECNN_FAIL("unknown model '", name, "' (known: ", known, ")");
  }
  return it->second(options, rng);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& [name, builder] : builders()) names.push_back(name);
  return names;
}

}  // namespace tunecnn
