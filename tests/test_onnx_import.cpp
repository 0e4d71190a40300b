// ONNX import (models/onnx_import.h) against a producer that is not tunecnn: PyTorch 1.13's
// exports of LeNet and MobileNet-0.25-128 in ../shared/data/onnx give PyTorch's logits on every
// CPU conv solver that runs their layers; and every kind of bad file is refused with an Error
// naming the file and the node, never a half-built network.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/onnx_file.h"
#include "models/onnx_import.h"
#include "models/registry.h"
#include "ops/conv/plan.h"
#include "ops/conv/registry.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

namespace fs = std::filesystem;

fs::path onnx_dir() { return testing::shared_data_dir() / "onnx"; }

std::vector<float> read_floats(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// ||got - want|| / ||want||.
double relative_error(const Tensor& got, const std::vector<float>& want) {
  double diff = 0, norm = 0;
  const float* g = got.data<float>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (g[i] - want[i]) * double(g[i] - want[i]);
    norm += want[i] * double(want[i]);
  }
  return std::sqrt(diff / norm);
}

// One named CPU solver on every conv layer it runs (its first layout and config), the untuned
// default elsewhere.
class OneSolverPlanner final : public ConvPlanner {
 public:
  explicit OneSolverPlanner(const ConvSolver* solver) : solver_(solver) {}
  ConvLayerPlan plan(const ConvProblem& fwd) override {
    ConvLayerPlan plan;
    for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
      const ConvProblem p = fwd.with_dir(dir);
      if (!solver_->applicable(p, nullptr)) return fallback_.plan(fwd);
      const Layout layout = solver_->layouts(p).front();
      const ConvPlan one{solver_, solver_->configs(p).front(), layout};
      (dir == Direction::fwd ? plan.fwd : dir == Direction::bwd_data ? plan.bwd_data : plan.bwd_weights) = one;
    }
    if (plan.fwd.layout != plan.bwd_data.layout || plan.fwd.layout != plan.bwd_weights.layout)
      return fallback_.plan(fwd);
    ++used;
    return plan;
  }
  int used = 0;

 private:
  const ConvSolver* solver_;
  FirstApplicablePlanner fallback_;
};

struct Fixture {
  std::string name;
  Shape input;  // C, H, W
  int classes;
};

class OnnxFixtures : public ::testing::TestWithParam<Fixture> {};

TEST_P(OnnxFixtures, GiveTorchsLogitsOnEveryCpuSolverThatRunsTheirLayers) {
  const Fixture& f = GetParam();
  const fs::path file = onnx_dir() / (f.name + ".onnx");
  if (!fs::exists(file)) GTEST_SKIP() << "no " << file << " (../shared/data/onnx)";
  EXPECT_EQ(model_input_shape(file.string()), f.input);
  const std::vector<float> input = read_floats(onnx_dir() / (f.name + ".input.bin"));
  const std::vector<float> want = read_floats(onnx_dir() / (f.name + ".output.bin"));
  Shape batch = f.input;
  batch.insert(batch.begin(), static_cast<std::int64_t>(input.size() / (f.input[0] * f.input[1] * f.input[2])));
  ASSERT_EQ(want.size(), static_cast<std::size_t>(batch[0] * f.classes));
  Tensor x = Tensor::empty(batch);
  std::memcpy(x.data<float>(), input.data(), input.size() * sizeof(float));
  int solvers_used = 0;
  for (const ConvSolver* solver : cpu_conv_solvers()) {
    auto planner = std::make_shared<OneSolverPlanner>(solver);
    Planners planners;
    planners.conv = planner;
    Rng rng(5);
    auto model = build_model(file.string(), {.input_shape = f.input, .num_classes = f.classes,
                                             .dropout_rng = nullptr, .planners = planners}, rng);
    model->eval();
    const Tensor logits = model->forward(Variable(x)).data();
    ASSERT_EQ(logits.shape(), (Shape{batch[0], f.classes}));
    if (planner->used == 0) continue;  // the solver runs none of its layers
    ++solvers_used;
    EXPECT_LT(relative_error(logits, want), 1e-4) << f.name << " with " << solver->name() << " on "
                                                  << planner->used << " conv layers";
  }
  EXPECT_GE(solvers_used, 3) << "too few solvers ran " << f.name;
}

INSTANTIATE_TEST_SUITE_P(PyTorchExports, OnnxFixtures,
                         ::testing::Values(Fixture{"lenet", {1, 28, 28}, 10},
                                           Fixture{"mobilenet-0.25-128", {3, 128, 128}, 1000}),
                         [](const auto& info) { return testing::test_name(info.param.name); });

TEST(OnnxImport, NotesTheDroppedSoftmaxAndChecksTheClassCount) {
  const fs::path file = onnx_dir() / "lenet.onnx";
  if (!fs::exists(file)) GTEST_SKIP() << "no " << file;
  const OnnxNetwork net = import_onnx(file, std::make_shared<Rng>(1));
  EXPECT_EQ(net.classes, 10);
  EXPECT_EQ(net.input, (Shape{1, 28, 28}));
  Rng rng(1);
  testing::expect_error([&] { build_model(file.string(), {.input_shape = {1, 28, 28}, .num_classes = 7, .dropout_rng = nullptr, .planners = {}}, rng); },
                        {"lenet.onnx", "ends in 10 classes", "the data has 7"});
  testing::expect_error([&] { build_model(file.string(), {.input_shape = {3, 28, 28}, .num_classes = 10, .dropout_rng = nullptr, .planners = {}}, rng); },
                        {"lenet.onnx", "takes [1, 28, 28]"});
}

// ---- ONNX's own node tests (Debian's libonnx-testdata), where they fit the supported set ----

const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

onnx::TensorProto read_tensor(const fs::path& file) {
  onnx::TensorProto t;
  std::ifstream in(file, std::ios::binary);
  EXPECT_TRUE(t.ParseFromIstream(&in)) << file;
  return t;
}

// The test's model with its weight inputs (input_1.pb, ...) made initializers, as exporters
// write weights, saved where the importer reads it.
fs::path with_weights_as_initializers(const fs::path& test, const fs::path& out) {
  onnx::ModelProto m;
  std::ifstream in(test / "model.onnx", std::ios::binary);
  EXPECT_TRUE(m.ParseFromIstream(&in));
  onnx::GraphProto* g = m.mutable_graph();
  for (int i = 1; i < g->input_size(); ++i) {
    onnx::TensorProto t = read_tensor(test / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb"));
    t.set_name(g->input(i).name());
    *g->add_initializer() = t;
  }
  while (g->input_size() > 1) g->mutable_input()->RemoveLast();
  std::ofstream o(out, std::ios::binary);
  m.SerializeToOstream(&o);
  return out;
}

class OnnxNodeTests : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTests, GiveOnnxsExpectedOutput) {
  const fs::path test = kNodeTests / GetParam();
  if (!fs::exists(test)) GTEST_SKIP() << "no " << test << " (Debian's libonnx-testdata)";
  testing::TempDir dir;
  const OnnxNetwork net = import_onnx(with_weights_as_initializers(test, dir.path() / "m.onnx"), std::make_shared<Rng>(1));
  const onnx_file::Floats in = onnx_file::floats(read_tensor(test / "test_data_set_0" / "input_0.pb"), "input_0");
  const onnx_file::Floats want = onnx_file::floats(read_tensor(test / "test_data_set_0" / "output_0.pb"), "output_0");
  Tensor x = Tensor::empty(Shape(in.dims.begin(), in.dims.end()));
  std::copy(in.values.begin(), in.values.end(), x.data<float>());
  net.model->eval();
  const Tensor got = net.model->forward(Variable(x)).data();
  ASSERT_EQ(static_cast<std::size_t>(got.numel()), want.values.size());  // GAP's [N, C] is ONNX's [N, C, 1, 1]
  EXPECT_LT(relative_error(got, want.values), 1e-5) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    Supported, OnnxNodeTests,
    ::testing::Values("test_conv_with_strides_padding", "test_conv_with_strides_no_padding", "test_maxpool_2d_default",
                      "test_maxpool_2d_pads", "test_maxpool_2d_strides", "test_maxpool_2d_precomputed_pads",
                      "test_maxpool_2d_precomputed_strides", "test_averagepool_2d_default", "test_averagepool_2d_pads",
                      "test_averagepool_2d_strides", "test_averagepool_2d_precomputed_pads",
                      "test_averagepool_2d_precomputed_strides", "test_batchnorm_example", "test_batchnorm_epsilon",
                      "test_lrn", "test_lrn_default", "test_globalaveragepool", "test_globalaveragepool_precomputed"),
    [](const auto& info) { return testing::test_name(info.param); });

class OnnxNodeTestsRefused : public ::testing::TestWithParam<std::string> {};

// Outside the supported set: refused with the file and node named, never imported as another op.
TEST_P(OnnxNodeTestsRefused, AreRefusedNamingTheNode) {
  const fs::path test = kNodeTests / GetParam();
  if (!fs::exists(test)) GTEST_SKIP() << "no " << test << " (Debian's libonnx-testdata)";
  testing::TempDir dir;
  const fs::path file = with_weights_as_initializers(test, dir.path() / "m.onnx");
  testing::expect_error([&] { import_onnx(file, std::make_shared<Rng>(1)); }, {file.string(), "node 0"});
}

INSTANTIATE_TEST_SUITE_P(
    Unsupported, OnnxNodeTestsRefused,
    ::testing::Values("test_conv_with_strides_and_asymmetric_padding", "test_conv_with_autopad_same",
                      "test_maxpool_2d_ceil", "test_maxpool_2d_dilations", "test_maxpool_2d_same_upper",
                      "test_averagepool_2d_pads_count_include_pad", "test_averagepool_2d_ceil",
                      "test_batchnorm_example_training_mode", "test_averagepool_2d_same_lower"),
    [](const auto& info) { return testing::test_name(info.param); });

// ---- bad files, built with ONNX's own protobuf classes ----

class BadOnnx : public ::testing::Test {
 protected:
  testing::TempDir dir_;

  static onnx::ModelProto chain(const std::vector<std::string>& ops) {
    onnx::ModelProto m;
    m.set_ir_version(7);
    m.add_opset_import()->set_version(13);
    onnx::GraphProto* g = m.mutable_graph();
    g->set_name("g");
    add_value(g->add_input(), "x", {1, 2, 4, 4});
    std::string current = "x";
    for (std::size_t i = 0; i < ops.size(); ++i) {
      onnx::NodeProto* n = g->add_node();
      n->set_op_type(ops[i]);
      n->set_name("n" + std::to_string(i));
      n->add_input(current);
      current = "v" + std::to_string(i);
      n->add_output(current);
    }
    add_value(g->add_output(), current, {1, 2, 4, 4});
    return m;
  }

  static void add_value(onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::int64_t>& dims) {
    v->set_name(name);
    auto* type = v->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (std::int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
  }

  static void add_weight(onnx::GraphProto* g, onnx::NodeProto* node, const std::string& name,
                         const std::vector<std::int64_t>& dims) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    std::int64_t n = 1;
    for (std::int64_t d : dims) t->add_dims(d), n *= d;
    for (std::int64_t i = 0; i < n; ++i) t->add_float_data(0.5f);
    node->add_input(name);
  }

  static void set_ints(onnx::NodeProto* node, const std::string& name, const std::vector<std::int64_t>& values) {
    onnx::AttributeProto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(values.size() == 1 ? onnx::AttributeProto::INT : onnx::AttributeProto::INTS);
    if (values.size() == 1) a->set_i(values[0]);
    else for (std::int64_t v : values) a->add_ints(v);
  }

  static void add_int64s(onnx::GraphProto* g, onnx::NodeProto* node, const std::string& name,
                         const std::vector<std::int64_t>& values) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (std::int64_t v : values) t->add_int64_data(v);
    node->add_input(name);
  }

  // A Conv of 2 -> 2 channels, 3 x 3, on the chain's [1, 2, 4, 4] input, with these attributes.
  onnx::ModelProto conv_with(const std::string& attribute, const std::vector<std::int64_t>& values) {
    onnx::ModelProto m = chain({"Conv"});
    onnx::NodeProto* conv = m.mutable_graph()->mutable_node(0);
    add_weight(m.mutable_graph(), conv, "w", {2, 2, 3, 3});
    set_ints(conv, attribute, values);
    return m;
  }

  fs::path save(const onnx::ModelProto& m, const std::string& name) {
    const fs::path file = dir_.path() / name;
    std::ofstream out(file, std::ios::binary);
    m.SerializeToOstream(&out);
    return file;
  }

  void expect_refused(const fs::path& file, std::vector<std::string> parts) {
    parts.insert(parts.begin(), file.string());
    testing::expect_error([&] { import_onnx(file, std::make_shared<Rng>(1)); }, parts);
  }
};

TEST_F(BadOnnx, AFileThatIsNotOnnxOrIsTruncatedOrMissing) {
  const fs::path text = dir_.path() / "text.onnx";
  std::ofstream(text) << "this is not a protobuf\n";
  expect_refused(text, {"not an ONNX model"});
  const fs::path lenet = onnx_dir() / "lenet.onnx";
  if (fs::exists(lenet)) {
    const fs::path cut = dir_.path() / "cut.onnx";
    fs::copy_file(lenet, cut);
    fs::resize_file(cut, fs::file_size(lenet) / 2);
    expect_refused(cut, {"not an ONNX model"});
  }
  expect_refused(dir_.path() / "missing.onnx", {"cannot open"});
}

TEST_F(BadOnnx, AnUnsupportedOpIsNamedWithItsNodeAndTheSupportedSet) {
  expect_refused(save(chain({"Relu", "Sigmoid"}), "sigmoid.onnx"),
                 {"node 1 'n1' (Sigmoid)", "op Sigmoid is not supported", "Conv, BatchNormalization"});
}

TEST_F(BadOnnx, ABranchIsRefused) {
  onnx::ModelProto m = chain({"Relu", "Relu", "Relu"});
  m.mutable_graph()->mutable_node(2)->set_input(0, "v0");  // v0 feeds nodes 1 and 2
  expect_refused(save(m, "branch.onnx"), {"node 0 'n0' (Relu)", "'v0' feeds 2 nodes", "not a graph that branches"});
  m.mutable_graph()->mutable_node(2)->set_input(0, "v1");
  m.mutable_graph()->mutable_node(1)->set_input(0, "x");  // the input feeds nodes 0 and 1
  expect_refused(save(m, "input_branch.onnx"), {"input 'x' feeds 2 nodes"});
}

TEST_F(BadOnnx, AWeightOfTheWrongShapeIsNamed) {
  onnx::ModelProto m = chain({"Conv"});
  onnx::NodeProto* conv = m.mutable_graph()->mutable_node(0);
  add_weight(m.mutable_graph(), conv, "w", {3, 5, 3, 3});  // 5 input channels; the input has 2
  expect_refused(save(m, "weight.onnx"), {"node 0 'n0' (Conv)", "takes 5 channels; the input has 2"});
}

TEST_F(BadOnnx, AHugeDeclaredDimensionIsRefusedBeforeAnythingIsAllocated) {
  onnx::ModelProto m = chain({"Relu"});
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(2)->set_dim_value(
      std::int64_t{1} << 40);
  expect_refused(save(m, "huge.onnx"), {"dim 2 is 1099511627776", "from 1 to 65536"});
}

TEST_F(BadOnnx, UnsupportedAttributeValuesAreNamed) {
  onnx::ModelProto m = chain({"Conv"});
  onnx::NodeProto* conv = m.mutable_graph()->mutable_node(0);
  add_weight(m.mutable_graph(), conv, "w", {2, 2, 3, 3});
  onnx::AttributeProto* dil = conv->add_attribute();
  dil->set_name("dilations");
  dil->set_type(onnx::AttributeProto::INTS);
  dil->add_ints(2), dil->add_ints(2);
  expect_refused(save(m, "dilated.onnx"), {"(Conv)", "dilation 2x2 is not supported"});
}

TEST_F(BadOnnx, AnOutputThatIsNotClassesIsNoNetworkToTrain) {
  const fs::path file = save(chain({"Relu"}), "image_out.onnx");
  EXPECT_EQ(import_onnx(file, std::make_shared<Rng>(1)).classes, 0);
  Rng rng(1);
  testing::expect_error(
      [&] { build_model(file.string(), {.input_shape = {2, 4, 4}, .num_classes = 10, .dropout_rng = nullptr, .planners = {}}, rng); },
      {file.string(), "ends in shape [2, 4, 4]", "[batch, classes]"});
}

// Found by fuzz_onnx (fuzz/regressions/onnx/): ONNX's checker quotes a node over several lines,
// and the importer quoted the file's names as they were, terminal escapes included.
TEST_F(BadOnnx, ItsNamesAndTheCheckersMessageAreQuotedOnOneLineWithoutControlBytes) {
  onnx::ModelProto m = chain({"Relu", "Sigmoid"});
  m.mutable_graph()->mutable_node(1)->set_name("n1\x1b[31m");
  const fs::path escape = save(m, "escape.onnx");
  expect_refused(escape, {"node 1 'n1\\x1b[31m' (Sigmoid)"});
  m.mutable_graph()->mutable_node()->SwapElements(0, 1);  // out of order: the checker refuses it
  const fs::path unsorted = save(m, "unsorted.onnx");
  expect_refused(unsorted, {"ONNX's checker refuses it", "topologically sorted"});
  for (const fs::path& file : {escape, unsorted}) {
    try {
      import_onnx(file, std::make_shared<Rng>(1));
    } catch (const Error& e) {
      EXPECT_EQ(e.message(), printable(e.message()));
    }
  }
}

// Found by fuzz_onnx: the layer refused the momentum only in its first forward pass.
TEST_F(BadOnnx, ABatchNormMomentumOutsideZeroToOneIsRefusedAtImport) {
  onnx::ModelProto m = chain({"BatchNormalization"});
  onnx::NodeProto* bn = m.mutable_graph()->mutable_node(0);
  for (const char* name : {"scale", "B", "mean", "var"}) add_weight(m.mutable_graph(), bn, name, {2});
  onnx::AttributeProto* momentum = bn->add_attribute();
  momentum->set_name("momentum");
  momentum->set_type(onnx::AttributeProto::FLOAT);
  momentum->set_f(1.25f);
  expect_refused(save(m, "momentum.onnx"), {"node 0 'n0' (BatchNormalization)", "momentum 1.25 is not in [0, 1]"});
}

// Found by review, each would have been undefined behaviour (a division by zero, signed
// overflow) or a network other than the file's (a padding or LRN size cut to an int).
TEST_F(BadOnnx, WindowSizesOutOfRangeAreRefusedBeforeAnyArithmetic) {
  const std::int64_t huge = std::int64_t{1} << 62;
  expect_refused(save(conv_with("strides", {0, 0}), "stride0.onnx"), {"(Conv)", "stride 0 is not supported"});
  expect_refused(save(conv_with("pads", {huge, huge, huge, huge}), "pads.onnx"), {"padding 4611686018427387904"});
  expect_refused(save(conv_with("pads", {(std::int64_t{1} << 32) + 1, 1, 1, 1}), "pads32.onnx"),
                 {"padding 4294967297 is not supported (from 0 to 65536 are)"});
  expect_refused(save(conv_with("group", {huge}), "group.onnx"), {"group 4611686018427387904 is not from 1"});
  onnx::ModelProto lrn = chain({"LRN"});
  set_ints(lrn.mutable_graph()->mutable_node(0), "size", {(std::int64_t{1} << 32) + 3});
  expect_refused(save(lrn, "lrn.onnx"), {"(LRN)", "size 4294967299 is not supported"});
  onnx::ModelProto pool = chain({"MaxPool"});
  set_ints(pool.mutable_graph()->mutable_node(0), "kernel_shape", {2, 2});
  set_ints(pool.mutable_graph()->mutable_node(0), "strides", {0, 0});
  expect_refused(save(pool, "pool_stride0.onnx"), {"(MaxPool)", "stride 0 is not supported"});
  onnx::ModelProto pad = chain({"Pad", "Conv"});
  add_int64s(pad.mutable_graph(), pad.mutable_graph()->mutable_node(0), "pads", {0, 0, huge, huge, 0, 0, huge, huge});
  add_weight(pad.mutable_graph(), pad.mutable_graph()->mutable_node(1), "w", {2, 2, 3, 3});
  expect_refused(save(pad, "pad.onnx"), {"(Pad)", "padding 4611686018427387904 is not supported"});
}

// Found by review: tunecnn's pooling refused such a window only in the first forward pass.
TEST_F(BadOnnx, APoolingPaddingAsWideAsItsWindowIsRefusedAtImport) {
  onnx::ModelProto m = chain({"MaxPool"});
  set_ints(m.mutable_graph()->mutable_node(0), "kernel_shape", {2, 2});
  set_ints(m.mutable_graph()->mutable_node(0), "pads", {2, 2, 2, 2});
  expect_refused(save(m, "pool_pads.onnx"), {"(MaxPool)", "pads 2x2 are not smaller than the 2x2 window"});
}

// Found by review: an empty ratio or constant_value threw std::out_of_range, not an Error.
TEST_F(BadOnnx, AScalarInputWithNoValuesIsRefused) {
  onnx::ModelProto dropout = chain({"Dropout"});
  add_weight(dropout.mutable_graph(), dropout.mutable_graph()->mutable_node(0), "ratio", {0});
  expect_refused(save(dropout, "ratio.onnx"), {"(Dropout)", "ratio has 0 values, not one"});
  onnx::ModelProto pad = chain({"Pad", "Conv"});
  add_int64s(pad.mutable_graph(), pad.mutable_graph()->mutable_node(0), "pads", {0, 0, 1, 1, 0, 0, 1, 1});
  add_weight(pad.mutable_graph(), pad.mutable_graph()->mutable_node(0), "value", {0});
  add_weight(pad.mutable_graph(), pad.mutable_graph()->mutable_node(1), "w", {2, 2, 3, 3});
  expect_refused(save(pad, "value.onnx"), {"(Pad)", "constant_value has 0 values, not one"});
}

// Found by review: the importer dropped a final MatMul waiting for its Add, or a final Pad
// waiting for its Conv, and built a network without them.
TEST_F(BadOnnx, AMatMulOrAPadLeftWaitingAtTheEndIsRefused) {
  onnx::ModelProto matmul = chain({"Flatten", "MatMul"});
  add_weight(matmul.mutable_graph(), matmul.mutable_graph()->mutable_node(1), "w", {32, 3});
  expect_refused(save(matmul, "matmul.onnx"), {"the last MatMul has no Add of its bias after it"});
  onnx::ModelProto pad = chain({"Pad"});
  add_int64s(pad.mutable_graph(), pad.mutable_graph()->mutable_node(0), "pads", {0, 0, 1, 1, 0, 0, 1, 1});
  expect_refused(save(pad, "pad.onnx"), {"the last Pad has no Conv after it"});
}

}  // namespace
}  // namespace tunecnn
