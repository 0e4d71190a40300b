#include "apps/training/predict_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <sstream>

#include "apps/training/data_sources.h"
#include "apps/training/trained_checkpoint.h"
#include "core/threading.h"
#include "core/variable.h"

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
  add_inference_tuning_options(cli);
  return cli;
}

std::vector<Prediction> run_predict(const CommandLine& cli, std::ostream& out) {
  if (cli.positional().empty()) throw UsageError("name at least one image file (predict [options] IMAGE...)");
  const int k = cli.get_int("top");
  if (k <= 0) throw UsageError("--top must be positive");
  set_num_threads(cli.get_int("threads"));
  const TrainedCheckpoint c = read_trained_checkpoint(cli);
  const ImageFileView view = image_file_view(cli.has("data") ? cli.get("data") : c.data.value("data"), c.example);
  const auto model = c.build_network();
  model->eval();
  plan_for_inference(*model, c.example, {1}, cli);
  const std::vector<std::string> names = class_names(c.data, c.classes);
  NoGradGuard no_grad;
  std::vector<Prediction> predictions;
  for (const std::string& image : cli.positional()) {
    Tensor x = Tensor::empty({1, c.example[0], c.example[1], c.example[2]});
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
