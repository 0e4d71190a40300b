// `train --init-from` (apps/training/initial_weights.h): weights from a checkpoint or an ONNX file
// land in the model in order; a classifier for another class count starts afresh and is named;
// another network is refused naming both tensors, leaving the model as it was; and a training
// run started from a checkpoint at learning rate 0 ends with exactly the checkpoint's weights.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "apps/training/initial_weights.h"
#include "apps/training/trainer.h"
#include "core/checkpoint.h"
#include "core/tensor_math.h"
#include "models/registry.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"
#ifdef TUNECNN_HAVE_ONNX
#include "models/onnx_export.h"
#endif

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<Sequential> built(const std::string& name, int classes, std::uint64_t seed) {
  Rng rng(seed);
  return build_model(name, {.input_shape = model_input_shape(name), .num_classes = classes, .dropout_rng = nullptr,
                            .planners = {}}, rng);
}

// Running statistics away from their initial 0 and 1, so that copying them shows.
void perturb_buffers(Module& model, std::uint64_t seed) {
  Rng rng(seed);
  for (auto& [name, buffer] : model.buffers())
    for (std::int64_t i = 0; i < buffer.numel(); ++i) buffer.data<float>()[i] = static_cast<float>(rng.uniform(0.5, 1.5));
}

fs::path save_training_checkpoint(const Module& model, const fs::path& dir, const std::string& format = "tunecnn-train") {
  CheckpointData data;
  data.meta = {{"format", format}, {"model", "lenet"}};
  add_module_state(model, data);
  const fs::path file = dir / "last.ckpt";
  save_checkpoint(file, data);
  return file;
}

// The first `parameters_to_compare` parameters and every buffer of the two models, bit for bit.
void expect_same_weights(const Module& a, const Module& b, std::size_t parameters_to_compare) {
  const auto pa = a.parameters(), pb = b.parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t i = 0; i < parameters_to_compare; ++i)
    EXPECT_EQ(max_abs_diff(pa[i].second.data(), pb[i].second.data()), 0.0) << pa[i].first;
  const auto ba = a.buffers(), bb = b.buffers();
  ASSERT_EQ(ba.size(), bb.size());
  for (std::size_t i = 0; i < ba.size(); ++i) EXPECT_EQ(max_abs_diff(ba[i].second, bb[i].second), 0.0) << ba[i].first;
}

TEST(InitialWeights, ACheckpointsWeightsAndBuffersAreCopiedIntoTheSameNetwork) {
  testing::TempDir dir;
  auto trained = built("mobilenet-0.25-128", 10, 3);
  perturb_buffers(*trained, 4);
  save_training_checkpoint(*trained, dir.path());
  auto fresh = built("mobilenet-0.25-128", 10, 5);
  const InitialWeights weights = read_initial_weights(dir.path());  // the folder names its last.ckpt
  EXPECT_EQ(load_initial_weights(*fresh, weights), "");
  expect_same_weights(*fresh, *trained, trained->parameters().size());
}

TEST(InitialWeights, AClassifierForAnotherClassCountStartsAfreshAndIsNamed) {
  testing::TempDir dir;
  auto trained = built("lenet", 10, 3);
  auto fresh = built("lenet", 5, 5), untouched = built("lenet", 5, 5);
  const std::string said = load_initial_weights(*fresh, read_initial_weights(save_training_checkpoint(*trained, dir.path())));
  for (const std::string word : {"fc2.weight, fc2.bias", "5 classes here but 10", "fresh random weights"})
    EXPECT_NE(said.find(word), std::string::npos) << "'" << word << "' missing from: " << said;
  const auto params = fresh->parameters();
  expect_same_weights(*fresh, *trained, params.size() - 2);
  for (std::size_t i = params.size() - 2; i < params.size(); ++i)
    EXPECT_EQ(max_abs_diff(params[i].second.data(), untouched->parameters()[i].second.data()), 0.0) << params[i].first;
}

TEST(InitialWeights, AnotherNetworkIsRefusedNamingBothTensorsAndTheModelIsUnchanged) {
  testing::TempDir dir;
  const fs::path file = save_training_checkpoint(*built("mobilenet-0.5-128", 10, 3), dir.path());
  auto model = built("mobilenet-0.25-128", 10, 5), before = built("mobilenet-0.25-128", 10, 5);
  // Same layers, other widths: the first conv differs; the classifier would have been allowed to.
  testing::expect_error([&] { load_initial_weights(*model, read_initial_weights(file)); },
                        {file.string(), "conv0.weight", "f32[16, 3, 3, 3]", "f32[8, 3, 3, 3]", "another network"});
  expect_same_weights(*model, *before, model->parameters().size());
  auto lenet = built("lenet", 10, 5);
  testing::expect_error([&] { load_initial_weights(*lenet, read_initial_weights(file)); },
                        {file.string(), "parameters", "another network"});
}

TEST(InitialWeights, WhatIsNotATrainingCheckpointIsRefusedNamingTheFile) {
  testing::TempDir dir;
  const fs::path other = save_training_checkpoint(*built("lenet", 10, 3), dir.path(), "something-else");
  testing::expect_error([&] { read_initial_weights(other); }, {other.string(), "not a training checkpoint"});
  const fs::path missing = dir.path() / "nothing-here.ckpt";
  testing::expect_error([&] { read_initial_weights(missing); }, {missing.string(), "no such file"});
}

#ifdef TUNECNN_HAVE_ONNX
TEST(InitialWeights, AnOnnxFilesWeightsAreCopiedInOrderDespiteOtherLayerNames) {
  testing::TempDir dir;
  auto exported = built("mobilenet-0.25-128", 10, 3);
  perturb_buffers(*exported, 4);
  const fs::path file = dir.path() / "net.onnx";
  export_onnx(*exported, model_input_shape("mobilenet-0.25-128"), file);
  auto fresh = built("mobilenet-0.25-128", 10, 5);
  const InitialWeights weights = read_initial_weights(file);
  EXPECT_EQ(weights.source, "ONNX file " + file.string());
  EXPECT_EQ(load_initial_weights(*fresh, weights), "");
  expect_same_weights(*fresh, *exported, exported->parameters().size());
}
#endif

// LeNet on 128 synthetic examples for one epoch, from `init_from`, checkpointing to `checkpoint_dir`.
TrainOptions synthetic_lenet(const fs::path& init_from, const fs::path& checkpoint_dir) {
  TrainOptions o;
  o.model = "lenet";
  o.data = "synthetic";
  o.epochs = 1;
  o.batch_size = 64;
  o.lr = 0.05;
  o.train_limit = 128;
  o.test_limit = 64;
  o.init_from = init_from;
  o.checkpoint_dir = checkpoint_dir;
  return o;
}

TEST(InitialWeights, TrainingAtRateZeroFromACheckpointEndsWithItsWeights) {
  testing::TempDir dir;
  auto start = built("lenet", 10, 7);
  const fs::path file = save_training_checkpoint(*start, dir.path());
  TrainOptions o = synthetic_lenet(file, dir.path() / "run");
  o.lr = 0.0;
  std::ostringstream out;
  const TrainResult result = train(o, out);
  ASSERT_EQ(result.status, TrainStatus::completed) << result.message;
  EXPECT_NE(out.str().find("initial weights: checkpoint " + file.string() + "\n"), std::string::npos) << out.str();
  const CheckpointData saved = load_checkpoint(o.checkpoint_dir / "last.ckpt");
  EXPECT_EQ(saved.value("init_from"), file.string());
  auto ended = built("lenet", 10, 9);
  load_module_state(*ended, saved, "the run's checkpoint");
  expect_same_weights(*ended, *start, start->parameters().size());
}

// --freeze-until: the named layer and those before it keep the weights they start with; the later
// ones train. A resume must freeze the same layers (the optimizer's state is per trained weight).
TEST(InitialWeights, FrozenLayersKeepTheirWeightsAndOnlyTheLaterOnesTrain) {
  testing::TempDir dir;
  auto start = built("lenet", 10, 7);
  TrainOptions o = synthetic_lenet(save_training_checkpoint(*start, dir.path()), dir.path() / "run");
  o.freeze_until = "conv2";
  std::ostringstream out;
  const TrainResult result = train(o, out);
  ASSERT_EQ(result.status, TrainStatus::completed) << result.message;
  EXPECT_NE(out.str().find("layers conv1 to conv2 frozen"), std::string::npos) << out.str();
  auto ended = built("lenet", 10, 9);
  load_module_state(*ended, load_checkpoint(o.checkpoint_dir / "last.ckpt"), "the run's checkpoint");
  const auto before = start->parameters(), after = ended->parameters();
  for (std::size_t i = 0; i < before.size(); ++i) {
    const bool frozen = before[i].first.rfind("conv", 0) == 0;
    const double moved = max_abs_diff(after[i].second.data(), before[i].second.data());
    if (frozen) {
      EXPECT_EQ(moved, 0.0) << before[i].first;
    } else {
      EXPECT_GT(moved, 0.0) << before[i].first;
    }
  }
  TrainOptions resumed = o;
  resumed.resume = true;
  resumed.epochs = 2;
  resumed.freeze_until = "pool1";
  testing::expect_error([&] { train(resumed, out); }, {"--freeze-until 'conv2'", "resume with the same value"});
}

TEST(InitialWeights, FreezingALayerTheModelLacksNamesItsLayers) {
  testing::TempDir dir;
  TrainOptions o = synthetic_lenet({}, {});
  o.freeze_until = "conv9";
  std::ostringstream out;
  testing::expect_error([&] { train(o, out); }, {"--freeze-until conv9", "conv1, relu1, pool1, conv2"});
}

}  // namespace
}  // namespace tunecnn
