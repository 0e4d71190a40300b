// The allocator's split of live and peak bytes by use (core/allocator.h), the scopes that name
// the use, a LeNet training step's split, and `bench memory` end to end.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "apps/bench/max_batch.h"
#include "apps/bench/memory_bench.h"
#include "apps/common/cli.h"
#include "core/allocator.h"
#include "core/init.h"
#include "core/rng.h"
#include "core/sgd.h"
#include "core/threading.h"
#include "models/registry.h"
#include "ops/batch_norm.h"
#include "ops/conv/conv2d.h"
#include "ops/global_avg_pool.h"
#include "ops/layout/to_layout.h"
#include "ops/linear.h"
#include "ops/relu.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/capture.h"
#include "tests/support/expect_error.h"
#include "tests/support/row_block_steps.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

std::size_t use_index(MemoryUse use) { return static_cast<std::size_t>(use); }

std::size_t sum(const BytesByUse& bytes) { return std::accumulate(bytes.begin(), bytes.end(), std::size_t{0}); }

Tensor floats(std::int64_t n) { return Tensor::empty({n}); }

TEST(MemoryUse, ScopesNestAndRestoreTheOuterUse) {
  EXPECT_EQ(current_memory_use(), MemoryUse::activations) << "the use when no scope names one";
  {
    const MemoryUseScope outer(MemoryUse::gradients);
    EXPECT_EQ(current_memory_use(), MemoryUse::gradients);
    {
      const MemoryUseScope inner(MemoryUse::workspaces);
      EXPECT_EQ(current_memory_use(), MemoryUse::workspaces);
    }
    EXPECT_EQ(current_memory_use(), MemoryUse::gradients);
  }
  EXPECT_EQ(current_memory_use(), MemoryUse::activations);
}

TEST(MemoryUse, ABlockCountsUnderTheUseItWasMadeForUntilFreed) {
  Allocator& alloc = allocator_for(Device::cpu);
  const BytesByUse before = alloc.stats().current_by_use;
  const std::size_t block = Allocator::block_size(1000 * sizeof(float));
  Tensor workspace;
  {
    const MemoryUseScope counted_as(MemoryUse::workspaces);
    workspace = floats(1000);
  }
  Tensor activation = floats(1000);
  BytesByUse now = alloc.stats().current_by_use;
  EXPECT_EQ(now[use_index(MemoryUse::workspaces)] - before[use_index(MemoryUse::workspaces)], block);
  EXPECT_EQ(now[use_index(MemoryUse::activations)] - before[use_index(MemoryUse::activations)], block);
  {
    const MemoryUseScope elsewhere(MemoryUse::gradients);  // freed under another scope
    workspace = Tensor();
  }
  now = alloc.stats().current_by_use;
  EXPECT_EQ(now[use_index(MemoryUse::workspaces)], before[use_index(MemoryUse::workspaces)]);
  EXPECT_EQ(now[use_index(MemoryUse::gradients)], before[use_index(MemoryUse::gradients)]);
}

TEST(MemoryUse, TheSplitAtThePeakIsTheSplitWhenThePeakWasReached) {
  Allocator& alloc = allocator_for(Device::cpu);
  alloc.reset_peak();
  const MemoryStats start = alloc.stats();
  const std::size_t big = Allocator::block_size((4 << 20) * sizeof(float));
  {
    Tensor parameters;
    {
      const MemoryUseScope counted_as(MemoryUse::parameters);
      parameters = floats(4 << 20);
    }
    { Tensor gradients = floats(1 << 10); }  // below the peak that follows: not in the split
    const MemoryUseScope counted_as(MemoryUse::optimizer_state);
    Tensor state = floats(4 << 20);
  }
  const MemoryStats end = alloc.stats();
  EXPECT_EQ(end.peak_bytes, start.current_bytes + 2 * big);
  EXPECT_EQ(sum(end.at_peak_by_use), end.peak_bytes);
  EXPECT_EQ(end.at_peak_by_use[use_index(MemoryUse::parameters)] - start.current_by_use[use_index(MemoryUse::parameters)], big);
  EXPECT_EQ(end.at_peak_by_use[use_index(MemoryUse::optimizer_state)] -
                start.current_by_use[use_index(MemoryUse::optimizer_state)],
            big);
  EXPECT_EQ(sum(end.current_by_use), end.current_bytes);
  EXPECT_EQ(end.current_by_use, start.current_by_use) << "everything made here was freed";
}

TEST(MemoryUse, ALayoutChangeCountsAsALayoutCopyBothWays) {
  Allocator& alloc = allocator_for(Device::cpu);
  const std::size_t copies = use_index(MemoryUse::layout_copies);
  const std::size_t before = alloc.stats().current_by_use[copies];
  Variable x(Tensor::zeros({2, 3, 4, 5}), true);
  Variable y = to_layout(x, Layout::CHWN);
  const std::size_t block = Allocator::block_size(2 * 3 * 4 * 5 * sizeof(float));
  EXPECT_EQ(alloc.stats().current_by_use[copies] - before, block);
  y.backward(Tensor::zeros_like(y.data()));
  EXPECT_EQ(alloc.stats().current_by_use[copies] - before, 2 * block) << "x's gradient, back in NCHW";
}

TEST(MemoryUse, ALenetTrainingStepSplitsIntoEveryUseItHas) {
  Allocator& alloc = allocator_for(Device::cpu);
  const std::size_t parameters_before = alloc.stats().current_by_use[use_index(MemoryUse::parameters)];
  Rng rng(3);
  auto model = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng);
  Sgd sgd(model->parameters(), SgdOptions{0.01, 0.9, 0, false});
  Tensor images = Tensor::zeros({8, 1, 28, 28});
  const std::vector<std::int32_t> labels(8, 3);
  alloc.reset_peak();
  const BytesByUse start = alloc.stats().current_by_use;
  for (int step = 0; step < 2; ++step) {
    Variable loss = softmax_cross_entropy(model->forward(Variable(images)), labels);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  }
  const MemoryStats stats = alloc.stats();
  EXPECT_EQ(sum(stats.at_peak_by_use), stats.peak_bytes);
  const auto at_peak = [&](MemoryUse use) { return stats.at_peak_by_use[use_index(use)] - start[use_index(use)]; };
  std::size_t parameter_bytes = 0;
  for (const auto& [name, p] : model->parameters()) parameter_bytes += Allocator::block_size(p.data().nbytes());
  EXPECT_EQ(stats.at_peak_by_use[use_index(MemoryUse::parameters)] - parameters_before, parameter_bytes)
      << "the parameters, made when the model was built";
  EXPECT_EQ(at_peak(MemoryUse::optimizer_state), parameter_bytes) << "one momentum buffer per parameter";
  EXPECT_GT(at_peak(MemoryUse::activations), 0u);
  EXPECT_GT(at_peak(MemoryUse::gradients), 0u);
}

// Four equal layers, so that holding every gradient at once is four times holding one layer's.
std::shared_ptr<Sequential> four_linear_layers(Rng& rng) {
  auto net = std::make_shared<Sequential>();
  for (int i = 0; i < 4; ++i) net->add(std::make_shared<Linear>(256, 256, rng), "fc" + std::to_string(i));
  return net;
}

// One training step's peak gradient bytes, with the step after backward or inside it.
std::size_t gradients_at_peak(bool step_in_backward) {
  Allocator& alloc = allocator_for(Device::cpu);
  Rng rng(5);
  auto net = four_linear_layers(rng);
  Sgd sgd(net->parameters(), SgdOptions{0.01, 0.9, 0, false});
  Tensor x = Tensor::zeros({2, 256});
  uniform_fill(x, -1, 1, rng);
  const std::vector<std::int32_t> labels{1, 7};
  sgd.zero_grad();
  Variable loss = softmax_cross_entropy(net->forward(Variable(x)), labels);
  const std::size_t before = alloc.stats().current_by_use[use_index(MemoryUse::gradients)];
  alloc.reset_peak();
  if (step_in_backward) {
    loss.backward([&sgd](const Variable& parameter) { sgd.step_parameter(parameter); });
  } else {
    loss.backward();
    sgd.step();
  }
  return alloc.stats().at_peak_by_use[use_index(MemoryUse::gradients)] - before;
}

TEST(MemoryUse, SteppingEachParameterInBackwardHoldsOneLayersGradientsNotAll) {
  const std::size_t layer = Allocator::block_size(256 * 256 * sizeof(float));
  EXPECT_GE(gradients_at_peak(false), 4 * layer) << "every weight's gradient is held until step()";
  EXPECT_LT(gradients_at_peak(true), 2 * layer) << "each weight's gradient is applied and dropped";
}

struct RecomputeStep {
  std::size_t held_after_forward = 0;
  double loss = 0;
  std::vector<std::vector<double>> grads;
};

// What --recompute-activations keeps after the forward pass and what the step computes: conv
// 3->8, BatchNorm + ReLU6, a second conv from 8 channels, BatchNorm + ReLU6, pool and a linear
// head; one step on 4 images of 12x12.
RecomputeStep step_with(bool recompute, int second_out, int second_kernel, int second_groups) {
  const bool saved = recompute_activations();
  set_recompute_activations(recompute);
  Rng rng(3);
  auto net = std::make_shared<Sequential>();
  net->add(std::make_shared<Conv2d>(3, 8, 3, 1, 1, rng, 1, false))
      .add(std::make_shared<BatchNorm2d>(8))
      .add(std::make_shared<ReLU6>())
      .add(std::make_shared<Conv2d>(8, second_out, second_kernel, 1, second_kernel / 2, rng, second_groups, false))
      .add(std::make_shared<BatchNorm2d>(second_out))
      .add(std::make_shared<ReLU6>())
      .add(std::make_shared<GlobalAvgPool>())
      .add(std::make_shared<Linear>(second_out, 4, rng));
  Tensor images = Tensor::empty({4, 3, 12, 12});
  uniform_fill(images, -1, 1, rng);
  Allocator& allocator = allocator_for(Device::cpu);
  allocator.release_cached();
  const std::size_t before = allocator.stats().current_bytes;
  Variable loss = softmax_cross_entropy(net->forward(Variable(images)), {0, 1, 2, 3});
  RecomputeStep s;
  s.held_after_forward = allocator.stats().current_bytes - before;
  s.loss = loss.data().data<float>()[0];
  loss.backward();
  for (const auto& [name, p] : net->parameters()) s.grads.push_back(testing::values(p.grad()));
  set_recompute_activations(saved);
  return s;
}

// conv, BatchNorm + ReLU6 (fused), pointwise conv, BatchNorm + ReLU6, pool, linear: with
// --recompute-activations the two BatchNorm outputs are released once the next layer has read
// them and rebuilt in backward where needed; the step is bitwise the same.
TEST(MemoryUse, RecomputedActivationsGiveTheSameStepAndHoldTwoActivationsLess) {
  const RecomputeStep kept = step_with(false, 16, 1, 1), recomputed = step_with(true, 16, 1, 1);
  EXPECT_EQ(recomputed.loss, kept.loss);
  EXPECT_EQ(recomputed.grads, kept.grads);
  // The two outputs' blocks (the allocator counts each at its request).
  const std::size_t released = Allocator::block_size(4 * 8 * 12 * 12 * sizeof(float)) +
                               Allocator::block_size(4 * 16 * 12 * 12 * sizeof(float));
  EXPECT_EQ(kept.held_after_forward - recomputed.held_after_forward, released);
}

// A depthwise conv's output is released too and rebuilt (from its input, itself rebuilt) where
// BatchNorm's backward reads it: the same step, one more activation fewer.
TEST(MemoryUse, RecomputingAlsoReleasesADepthwiseConvsOutput) {
  const RecomputeStep kept = step_with(false, 8, 3, 8), recomputed = step_with(true, 8, 3, 8);
  EXPECT_EQ(recomputed.loss, kept.loss);
  EXPECT_EQ(recomputed.grads, kept.grads);
  // The two BatchNorm outputs and the depthwise conv's; the first conv's output stays.
  const std::size_t activation = Allocator::block_size(4 * 8 * 12 * 12 * sizeof(float));
  EXPECT_EQ(kept.held_after_forward - recomputed.held_after_forward, 3 * activation);
}

// The update in backward is step()'s, parameter by parameter: the same weights to the bit, with
// momentum, weight decay and Nesterov, over several steps; and no gradient is left behind.
TEST(Sgd, SteppingInBackwardGivesTheWeightsOfAStepAfterIt) {
  Rng rng_a(9), rng_b(9), data_rng(10);
  auto after = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng_a);
  auto inside = build_model("lenet", ModelOptions{{1, 28, 28}, 10, {}, {}}, rng_b);
  const SgdOptions options{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true};
  Sgd sgd_after(after->parameters(), options), sgd_inside(inside->parameters(), options);
  for (int step = 0; step < 3; ++step) {
    Tensor images = Tensor::empty({4, 1, 28, 28});
    uniform_fill(images, -1, 1, data_rng);
    const std::vector<std::int32_t> labels{0, 3, 3, 9};
    sgd_after.zero_grad();
    softmax_cross_entropy(after->forward(Variable(images)), labels).backward();
    sgd_after.step();
    sgd_inside.zero_grad();
    softmax_cross_entropy(inside->forward(Variable(images)), labels)
        .backward([&](const Variable& parameter) { sgd_inside.step_parameter(parameter); });
  }
  const auto a = after->parameters(), b = inside->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Tensor& pa = a[i].second.data();
    const Tensor& pb = b[i].second.data();
    EXPECT_EQ(0, std::memcmp(pa.data<float>(), pb.data<float>(), pa.nbytes())) << a[i].first;
    EXPECT_FALSE(b[i].second.has_grad()) << b[i].first << "'s gradient is dropped once applied";
  }
}

// A wide linear layer's weight gradient is made in blocks of rows, each stepped on as it is made
// (Variable::GradRowsFn): the same weights and momentum to the bit as a step after backward, and
// the gradient never held whole.
TEST(Sgd, SteppingAWideLayersGradientRowBlockByRowBlockGivesTheSameStep) {
  const testing::RowBlockSteps steps = testing::step_a_wide_layer_both_ways(Device::cpu);
  const auto& a = steps.after;
  const auto& b = steps.inside;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Tensor& pa = a[i].second.data();
    const Tensor& pb = b[i].second.data();
    EXPECT_EQ(0, std::memcmp(pa.data<float>(), pb.data<float>(), pa.nbytes())) << a[i].first;
  }
  const auto& va = steps.after_momentum;
  const auto& vb = steps.inside_momentum;
  ASSERT_EQ(va.size(), vb.size());
  for (std::size_t i = 0; i < va.size(); ++i)
    EXPECT_EQ(0, std::memcmp(va[i].second.data<float>(), vb[i].second.data<float>(), va[i].second.nbytes()))
        << va[i].first;
  EXPECT_LE(steps.gradients_at_peak, std::size_t{5} << 20) << "a 4 MiB block, not the 8 MiB gradient";
}

TEST(Sgd, SteppingAParameterItDoesNotOwnLeavesItAlone) {
  Rng rng(2);
  Linear owned(3, 2, rng), other(3, 2, rng);
  Sgd sgd(owned.parameters(), SgdOptions{});
  Variable x(Tensor::full({1, 3}, 1.0), false);
  const Tensor before = other.parameters()[0].second.data().clone();
  softmax_cross_entropy(other.forward(x), {1})
      .backward([&](const Variable& parameter) { sgd.step_parameter(parameter); });
  const auto params = other.parameters();
  EXPECT_EQ(0, std::memcmp(before.data<float>(), params[0].second.data().data<float>(), before.nbytes()));
  EXPECT_TRUE(params[0].second.has_grad()) << "not this optimizer's to drop";
}

int run_bench(std::vector<const char*> args, std::string* out) {
  return testing::run_capturing_stdout(bench_memory, "memory", std::move(args), out);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(BenchMemory, ASmallLenetGivesTheSplitAndTheResultLine) {
  const int threads = num_threads();
  std::string out;
  ASSERT_EQ(run_bench({"--model", "lenet", "--batch-size", "4", "--steps", "1", "--pytorch", "off"}, &out), 0) << out;
  set_num_threads(threads);
  for (const char* part : {"parameters", "optimizer state", "activations", "gradients", "workspaces",
                           "layout copies", "peak resident set growth", "(off)",
                           "result model=lenet batch=4 peak_mb=", " rss_growth_mb="})
    EXPECT_TRUE(contains(out, part)) << part << "\n" << out;
  EXPECT_FALSE(contains(out, "pytorch_rss_growth_mb")) << out;
}

TEST(BenchMemory, AMissingPythonLeavesPyTorchsFigureOutAndSaysWhy) {
  const int threads = num_threads();
  std::string out;
  ASSERT_EQ(run_bench({"--batch-size", "2", "--steps", "0", "--python", "/nonexistent/python3"}, &out), 0) << out;
  set_num_threads(threads);
  EXPECT_TRUE(contains(out, "unavailable: ")) << out;
  EXPECT_FALSE(contains(out, "rss_ratio")) << out;
}

// A step of 100 + 10 * batch bytes, each batch measured once.
MaxBatch search_steps_of_ten_bytes(std::size_t budget, int limit, std::vector<int>* measured) {
  return largest_batch_within(budget, limit, [measured](int batch) -> std::optional<std::size_t> {
    measured->push_back(batch);
    return 100 + 10 * static_cast<std::size_t>(batch);
  });
}

TEST(MaxBatch, DoublesThenBisectsToTheLargestBatchThatFits) {
  std::vector<int> measured;
  const MaxBatch found = search_steps_of_ten_bytes(1000, 1024, &measured);  // 100 + 10 * 90 = 1000
  EXPECT_EQ(found.batch, 90);
  EXPECT_FALSE(found.at_limit);
  EXPECT_TRUE(found.stopped.empty());
  EXPECT_EQ((std::vector<int>(measured.begin(), measured.begin() + 8)), (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128}));
  EXPECT_LE(measured.size(), 8u + 7u) << "then bisection between 64 and 128";
  ASSERT_EQ(found.trials.size(), measured.size());
  for (const BatchTrial& trial : found.trials) EXPECT_EQ(trial.fits, trial.batch <= 90) << trial.batch;
}

TEST(MaxBatch, SaysWhenTheLimitFitsAndWhenNotEvenOneDoes) {
  std::vector<int> measured;
  const MaxBatch limited = search_steps_of_ten_bytes(1 << 20, 12, &measured);
  EXPECT_EQ(limited.batch, 12);
  EXPECT_TRUE(limited.at_limit);
  EXPECT_EQ(measured, (std::vector<int>{1, 2, 4, 8, 12}));
  measured.clear();
  const MaxBatch none = search_steps_of_ten_bytes(50, 64, &measured);
  EXPECT_EQ(none.batch, 0);
  EXPECT_EQ(measured, std::vector<int>{1});
}

TEST(MaxBatch, StopsAtABatchThatCannotBeMeasured) {
  const MaxBatch found = largest_batch_within(1 << 20, 64, [](int batch) -> std::optional<std::size_t> {
    if (batch > 4) return std::nullopt;
    return 10;
  });
  EXPECT_EQ(found.batch, 4);
  EXPECT_EQ(found.stopped, "no measurement at batch 8");
}

TEST(BenchMemory, MaxBatchSearchesOursUpToTheLimit) {
  const int threads = num_threads();
  std::string out;
  ASSERT_EQ(run_bench({"--max-batch", "--memory-budget", "1024G", "--max-batch-limit", "4", "--steps", "0",
                       "--pytorch", "off"},
                      &out),
            0)
      << out;
  set_num_threads(threads);
  for (const char* part : {"#   ours    batch     1: ", "#   ours    batch     4: ", "largest batch, ours",
                           "4 (the limit: larger may fit)", "result model=lenet budget_mb=1048576.0 max_batch=4 at_limit=1"})
    EXPECT_TRUE(contains(out, part)) << part << "\n" << out;
  EXPECT_FALSE(contains(out, "pytorch_max_batch")) << out;
}

TEST(BenchMemory, ABadBudgetIsAUsageErrorNamingIt) {
  std::string out;
  EXPECT_THROW(run_bench({"--max-batch", "--memory-budget", "4X"}, &out), UsageError);
}

TEST(BenchMemory, RejectsABadPytorchChoice) {
  std::string out;
  testing::expect_error([&] { run_bench({"--pytorch", "maybe"}, &out); }, {"--pytorch", "maybe"});
}

}  // namespace
}  // namespace tunecnn
