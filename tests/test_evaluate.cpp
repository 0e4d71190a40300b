// `evaluate` (apps/training/evaluate_command.h) scores a checkpoint exactly as `train` scored it at
// the end of its epoch; its per-class counts add up; bad command lines and files are named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/training/classification_metrics.h"
#include "apps/training/evaluate_command.h"
#include "apps/training/trainer.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

ClassificationMetrics evaluate(std::vector<std::string> args, std::string* said = nullptr) {
  std::vector<const char*> argv = {"evaluate"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  CommandLine cli = evaluate_command_line();
  cli.parse(static_cast<int>(argv.size()), argv.data());
  std::ostringstream out;
  ClassificationMetrics m = run_evaluate(cli, out);
  if (said) *said = out.str();
  return m;
}

TEST(Evaluate, ScoresACheckpointAsTrainScoredItsLastEpoch) {
  testing::TempDir dir;
  TrainOptions o;
  o.model = "lenet";
  o.data = "mnist";
  o.data_dir = testing::shared_data_dir() / "mnist";
  o.epochs = 1;
  o.batch_size = 64;
  o.train_limit = 1024;
  o.test_limit = 700;  // a partial last batch
  o.tune = "off";
  o.quiet = true;
  o.checkpoint_dir = dir.path();
  std::ostringstream train_out;
  const TrainResult r = train(o, train_out);
  ASSERT_EQ(r.status, TrainStatus::completed) << r.message;
  std::string said;
  const ClassificationMetrics m =
      evaluate({"--checkpoint", dir.path().string(), "--data-dir", o.data_dir.string(), "--test-limit", "700",
                "--tune", "off", "--log", (dir.path() / "classes.csv").string()},
               &said);
  EXPECT_EQ(m.examples(), 700);
  EXPECT_NEAR(m.top1(), r.epochs[0].test_acc, 1e-12);
  EXPECT_NEAR(m.top5(), r.epochs[0].test_top5, 1e-12);
  EXPECT_NEAR(m.loss(), r.epochs[0].test_loss, 1e-6 * r.epochs[0].test_loss);
  EXPECT_NE(said.find("700 examples"), std::string::npos) << said;
  std::int64_t total = 0;
  double correct = 0;
  for (int c = 0; c < m.classes(); ++c) {
    total += m.class_examples(c);
    correct += m.class_accuracy(c) * static_cast<double>(m.class_examples(c));
  }
  EXPECT_EQ(total, 700);
  EXPECT_NEAR(correct / 700, m.top1(), 1e-9);
  std::ifstream csv(dir.path() / "classes.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "class,examples,accuracy");
}

TEST(Evaluate, CountsTopOneTopFiveAndEachClass) {
  ClassificationMetrics m(6);
  // Row 0: label 2 scores highest; row 1: label 5 is 6th of 6; row 2: label 0 is 2nd.
  const Tensor logits = Tensor::from_vector(std::vector<float>{0, 1, 9, 2, 3, 4,  //
                                             6, 5, 4, 3, 2, 1,  //
                                             7, 1, 1, 8, 1, 1},
                                            {3, 6});
  m.add(1.5, logits, {2, 5, 0});
  EXPECT_EQ(m.examples(), 3);
  EXPECT_DOUBLE_EQ(m.loss(), 1.5);
  EXPECT_DOUBLE_EQ(m.top1(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(m.top5(), 2.0 / 3);
  EXPECT_DOUBLE_EQ(m.class_accuracy(2), 1.0);
  EXPECT_DOUBLE_EQ(m.class_accuracy(5), 0.0);
  EXPECT_EQ(m.class_examples(1), 0);
}

TEST(Evaluate, BadCommandLinesAndFilesAreNamed) {
  EXPECT_THROW(evaluate({}), UsageError);
  testing::TempDir dir;
  const fs::path junk = dir.path() / "last.ckpt";
  std::ofstream(junk) << "not a checkpoint";
  testing::expect_error([&] { evaluate({"--checkpoint", junk.string()}); }, {junk.string()});
}

}  // namespace
}  // namespace tunecnn
