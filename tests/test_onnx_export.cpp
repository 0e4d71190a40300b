// ONNX export (models/onnx_export.h): every built-in network, exported with random weights and
// random BatchNorm statistics, passes ONNX's checker (the importer runs it) and imports back to a
// network whose evaluation-mode logits equal the original's bit for bit; a layer ONNX export does
// not cover is named; an existing file is replaced only whole (atomic write).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "apps/training/export_command.h"
#include "core/checkpoint.h"
#include "core/sgd.h"
#include "ops/softmax_cross_entropy.h"
#include "core/tensor_math.h"
#include "ops/batch_norm.h"
#include "ops/lrn.h"
#include "models/onnx_export.h"
#include "models/onnx_import.h"
#include "models/registry.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

struct Network {
  std::string name;
  int classes;
};

// The constants ONNX keeps as float attributes: BatchNorm's epsilon and momentum, LRN's alpha,
// beta and k, in layer order. They must come back as the doubles exported, not as their floats.
std::vector<double> float_attribute_constants(Sequential& net) {
  std::vector<double> found;
  for (std::size_t i = 0; i < net.size(); ++i) {
    if (const auto* bn = dynamic_cast<const BatchNorm2d*>(&net.layer(i)))
      found.insert(found.end(), {bn->options().eps, bn->options().momentum});
    if (const auto* lrn = dynamic_cast<const LocalResponseNorm*>(&net.layer(i)))
      found.insert(found.end(), {lrn->params().alpha, lrn->params().beta, lrn->params().k});
  }
  return found;
}

class OnnxRoundTrip : public ::testing::TestWithParam<Network> {};

TEST_P(OnnxRoundTrip, ExportThenImportGivesTheSameLogits) {
  const Network& n = GetParam();
  const Shape input = model_input_shape(n.name);
  Rng rng(21);
  auto model = build_model(n.name, {.input_shape = input, .num_classes = n.classes, .dropout_rng = nullptr, .planners = {}}, rng);
  for (auto& [name, buffer] : model->buffers())  // running statistics away from their initial 0 and 1
    for (std::int64_t i = 0; i < buffer.numel(); ++i) buffer.data<float>()[i] = static_cast<float>(rng.uniform(0.5, 1.5));
  testing::TempDir dir;
  const fs::path file = dir.path() / (n.name + ".onnx");
  const std::vector<std::string> notes = export_onnx(*model, input, file);
  const OnnxNetwork back = import_onnx(file, std::make_shared<Rng>(1));
  EXPECT_EQ(back.input, input);
  EXPECT_EQ(back.classes, n.classes);
  Shape batch = input;
  batch.insert(batch.begin(), 2);
  const Tensor x = testing::random_tensor(batch, rng);
  model->eval();
  back.model->eval();
  const Tensor want = model->forward(Variable(x)).data(), got = back.model->forward(Variable(x)).data();
  EXPECT_EQ(max_abs_diff(got, want), 0.0) << n.name;
  EXPECT_EQ(float_attribute_constants(*back.model), float_attribute_constants(*model));
  EXPECT_EQ(float_attribute_constants(*model).empty(), n.name == "lenet" || n.name == "cifar");
  if (n.name == "alexnet") {
    EXPECT_FALSE(notes.empty()) << "AlexNet's dropout should be noted as left out";
  }
}

INSTANTIATE_TEST_SUITE_P(BuiltIn, OnnxRoundTrip,
                         ::testing::Values(Network{"lenet", 10}, Network{"cifar", 10}, Network{"alexnet", 20},
                                           Network{"mobilenet-0.25-128", 20}),
                         [](const auto& info) { return testing::test_name(info.param.name); });

// The target in small: a network exported and imported trains as the original does from
// the same weights, bit for bit (MobileNet-0.25-128, BatchNorm in training mode, three SGD steps):
// losses, weights and running statistics. Epsilon and momentum, floats in ONNX, must come back as
// the doubles exported, or rounding drifts apart within a few steps.
TEST(OnnxExport, AnImportedNetworkTrainsLikeTheOriginal) {
  const Shape input = model_input_shape("mobilenet-0.25-128");
  Rng rng(8);
  auto original = build_model("mobilenet-0.25-128", {.input_shape = input, .num_classes = 5, .dropout_rng = nullptr, .planners = {}}, rng);
  testing::TempDir dir;
  export_onnx(*original, input, dir.path() / "m.onnx");
  auto imported = import_onnx(dir.path() / "m.onnx", std::make_shared<Rng>(1)).model;
  const Tensor images = testing::random_tensor({4, input[0], input[1], input[2]}, rng);
  const std::vector<std::int32_t> labels = {0, 3, 1, 4};
  Sgd sgd_a(original->parameters(), SgdOptions{0.05, 0.9, 5e-4, false});
  Sgd sgd_b(imported->parameters(), SgdOptions{0.05, 0.9, 5e-4, false});
  for (int step = 0; step < 3; ++step) {
    const auto train_step = [&](Sequential& net, Sgd& sgd) {
      Variable loss = softmax_cross_entropy(net.forward(Variable(images)), labels);
      sgd.zero_grad();
      loss.backward();
      sgd.step();
      return static_cast<double>(loss.data().data<float>()[0]);
    };
    const double a = train_step(*original, sgd_a), b = train_step(*imported, sgd_b);
    EXPECT_EQ(b, a) << "step " << step;
  }
  const auto pa = original->parameters(), pb = imported->parameters();
  for (std::size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(max_abs_diff(pa[i].second.data(), pb[i].second.data()), 0.0) << pa[i].first;
  const auto ba = original->buffers(), bb = imported->buffers();
  for (std::size_t i = 0; i < ba.size(); ++i) EXPECT_EQ(max_abs_diff(ba[i].second, bb[i].second), 0.0) << ba[i].first;
}


class Sigmoid final : public Module {
 public:
  Variable forward(const Variable& input) override { return input; }
  std::string describe() const override { return "Sigmoid"; }
};

TEST(OnnxExport, ALayerWithoutAnExportIsNamedAndNothingIsWritten) {
  Rng rng(1);
  Sequential net;
  net.add(std::make_shared<Sigmoid>(), "squash");
  testing::TempDir dir;
  const fs::path file = dir.path() / "net.onnx";
  testing::expect_error([&] { export_onnx(net, {1, 4, 4}, file); }, {"layer squash (Sigmoid) has no ONNX export"});
  EXPECT_FALSE(fs::exists(file));
}

// export-onnx from a checkpoint as `train` writes one (its meta: format, model, epoch, input,
// classes): the same bytes as exporting the model it holds; and the refusals.
class ExportCommand : public ::testing::Test {
 protected:
  testing::TempDir dir_;
  std::shared_ptr<Sequential> model_;

  std::filesystem::path write_checkpoint(std::map<std::string, std::string> meta) {
    Rng rng(4);
    model_ = build_model("lenet", {.input_shape = {1, 28, 28}, .num_classes = 10, .dropout_rng = nullptr, .planners = {}}, rng);
    CheckpointData data;
    data.meta = std::move(meta);
    add_module_state(*model_, data);
    const fs::path file = dir_.path() / "last.ckpt";
    save_checkpoint(file, data);
    return file;
  }

  std::string run(std::vector<const char*> args) {
    args.insert(args.begin(), "export-onnx");
    CommandLine cli = export_command_line();
    cli.parse(static_cast<int>(args.size()), args.data());
    std::ostringstream out;
    run_export(cli, out);
    return out.str();
  }

  static std::string bytes(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
};

TEST_F(ExportCommand, WritesWhatExportingTheCheckpointsModelWrites) {
  write_checkpoint({{"format", "tunecnn-train"}, {"model", "lenet"}, {"epoch", "3"}, {"input", "1,28,28"}, {"classes", "10"}});
  const fs::path out = dir_.path() / "net.onnx", want = dir_.path() / "want.onnx";
  const std::string dir = dir_.path().string(), out_text = out.string();
  const std::string said = run({"--checkpoint", dir.c_str(), "-o", out_text.c_str()});
  EXPECT_NE(said.find("lenet, epoch 3"), std::string::npos) << said;
  export_onnx(*model_, {1, 28, 28}, want);
  EXPECT_EQ(bytes(out), bytes(want));
}

TEST_F(ExportCommand, RefusesAnExistingFileAMissingOptionAndAnotherKindOfCheckpoint) {
  const fs::path ckpt = write_checkpoint({{"format", "something-else"}, {"model", "lenet"}, {"epoch", "1"}});
  const std::string ckpt_text = ckpt.string(), out = (dir_.path() / "net.onnx").string();
  testing::expect_error([&] { run({"--checkpoint", ckpt_text.c_str(), "-o", out.c_str()}); },
                        {ckpt_text, "is not a training checkpoint"});
  EXPECT_FALSE(fs::exists(out));
  testing::expect_error([&] { run({"-o", out.c_str()}); }, {"--checkpoint is required"});
  std::ofstream(out) << "a user's file";
  testing::expect_error([&] { run({"--checkpoint", ckpt_text.c_str(), "-o", out.c_str()}); },
                        {out, "exists", "--force"});
  EXPECT_EQ(bytes(out), "a user's file");
}

}  // namespace
}  // namespace tunecnn
