// `bench depthwise --quick` end to end (the layer table and the model split; the layer table on the
// GPU where there is one), its option errors (--device cuda without a GPU among them), and
// LayerSplit's bookkeeping on a small chain.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "apps/bench/depthwise_bench.h"
#include "apps/bench/layer_split.h"
#include "core/cuda_runtime.h"
#include "core/error.h"
#include "core/init.h"
#include "models/registry.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/capture.h"
#include "tests/support/expect_error.h"

namespace tunecnn {
namespace {

int run_bench(std::vector<const char*> args, std::string* out = nullptr) {
  return testing::run_capturing_stdout(bench_depthwise, "depthwise", std::move(args), out);
}

std::vector<std::string> result_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("result ", 0) == 0) lines.push_back(line);
  return lines;
}

TEST(BenchDepthwise, QuickRunPrintsTheLayerTableAndEveryVariantsSplit) {
  std::string out;
  ASSERT_EQ(run_bench({"--quick"}, &out), 0);
  const std::vector<std::string> results = result_lines(out);
  // dw13's table, then the tuned plan and each forced depthwise solver.
  ASSERT_GE(results.size(), 4u) << out;
  EXPECT_TRUE(std::regex_search(results[0], std::regex("^result layer=dw13 best_fwd=\\S+/\\S+ best_fwd_ms=[0-9.]+")))
      << results[0];
  for (const char* method : {"depthwise_direct/NCHW", "depthwise_direct/NHWC", "diagonal/NCHW",
                             "channel_by_channel/NCHW"})
    EXPECT_NE(out.find(method), std::string::npos) << method << "\n" << out;
  EXPECT_NE(out.find("fwd:S="), std::string::npos) << "diagonal's group size sweep\n" << out;
  const std::regex split("^result model=mobilenet-0.25-128 variant=(\\S+) batch=2 step_ms=([0-9.]+) "
                         "images_per_s=[0-9.]+ depthwise_ms=([0-9.]+) depthwise_share=(0\\.[0-9]+)$");
  std::vector<std::string> variants;
  for (std::size_t i = 1; i < results.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(results[i], m, split)) << results[i];
    variants.push_back(m[1]);
    EXPECT_GT(std::stod(m[2]), 0);
    EXPECT_GT(std::stod(m[3]), 0);
  }
  EXPECT_EQ(variants.front(), "tuned");
  for (const char* forced : {"channel_by_channel", "depthwise_direct", "diagonal"})
    EXPECT_NE(std::find(variants.begin(), variants.end(), forced), variants.end()) << forced;
  // MobileNet's ReLU6 runs inside the BatchNorm before it.
  EXPECT_EQ(out.find("  relu "), std::string::npos) << out;
  for (const char* kind : {"depthwise", "pointwise", "batchnorm+relu", "conv", "linear", "update"})
    EXPECT_NE(out.find("  " + std::string(kind) + " "), std::string::npos) << kind;
}

TEST(BenchDepthwise, RejectsBadOptions) {
  EXPECT_THROW(run_bench({"--part", "everything"}), Error);
  EXPECT_THROW(run_bench({"--part", "layers", "--layers", "dw99", "--pytorch", "off"}), Error);
  EXPECT_THROW(run_bench({"--device", "tpu", "--part", "layers", "--quick"}), Error);
  // Refused on any machine: without a GPU for the lack of one, with one for the CPU-only part.
  EXPECT_THROW(run_bench({"--device", "cuda", "--part", "model", "--quick"}), Error);
}

// Before any work, and saying why: the build has no CUDA, or the machine no GPU.
TEST(BenchDepthwise, DeviceCudaWithoutAGpuFailsClearly) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a GPU is present";
  testing::expect_error([] { run_bench({"--device", "cuda", "--part", "layers", "--quick"}); },
                        {"--device cuda", cuda_built() ? "no usable GPU: " + cuda_unavailable_reason() : "no CUDA"});
}

// Qin et al.'s Table III on the GPU: cuDNN's grouped convolution, depthwise_direct in both layouts
// and diagonal with its group size, side by side; the model part is the CPU's.
TEST(BenchDepthwise, QuickRunOnTheGpuComparesTheGpuMethods) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  std::string out;
  ASSERT_EQ(run_bench({"--device", "cuda", "--quick"}, &out), 0) << out;
  const std::vector<std::string> results = result_lines(out);
  ASSERT_EQ(results.size(), 1u) << out;
  EXPECT_TRUE(std::regex_search(results[0], std::regex("^result layer=dw13 best_fwd=\\S+/\\S+ best_fwd_ms=[0-9.]+")))
      << results[0];
  for (const char* method : {"cudnn/NCHW", "depthwise_direct/NCHW", "depthwise_direct/NHWC", "diagonal/NCHW"})
    EXPECT_NE(out.find(method), std::string::npos) << method << "\n" << out;
  EXPECT_NE(out.find("fwd:S="), std::string::npos) << "diagonal's group size\n" << out;
  EXPECT_NE(out.find("# gpu: "), std::string::npos) << out;
  EXPECT_NE(out.find("# model part: CPU only"), std::string::npos) << out;
}

TEST(LayerSplit, AccountsEveryLayerOfAChainAndNoMoreThanTheStep) {
  Rng rng(3);
  auto model = build_model("mobilenet-0.25-128", ModelOptions{{3, 32, 32}, 10, {}, {}}, rng);
  LayerSplit split(*model);
  ASSERT_EQ(split.layers().size(), model->size());
  EXPECT_EQ(split.layers()[0].name, "conv0");
  EXPECT_EQ(split.layers()[0].kind, "conv");
  EXPECT_EQ(split.layers()[1].kind, "batchnorm");
  EXPECT_EQ(split.layers()[2].kind, "relu");
  EXPECT_EQ(split.layers()[3].kind, "depthwise");
  EXPECT_EQ(split.layers()[6].kind, "pointwise");
  EXPECT_EQ(split.layers().back().kind, "linear");

  Tensor images = Tensor::empty({2, 3, 32, 32});
  uniform_fill(images, -1, 1, rng);
  const std::vector<std::int32_t> labels{1, 7};
  int updates = 0;
  const auto clock = [] { return std::chrono::steady_clock::now(); };
  const auto start = clock();
  for (int i = 0; i < 2; ++i)
    split.step(Variable(images), [&](const Variable& x) { return softmax_cross_entropy(x, labels); },
               [&] { ++updates; });
  const double wall = std::chrono::duration<double>(clock() - start).count();
  EXPECT_EQ(updates, 2);
  EXPECT_EQ(split.steps(), 2);
  for (const SplitLayer& layer : split.layers()) {
    // Every layer lies after trainable conv0; a ReLU after a BatchNorm runs inside it.
    EXPECT_EQ(layer.fused, layer.kind == "relu") << layer.name;
    EXPECT_EQ(layer.forward_s > 0, !layer.fused) << layer.name;
    EXPECT_EQ(layer.backward_s > 0, !layer.fused) << layer.name;
  }
  EXPECT_EQ(split.layers()[1].kind, "batchnorm+relu");
  EXPECT_GT(split.loss_s(), 0);
  EXPECT_LE(split.total_s(), wall);
  double by_kind = 0;
  for (const auto& [kind, s] : seconds_by_kind(split)) by_kind += s;
  EXPECT_NEAR(by_kind + split.loss_s() + split.update_s(), split.total_s(), 1e-9);
  // The parameters got their gradients through the marks.
  for (const auto& [name, p] : model->parameters()) EXPECT_TRUE(p.has_grad()) << name;
}

}  // namespace
}  // namespace tunecnn
