// AlexNet as the original single tower: its layers in order with LRN after conv1 and conv2, the
// parameter count, a few SGD steps on real imagenette images that lower the loss, dropout in
// training only, and dropout drawing from the RNG the trainer passes in ModelOptions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/sgd.h"
#include "core/tensor_math.h"
#include "datasets/image_folder.h"
#include "models/alexnet.h"
#include "ops/lrn.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::random_tensor;

const Shape kExample{3, 227, 227};

std::shared_ptr<Sequential> alexnet(int classes, std::uint64_t seed,
                                    std::shared_ptr<Rng> dropout_rng = nullptr) {
  Rng rng(seed);
  return build_model("alexnet", ModelOptions{kExample, classes, std::move(dropout_rng), {}}, rng);
}

std::vector<float> values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// conv1-5 and fc6-8 at 1000 classes: 34,944 + 614,656 + 885,120 + 1,327,488 + 884,992 +
// 37,752,832 + 16,781,312 + 4,097,000 parameters; LRN has none. One test: a build takes seconds.
TEST(AlexNet, LayersInOrderWithLrnAfterTheFirstTwoConvsAndTheOriginalParameterCount) {
  auto net = alexnet(1000, 1);
  EXPECT_EQ(parameter_count(*net), 62378344);
  const std::vector<std::string> expected = {
      "conv1", "relu1",    "lrn1",  "pool1", "conv2",    "relu2", "lrn2",  "pool2",
      "conv3", "relu3",    "conv4", "relu4", "conv5",    "relu5", "pool5", "flatten",
      "fc6",   "relu_fc6", "drop6", "fc7",   "relu_fc7", "drop7", "fc8"};
  std::vector<std::string> names;
  for (const auto& [name, child] : net->children()) names.push_back(name);
  EXPECT_EQ(names, expected);
  for (std::size_t i : {2u, 6u}) {
    const auto* lrn = dynamic_cast<const LocalResponseNorm*>(&net->layer(i));
    ASSERT_NE(lrn, nullptr) << names[i];
    EXPECT_EQ(lrn->describe(), "LocalResponseNorm(5, alpha 0.0001, beta 0.75, k 2)");
  }
  EXPECT_EQ(net->layer(net->size() - 1).describe(), "Linear(4096->1000)");
}

// Cross-entropy of the net in evaluation mode (no dropout) on a batch.
double eval_loss(Sequential& net, const Tensor& images, const std::vector<std::int32_t>& labels) {
  NoGradGuard no_grad;
  net.eval();
  const double loss =
      softmax_cross_entropy(net.forward(Variable(images)), labels).data().data<float>()[0];
  net.train();
  return loss;
}

// Eight real photographs of eight classes are a batch SGD must fit quickly. With
// dropout on and 8 images the training loss jumps from step to step (by 2 and more), so the check
// is on the loss without dropout before and after 12 steps: 2.9 -> 0.4 here (seeds 3 and 7: 3.4
// -> 0.6, 2.6 -> 0.8). lr 0.0005: Kaiming-initialised fc layers start at losses of 4-5, and 0.01
// diverges, 0.002 and 0.001 fall too, only less steadily.
TEST(AlexNet, SgdStepsOnRealImagesLowerTheLoss) {
  auto data = load_image_folder(testing::shared_data_dir() / "imagenette-mini", "train",
                                {.side = 227, .warn = {}});
  constexpr int kBatch = 8;
  Tensor images = Tensor::empty({kBatch, 3, 227, 227});
  std::vector<std::int32_t> labels;
  const std::int64_t size = shape_numel(kExample);
  // Examples 0, 20, ..., 140 with 16 per class in file order: classes 0-3 and 5-8.
  for (int i = 0; i < kBatch; ++i)
    labels.push_back(data->get(i * 20, images.data<float>() + i * size));

  auto net = alexnet(data->num_classes(), 11, std::make_shared<Rng>(12));
  const double before = eval_loss(*net, images, labels);
  Sgd sgd(net->parameters(), SgdOptions{.lr = 0.0005, .momentum = 0.9});
  std::vector<double> losses;
  for (int step = 0; step < 12; ++step) {  // 0.5-1 s each on 2 cores
    sgd.zero_grad();
    Variable loss = softmax_cross_entropy(net->forward(Variable(images)), labels);
    losses.push_back(loss.data().data<float>()[0]);
    loss.backward();
    sgd.step();
  }
  for (double l : losses) ASSERT_TRUE(std::isfinite(l)) << ::testing::PrintToString(losses);
  for (const auto& [name, p] : net->parameters()) EXPECT_TRUE(all_finite(p.data())) << name;
  const double after = eval_loss(*net, images, labels);
  EXPECT_LT(after, 0.5 * before) << "training losses: " << ::testing::PrintToString(losses);
}

TEST(AlexNet, DropoutActsInTrainingOnlyAndDrawsFromTheGivenRng) {
  Rng rng(3);
  const Tensor x = random_tensor({1, 3, 227, 227}, rng);
  NoGradGuard no_grad;

  // Two nets built alike, each given an RNG in the same seeded state: the same training forward.
  auto shared_a = std::make_shared<Rng>(42), shared_b = std::make_shared<Rng>(42);
  auto a = alexnet(10, 5, shared_a), b = alexnet(10, 5, shared_b);
  const std::string before = shared_a->state();
  const std::vector<float> train_a = values(a->forward(Variable(x)).data());
  EXPECT_EQ(values(b->forward(Variable(x)).data()), train_a);
  EXPECT_NE(shared_a->state(), before) << "training forward drew nothing from the given RNG";

  // Another state drops other units (the net draws from the given RNG, not from one of its own
  // seeded by the build); so does the next draw from the same RNG.
  EXPECT_NE(values(alexnet(10, 5, std::make_shared<Rng>(43))->forward(Variable(x)).data()),
            train_a);
  EXPECT_NE(values(a->forward(Variable(x)).data()), train_a);

  // Evaluation: no dropout, no draws, the same output twice, and none of the training ones.
  a->eval();
  const std::string at_eval = shared_a->state();
  const std::vector<float> eval = values(a->forward(Variable(x)).data());
  EXPECT_EQ(values(a->forward(Variable(x)).data()), eval);
  EXPECT_EQ(shared_a->state(), at_eval);
  EXPECT_NE(eval, train_a);
}

}  // namespace
}  // namespace tunecnn
