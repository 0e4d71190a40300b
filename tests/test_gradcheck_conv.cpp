// conv2d's gradients w.r.t. input, weight and bias against central differences, through a
// hand-built plan for every CPU solver in its own layout, so each solver's backward passes are
// checked on their own (directions an NCHW solver lacks fall back to the reference). The input
// arrives NCHW and the output is transformed back to NCHW, so the layout transforms' gradients
// are checked on the way.
#include <gtest/gtest.h>

#include "ops/conv/conv2d.h"
#include "ops/conv/registry.h"
#include "ops/layout/to_layout.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::gradcheck;
using testing::random_tensor;

// The solver in its first layout; the reference where it does not apply. The reference runs only
// NCHW, so a solver of another layout must apply to every direction or the whole plan is the
// reference.
ConvLayerPlan plan_for(const ConvSolver& solver, const Shape& x, const Shape& weight,
                       const ConvGeometry& geo) {
  const ConvProblem p =
      conv_problem(Tensor::empty(x, DType::f64), Tensor::empty(weight, DType::f64), geo);
  const Layout layout = solver.layouts(p).front();
  const ConvPlan reference{&direct_conv_solver(), {}, Layout::NCHW};
  ConvLayerPlan plan;
  for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
    const ConvProblem problem = p.with_dir(dir);
    ConvPlan& slot = dir == Direction::fwd ? plan.fwd
                     : dir == Direction::bwd_data ? plan.bwd_data : plan.bwd_weights;
    if (solver.applicable(problem, nullptr))
      slot = {&solver, solver.configs(problem).front(), layout};
    else if (layout == Layout::NCHW)
      slot = reference;
    else
      return {reference, reference, reference};
  }
  return plan;
}

// conv2d with the output back in NCHW, where the gradient check's probe lives.
Variable conv2d_nchw(const Variable& x, const Variable& w, const Variable& b,
                     const ConvGeometry& geo, const ConvLayerPlan& plan) {
  return to_layout(conv2d(x, w, b, geo, plan), Layout::NCHW);
}

struct GradCase {
  const char* name;
  Shape x, weight;
  ConvGeometry geo;
};

const GradCase kCases[] = {
    {"stride2_pad1_groups2", {2, 4, 5, 6}, {4, 2, 3, 3}, {2, 1, 2}},
    {"stride1_pad2_k3", {1, 2, 4, 3}, {3, 2, 3, 3}, {1, 2, 1}},
    {"stride2_pad1_k3", {2, 3, 6, 5}, {4, 3, 3, 3}, {2, 1, 1}},
    {"plain_1x1_groups2", {2, 4, 3, 3}, {6, 2, 1, 1}, {1, 0, 2}},
    {"depthwise_stride2", {2, 3, 5, 5}, {3, 1, 3, 3}, {2, 1, 3}},
};

void PrintTo(const GradCase& c, std::ostream* os) {
  *os << c.name;
}

using Case = std::tuple<std::string, GradCase>;

class ConvGradcheck : public ::testing::TestWithParam<Case> {};

TEST_P(ConvGradcheck, InputWeightAndBias) {
  const auto& [solver_name, c] = GetParam();
  const ConvSolver* solver = find_conv_solver(solver_name);
  ASSERT_NE(solver, nullptr);
  const ConvLayerPlan plan = plan_for(*solver, c.x, c.weight, c.geo);
  const ConvGeometry geo = c.geo;
  Rng rng(11);
  const Tensor x = random_tensor(c.x, rng, DType::f64);
  const Tensor w = random_tensor(c.weight, rng, DType::f64);
  const Tensor b = random_tensor({c.weight[0]}, rng, DType::f64);
  auto fn = [&](const std::vector<Variable>& in) {
    return conv2d_nchw(in[0], in[1], in[2], geo, plan);
  };
  EXPECT_TRUE(gradcheck(fn, {x, w, b}));
}

TEST_P(ConvGradcheck, WithoutBiasOrInputGradient) {
  const auto& [solver_name, c] = GetParam();
  const ConvLayerPlan plan = plan_for(*find_conv_solver(solver_name), c.x, c.weight, c.geo);
  const ConvGeometry geo = c.geo;
  Rng rng(12);
  const Tensor x = random_tensor(c.x, rng, DType::f64);
  const Tensor w = random_tensor(c.weight, rng, DType::f64);
  auto fn = [&](const std::vector<Variable>& in) {
    return conv2d_nchw(in[0], in[1], Variable(), geo, plan);
  };
  testing::GradcheckOptions options;
  options.differentiable = {false, true};
  EXPECT_TRUE(gradcheck(fn, {x, w}, options));
}

std::vector<std::string> solver_names() {
  std::vector<std::string> names;
  for (const ConvSolver* s : cpu_conv_solvers()) names.emplace_back(s->name());
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, ConvGradcheck,
                         ::testing::Combine(::testing::ValuesIn(solver_names()),
                                            ::testing::ValuesIn(kCases)),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                         });

TEST(ConvGradcheck, InputWithoutGradGetsNone) {
  Rng rng(13);
  Variable x(random_tensor({1, 2, 4, 4}, rng, DType::f64), false);
  Variable w(random_tensor({2, 2, 3, 3}, rng, DType::f64), true);
  const ConvLayerPlan plan =
      plan_for(*find_conv_solver("im2col_gemm"), {1, 2, 4, 4}, {2, 2, 3, 3}, {1, 1, 1});
  Variable y = conv2d(x, w, Variable(), {1, 1, 1}, plan);
  y.backward(Tensor::full(y.shape(), 1.0, DType::f64));
  EXPECT_FALSE(x.has_grad());
  EXPECT_TRUE(w.has_grad());
}

}  // namespace
}  // namespace tunecnn
