// `bench plans`: a small LeNet end to end on the CPU (the plans table and the result line), the
// same on the GPU with cuDNN's own choice as a variant when there is one, and the errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "apps/bench/plan_bench.h"
#include "core/allocator.h"
#include "core/cuda_runtime.h"
#include "core/error.h"
#include "core/threading.h"
#include "core/variable.h"
#include "tests/support/capture.h"
#include "tests/support/expect_error.h"

namespace tunecnn {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

int run_bench(std::vector<const char*> args, std::string* out) {
  return testing::run_capturing_stdout(bench_plans, "plans", std::move(args), out);
}

// LeNet at batch 4, one round of one step per variant: seconds, not minutes.
std::vector<const char*> small_lenet(const char* device) {
  return {"--model", "lenet", "--batch-size", "4", "--steps", "1", "--rounds", "1", "--device", device};
}

TEST(BenchPlans, SmallLenetOnTheCpuGivesEveryVariantAndTheResult) {
  const int threads = num_threads();
  std::string out;
  ASSERT_EQ(run_bench(small_lenet("cpu"), &out), 0) << out;
  set_num_threads(threads);
  for (const char* part : {"device cpu", "plan ", "images/s", "\ntuned ", "\ntuned-nchw ",
                           "\nim2col_gemm ", "result model=lenet batch=4 ", "verify_max_per_key="})
    EXPECT_TRUE(contains(out, part)) << part << "\n" << out;
  EXPECT_FALSE(contains(out, "cudnn-own")) << "cuDNN's baseline is the GPU's only";
#ifdef TUNECNN_HAVE_ONEDNN
  for (const char* part : {"\nonednn ", "result onednn_step_ms="}) EXPECT_TRUE(contains(out, part)) << part << "\n" << out;
#endif
}

TEST(BenchPlans, OnTheGpuAgainstCudnnsOwnChoiceOrAClearError) {
  const int threads = num_threads();
  std::string out;
  if (cuda_device_count() == 0) {
    testing::expect_error([&] { run_bench(small_lenet("cuda"), &out); }, {"GPU"});
    EXPECT_EQ(out, "") << "nothing printed before the error";
    return;
  }
  ASSERT_EQ(run_bench(small_lenet("cuda"), &out), 0) << out;
  set_num_threads(threads);
  for (const char* part : {"device cuda", "# gpu: ", "\ntuned ", "\ncudnn ", "\ncudnn-own ",
                           "result device=cuda tuned_images_per_s="})
    EXPECT_TRUE(contains(out, part)) << part << "\n" << out;
}

// --memory-budget: the tuned step planned within it is timed beside the others, under its region,
// and its result line gives the allocator's peak against the prediction. The process is left
// without the region and without recomputing.
TEST(BenchPlans, UnderAMemoryBudgetTimesThePlanThatFitsAndItsPeakAgainstThePrediction) {
  const int threads = num_threads();
  std::string out;
  std::vector<const char*> args = small_lenet("cpu");
  args.insert(args.end(), {"--memory-budget", "64M"});
  ASSERT_EQ(run_bench(args, &out), 0) << out;
  set_num_threads(threads);
  EXPECT_TRUE(contains(out, "# memory budget: predicted peak ")) << out;
  EXPECT_TRUE(contains(out, "\nmemory-budget ")) << out;
  const std::size_t line = out.find("result memory_budget_mib=");
  ASSERT_NE(line, std::string::npos) << out;
  double budget = 0, predicted = 0, peak = 0, tuned_peak = 0;
  ASSERT_EQ(std::sscanf(out.c_str() + line,
                        "result memory_budget_mib=%lf predicted_peak_mib=%lf peak_mib=%lf tuned_peak_mib=%lf", &budget,
                        &predicted, &peak, &tuned_peak),
            4)
      << out;
  EXPECT_EQ(budget, 64.0);
  EXPECT_GT(peak, 0.0);
  EXPECT_LE(peak, budget);
  EXPECT_NEAR(peak, predicted, 0.05 * predicted) << "the issue's 5%";
  EXPECT_EQ(allocator_for(Device::cpu).cache_limit(), 0u);
  EXPECT_FALSE(recompute_activations());
}

TEST(BenchPlans, RefusesABudgetThatIsNoSizeOrTooSmallSayingByHowMuch) {
  std::string out;
  testing::expect_error([&] { run_bench({"--memory-budget", "lots"}, &out); },
                        {"--memory-budget must be a size such as 2G or 512M, not 'lots'"});
  std::vector<const char*> args = small_lenet("cpu");
  args.insert(args.end(), {"--memory-budget", "1K"});
  const int threads = num_threads();
  testing::expect_error([&] { run_bench(args, &out); }, {"--memory-budget 0.0 MiB is too small", "over"});
  set_num_threads(threads);
}

TEST(BenchPlans, RejectsAnUnknownDevice) {
  std::string out;
  testing::expect_error([&] { run_bench({"--device", "tpu"}, &out); }, {"--device", "tpu"});
}

}  // namespace
}  // namespace tunecnn
