// Runs under `mpirun -np 2` (tests/CMakeLists.txt): data-parallel training against single-process
// training of the same global batch, on the real MNIST files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "apps/training/trainer.h"
#include "core/gradient_allreduce.h"
#include "datasets/data_loader.h"
#include "datasets/mnist.h"
#include "models/registry.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

std::shared_ptr<Communicator>& world() {
  static std::shared_ptr<Communicator> comm = make_communicator();
  return comm;
}

std::shared_ptr<Sequential> lenet() {
  Rng rng(7);  // the same weights on every rank
  return build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
}

// The first `count` MNIST training images as one batch.
Batch mnist_batch(std::int64_t count) {
  auto data = load_mnist(testing::shared_data_dir() / "mnist", MnistSplit::train, "MNIST");
  DataLoader loader(data, DataLoaderOptions{.batch_size = count, .shuffle = false});
  loader.start_epoch(0);
  Batch batch;
  EXPECT_TRUE(loader.next(batch));
  return batch;
}

// Rows [begin, end) of a batch.
Batch slice(const Batch& batch, std::int64_t begin, std::int64_t end) {
  const std::int64_t row = batch.images.numel() / batch.images.shape()[0];
  Batch out;
  out.images = Tensor::empty({end - begin, 1, 28, 28});
  std::copy_n(batch.images.data<float>() + begin * row, (end - begin) * row, out.images.data<float>());
  out.labels.assign(batch.labels.begin() + begin, batch.labels.begin() + end);
  return out;
}

std::vector<std::vector<float>> gradients(const Sequential& model) {
  std::vector<std::vector<float>> grads;
  for (const auto& [name, p] : model.parameters()) {
    const Tensor& g = p.grad();
    grads.emplace_back(g.data<float>(), g.data<float>() + g.numel());
  }
  return grads;
}

std::vector<std::vector<float>> single_process_gradients(const Batch& batch) {
  auto model = lenet();
  softmax_cross_entropy(model->forward(Variable(batch.images)), batch.labels).backward();
  return gradients(*model);
}

// This rank's share of `batch` through GradientAllreduce, as the trainer runs it.
std::vector<std::vector<float>> data_parallel_gradients(const Batch& batch, std::size_t bucket_bytes) {
  Communicator& comm = *world();
  const auto global = static_cast<std::int64_t>(batch.labels.size());
  const auto [begin, end] = shard_slice(global, comm.rank(), comm.size());
  auto model = lenet();
  GradientAllreduce allreduce(model->parameters(), world(), bucket_bytes);
  Variable loss;
  if (end > begin) {
    const Batch mine = slice(batch, begin, end);
    loss = softmax_cross_entropy(model->forward(Variable(mine.images)), mine.labels);
  }
  allreduce.backward(loss, end - begin, global);
  return gradients(*model);
}

void expect_close(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t t = 0; t < got.size(); ++t) {
    ASSERT_EQ(got[t].size(), want[t].size());
    float scale = 1e-3f;
    for (float v : want[t]) scale = std::max(scale, std::abs(v));
    for (std::size_t i = 0; i < got[t].size(); ++i)
      ASSERT_NEAR(got[t][i], want[t][i], 1e-5f * scale) << "parameter " << t << " element " << i;
  }
}

TEST(MpiDataParallel, RunsOnTwoRanks) {
  ASSERT_EQ(world()->size(), 2) << "run this suite with mpirun -np 2";
}

TEST(MpiDataParallel, AveragedGradientsEqualTheSingleProcessGradientOfTheGlobalBatch) {
  const Batch batch = mnist_batch(64);
  const auto want = single_process_gradients(batch);
  expect_close(data_parallel_gradients(batch, GradientAllreduce::kDefaultBucketBytes), want);
  expect_close(data_parallel_gradients(batch, 4096), want);  // many small buckets
}

TEST(MpiDataParallel, UnequalAndEmptySharesStillGiveTheGlobalMean) {
  for (std::int64_t global : {7, 1}) {  // shares 3+4, and 0+1
    SCOPED_TRACE(global);
    const Batch batch = mnist_batch(global);
    expect_close(data_parallel_gradients(batch, GradientAllreduce::kDefaultBucketBytes),
                 single_process_gradients(batch));
  }
}

TEST(MpiDataParallel, CollectivesSumBroadcastAndGather) {
  Communicator& comm = *world();
  double values[2] = {1.0 + comm.rank(), -static_cast<double>(comm.rank())};
  comm.allreduce_sum(values, 2, "test sum");
  EXPECT_EQ(values[0], 3.0);
  EXPECT_EQ(values[1], -1.0);
  double peak[1] = {static_cast<double>(comm.rank())};
  comm.allreduce_max(peak, 1, "test max");
  EXPECT_EQ(peak[0], 1.0);
  std::string text = comm.is_root() ? std::string("from rank 0\n\0binary", 19) : "";
  comm.broadcast(text, 0, "test broadcast");
  EXPECT_EQ(text, std::string("from rank 0\n\0binary", 19));
  const std::vector<std::string> all = comm.gather("rank " + std::to_string(comm.rank()), "test gather");
  if (comm.is_root())
    EXPECT_EQ(all, (std::vector<std::string>{"rank 0", "rank 1"}));
  else
    EXPECT_TRUE(all.empty());
}

TrainOptions mnist_run(std::shared_ptr<Communicator> comm) {
  TrainOptions o;
  o.model = "lenet";
  o.data = "mnist";
  o.data_dir = testing::shared_data_dir() / "mnist";
  o.epochs = 1;
  o.batch_size = 64;
  o.train_limit = 6000;
  o.threads = 1;
  o.quiet = true;
  o.comm = std::move(comm);
  return o;
}

// Same global batches, same order, same weights: only the summation order of the gradients
// differs, so after 94 steps the runs agree to a fraction of a percent.
TEST(MpiDataParallel, TwoProcessTrainingOnRealMnistMatchesOneProcess) {
  std::ostringstream out;
  const TrainResult together = train(mnist_run(world()), out);
  ASSERT_EQ(together.status, TrainStatus::completed) << together.message;
  const TrainResult alone = train(mnist_run(std::make_shared<SingleProcess>()), out);
  ASSERT_EQ(alone.status, TrainStatus::completed) << alone.message;
  const EpochMetrics& a = together.epochs.at(0);
  const EpochMetrics& b = alone.epochs.at(0);
  EXPECT_GT(a.test_acc, 0.9);
  EXPECT_NEAR(a.test_acc, b.test_acc, 0.005);
  EXPECT_NEAR(a.train_loss, b.train_loss, 0.01);
  world()->barrier("end of the training test");
}

// Rank 0 tunes and writes the cache; rank 1 plans from the broadcast entries. The trainer itself
// stops the job if the ranks' plans differ, so completing is the check; the cache holds rank 0's
// entries for the ranks' shapes: 32 each, and 8 each of the last training batch (2000 % 64 = 16).
TEST(MpiDataParallel, RankZeroTunesOnceAndEveryRankRunsItsPlan) {
  Communicator& comm = *world();
  std::unique_ptr<testing::TempDir> dir;
  std::string cache = "";
  if (comm.is_root()) {
    dir = std::make_unique<testing::TempDir>();
    cache = (dir->path() / "tuning.yaml").string();
  }
  comm.broadcast(cache, 0, "test cache path");
  TrainOptions o = mnist_run(world());
  o.train_limit = 2000;
  o.test_limit = 500;
  o.tune = "cached";
  o.tune_cache = cache;
  std::ostringstream out;
  const TrainResult r = train(o, out);
  ASSERT_EQ(r.status, TrainStatus::completed) << r.message;
  comm.barrier("training done");
  if (comm.is_root()) {
    std::ifstream in(cache);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("mb32 "), std::string::npos) << "no entry for the 32-image shares";
    EXPECT_NE(text.str().find("mb8 "), std::string::npos) << "no entry for the last batch's shares";
  }
  comm.barrier("cache checked");
}

}  // namespace
}  // namespace tunecnn
