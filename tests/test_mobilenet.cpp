// MobileNet v1: the names it is known by, its layers one by one, output shapes at each
// resolution, the parameter count of the published model, a few SGD steps on real imagenette
// images that lower the loss, `train --data imagenet` cropping to the model's side, and the
// network planner leaving its BatchNorm statistics alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "apps/training/trainer.h"
#include "autotune/network_planner.h"
#include "core/sgd.h"
#include "core/tensor_math.h"
#include "datasets/image_folder.h"
#include "models/mobilenet.h"
#include "ops/conv/conv2d.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/test_data.h"
#include "tests/support/tuner_harness.h"

namespace tunecnn {
namespace {

using testing::random_tensor;

std::shared_ptr<Sequential> mobilenet(const std::string& name, const Shape& input, int classes = 10,
                                      std::uint64_t seed = 1) {
  Rng rng(seed);
  return build_model(name, ModelOptions{input, classes, {}, {}}, rng);
}

std::string parse_error(const std::string& name) {
  try {
    parse_mobilenet_name(name);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Each conv layer's name and the forward problem it planned for, in network order.
std::vector<std::pair<std::string, ConvProblem>> conv_problems(Sequential& net) {
  std::vector<std::pair<std::string, ConvProblem>> out;
  for (const auto& [name, child] : net.children())
    if (const auto* conv = dynamic_cast<const Conv2d*>(child.get()))
      for (const auto& [problem, plan] : conv->plans()) out.emplace_back(name, problem);
  return out;
}

TEST(MobileNetName, ValidNamesGiveWidthAndResolution) {
  const struct {
    const char* name;
    double width;
    int resolution;
  } cases[] = {{"mobilenet", 1.0, 224},           {"mobilenet-0.5", 0.5, 224},
               {"mobilenet-0.25-128", 0.25, 128}, {"mobilenet-0.75-192", 0.75, 192},
               {"mobilenet-1.0-160", 1.0, 160},   {"mobilenet-1-224", 1.0, 224}};
  for (const auto& c : cases) {
    const std::optional<MobileNetConfig> config = parse_mobilenet_name(c.name);
    ASSERT_TRUE(config.has_value()) << c.name;
    EXPECT_EQ(config->width, c.width) << c.name;
    EXPECT_EQ(config->resolution, c.resolution) << c.name;
  }
}

TEST(MobileNetName, OtherModelsAreNotMobileNets) {
  for (const char* name :
       {"lenet", "alexnet", "", "mobile", "mobilenetv2", "MobileNet", "xmobilenet"})
    EXPECT_FALSE(parse_mobilenet_name(name).has_value()) << name;
}

TEST(MobileNetName, BadWidthOrResolutionNamesTheAllowedValues) {
  const struct {
    const char* name;
    const char* says;
  } cases[] = {{"mobilenet-", "width '' is not a number"},
               {"mobilenet-abc", "width 'abc' is not a number"},
               {"mobilenet-0.3", "unsupported width 0.3"},
               {"mobilenet-2.0-224", "unsupported width 2.0"},
               {"mobilenet-0.5-", "resolution '' is not a whole number"},
               {"mobilenet-0.5-12x", "resolution '12x' is not a whole number"},
               {"mobilenet-0.5-128-1", "resolution '128-1' is not a whole number"},
               {"mobilenet-0.5-100", "unsupported resolution 100"},
               {"mobilenet-0.5-224.0", "resolution '224.0' is not a whole number"}};
  for (const auto& c : cases) {
    const std::string message = parse_error(c.name);
    EXPECT_NE(message.find(std::string("model '") + c.name + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(c.says), std::string::npos) << message;
    EXPECT_NE(message.find("1.0, 0.75, 0.5, 0.25"), std::string::npos) << message;
    EXPECT_NE(message.find("224, 192, 160, 128"), std::string::npos) << message;
  }
}

// 4,231,976 is torchvision-style MobileNet v1 with BatchNorm at 1000 classes: conv weights
// 864 + 44,640 depthwise + 3,139,584 pointwise, BatchNorm gamma and beta 2 x 10,912, and the
// classifier 1024 x 1000 + 1000. Running statistics are buffers, not parameters.
TEST(MobileNet, ParameterCountsMatchThePublishedModels) {
  EXPECT_EQ(parameter_count(*mobilenet("mobilenet", {3, 224, 224}, 1000)), 4231976);
  // The paper's Table 6: 0.75 -> 2.6M, 0.5 -> 1.3M, 0.25 -> 0.47M (resolution changes nothing).
  EXPECT_EQ(parameter_count(*mobilenet("mobilenet-0.25-128", {3, 128, 128}, 1000)), 470072);
  EXPECT_NEAR(parameter_count(*mobilenet("mobilenet-0.5-160", {3, 160, 160}, 1000)) / 1e6, 1.3,
              0.05);
  EXPECT_NEAR(parameter_count(*mobilenet("mobilenet-0.75", {3, 224, 224}, 1000)) / 1e6, 2.6, 0.05);
}

TEST(MobileNet, LayersAreFlatAndNamedPerBlock) {
  auto net = mobilenet("mobilenet", {3, 224, 224});
  std::vector<std::string> expected = {"conv0", "bn0", "relu0"};
  for (int b = 1; b <= 13; ++b)
    for (const char* kind : {"dw", "pw"}) {
      const std::string n = kind + std::to_string(b);
      expected.insert(expected.end(), {n, "bn_" + n, "relu_" + n});
    }
  expected.insert(expected.end(), {"pool", "fc"});
  std::vector<std::string> names;
  for (const auto& [name, child] : net->children()) names.push_back(name);
  EXPECT_EQ(names, expected);

  const std::vector<std::string> first_block = {
      "Conv2d(3->32, 3x3, stride 2, pad 1, no bias)",
      "BatchNorm2d(32)",
      "ReLU6",
      "Conv2d(32->32, 3x3, stride 1, pad 1, groups 32, no bias)",
      "BatchNorm2d(32)",
      "ReLU6",
      "Conv2d(32->64, 1x1, stride 1, pad 0, no bias)",
      "BatchNorm2d(64)",
      "ReLU6",
      "Conv2d(64->64, 3x3, stride 2, pad 1, groups 64, no bias)"};
  for (std::size_t i = 0; i < first_block.size(); ++i)
    EXPECT_EQ(net->layer(i).describe(), first_block[i]) << names[i];
  EXPECT_EQ(net->layer(names.size() - 2).describe(), "GlobalAvgPool");
  EXPECT_EQ(net->layer(names.size() - 1).describe(), "Linear(1024->10)");
}

// TensorFlow-slim's rounding: max(int(c * width), 8).
TEST(MobileNet, WidthScalesEveryChannelCount) {
  auto net = mobilenet("mobilenet-0.25-128", {3, 128, 128});
  EXPECT_EQ(net->layer(0).describe(), "Conv2d(3->8, 3x3, stride 2, pad 1, no bias)");
  EXPECT_EQ(net->layer(6).describe(), "Conv2d(8->16, 1x1, stride 1, pad 0, no bias)");
  EXPECT_EQ(net->layer(net->size() - 1).describe(), "Linear(256->10)");
  auto half = mobilenet("mobilenet-0.75", {3, 224, 224});
  EXPECT_EQ(half->layer(0).describe(), "Conv2d(3->24, 3x3, stride 2, pad 1, no bias)");
  EXPECT_EQ(half->layer(half->size() - 1).describe(), "Linear(768->10)");
}

TEST(MobileNet, OutputShapesAtEachResolution) {
  const struct {
    const char* name;
    std::int64_t side, batch, last_side;
  } cases[] = {{"mobilenet", 224, 1, 7},
               {"mobilenet-0.25-128", 128, 2, 4},
               {"mobilenet-0.5-160", 160, 2, 5}};
  for (const auto& c : cases) {
    const Shape example = model_input_shape(c.name);
    ASSERT_EQ(example, (Shape{3, c.side, c.side})) << c.name;
    auto net = mobilenet(c.name, example, 10, 3);
    net->eval();
    NoGradGuard no_grad;
    Rng rng(4);
    Variable y = net->forward(Variable(random_tensor({c.batch, 3, c.side, c.side}, rng)));
    EXPECT_EQ(y.shape(), (Shape{c.batch, 10})) << c.name;
    EXPECT_TRUE(all_finite(y.data())) << c.name;
    const auto convs = conv_problems(*net);
    ASSERT_EQ(convs.size(), 27u) << c.name;
    for (const auto& [name, problem] : convs)
      if (name.rfind("dw", 0) == 0) {
        EXPECT_EQ(problem.g, problem.ic) << c.name << " " << name;
      }
    EXPECT_EQ(convs.back().first, "pw13");
    EXPECT_EQ(convs.back().second.ih, c.last_side) << c.name;
  }
}

TEST(MobileNet, InputMustHaveThreeChannelsAndSidesOfAtLeast32) {
  Rng rng(1);
  const auto message = [&](const Shape& input) {
    try {
      build_model("mobilenet-0.25-128", ModelOptions{input, 10, {}, {}}, rng);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  for (const Shape& bad : {Shape{1, 28, 28}, Shape{3, 16, 64}, Shape{3, 64}}) {
    EXPECT_NE(message(bad).find("3 channels and sides of at least 32"), std::string::npos)
        << message(bad);
    EXPECT_NE(message(bad).find("built for [3, 128, 128]"), std::string::npos) << message(bad);
  }
  EXPECT_EQ(message({3, 96, 64}), "no error");  // any side, as the header says
}

// A fixed batch of 16 real photographs, one or two of each class: SGD must fit it quickly. The
// first dozen steps wander near ln 10 (BatchNorm on 16 images, a fresh net), so the check is on
// the best of the last five of 30 steps: about 0.1 here, against 2.3 at the start.
TEST(MobileNet, SgdStepsOnRealImagesLowerTheLoss) {
  const Shape example = model_input_shape("mobilenet-0.25-128");
  auto data = load_image_folder(testing::shared_data_dir() / "imagenette-mini", "train",
                                {.side = static_cast<int>(example[1]), .warn = {}});
  constexpr int kBatch = 16;
  Tensor images = Tensor::empty({kBatch, 3, example[1], example[2]});
  std::vector<std::int32_t> labels;
  const std::int64_t size = shape_numel(example);
  for (int i = 0; i < kBatch; ++i)  // examples 0, 10, ..., 150: 16 per class in file order
    labels.push_back(data->get(i * 10, images.data<float>() + i * size));

  auto net = mobilenet("mobilenet-0.25-128", example, data->num_classes(), 11);
  Sgd sgd(net->parameters(), SgdOptions{.lr = 0.1, .momentum = 0.9});
  std::vector<double> losses;
  for (int step = 0; step < 30; ++step) {  // ~0.05 s each on 2 cores
    sgd.zero_grad();
    Variable loss = softmax_cross_entropy(net->forward(Variable(images)), labels);
    losses.push_back(loss.data().data<float>()[0]);
    loss.backward();
    sgd.step();
  }
  for (double l : losses) ASSERT_TRUE(std::isfinite(l));
  for (const auto& [name, p] : net->parameters()) EXPECT_TRUE(all_finite(p.data())) << name;
  EXPECT_LT(*std::min_element(losses.end() - 5, losses.end()), 0.5 * losses.front())
      << "losses: " << ::testing::PrintToString(losses);
}

// Shape tracing runs the model on zeros; in training mode BatchNorm would fold them into its
// running statistics. The planner must leave them, and every module's mode, as they were.
TEST(MobileNet, PlanningLeavesBatchNormStatisticsAndModesAlone) {
  testing::TempDir dir;
  testing::TunerHarness h;
  auto net = mobilenet("mobilenet-0.25-128", {3, 128, 128});
  Rng rng(2);
  {
    // Move the statistics off their initial zeros and ones, so a reset would show too.
    NoGradGuard no_grad;
    net->forward(Variable(random_tensor({2, 3, 128, 128}, rng, DType::f32, 0.0, 2.0)));
  }
  net->layer(1).eval();  // bn0 alone in evaluation mode: a mixed tree must come back mixed
  std::vector<std::vector<float>> before;
  for (const auto& [name, buffer] : net->buffers())
    before.emplace_back(buffer.data<float>(), buffer.data<float>() + buffer.numel());

  NetworkPlanner(h.planner(TunePolicy::off, dir.path() / "tuning.yaml"))
      .plan(*net, {4, 3, 128, 128});

  const auto buffers = net->buffers();
  ASSERT_EQ(buffers.size(), before.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const float* now = buffers[i].second.data<float>();
    EXPECT_TRUE(std::equal(before[i].begin(), before[i].end(), now)) << buffers[i].first;
  }
  EXPECT_TRUE(net->is_training());
  EXPECT_FALSE(net->layer(1).is_training());
  for (std::size_t i = 2; i < net->size(); ++i) EXPECT_TRUE(net->layer(i).is_training()) << i;
}

// The trainer takes the crop side from the model: 128 for mobilenet-0.25-128.
TEST(MobileNet, TrainerRunsOnAnImageFolderAtTheModelsSide) {
  TrainOptions o;
  o.model = "mobilenet-0.25-128";
  o.data = "imagenet";
  o.data_dir = testing::shared_data_dir() / "imagenette-mini";
  o.epochs = 1;
  o.batch_size = 16;
  o.train_limit = 64;
  o.quiet = false;
  std::ostringstream out;
  const TrainResult r = train(o, out);
  ASSERT_EQ(r.status, TrainStatus::completed) << r.message;
  ASSERT_EQ(r.epochs.size(), 1u);
  EXPECT_TRUE(std::isfinite(r.epochs[0].train_loss));
  EXPECT_TRUE(std::isfinite(r.epochs[0].test_loss));
  EXPECT_NE(out.str().find("imagenette-mini train, 160 images, 10 classes, crops 3x128x128 from "
                           "shorter side 146, 0 skipped"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("imagenette-mini val, 40 images, 10 classes, crops 3x128x128"),
            std::string::npos);

  o.data_dir.clear();
  try {
    train(o, out);
    ADD_FAILURE() << "no error without --data-dir";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--data imagenet needs --data-dir DIR, a folder holding "
                                         "train/ and val/"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tunecnn
