// Calibration: Li et al.'s layout rule, the `off` policy's plans (each one validated and run
// against the direct reference, so a wrong plan fails), transform pricing, and real (shortened)
// calibration runs.
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>

#include "autotune/calibration.h"
#include "ops/conv/registry.h"
#include "support/autotune_runs.h"
#include "support/conv_testing.h"

namespace tunecnn {
namespace {

using testing::close_relative;
using testing::kAllDirections;
using testing::make_conv_args;
using testing::run_in_layout;

DeviceThresholds thresholds(std::optional<int> ct, std::optional<int> nt,
                            std::optional<int> mec_t = std::nullopt) {
  DeviceThresholds t;
  t.ct = ct;
  t.nt = nt;
  t.mec_t = mec_t;
  return t;
}

ConvProblem conv(int mb, int ic, int oc, int size, int k, int stride = 1, int pad = 1,
                 int groups = 1) {
  ConvProblem p;
  p.mb = mb;
  p.ic = ic;
  p.oc = oc;
  p.ih = p.iw = size;
  p.kh = p.kw = k;
  p.sh = p.sw = stride;
  p.ph = p.pw = pad;
  p.g = groups;
  return p;
}

TEST(Calibration, ThresholdLayoutRule) {
  struct Row {
    int c, n;
    std::optional<int> ct, nt;
    Layout want;
  };
  const Row rows[] = {
      {3, 8, 32, 128, Layout::CHWN},   // C < Ct
      {31, 8, 32, 128, Layout::CHWN},  // just below Ct
      {32, 8, 32, 128, Layout::NCHW},  // C = Ct, N < Nt
      {64, 127, 32, 128, Layout::NCHW},
      {64, 128, 32, 128, Layout::CHWN},  // N = Nt
      {64, 256, 32, 128, Layout::CHWN},
      {3, 256, {}, {}, Layout::NCHW},  // nothing calibrated
      {3, 8, 32, {}, Layout::CHWN},    // only Ct
      {64, 256, 32, {}, Layout::NCHW},
      {64, 256, {}, 128, Layout::CHWN},  // only Nt
      {64, 8, {}, 128, Layout::NCHW},
      {128, 128, 256, 256, Layout::CHWN},  // "never" values from a sweep
  };
  for (const Row& r : rows)
    EXPECT_EQ(threshold_layout(conv(r.n, r.c, 16, 8, 3), thresholds(r.ct, r.nt)), r.want)
        << "C " << r.c << " N " << r.n;
}

TEST(Calibration, TransformKeyAndMs) {
  EXPECT_EQ(transform_key(Layout::NCHW, Layout::CHWN), "NCHW>CHWN");
  EXPECT_EQ(transform_key(Layout::NHWC, Layout::NCHW), "NHWC>NCHW");
  DeviceThresholds t;
  t.transform_gbps = {{"NCHW>CHWN", 4.0}, {"CHWN>NCHW", 0.0}};
  // 8e6 bytes read and 8e6 written at 4 GB/s: 4 ms.
  ASSERT_TRUE(transform_ms(t, Layout::NCHW, Layout::CHWN, 8'000'000).has_value());
  EXPECT_DOUBLE_EQ(*transform_ms(t, Layout::NCHW, Layout::CHWN, 8'000'000), 4.0);
  EXPECT_DOUBLE_EQ(*transform_ms(t, Layout::NCHW, Layout::CHWN, 0), 0.0);
  EXPECT_EQ(transform_ms(t, Layout::NHWC, Layout::NHWC, 1 << 20), 0.0);  // even uncalibrated
  EXPECT_FALSE(transform_ms(t, Layout::CHWN, Layout::NHWC, 100).has_value());
  EXPECT_FALSE(transform_ms(t, Layout::CHWN, Layout::NCHW, 100).has_value());  // zero bandwidth
}

std::size_t workspace_of(const ConvPlan& plan, const ConvProblem& p) {
  return plan.solver->workspace_bytes(p, plan.config);
}

// The least workspace any config of `name` needs for any direction it runs (0 when none).
std::size_t least_workspace(std::string_view name, const ConvProblem& fwd, Direction dir) {
  const ConvSolver& solver = *find_conv_solver(name);
  const ConvProblem p = fwd.with_dir(dir);
  std::size_t least = SIZE_MAX;
  for (const TuneConfig& config : solver.configs(p))
    least = std::min(least, solver.workspace_bytes(p, config));
  return least;
}

// The plan validates, stays in the budget and computes what the reference computes.
void expect_plan_correct(const ConvLayerPlan& plan, const ConvProblem& fwd, std::size_t budget) {
  ASSERT_NO_THROW(plan.validate(fwd));
  const ConvArgs args = make_conv_args(fwd, 7);
  for (Direction dir : kAllDirections) {
    const ConvProblem p = fwd.with_dir(dir);
    const ConvPlan& chosen = plan.for_direction(dir);
    EXPECT_LE(workspace_of(chosen, p), budget) << chosen.solver->name();
    const Tensor want = run_in_layout({&direct_conv_solver(), {}}, p, args, Layout::NCHW);
    const Tensor got = run_in_layout(chosen, p, args, plan.layout());
    EXPECT_TRUE(close_relative(got, want, 1e-4)) << chosen.solver->name() << " " << p.key();
  }
}

std::string solvers_of(const ConvLayerPlan& plan) {
  return std::string(plan.fwd.solver->name()) + "," + std::string(plan.bwd_data.solver->name()) +
         "," + std::string(plan.bwd_weights.solver->name());
}

std::string names_of(const std::vector<const ConvSolver*>& solvers) {
  std::string out;
  for (const ConvSolver* solver : solvers) out += (out.empty() ? "" : ",") + std::string(solver->name());
  return out;
}

// The untuned plan and the layout calibration take their solvers from what each declares
// (UntunedRoles): these are the CPU's declarations, in the order the chain tries them.
TEST(Calibration, UntunedRolesComeFromTheSolvers) {
  EXPECT_EQ(names_of(untuned_nchw_chain(Device::cpu)), "winograd_f2x3,im2col_gemm,depthwise_direct");
  EXPECT_EQ(names_of(layout_baseline_solvers(Device::cpu)), "im2col_gemm,winograd_f2x3");
  ASSERT_NE(chwn_threshold_solver(Device::cpu), nullptr);
  EXPECT_EQ(chwn_threshold_solver(Device::cpu)->name(), "direct_chwn");
  std::vector<std::string> low_memory;
  for (const ConvSolver* solver : conv_solvers(Device::cpu))
    if (solver->untuned_roles().low_memory) low_memory.emplace_back(solver->name());
  EXPECT_EQ(low_memory, std::vector<std::string>{"mec"});
}

TEST(Calibration, ThresholdPlanWinogradForThreeByThree) {
  const ConvProblem p = conv(2, 8, 8, 10, 3);
  const ConvLayerPlan plan = threshold_plan(p, thresholds(4, 64, 14), SIZE_MAX);
  EXPECT_EQ(plan.layout(), Layout::NCHW);
  EXPECT_EQ(solvers_of(plan), "winograd_f2x3,winograd_f2x3,im2col_gemm");  // no Winograd bwd_w
  expect_plan_correct(plan, p, SIZE_MAX);
}

TEST(Calibration, ThresholdPlanIm2colForOtherKernels) {
  for (const ConvProblem& p : {conv(2, 8, 6, 11, 5, 1, 2), conv(2, 8, 6, 11, 3, 2, 1)}) {
    const ConvLayerPlan plan = threshold_plan(p, thresholds(4, 64), SIZE_MAX);
    EXPECT_EQ(plan.layout(), Layout::NCHW);
    EXPECT_EQ(solvers_of(plan), "im2col_gemm,im2col_gemm,im2col_gemm") << p.key();
    expect_plan_correct(plan, p, SIZE_MAX);
  }
}

TEST(Calibration, ThresholdPlanChwnBelowCt) {
  for (const ConvProblem& p : {conv(4, 3, 8, 9, 3), conv(2, 3, 8, 9, 5, 2, 2)}) {
    const ConvLayerPlan plan = threshold_plan(p, thresholds(16, 64), 0);  // needs no workspace
    EXPECT_EQ(plan.layout(), Layout::CHWN);
    EXPECT_EQ(solvers_of(plan), "direct_chwn,direct_chwn,direct_chwn");
    expect_plan_correct(plan, p, 0);
  }
  // Large N at large C goes CHWN too.
  const ConvProblem big_batch = conv(8, 8, 4, 6, 3);
  EXPECT_EQ(threshold_plan(big_batch, thresholds(4, 8), SIZE_MAX).layout(), Layout::CHWN);
}

TEST(Calibration, ThresholdPlanMecWhenBudgetRulesIm2colOut) {
  const ConvProblem p = conv(2, 8, 6, 12, 5, 1, 2);
  std::size_t budget = 0;
  for (Direction dir : kAllDirections) budget = std::max(budget, least_workspace("mec", p, dir));
  for (Direction dir : kAllDirections)
    ASSERT_GT(least_workspace("im2col_gemm", p, dir), budget) << "the case no longer tests MEC";
  const ConvLayerPlan plan = threshold_plan(p, thresholds(4, 64, 7), budget);
  EXPECT_EQ(plan.layout(), Layout::NHWC);
  EXPECT_EQ(solvers_of(plan), "mec,mec,mec");
  for (Direction dir : kAllDirections) EXPECT_EQ(plan.for_direction(dir).config.get("T", -1), 7);
  expect_plan_correct(plan, p, budget);
}

TEST(Calibration, ThresholdPlanDirectWhenNothingFits) {
  const ConvProblem p = conv(2, 8, 6, 10, 3);
  for (const char* name : {"winograd_f2x3", "im2col_gemm", "mec"})
    ASSERT_GT(least_workspace(name, p, Direction::fwd), 0u) << name;
  const ConvLayerPlan plan = threshold_plan(p, thresholds(4, 64, 7), 0);
  EXPECT_EQ(plan.layout(), Layout::NCHW);
  EXPECT_EQ(solvers_of(plan), "direct,direct,direct");
  expect_plan_correct(plan, p, 0);
}

TEST(Calibration, ThresholdPlanGroupedConvSkipsMec) {
  const ConvProblem p = conv(2, 8, 8, 10, 3, 1, 1, 2);
  const ConvLayerPlan roomy = threshold_plan(p, thresholds(4, 64, 7), SIZE_MAX);
  EXPECT_EQ(solvers_of(roomy), "im2col_gemm,im2col_gemm,im2col_gemm");  // Winograd needs g 1
  expect_plan_correct(roomy, p, SIZE_MAX);
  // A budget MEC would fit if it ran grouped convs: the reference, never MEC.
  std::size_t budget = 0;
  for (Direction dir : kAllDirections) {
    ConvProblem ungrouped = p;
    ungrouped.g = 1;
    budget = std::max(budget, least_workspace("mec", ungrouped, dir));
  }
  ASSERT_LT(budget, least_workspace("im2col_gemm", p, Direction::fwd));
  const ConvLayerPlan tight = threshold_plan(p, thresholds(4, 64, 7), budget);
  EXPECT_EQ(tight.layout(), Layout::NCHW);
  EXPECT_EQ(tight.fwd.solver->name(), "direct");
  expect_plan_correct(tight, p, budget);
}

// Short timing, so the real runs below stay quick.
CalibrationOptions quick_options(std::vector<std::string>* lines) {
  return testing::quick_calibration_options(Device::cpu, lines);
}

TEST(Calibration, TransformsMeasureEveryPair) {
  std::vector<std::string> lines;
  const auto gbps = calibrate_transforms(quick_options(&lines));
  EXPECT_EQ(gbps.size(), 6u);
  for (const auto& [pair, value] : gbps) {
    EXPECT_TRUE(std::isfinite(value) && value > 0) << pair << " " << value;
    EXPECT_EQ(pair.find('>'), 4u) << pair;
  }
  EXPECT_EQ(lines.size(), 6u);
}

bool one_of(int value, std::initializer_list<int> allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

TEST(Calibration, DeviceThresholdsWithinTheSweeps) {
  std::vector<std::string> lines;
  const auto start = std::chrono::steady_clock::now();
  const DeviceThresholds t = calibrate_device(quick_options(&lines));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(t.mec_t && t.ct && t.nt);
  EXPECT_TRUE(one_of(*t.mec_t, {0, 7, 14, 28, 56, 112})) << *t.mec_t;
  EXPECT_TRUE(one_of(*t.ct, {1, 3, 8, 16, 32, 64, 128, 256})) << *t.ct;  // 256: never
  EXPECT_TRUE(one_of(*t.nt, {1, 4, 8, 16, 32, 64, 128, 256})) << *t.nt;
  EXPECT_EQ(t.transform_gbps.size(), 6u);
  // Five MEC points, at least one point of each layout sweep, six transforms.
  EXPECT_GE(lines.size(), 5u + 2u + 6u);
  for (const std::string& line : lines) EXPECT_EQ(line.rfind("calibrate ", 0), 0u) << line;
  EXPECT_LT(seconds, 20.0);
}

// The real thing with the default timing policy: run by hand with
// --gtest_also_run_disabled_tests to see this machine's thresholds and how long they take.
TEST(Calibration, DISABLED_DefaultOptionsUnderAMinute) {
  CalibrationOptions options;
  options.progress = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
  const auto start = std::chrono::steady_clock::now();
  const DeviceThresholds t = calibrate_device(options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("mec_t %d ct %d nt %d in %.1f s\n", *t.mec_t, *t.ct, *t.nt, seconds);
  EXPECT_LT(seconds, 60.0);
}

}  // namespace
}  // namespace tunecnn
