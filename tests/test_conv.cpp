// The registry, applicability, argument checks, the bias kernels and the Conv2d module. The
// solvers' numerics and workspaces are in test_conv_solvers.cpp.
#include <gtest/gtest.h>

#include <cstring>

#include "core/allocator.h"
#include "ops/conv/bias.h"
#include "ops/conv/conv2d.h"
#include "ops/conv/registry.h"
#include "tests/support/conv_testing.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using namespace tunecnn::testing;

ConvProblem edge_problem(const std::string& name, Direction dir) {
  for (const ConvShape& shape : edge_case_shapes())
    if (shape.name == name) return shape.with(dir, DType::f32);
  throw std::out_of_range(name);
}

std::vector<std::string> solver_names() {
  std::vector<std::string> names;
  for (const ConvSolver* s : cpu_conv_solvers()) names.emplace_back(s->name());
  return names;
}

TEST(ConvWorkspace, Im2colNeedsColumnsExceptForPlain1x1) {
  const ConvSolver& im2col = *find_conv_solver("im2col_gemm");
  const ConvProblem k5{Direction::fwd, 8, 16, 14, 14, 16, 5, 5, 1, 1, 2, 2, 1};
  const ConvProblem k1 = edge_problem("k1", Direction::fwd);
  EXPECT_GE(im2col.workspace_bytes(k5, {}), std::size_t{16} * 25 * 14 * 14 * 4);
  EXPECT_EQ(im2col.workspace_bytes(k1, {}), 0u);
  EXPECT_EQ(direct_conv_solver().workspace_bytes(k5, {}), 0u);
}

TEST(ConvSolvers, BackwardWeightsIsDeterministic) {
  const ConvProblem p{Direction::bwd_weights, 8, 16, 14, 14, 16, 5, 5, 1, 1, 2, 2, 1};
  for (const ConvSolver* solver : cpu_conv_solvers()) {
    if (!solver->applicable(p, nullptr)) continue;
    const Layout layout = solver->layouts(p).front();
    for (const TuneConfig& config : solver->configs(p)) {
      const ConvArgs args = make_conv_args(p, 9);
      const Tensor first = run_in_layout({solver, config}, p, args, layout);
      const Tensor second = run_in_layout({solver, config}, p, args, layout);
      EXPECT_EQ(std::memcmp(first.raw_data(), second.raw_data(), first.nbytes()), 0)
          << solver->name() << " [" << config.str() << "]";
    }
  }
}

// The general solvers serve every well-formed problem (im2col_gemm's lowering runs depthwise ones
// as channel_by_channel); the specialised ones say why not.
TEST(ConvSolvers, GeneralSolversApplyToEveryWellFormedProblem) {
  for (const ConvShape& shape : edge_case_shapes())
    for (Direction dir : kAllDirections)
      for (const ConvSolver* solver : cpu_conv_solvers()) {
        std::string why;
        const ConvProblem p = shape.with(dir, DType::f32);
        const bool ok = solver->applicable(p, &why);
        const bool depthwise = p.g > 1 && p.g == p.ic && p.oc == p.ic;
        const std::string_view general = depthwise ? "channel_by_channel" : "im2col_gemm";
        if (solver->name() == "direct" || solver->name() == general) {
          EXPECT_TRUE(ok) << solver->name() << " " << p.key() << ": " << why;
        } else if (!ok) {
          EXPECT_FALSE(why.empty()) << solver->name() << " rejects " << p.key() << " silently";
        }
      }
}

TEST(ConvSolvers, RejectMalformedProblemsAndSayWhy) {
  ConvProblem bad_groups{Direction::fwd, 1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 2, DType::f32};
  ConvProblem too_big{Direction::bwd_data, 1, 2, 3, 3, 2, 5, 5, 1, 1, 0, 0, 1, DType::f32};
  for (const ConvSolver* solver : cpu_conv_solvers()) {
    std::string why;
    EXPECT_FALSE(solver->applicable(bad_groups, &why)) << solver->name();
    EXPECT_NE(why.find("groups"), std::string::npos) << solver->name() << ": " << why;
    why.clear();
    EXPECT_FALSE(solver->applicable(too_big, &why)) << solver->name();
    EXPECT_NE(why.find("kernel"), std::string::npos) << solver->name() << ": " << why;
    EXPECT_FALSE(solver->applicable(too_big, nullptr));
  }
}

TEST(ConvSolvers, RunRejectsMismatchedTensors) {
  const ConvProblem p = edge_problem("batch1", Direction::fwd);
  for (const ConvSolver* solver : cpu_conv_solvers()) {
    if (!solver->applicable(p, nullptr)) continue;
    ConvArgs args = make_conv_args(p, 1);
    args.wei = Tensor::zeros({4, 3, 5, 5});
    try {
      run_conv({solver, solver->configs(p).front()}, p, args);
      FAIL() << solver->name() << " accepted a wrong weight shape";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.key()), std::string::npos) << e.what();
    }
  }
}

TEST(ConvSolvers, RunRejectsTheWrongLayout) {
  const ConvProblem p = edge_problem("batch1", Direction::fwd);
  for (const ConvSolver* solver : cpu_conv_solvers()) {
    if (!solver->applicable(p, nullptr)) continue;
    const std::vector<Layout> ok = solver->layouts(p);
    for (Layout layout : {Layout::NCHW, Layout::CHWN, Layout::NHWC}) {
      if (std::find(ok.begin(), ok.end(), layout) != ok.end()) continue;
      EXPECT_THROW(run_in_layout({solver, solver->configs(p).front()}, p, make_conv_args(p, 1),
                                 layout),
                   Error)
          << solver->name() << " ran on " << to_string(layout);
    }
  }
}

TEST(ConvRegistry, OrderAndLookup) {
  EXPECT_EQ(solver_names(),
            (std::vector<std::string>{"im2col_gemm", "mec", "pointwise_gemm", "winograd_f2x3", "direct_chwn",
                                      "depthwise_direct", "diagonal", "channel_by_channel",
#ifdef TUNECNN_HAVE_ONEDNN
                                      "onednn_nchw", "onednn_nhwc",
#endif
                                      "direct"}));
  EXPECT_EQ(cpu_conv_solvers().back(), &direct_conv_solver());
  EXPECT_EQ(find_conv_solver("direct"), &direct_conv_solver());
  EXPECT_EQ(find_conv_solver("no_such_solver"), nullptr);
}

TEST(ConvBias, AddAndReduce) {
  Tensor y = Tensor::from_vector(std::vector<double>(2 * 3 * 2 * 2, 1.0), {2, 3, 2, 2});
  const Tensor b = Tensor::from_vector(std::vector<double>{1, 2, 3}, {3});
  add_bias(y, b);
  EXPECT_EQ(y.data<double>()[0], 2.0);
  EXPECT_EQ(y.data<double>()[4], 3.0);       // n0, c1
  EXPECT_EQ(y.data<double>()[12 + 8], 4.0);  // n1, c2
  Tensor db = Tensor::zeros({3}, DType::f64);
  bias_grad(y, db);
  EXPECT_EQ(db.data<double>()[0], 16.0);  // 2 images x 4 pixels x 2
  EXPECT_EQ(db.data<double>()[2], 32.0);
  EXPECT_THROW(add_bias(y, Tensor::zeros({4}, DType::f64)), Error);
}

// Remembers which problems it was asked about and always picks the direct solver.
class RecordingPlanner final : public ConvPlanner {
 public:
  ConvLayerPlan plan(const ConvProblem& fwd_problem) override {
    asked.push_back(fwd_problem);
    const ConvPlan direct{&direct_conv_solver(), {}};
    return {direct, direct, direct};
  }
  std::vector<ConvProblem> asked;
};

TEST(Conv2dModule, ForwardMatchesReferencePlusBiasAndCachesPlans) {
  Rng rng(5);
  Conv2d conv(4, 6, 3, 2, 1, rng, /*groups=*/2);
  EXPECT_EQ(conv.describe(), "Conv2d(4->6, 3x3, stride 2, pad 1, groups 2)");
  const auto params = conv.parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[0].second.shape(), (Shape{6, 2, 3, 3}));
  EXPECT_EQ(params[1].first, "bias");
  Variable bias = params[1].second;
  bias.data().fill(0.5);

  auto planner = std::make_shared<RecordingPlanner>();
  conv.set_planner(planner);
  const Variable x(random_tensor({2, 4, 7, 5}, rng));
  const Variable y = conv(x);
  conv(x);
  conv(Variable(random_tensor({1, 4, 9, 9}, rng)));
  EXPECT_EQ(planner->asked.size(), 2u);
  ASSERT_EQ(conv.plans().size(), 2u);
  EXPECT_EQ(conv.plans()[0].second.fwd.solver, &direct_conv_solver());

  const ConvProblem p = conv_problem(x.data(), params[0].second.data(), {2, 1, 2});
  ConvArgs want = make_conv_args(p, 0);
  want.src = x.data();
  want.wei = params[0].second.data();
  run_conv({&direct_conv_solver(), {}}, p, want);
  add_bias(want.dst, bias.data());
  EXPECT_TRUE(close_relative(y.data(), want.dst, 1e-5));
}

TEST(Conv2dModule, DefaultPlanPrefersIm2colAndNoBiasIsHonoured) {
  Rng rng(6);
  Conv2d conv(1, 16, 5, 1, 2, rng, 1, /*bias=*/false);
  EXPECT_EQ(conv.describe(), "Conv2d(1->16, 5x5, stride 1, pad 2, no bias)");
  EXPECT_EQ(conv.parameters().size(), 1u);
  const Variable y = conv(Variable(random_tensor({2, 1, 28, 28}, rng)));
  EXPECT_EQ(y.shape(), (Shape{2, 16, 28, 28}));
  ASSERT_EQ(conv.plans().size(), 1u);
  EXPECT_EQ(conv.plans()[0].second.fwd.solver->name(), "im2col_gemm");
  EXPECT_EQ(conv.plans()[0].first.key(),
            "conv fwd mb2 ic1 ih28 iw28 oc16 kh5 kw5 sh1 sw1 ph2 pw2 g1");
}

TEST(Conv2dOp, ShapeErrorsNameTheShapes) {
  Rng rng(7);
  const Variable x(random_tensor({2, 3, 8, 8}, rng));
  const Variable w(random_tensor({4, 2, 3, 3}, rng));
  const ConvLayerPlan plan = FirstApplicablePlanner().plan(
      ConvProblem{Direction::fwd, 2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, DType::f32});
  try {
    conv2d(x, w, Variable(), {1, 1, 1}, plan);
    FAIL() << "a weight with 2 input channels accepted for a 3-channel input";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[4, 2, 3, 3]"), std::string::npos) << what;
    EXPECT_NE(what.find("[2, 3, 8, 8]"), std::string::npos) << what;
  }
  EXPECT_THROW(conv2d(x, Variable(random_tensor({4, 3, 3, 3}, rng)),
                      Variable(random_tensor({5}, rng)), {1, 1, 1}, plan),
               Error);
}

}  // namespace
}  // namespace tunecnn
