// The model builders: each model's conv layers have exactly the shapes conv_layers.txt lists for
// its set (the shapes `bench conv` and the tuner measure), outputs are [batch, classes], the cifar
// net's classifier is TensorFlow's and it trains a step without NaNs, and a wrong input shape is
// refused with the expected one named.
// The registry: its names, each model's own input shape, unknown names. MobileNet and AlexNet
// themselves are in test_mobilenet.cpp and test_alexnet.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/sgd.h"
#include "core/tensor_math.h"
#include "models/conv_layers.h"
#include "models/registry.h"
#include "ops/conv/conv2d.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::random_tensor;

ModelOptions options_for(const Shape& input, int classes = 10) {
  ModelOptions o;
  o.input_shape = input;
  o.num_classes = classes;
  return o;
}

Shape batched(const Shape& example, std::int64_t batch) {
  Shape s = example;
  s.insert(s.begin(), batch);
  return s;
}

std::string error_of(const std::string& model, const ModelOptions& options) {
  Rng rng(1);
  try {
    build_model(model, options, rng);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Each Conv2d's name and the forward problem it planned for, in network order.
std::vector<std::pair<std::string, ConvProblem>> traced_convs(Sequential& net) {
  std::vector<std::pair<std::string, ConvProblem>> convs;
  for (const auto& [name, child] : net.children()) {
    const auto* conv = dynamic_cast<const Conv2d*>(child.get());
    if (!conv) continue;
    const auto plans = conv->plans();
    EXPECT_EQ(plans.size(), 1u) << name << " saw more than one input shape";
    if (!plans.empty()) convs.emplace_back(name, plans.front().first);
  }
  return convs;
}

// Runs one forward pass at `batch`, then compares the conv layers with the rows of `set`.
void expect_conv_layers_match(const std::string& model, const Shape& example, int batch) {
  Rng rng(7);
  auto net = build_model(model, options_for(example), rng);
  net->eval();
  Variable y = net->forward(Variable(random_tensor(batched(example, batch), rng)));
  EXPECT_EQ(y.shape(), (Shape{batch, 10}));
  EXPECT_TRUE(all_finite(y.data()));

  const auto convs = traced_convs(*net);
  const std::vector<ConvLayer> rows = conv_layer_set(model, batch);
  ASSERT_EQ(convs.size(), rows.size()) << model << " has a different number of conv layers";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(convs[i].first, rows[i].name);
    EXPECT_EQ(convs[i].second.key(), rows[i].problem.key()) << model << " " << rows[i].name;
  }
}

TEST(Models, RegistryKnowsAllFour) {
  const std::vector<std::string> names = model_names();
  for (const char* name : {"lenet", "cifar", "alexnet", "mobilenet"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
}

TEST(Models, EachModelNamesItsOwnInputShape) {
  EXPECT_EQ(model_input_shape("lenet"), (Shape{1, 28, 28}));
  EXPECT_EQ(model_input_shape("cifar"), (Shape{3, 24, 24}));
  EXPECT_EQ(model_input_shape("alexnet"), (Shape{3, 227, 227}));
  EXPECT_EQ(model_input_shape("mobilenet"), (Shape{3, 224, 224}));
  EXPECT_EQ(model_input_shape("mobilenet-0.5"), (Shape{3, 224, 224}));
  EXPECT_EQ(model_input_shape("mobilenet-0.25-128"), (Shape{3, 128, 128}));
  EXPECT_EQ(model_input_shape("mobilenet-0.75-192"), (Shape{3, 192, 192}));
  // Every listed model builds at its own shape.
  for (const std::string& name : model_names())
    EXPECT_EQ(error_of(name, options_for(model_input_shape(name))), "no error") << name;
}

TEST(Models, EveryMobileNetNameBuildsAndABadOneSaysWhy) {
  for (const char* width : {"1.0", "0.75", "0.5", "0.25"})
    for (const char* side : {"224", "192", "160", "128"}) {
      const std::string name = std::string("mobilenet-") + width + "-" + side;
      EXPECT_EQ(error_of(name, options_for(model_input_shape(name))), "no error") << name;
    }
  const std::string bad = error_of("mobilenet-0.3-128", options_for({3, 128, 128}));
  EXPECT_NE(bad.find("unsupported width 0.3"), std::string::npos) << bad;
}

std::string input_shape_error(const std::string& model) {
  try {
    model_input_shape(model);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Models, UnknownModelIsAnErrorListingTheKnownOnes) {
  for (const std::string& message :
       {error_of("resnet", options_for({3, 224, 224})), input_shape_error("resnet")}) {
    EXPECT_NE(message.find("unknown model 'resnet'"), std::string::npos) << message;
    EXPECT_NE(message.find("alexnet, cifar, lenet, mobilenet"), std::string::npos) << message;
    EXPECT_NE(message.find("mobilenet-0.5-128"), std::string::npos) << message;
  }
}

TEST(Models, CifarConvLayersMatchTheShapesFile) {
  expect_conv_layers_match("cifar", {3, 24, 24}, 4);
}

TEST(Models, AlexnetConvLayersMatchTheShapesFile) {
  expect_conv_layers_match("alexnet", {3, 227, 227}, 1);  // batch 1 keeps it fast
}

TEST(Models, CifarOutputFollowsTheClassCount) {
  Rng rng(3);
  auto net = build_model("cifar", options_for({3, 24, 24}, 7), rng);
  Variable y = net->forward(Variable(random_tensor({2, 3, 24, 24}, rng)));
  EXPECT_EQ(y.shape(), (Shape{2, 7}));
}

// TensorFlow's CIFAR-10 tutorial classifier on the conv part: 2304 -> 384 -> 192 -> classes.
// Parameters: conv1 4,864 + conv2 102,464 + fc3 885,120 + fc4 73,920 + fc5 1,930 at 10 classes.
TEST(Models, CifarClassifierIsTensorFlowsTutorialOne) {
  Rng rng(4);
  auto net = build_model("cifar", options_for({3, 24, 24}), rng);
  const std::vector<std::string> expected = {"conv1",    "relu1", "pool1",    "conv2",
                                             "relu2",    "pool2", "flatten",  "fc3",
                                             "relu_fc3", "fc4",   "relu_fc4", "fc5"};
  std::vector<std::string> names;
  for (const auto& [name, child] : net->children()) names.push_back(name);
  ASSERT_EQ(names, expected);
  EXPECT_EQ(net->layer(7).describe(), "Linear(2304->384)");
  EXPECT_EQ(net->layer(9).describe(), "Linear(384->192)");
  EXPECT_EQ(net->layer(11).describe(), "Linear(192->10)");
  EXPECT_EQ(parameter_count(*net), 1068298);
}

TEST(Models, CifarTrainingStepsStayFiniteAndLowerTheLoss) {
  Rng rng(5);
  auto net = build_model("cifar", options_for({3, 24, 24}), rng);
  // lr 0.002: with the two hidden layers 0.01 overshoots on 8 random images and the loss climbs
  // for a few steps before it falls.
  Sgd sgd(net->parameters(), SgdOptions{.lr = 0.002, .momentum = 0.9});
  const Tensor x = random_tensor({8, 3, 24, 24}, rng);
  const std::vector<std::int32_t> labels{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<double> losses;
  for (int step = 0; step < 5; ++step) {  // the same tiny batch: SGD must fit it a little
    sgd.zero_grad();
    Variable loss = softmax_cross_entropy(net->forward(Variable(x)), labels);
    losses.push_back(loss.data().data<float>()[0]);
    loss.backward();
    sgd.step();
  }
  for (const auto& [name, p] : net->parameters()) {
    EXPECT_TRUE(all_finite(p.data())) << name;
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    EXPECT_TRUE(all_finite(p.grad())) << name;
  }
  for (double l : losses) EXPECT_TRUE(std::isfinite(l));
  EXPECT_LT(losses.back(), losses.front());
}

TEST(Models, WrongInputShapeNamesTheExpectedOne) {
  EXPECT_NE(error_of("cifar", options_for({3, 32, 32})).find("[3, 24, 24]"), std::string::npos)
      << error_of("cifar", options_for({3, 32, 32}));
  EXPECT_NE(error_of("cifar", options_for({1, 28, 28})).find("got [1, 28, 28]"), std::string::npos);
  EXPECT_NE(error_of("alexnet", options_for({3, 224, 224})).find("[3, 227, 227]"),
            std::string::npos)
      << error_of("alexnet", options_for({3, 224, 224}));
}

// Counts the problems it is asked for and answers with the untuned default.
struct CountingPlanners {
  struct Conv final : ConvPlanner {
    ConvLayerPlan plan(const ConvProblem& p) override {
      keys.push_back(p.key());
      return FirstApplicablePlanner().plan(p);
    }
    std::vector<std::string> keys;
  };
  struct Pool final : PoolPlanner {
    PoolLayerPlan plan(const PoolProblem& p, Layout layout) override {
      keys.push_back(p.key());
      return FirstApplicablePoolPlanner().plan(p, layout);
    }
    std::vector<std::string> keys;
  };
  std::shared_ptr<Conv> conv = std::make_shared<Conv>();
  std::shared_ptr<Pool> pool = std::make_shared<Pool>();
  Planners planners() const { return {conv, pool, std::make_shared<FirstApplicableSoftmaxPlanner>()}; }
};

TEST(Models, EachModelAsksOnlyThePlannersItWasBuiltWith) {
  CountingPlanners first, second;
  ModelOptions a = options_for({1, 28, 28}), b = options_for({1, 28, 28});
  a.planners = first.planners();
  b.planners = second.planners();
  Rng rng(3);
  auto model_a = build_model("lenet", a, rng);
  auto model_b = build_model("lenet", b, rng);
  auto untuned = build_model("lenet", options_for({1, 28, 28}), rng);
  const Variable x(random_tensor({2, 1, 28, 28}, rng));
  model_a->forward(x);
  model_a->forward(x);  // planned once per shape
  EXPECT_EQ(first.conv->keys.size(), 2u);  // conv1, conv2
  EXPECT_EQ(first.pool->keys.size(), 4u);  // pool1, pool2, each forward: pooling asks per call
  EXPECT_TRUE(second.conv->keys.empty());
  model_b->forward(Variable(random_tensor({3, 1, 28, 28}, rng)));
  untuned->forward(x);
  EXPECT_EQ(first.conv->keys.size(), 2u);
  ASSERT_EQ(second.conv->keys.size(), 2u);
  EXPECT_NE(second.conv->keys[0].find("mb3"), std::string::npos) << second.conv->keys[0];
  EXPECT_EQ(second.pool->keys.size(), 2u);
}
}  // namespace
}  // namespace tunecnn
