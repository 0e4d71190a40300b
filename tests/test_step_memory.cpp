// The step memory predictor (apps/training/step_memory.h): a training step's allocator peak,
// predicted from two small recorded steps before it runs, against the peak the step then has;
// in every layout (layout copies), with conv workspaces, with recomputed activations, and the
// layers it names as keeping the most.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "apps/training/step_memory.h"
#include "core/allocator.h"
#include "core/init.h"
#include "core/rng.h"
#include "core/sgd.h"
#include "core/variable.h"
#include "models/registry.h"
#include "ops/conv/conv2d.h"
#include "ops/conv/registry.h"
#include "ops/global_avg_pool.h"
#include "ops/flatten.h"
#include "ops/linear.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

const SgdOptions kSgd{0.01, 0.9, 5e-4, false};

ModelOptions lenet_options(Layout layout) {
  ModelOptions options{{1, 28, 28}, 10, {}, {}};
  options.planners.conv = std::make_shared<FirstApplicablePlanner>(layout);
  return options;
}

struct Peaks {
  StepPeak predicted;
  std::size_t measured = 0;
};

using Builder = std::function<std::shared_ptr<Module>(Rng&)>;

Builder named(const std::string& name, const ModelOptions& options) {
  return [=](Rng& rng) { return std::shared_ptr<Module>(build_model(name, options, rng)); };
}

// Predicts, then takes three steps as train does and reads the allocator's peak.
Peaks predict_and_step(const Builder& build, const Shape& input, int classes, int batch) {
  Rng rng(3);
  std::shared_ptr<Module> model = build(rng);
  StepMemoryQuery query{[&] {
                          Rng copy_rng(4);
                          return build(copy_rng);
                        },
                        model.get(), input, batch, classes, kSgd, {}};
  Peaks peaks;
  peaks.predicted = predict_step_peak(query);
  Tensor images = Tensor::empty({batch, input[0], input[1], input[2]});
  uniform_fill(images, -1, 1, rng);
  std::vector<std::int32_t> labels(batch);
  for (int i = 0; i < batch; ++i) labels[i] = i % classes;
  Sgd sgd(model->parameters(), kSgd);
  Allocator& allocator = allocator_for(Device::cpu);
  allocator.reset_peak();
  for (int step = 0; step < 3; ++step) {
    sgd.zero_grad();
    Variable loss = softmax_cross_entropy(model->forward(Variable(images)), labels);
    sgd.backward_and_step(loss);
  }
  peaks.measured = allocator.stats().peak_bytes;
  return peaks;
}

TEST(StepMemory, PredictsTheMeasuredPeakOfATrainingStepInEveryLayout) {
  for (const Layout layout : {Layout::NCHW, Layout::CHWN, Layout::NHWC}) {
    const Peaks peaks = predict_and_step(named("lenet", lenet_options(layout)), {1, 28, 28}, 10, 24);
    EXPECT_EQ(peaks.predicted.bytes, peaks.measured) << to_string(layout);
    EXPECT_TRUE(peaks.predicted.in_backward) << "LeNet's peak is in backward, with its gradients";
    if (layout != Layout::NCHW) {
      EXPECT_GT(peaks.predicted.by_use[static_cast<int>(MemoryUse::layout_copies)], 0u) << to_string(layout);
    }
  }
}

// Every direction by one solver, its first config.
class OneSolverPlanner final : public ConvPlanner {
 public:
  explicit OneSolverPlanner(const char* name) : solver_(find_conv_solver(name)) {}
  ConvLayerPlan plan(const ConvProblem& fwd) override {
    const auto in = [&](Direction dir) {
      return ConvPlan{solver_, solver_->configs(fwd.with_dir(dir)).front(), Layout::NCHW};
    };
    return {in(Direction::fwd), in(Direction::bwd_data), in(Direction::bwd_weights)};
  }

 private:
  const ConvSolver* solver_;
};

// Each conv call's workspace is the real plan's at the real batch, not the recorded one's.
TEST(StepMemory, PutsTheRealPlansWorkspaceAtTheRealBatchIntoEachConvCall) {
  // One wide conv: its workspace is most of the step.
  const Builder wide_conv = [](Rng& rng) {
    auto conv = std::make_shared<Conv2d>(3, 32, 5, 1, 2, rng);
    conv->set_planner(std::make_shared<OneSolverPlanner>("im2col_gemm"));
    auto net = std::make_shared<Sequential>();
    net->add(conv).add(std::make_shared<GlobalAvgPool>()).add(std::make_shared<Linear>(32, 4, rng));
    return std::shared_ptr<Module>(net);
  };
  const Peaks peaks = predict_and_step(wide_conv, {3, 32, 32}, 4, 16);
  EXPECT_EQ(peaks.predicted.bytes, peaks.measured);
  EXPECT_GT(peaks.predicted.by_use[static_cast<int>(MemoryUse::workspaces)], 0u) << "the peak is in a conv call";
}

TEST(StepMemory, PredictsRecomputedActivations) {
  for (const bool recompute : {false, true}) {
    set_recompute_activations(recompute);
    const Peaks peaks = predict_and_step(named("mobilenet-0.25-128", ModelOptions{{3, 128, 128}, 10, {}, {}}), {3, 128, 128}, 10, 4);
    set_recompute_activations(false);
    EXPECT_EQ(peaks.predicted.bytes, peaks.measured) << (recompute ? "recomputed" : "kept");
  }
}

// The copy it steps reads the model's own parameters: they are left as they were, and the
// prediction is still exact.
TEST(StepMemory, StepsACopyThatReadsTheModelsParametersAndLeavesThemAsTheyWere) {
  const Builder wide_linear = [](Rng& rng) {
    const MemoryUseScope counted_as(MemoryUse::parameters);  // as build_model counts them
    auto net = std::make_shared<Sequential>();
    net->add(std::make_shared<Flatten>()).add(std::make_shared<Linear>(4096, 1024, rng));
    return std::shared_ptr<Module>(net);
  };
  Rng rng(3);
  std::shared_ptr<Module> model = wide_linear(rng);
  std::vector<std::vector<double>> before;
  for (const auto& [name, parameter] : model->parameters()) before.push_back(testing::values(parameter.data()));
  const StepMemoryQuery query{[&] {
                                Rng copy_rng(4);
                                return wide_linear(copy_rng);
                              },
                              model.get(), {1, 64, 64}, 8, 1024, kSgd, {}};
  const StepPeak predicted = predict_step_peak(query);
  std::size_t i = 0;
  for (const auto& [name, parameter] : model->parameters()) EXPECT_EQ(testing::values(parameter.data()), before[i++]) << name;
  EXPECT_GE(predicted.by_use[static_cast<int>(MemoryUse::parameters)], 1024u * 4097 * sizeof(float));
  const Peaks peaks = predict_and_step(wide_linear, {1, 64, 64}, 1024, 8);
  EXPECT_EQ(peaks.predicted.bytes, peaks.measured);
}

TEST(StepMemory, NamesTheLayersKeepingTheMostLargestFirst) {
  const Peaks peaks = predict_and_step(named("mobilenet-0.25-128", ModelOptions{{3, 128, 128}, 10, {}, {}}), {3, 128, 128}, 10, 4);
  const auto& layers = peaks.predicted.layers_keeping;
  ASSERT_GE(layers.size(), 10u);
  for (std::size_t i = 1; i < layers.size(); ++i) EXPECT_GE(layers[i - 1].second, layers[i].second);
  for (const auto& [name, bytes] : layers) EXPECT_NE(name, "?") << bytes;
}

}  // namespace
}  // namespace tunecnn
