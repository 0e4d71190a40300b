#include "apps/training/evaluate_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/training/data_sources.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuning_cache.h"
#include "core/checkpoint.h"
#include "core/threading.h"
#include "core/variable.h"
#include "datasets/data_loader.h"
#include "datasets/subset_dataset.h"
#include "models/registry.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {
namespace {

struct Checkpoint {
  std::filesystem::path file;
  CheckpointData data;
  std::string source;  // "checkpoint FILE", for messages
};

Checkpoint read_checkpoint(const CommandLine& cli) {
  if (!cli.has("checkpoint")) throw UsageError("--checkpoint is required (a last.ckpt, or its folder)");
  std::filesystem::path file = cli.get("checkpoint");
  if (std::filesystem::is_directory(file)) file /= "last.ckpt";
  Checkpoint c{file, load_checkpoint(file), "checkpoint " + file.string()};
  TUNECNN_CHECK(c.data.meta.count("format") && c.data.value("format") == "tunecnn-train", c.source,
                " is not a training checkpoint (train --checkpoint-dir writes those)");
  return c;
}

// --NAME, else what the checkpoint records under `key`.
std::string setting(const CommandLine& cli, const Checkpoint& c, const std::string& name, const std::string& key) {
  return cli.has(name) ? cli.get(name) : c.data.value(key);
}

// Plans every conv and pooling layer for inference at `batch` (and the last partial batch).
void plan(Module& model, const Shape& example, std::int64_t batch, std::int64_t examples, const CommandLine& cli) {
  const std::filesystem::path cache = cli.has("tune-cache") ? std::filesystem::path(cli.get("tune-cache"))
                                                            : default_tuning_cache_path();
  auto tuner = std::make_shared<TunedPlanner>(parse_tune_policy(cli.get("tune")), cache, TunerOptions{},
                                              device_identity(Device::cpu).id, device_identity(Device::cpu).fields);
  use_planners(model, Planners::all(tuner));
  NetworkPlanner planner(tuner);
  for (std::int64_t size : {std::min(batch, examples), examples % batch}) {
    if (size == 0) continue;
    Shape input = example;
    input.insert(input.begin(), size);
    planner.plan(model, input, LayerUse::inference);
  }
}

void report(const ClassificationMetrics& m, std::ostream& out) {
  char line[160];
  std::snprintf(line, sizeof line, "%lld examples: loss %.4f, top-1 %.2f%%, top-5 %.2f%%\n",
                static_cast<long long>(m.examples()), m.loss(), 100 * m.top1(), 100 * m.top5());
  out << line << "class  examples  accuracy\n";
  for (int c = 0; c < m.classes(); ++c) {
    std::snprintf(line, sizeof line, "%5d  %8lld  %7.2f%%\n", c, static_cast<long long>(m.class_examples(c)),
                  100 * m.class_accuracy(c));
    out << line;
  }
}

void write_csv(const ClassificationMetrics& m, const std::filesystem::path& file) {
  std::ofstream csv(file);
  TUNECNN_CHECK(csv.good(), "--log ", file.string(), ": cannot write it");
  csv << "class,examples,accuracy\n";
  for (int c = 0; c < m.classes(); ++c) csv << c << "," << m.class_examples(c) << "," << m.class_accuracy(c) << "\n";
  csv << "all," << m.examples() << "," << m.top1() << "\n";
  TUNECNN_CHECK(csv.good(), "--log ", file.string(), ": writing failed");
}

}  // namespace

CommandLine evaluate_command_line() {
  CommandLine cli("evaluate",
                  "Scores a network trained by `train --checkpoint-dir` on a data set's evaluation view (the test "
                  "split; centre crops where the data is cropped): loss, top-1, top-5 and each class's accuracy. "
                  "The model and data set default to those the checkpoint was trained on.\n"
                  "Exit status: 0 scored, 1 error, 2 bad command line.");
  cli.option("checkpoint", "", "the checkpoint: a file (last.ckpt) or the --checkpoint-dir holding it");
  cli.option("model", "", "the network (default: the checkpoint's)");
  cli.option("data", "", "data set: " + data_set_names() + " (default: the checkpoint's)");
  cli.option("data-dir", "", "where the data set is (default: as train's)");
  cli.option("batch-size", "64", "examples per forward pass");
  cli.option("test-limit", "0", "score the first N examples only (0: all)");
  cli.option("threads", "0", "CPU threads (0: all)");
  cli.option("tune", "cached", "conv tuning for the evaluation shapes: off, cached, verify or full (as train's)");
  cli.option("tune-cache", "", "the tuning cache (default: as train's, $TUNECNN_TUNE_CACHE or ~/.cache/tunecnn/tuning.yaml)");
  cli.option("log", "", "CSV file with each class's examples and accuracy, and the total");
  return cli;
}

ClassificationMetrics run_evaluate(const CommandLine& cli, std::ostream& out) {
  const Checkpoint c = read_checkpoint(cli);
  const std::string model_name = setting(cli, c, "model", "model"), data_name = setting(cli, c, "data", "data");
  const int batch = cli.get_int("batch-size"), limit = cli.get_int("test-limit");
  if (batch <= 0) throw UsageError("--batch-size must be positive");
  if (limit < 0) throw UsageError("--test-limit must be 0 or more");
  set_num_threads(cli.get_int("threads"));
  const std::filesystem::path dir = cli.has("data-dir") ? std::filesystem::path(cli.get("data-dir")) : default_data_dir(data_name);
  std::shared_ptr<const Dataset> test = load_data(data_name, dir, model_input_shape(model_name)).test;
  if (limit > 0) test = std::make_shared<SubsetDataset>(test, limit);
  Rng rng(1);
  auto model = build_model(model_name, {.input_shape = test->example_shape(), .num_classes = test->num_classes(),
                                        .dropout_rng = nullptr, .planners = {}}, rng);
  load_module_state(*model, c.data, c.source);
  model->eval();
  plan(*model, test->example_shape(), batch, test->size(), cli);
  out << "evaluating " << c.file.string() << " (" << model_name << ", epoch " << c.data.value("epoch") << ") on "
      << test->describe() << "\n";
  NoGradGuard no_grad;
  DataLoader loader(test, DataLoaderOptions{.batch_size = batch, .shuffle = false, .seed = 0, .shard_rank = 0, .shard_count = 1});
  loader.start_epoch(0);
  ClassificationMetrics metrics(test->num_classes());
  Batch b;
  while (loader.next(b)) {
    if (b.labels.empty()) continue;
    const Variable logits = model->forward(Variable(b.images));
    metrics.add(softmax_cross_entropy(logits, b.labels).data().data<float>()[0], logits.data(), b.labels);
  }
  report(metrics, out);
  if (cli.has("log")) write_csv(metrics, cli.get("log"));
  return metrics;
}

}  // namespace tunecnn
