#include "apps/training/trained_checkpoint.h"

#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuning_cache.h"
#include "autotune/tuning_cache_layers.h"
#include "core/init.h"
#include "models/registry.h"

namespace tunecnn {
namespace {

// The classes of a checkpoint written before they were kept in it: the rows of its last
// parameter with two dims (the classifier's weight).
int classes_of(const CheckpointData& data, const std::string& source) {
  if (data.meta.count("classes")) return std::stoi(data.value("classes"));
  int classes = 0;
  for (const auto& [name, tensor] : data.tensors)
    if (name.rfind("param/", 0) == 0 && tensor.shape().size() == 2) classes = static_cast<int>(tensor.shape()[0]);
  TUNECNN_CHECK(classes > 0, source, " has no fully connected layer to read the class count from");
  return classes;
}

// The example shape the checkpoint records ("1,28,28"), else the model's own.
Shape example_of(const CheckpointData& data, const std::string& model, const std::string& source) {
  if (!data.meta.count("input")) return model_input_shape(model);
  try {
    return parse_chw(data.value("input"), "input");
  } catch (const Error& e) {
    TUNECNN_FAIL(source, ": its input shape: ", e.message());
  }
}

}  // namespace

TrainedCheckpoint read_trained_checkpoint(const CommandLine& cli) {
  if (!cli.has("checkpoint")) throw UsageError("--checkpoint is required (a last.ckpt, or its folder)");
  TrainedCheckpoint c;
  c.file = cli.get("checkpoint");
  if (std::filesystem::is_directory(c.file)) c.file /= "last.ckpt";
  c.data = load_checkpoint(c.file);
  c.source = "checkpoint " + c.file.string();
  TUNECNN_CHECK(c.data.meta.count("format") && c.data.value("format") == "tunecnn-train", c.source,
                " is not a training checkpoint (train --checkpoint-dir writes those)");
  c.model = cli.has("model") ? cli.get("model") : c.data.value("model");
  c.example = example_of(c.data, c.model, c.source);
  c.classes = classes_of(c.data, c.source);
  return c;
}

std::shared_ptr<Sequential> TrainedCheckpoint::build_network() const {
  Rng rng(1);
  std::shared_ptr<Sequential> network;
  {
    // load_module_state overwrites every parameter (or fails): no weights to draw first.
    const NoWeightInitGuard weights_from_the_checkpoint;
    network = build_model(model, {.input_shape = example, .num_classes = classes, .dropout_rng = nullptr, .planners = {}}, rng);
  }
  load_module_state(*network, data, source);
  return network;
}

void add_inference_tuning_options(CommandLine& cli) {
  cli.option("tune", "cached", "conv tuning for the inference shapes: off, cached, verify or full (as train's)");
  cli.option("tune-cache", "", "the tuning cache (default: as train's, $TUNECNN_TUNE_CACHE or ~/.cache/tunecnn/tuning.yaml), "
                               "read over the read-only system cache as train reads it");
}

void plan_for_inference(Module& model, const Shape& example, const std::set<std::int64_t>& batch_sizes,
                        const CommandLine& cli) {
  const std::filesystem::path cache = cli.has("tune-cache") ? std::filesystem::path(cli.get("tune-cache"))
                                                            : default_tuning_cache_path();
  const DeviceIdentity device = device_identity(Device::cpu);
  auto tuner = std::make_shared<TunedPlanner>(parse_tune_policy(cli.get("tune")), cache, TunerOptions{}, device.id,
                                              device.fields, default_system_tuning_cache_path());
  use_planners(model, Planners::all(tuner));
  NetworkPlanner planner(tuner);
  for (std::int64_t size : batch_sizes) {
    if (size == 0) continue;
    Shape input = example;
    input.insert(input.begin(), size);
    planner.plan(model, input, LayerUse::inference);
  }
}

}  // namespace tunecnn
