#include "apps/training/initial_weights.h"

#include <memory>

#include "core/checkpoint.h"
#include "core/error.h"
#include "models/registry.h"
#ifdef TUNECNN_HAVE_ONNX
#include "models/onnx_import.h"
#endif

namespace tunecnn {
namespace {

// The tensors of a training checkpoint named "PREFIX/<name>", in the order they were saved
// (the module's own order, core/checkpoint.cpp add_module_state).
std::vector<NamedTensor> tensors_under(const CheckpointData& data, const std::string& prefix) {
  std::vector<NamedTensor> found;
  for (const auto& [name, tensor] : data.tensors)
    if (name.rfind(prefix, 0) == 0) found.emplace_back(name.substr(prefix.size()), tensor);
  return found;
}

InitialWeights from_checkpoint(std::filesystem::path file) {
  if (std::filesystem::is_directory(file)) file /= "last.ckpt";
  const CheckpointData data = load_checkpoint(file);
  InitialWeights weights{.source = "checkpoint " + file.string(),
                         .parameters = tensors_under(data, "param/"),
                         .buffers = tensors_under(data, "buffer/")};
  TUNECNN_CHECK(data.meta.count("format") && data.value("format") == "tunecnn-train" && !weights.parameters.empty(),
                weights.source, " is not a training checkpoint (train --checkpoint-dir writes those)");
  return weights;
}

InitialWeights from_onnx(const std::filesystem::path& file) {
#ifdef TUNECNN_HAVE_ONNX
  const OnnxNetwork network = import_onnx(file, std::make_shared<Rng>(1));
  InitialWeights weights{.source = "ONNX file " + file.string(), .parameters = {}, .buffers = network.model->buffers()};
  for (const auto& [name, parameter] : network.model->parameters()) weights.parameters.emplace_back(name, parameter.data());
  return weights;
#else
  TUNECNN_FAIL("--init-from ", file.string(), ": this build of tunecnn cannot read ONNX files; install Debian's "
               "libonnx-dev and libprotobuf-dev and build again (cmake -DTUNECNN_ONNX=ON)");
#endif
}

// The classifier: the last parameter with two dims (a fully connected weight) and the ones after
// it (its bias). Its rows are the classes.
std::size_t classifier_start(const std::vector<NamedVariable>& parameters) {
  for (std::size_t i = parameters.size(); i-- > 0;)
    if (parameters[i].second.data().ndim() == 2) return i;
  return parameters.size();
}

bool same_but_rows(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.ndim() != b.ndim() || a.ndim() == 0) return false;
  for (std::size_t d = 1; d < a.shape().size(); ++d)
    if (a.shape()[d] != b.shape()[d]) return false;
  return true;
}

[[noreturn]] void fail_mismatch(const std::string& source, const std::string& theirs, const Tensor& from,
                                const std::string& ours, const Tensor& to) {
  TUNECNN_FAIL("--init-from ", source, ": its '", theirs, "' is ", from.describe(), " but the model's '", ours,
               "' is ", to.describe(), "; it holds another network (only the classifier's class count may differ)");
}

std::string names_from(const std::vector<NamedVariable>& parameters, std::size_t first) {
  std::string names;
  for (std::size_t i = first; i < parameters.size(); ++i) names += (names.empty() ? "" : ", ") + parameters[i].first;
  return names;
}

}  // namespace

InitialWeights read_initial_weights(const std::filesystem::path& file) {
  TUNECNN_CHECK(std::filesystem::exists(file), "--init-from ", file.string(), ": no such file or folder");
  return names_onnx_file(file.string()) ? from_onnx(file) : from_checkpoint(file);
}

std::string load_initial_weights(Module& model, const InitialWeights& weights) {
  const std::vector<NamedVariable> parameters = model.parameters();
  const std::vector<NamedTensor> buffers = model.buffers();
  TUNECNN_CHECK(weights.parameters.size() == parameters.size() && weights.buffers.size() == buffers.size(),
                "--init-from ", weights.source, ": it holds ", weights.parameters.size(), " parameters and ",
                weights.buffers.size(), " buffers, the model ", parameters.size(), " and ", buffers.size(),
                "; it holds another network");
  // Check everything before copying anything: a refused file leaves the model as it was.
  const std::size_t classifier = classifier_start(parameters);
  bool reset_classifier = false;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const Tensor& from = weights.parameters[i].second;
    const Tensor to = parameters[i].second.data();
    if (from.shape() == to.shape() && from.dtype() == to.dtype()) continue;
    if (i < classifier || !same_but_rows(from, to)) fail_mismatch(weights.source, weights.parameters[i].first, from,
                                                                  parameters[i].first, to);
    reset_classifier = true;
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const Tensor& from = weights.buffers[i].second;
    if (from.shape() != buffers[i].second.shape() || from.dtype() != buffers[i].second.dtype())
      fail_mismatch(weights.source, weights.buffers[i].first, from, buffers[i].first, buffers[i].second);
  }
  const std::size_t copied = reset_classifier ? classifier : parameters.size();
  for (std::size_t i = 0; i < copied; ++i) Tensor(parameters[i].second.data()).copy_from(weights.parameters[i].second);
  for (std::size_t i = 0; i < buffers.size(); ++i) Tensor(buffers[i].second).copy_from(weights.buffers[i].second);
  if (!reset_classifier) return "";
  return "the classifier (" + names_from(parameters, classifier) + ") has " +
         std::to_string(parameters[classifier].second.data().shape()[0]) + " classes here but " +
         std::to_string(weights.parameters[classifier].second.shape()[0]) + " in " + weights.source +
         ": it starts from fresh random weights, every other layer from the file";
}

}  // namespace tunecnn
