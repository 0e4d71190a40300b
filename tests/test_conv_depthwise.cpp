// The depthwise solvers beyond what the solver suite checks: diagonal's group sizes and masked
// weight gradient, which solver takes which problem, depthwise_direct's independence from the
// thread count, and the tuner over a depthwise problem.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "autotune/conv_tuner.h"
#include "core/threading.h"
#include "ops/conv/registry.h"
#include "tests/support/conv_testing.h"
#include "tests/support/tuner_harness.h"

namespace tunecnn {
namespace {

using testing::close_relative;
using testing::kAllDirections;
using testing::make_conv_args;
using testing::run_in_layout;

const ConvSolver& solver(std::string_view name) {
  const ConvSolver* s = find_conv_solver(name);
  if (s == nullptr) throw std::out_of_range(std::string(name));
  return *s;
}

ConvProblem depthwise(int mb, int c, int h, int w, int k, int stride, int pad) {
  return {Direction::fwd, mb, c, h, w, c, k, k, stride, stride, pad, pad, c};
}

std::vector<int> group_sizes(const ConvProblem& p) {
  std::vector<int> sizes;
  for (const TuneConfig& config : solver("diagonal").configs(p))
    sizes.push_back(config.get("S", 0));
  return sizes;
}

TEST(DepthwiseDiagonal, OffersEveryDivisorOfCFromEightTo256) {
  EXPECT_EQ(group_sizes(depthwise(1, 32, 8, 8, 3, 1, 1)), (std::vector<int>{8, 16, 32}));
  EXPECT_EQ(group_sizes(depthwise(1, 1024, 7, 7, 3, 1, 1)),
            (std::vector<int>{8, 16, 32, 64, 128, 256}));
  EXPECT_EQ(group_sizes(depthwise(1, 24, 8, 8, 3, 1, 1)), (std::vector<int>{8, 12, 24}));
  EXPECT_EQ(group_sizes(depthwise(1, 4, 8, 8, 3, 1, 1)), (std::vector<int>{4}));  // C < 8
  const ConvProblem no_divisor = depthwise(1, 514, 4, 4, 3, 1, 1);                // 2 * 257
  std::string why;
  EXPECT_FALSE(solver("diagonal").applicable(no_divisor, &why));
  EXPECT_NE(why.find("divides"), std::string::npos) << why;
}

// The dense grouped gradient has off-diagonal entries too; only the diagonal is the depthwise
// gradient, for every group size.
TEST(DepthwiseDiagonal, WeightGradientIsTheDiagonalForEveryGroupSize) {
  ConvProblem p = depthwise(3, 24, 9, 7, 3, 2, 1);
  p.dir = Direction::bwd_weights;
  p.dt = DType::f64;
  const ConvArgs args = make_conv_args(p, 5);
  const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
  ASSERT_EQ(want.shape(), (Shape{24, 1, 3, 3}));
  for (const TuneConfig& config : solver("diagonal").configs(p))
    EXPECT_TRUE(close_relative(run_in_layout({&solver("diagonal"), config}, p, args, Layout::NCHW),
                               want, 1e-12))
        << config.str();
}

TEST(DepthwiseDiagonal, RunThrowsWhenTheGroupSizeDoesNotDivideC) {
  const ConvProblem p = depthwise(2, 24, 6, 6, 3, 1, 1);
  const ConvArgs args = make_conv_args(p, 1);
  std::vector<char> ws(1 << 20);
  try {
    solver("diagonal").run(p, TuneConfig{{{"S", 5}}}, args, Workspace{ws.data(), ws.size()});
    FAIL() << "S=5 accepted for C=24";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("S=5 does not divide C=24"), std::string::npos)
        << e.what();
  }
}

// im2col_gemm and channel_by_channel split problems between them, so the tuner never times the
// same lowering twice; multipliers other than 1 stay with the general solvers.
TEST(DepthwiseSolvers, EachProblemGoesToOneLowering) {
  const ConvProblem dw = depthwise(2, 8, 6, 6, 3, 1, 1);
  ConvProblem grouped = dw, multiplier2 = dw, single = dw;
  grouped.g = 4;
  multiplier2.oc = 16;
  single.ic = single.oc = single.g = 1;
  std::string why;
  EXPECT_FALSE(solver("im2col_gemm").applicable(dw, &why));
  EXPECT_NE(why.find("channel_by_channel"), std::string::npos) << why;
  EXPECT_TRUE(solver("channel_by_channel").applicable(dw, nullptr));
  for (const ConvProblem& p : {grouped, multiplier2, single}) {
    EXPECT_TRUE(solver("im2col_gemm").applicable(p, nullptr)) << p.key();
    EXPECT_FALSE(solver("channel_by_channel").applicable(p, nullptr)) << p.key();
    EXPECT_FALSE(solver("diagonal").applicable(p, nullptr)) << p.key();
  }
  for (std::string_view name : {"channel_by_channel", "diagonal", "depthwise_direct"}) {
    why.clear();
    EXPECT_FALSE(solver(name).applicable(grouped, &why));
    EXPECT_NE(why.find("not depthwise"), std::string::npos) << name << ": " << why;
    why.clear();
    EXPECT_FALSE(solver(name).applicable(multiplier2, &why));
    EXPECT_NE(why.find("multiplier"), std::string::npos) << name << ": " << why;
    EXPECT_TRUE(solver(name).applicable(dw, nullptr)) << name;
  }
}

// Every task writes its own outputs and bwd_weights adds fixed chunks in order, so 1, 2 and 3
// threads give the same bits (three chunks of rows here).
TEST(DepthwiseDirect, IdenticalAcrossThreadCounts) {
  for (const ConvProblem& fwd :
       {depthwise(4, 40, 32, 40, 3, 1, 1), depthwise(3, 24, 33, 41, 3, 2, 1)})
    for (Direction dir : kAllDirections)
      for (Layout layout : {Layout::NCHW, Layout::NHWC}) {
        const ConvProblem p = fwd.with_dir(dir);
        const ConvArgs args = make_conv_args(p, 11);
        const ConvPlan plan{&solver("depthwise_direct"), {}, layout};
        set_num_threads(1);
        const Tensor one = run_in_layout(plan, p, args, layout);
        for (int threads : {2, 3}) {
          set_num_threads(threads);
          const Tensor many = run_in_layout(plan, p, args, layout);
          EXPECT_EQ(std::memcmp(one.raw_data(), many.raw_data(), one.nbytes()), 0)
              << threads << " threads, " << to_string(layout) << " " << p.key();
        }
        set_num_threads(0);
      }
}

// Under a fake clock every candidate ties; what matters is which are tried and that they are
// correct: every group size of diagonal (it asks for a sweep, so even the default hill-climbing
// search times them all), both layouts of depthwise_direct, channel_by_channel, and never
// im2col_gemm under its own name.
TEST(DepthwiseTuner, TriesEveryGroupSizeAndPicksACorrectPlan) {
  testing::TunerHarness h;
  const TunerOptions o = h.options();
  const ConvProblem fwd = depthwise(2, 24, 9, 9, 3, 1, 1);
  for (Direction dir : kAllDirections) {
    const ConvProblem p = fwd.with_dir(dir);
    const TuningEntry e = tune_conv(p, o);
    std::set<int> sizes;
    std::set<std::string> tried;
    for (const CandidateResult& c : e.candidates) {
      EXPECT_TRUE(c.correct) << c.solver << " " << c.config.str() << " " << e.key;
      tried.insert(c.solver + " " + std::string(to_string(c.layout)));
      if (c.solver == "diagonal") sizes.insert(c.config.get("S", 0));
    }
    EXPECT_EQ(sizes, (std::set<int>{8, 12, 24})) << e.key;
    for (const char* name : {"depthwise_direct NCHW", "depthwise_direct NHWC",
                             "channel_by_channel NCHW", "diagonal NCHW"})
      EXPECT_TRUE(tried.count(name)) << name << " " << e.key;
    EXPECT_FALSE(tried.count("im2col_gemm NCHW")) << e.key;
    const ConvPlan plan = plan_from_entry(e);
    const ConvArgs args = make_conv_args(p, 3);
    const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
    EXPECT_TRUE(close_relative(run_in_layout(plan, p, args, plan.layout), want, 1e-4)) << e.key;
  }
  EXPECT_TRUE(h.warnings.empty()) << h.warnings.front();
}

}  // namespace
}  // namespace tunecnn
