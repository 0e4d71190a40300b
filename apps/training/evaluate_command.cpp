#include "apps/training/evaluate_command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "apps/training/data_sources.h"
#include "apps/training/trained_checkpoint.h"
#include "core/threading.h"
#include "core/variable.h"
#include "datasets/data_loader.h"
#include "datasets/subset_dataset.h"
#include "models/registry.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {
namespace {

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
  add_inference_tuning_options(cli);
  cli.option("log", "", "CSV file with each class's examples and accuracy, and the total");
  return cli;
}

ClassificationMetrics run_evaluate(const CommandLine& cli, std::ostream& out) {
  const TrainedCheckpoint c = read_trained_checkpoint(cli);
  const std::string data_name = cli.has("data") ? cli.get("data") : c.data.value("data");
  const int batch = cli.get_int("batch-size"), limit = cli.get_int("test-limit");
  if (batch <= 0) throw UsageError("--batch-size must be positive");
  if (limit < 0) throw UsageError("--test-limit must be 0 or more");
  set_num_threads(cli.get_int("threads"));
  const std::filesystem::path dir = cli.has("data-dir") ? std::filesystem::path(cli.get("data-dir")) : default_data_dir(data_name);
  std::shared_ptr<const Dataset> test = load_data(data_name, dir, model_input_shape(c.model)).test;
  if (limit > 0) test = std::make_shared<SubsetDataset>(test, limit);
  TUNECNN_CHECK(test->example_shape() == c.example && test->num_classes() == c.classes, c.source, " holds a network for ",
                c.classes, " classes of ", shape_str(c.example), " examples; ", test->describe(), " has ",
                test->num_classes(), " of ", shape_str(test->example_shape()));
  const auto model = c.build_network();
  model->eval();
  plan_for_inference(*model, c.example, {std::min<std::int64_t>(batch, test->size()), test->size() % batch}, cli);
  out << "evaluating " << c.file.string() << " (" << c.model << ", epoch " << c.data.value("epoch") << ") on "
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
