#include "apps/training/predict_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "apps/training/data_sources.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuning_cache.h"
#include "core/checkpoint.h"
#include "core/threading.h"
#include "core/variable.h"
#include "models/registry.h"

namespace tunecnn {
namespace {

std::vector<std::string> class_names(const CheckpointData& data, int classes) {
  std::vector<std::string> names;
  if (data.meta.count("class_names")) {
    std::istringstream lines(data.value("class_names"));
    for (std::string line; std::getline(lines, line);) names.push_back(line);
  }
  if (static_cast<int>(names.size()) != classes) {  // a checkpoint from before names were kept
    names.clear();
    for (int c = 0; c < classes; ++c) names.push_back(std::to_string(c));
  }
  return names;
}

// Softmax of one row of logits, its `k` most likely classes.
std::vector<std::pair<std::string, double>> top_k(const float* logits, const std::vector<std::string>& names, int k) {
  const int n = static_cast<int>(names.size());
  const float peak = *std::max_element(logits, logits + n);
  std::vector<double> p(static_cast<std::size_t>(n));
  for (int c = 0; c < n; ++c) p[c] = std::exp(double(logits[c]) - peak);
  const double sum = std::accumulate(p.begin(), p.end(), 0.0);
  std::vector<int> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  k = std::min(k, n);
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) { return p[a] > p[b]; });
  std::vector<std::pair<std::string, double>> top;
  for (int i = 0; i < k; ++i) top.emplace_back(names[order[i]], p[order[i]] / sum);
  return top;
}

void plan_one_image(Module& model, const Shape& example, const CommandLine& cli) {
  const std::filesystem::path cache = cli.has("tune-cache") ? std::filesystem::path(cli.get("tune-cache"))
                                                            : default_tuning_cache_path();
  const DeviceIdentity device = device_identity(Device::cpu);
  auto tuner = std::make_shared<TunedPlanner>(parse_tune_policy(cli.get("tune")), cache, TunerOptions{}, device.id,
                                              device.fields);
  use_planners(model, Planners::all(tuner));
  Shape input = example;
  input.insert(input.begin(), 1);
  NetworkPlanner(tuner).plan(model, input, LayerUse::inference);
}

}  // namespace

CommandLine predict_command_line() {
  CommandLine cli("predict",
                  "Prints a network's most likely classes for each image, with their names (kept in the checkpoint "
                  "by train; numbers for older checkpoints) and probabilities. Each image is read as the data set "
                  "the network was trained on reads its test examples: the same resize, crop and normalisation "
                  "(grey for MNIST and Fashion-MNIST).\nExit status: 0 predicted, 1 error, 2 bad command line.");
  cli.positionals("IMAGE", "JPEG or PNG files");
  cli.option("checkpoint", "", "the checkpoint: a file (last.ckpt) or the --checkpoint-dir holding it");
  cli.option("model", "", "the network (default: the checkpoint's)");
  cli.option("data", "", "the data set whose reading the images get (default: the checkpoint's)");
  cli.option("top", "5", "classes to print per image");
  cli.option("threads", "0", "CPU threads (0: all)");
  cli.option("tune", "cached", "conv tuning for one image: off, cached, verify or full (as train's)");
  cli.option("tune-cache", "", "the tuning cache (default: as train's)");
  return cli;
}

std::vector<Prediction> run_predict(const CommandLine& cli, std::ostream& out) {
  if (!cli.has("checkpoint")) throw UsageError("--checkpoint is required (a last.ckpt, or its folder)");
  if (cli.positional().empty()) throw UsageError("name at least one image file (predict [options] IMAGE...)");
  const int k = cli.get_int("top");
  if (k <= 0) throw UsageError("--top must be positive");
  set_num_threads(cli.get_int("threads"));
  std::filesystem::path file = cli.get("checkpoint");
  if (std::filesystem::is_directory(file)) file /= "last.ckpt";
  const CheckpointData data = load_checkpoint(file);
  const std::string source = "checkpoint " + file.string();
  TUNECNN_CHECK(data.meta.count("format") && data.value("format") == "tunecnn-train", source,
                " is not a training checkpoint (train --checkpoint-dir writes those)");
  const std::string model_name = cli.has("model") ? cli.get("model") : data.value("model");
  const std::string data_name = cli.has("data") ? cli.get("data") : data.value("data");
  const Shape example = data.meta.count("input") ? parse_chw(data.value("input"), "input") : model_input_shape(model_name);
  TUNECNN_CHECK(data.meta.count("classes"), source, " does not record its classes (written before they were kept)");
  const int classes = std::stoi(data.value("classes"));
  const ImageFileView view = image_file_view(data_name, example);
  Rng rng(1);
  auto model = build_model(model_name, {.input_shape = example, .num_classes = classes, .dropout_rng = nullptr, .planners = {}}, rng);
  load_module_state(*model, data, source);
  model->eval();
  plan_one_image(*model, example, cli);
  const std::vector<std::string> names = class_names(data, classes);
  NoGradGuard no_grad;
  std::vector<Prediction> predictions;
  for (const std::string& image : cli.positional()) {
    Tensor x = Tensor::empty({1, example[0], example[1], example[2]});
    view(image, x.data<float>());
    const Tensor logits = model->forward(Variable(x)).data();
    predictions.push_back({image, top_k(logits.data<float>(), names, k)});
    out << image << "\n";
    for (const auto& [name, p] : predictions.back().top) {
      char line[64];
      std::snprintf(line, sizeof line, "  %6.2f%%  ", 100 * p);
      out << line << name << "\n";
    }
  }
  return predictions;
}

}  // namespace tunecnn
