// Every CPU conv solver x direction x shape x dtype against the direct reference, plus the
// workspace contract, applicability, the registry, the bias kernels and the Conv2d module.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/allocator.h"
#include "ops/conv/bias.h"
#include "ops/conv/conv2d.h"
#include "ops/conv/registry.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::random_tensor;

struct Shape2d {
  const char* name;
  int mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, g;
  ConvProblem problem(Direction dir, DType dt) const {
    return {dir, mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, g, dt};
  }
};

void PrintTo(const Shape2d& shape, std::ostream* os) {
  *os << shape.name;
}

// clang-format off
const Shape2d kShapes[] = {
    // name          mb  ic  ih  iw  oc kh kw sh sw ph pw  g
    {"batch1",        1,  3,  8,  8,  4, 3, 3, 1, 1, 1, 1, 1},
    {"odd7x5",        2,  3,  7,  5,  5, 3, 3, 1, 1, 0, 0, 1},
    {"odd_batch5",    5,  2,  6,  7,  3, 3, 3, 1, 1, 1, 1, 1},
    {"stride2_pad1",  3,  4,  7,  5,  6, 3, 3, 2, 2, 1, 1, 1},
    {"k5_s2_p2",      2,  2,  9, 11,  3, 5, 5, 2, 2, 2, 2, 1},
    {"k5_p0_full",    2,  2,  5,  5,  3, 5, 5, 1, 1, 0, 0, 1},
    {"k1",            2,  6,  5,  7,  4, 1, 1, 1, 1, 0, 0, 1},
    {"k1_stride2",    2,  4,  7,  7,  3, 1, 1, 2, 2, 0, 0, 1},
    {"k1_pad1",       2,  4,  5,  5,  3, 1, 1, 1, 1, 1, 1, 1},
    {"k1_groups2",    3,  4,  5,  5,  4, 1, 1, 1, 1, 0, 0, 2},
    {"pad2_k3",       2,  3,  6,  5,  2, 3, 3, 1, 1, 2, 2, 1},
    {"groups2",       2,  4,  6,  6,  6, 3, 3, 1, 1, 1, 1, 2},
    {"groups4_s2_p2", 3,  8,  7,  5,  8, 3, 3, 2, 2, 2, 2, 4},
    {"depthwise",     2,  6,  8,  8,  6, 3, 3, 1, 1, 1, 1, 6},
    {"depthwise_x2",  2,  4,  9,  9,  8, 5, 5, 2, 2, 2, 2, 4},
    {"anisotropic",   2,  3,  8,  9,  4, 3, 5, 1, 2, 0, 2, 1},
    {"lenet_conv1",   8,  1, 28, 28, 16, 5, 5, 1, 1, 2, 2, 1},
    {"lenet_conv2",   8, 16, 14, 14, 16, 5, 5, 1, 1, 2, 2, 1},
};
// clang-format on

const Direction kDirections[] = {Direction::fwd, Direction::bwd_data, Direction::bwd_weights};

// The args of a direction with random inputs and NaN-filled outputs, so an output element a
// solver forgets to write shows up.
ConvArgs make_args(const ConvProblem& p, std::uint64_t seed) {
  Rng rng(seed);
  ConvArgs args;
  args.src = random_tensor(p.src_shape(), rng, p.dt);
  args.wei = random_tensor(p.wei_shape(), rng, p.dt);
  args.diff_dst = random_tensor(p.dst_shape(), rng, p.dt);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  args.dst = Tensor::full(p.dst_shape(), nan, p.dt);
  args.diff_src = Tensor::full(p.src_shape(), nan, p.dt);
  args.diff_wei = Tensor::full(p.wei_shape(), nan, p.dt);
  return args;
}

const Tensor& output_of(const ConvArgs& args, Direction dir) {
  if (dir == Direction::fwd) return args.dst;
  return dir == Direction::bwd_data ? args.diff_src : args.diff_wei;
}

// Max |got - want| against tolerance * max |want|: errors grow with the sums' magnitude.
::testing::AssertionResult close_relative(const Tensor& got, const Tensor& want, double tol) {
  return dispatch_dtype(got.dtype(), [&]<class T>() -> ::testing::AssertionResult {
    const T* g = got.data<T>();
    const T* w = want.data<T>();
    double scale = 0;
    for (std::int64_t i = 0; i < want.numel(); ++i) scale = std::max(scale, std::abs(double(w[i])));
    const double bound = tol * std::max(scale, 1e-30);
    for (std::int64_t i = 0; i < want.numel(); ++i) {
      const double diff = std::abs(double(g[i]) - double(w[i]));
      if (!(diff <= bound))
        return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", want "
                                             << w[i] << " (bound " << bound << ")";
    }
    return ::testing::AssertionSuccess();
  });
}

using SolverCase = std::tuple<std::string, Direction, Shape2d, DType>;

class ConvSolverTest : public ::testing::TestWithParam<SolverCase> {};

TEST_P(ConvSolverTest, MatchesDirectReference) {
  const auto& [name, dir, shape, dt] = GetParam();
  const ConvSolver* solver = find_conv_solver(name);
  ASSERT_NE(solver, nullptr);
  const ConvProblem p = shape.problem(dir, dt);
  std::string why;
  ASSERT_TRUE(solver->applicable(p, &why)) << p.key() << ": " << why;
  const ConvArgs want = make_args(p, 42);
  run_conv({&direct_conv_solver(), {}}, p, want);
  const double tol = dt == DType::f64 ? 1e-12 : 1e-4;
  for (const TuneConfig& config : solver->configs(p)) {
    const ConvArgs got = make_args(p, 42);
    run_conv({solver, config}, p, got);
    EXPECT_TRUE(close_relative(output_of(got, dir), output_of(want, dir), tol))
        << name << " [" << config.str() << "] " << p.key();
  }
}

std::vector<std::string> solver_names() {
  std::vector<std::string> names;
  for (const ConvSolver* s : cpu_conv_solvers()) names.emplace_back(s->name());
  return names;
}

std::string case_name(const ::testing::TestParamInfo<SolverCase>& info) {
  const auto& [name, dir, shape, dt] = info.param;
  return name + "_" + std::string(to_string(dir)) + "_" + shape.name + "_" +
         std::string(to_string(dt));
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, ConvSolverTest,
                         ::testing::Combine(::testing::ValuesIn(solver_names()),
                                            ::testing::ValuesIn(kDirections),
                                            ::testing::ValuesIn(kShapes),
                                            ::testing::Values(DType::f32, DType::f64)),
                         case_name);

// The workspace contract: what workspace_bytes() promises is all run_conv allocates, and the
// solver uses that much and no more.
const Shape2d kWorkspaceShapes[] = {kShapes[0], kShapes[2],  kShapes[6],
                                    kShapes[9], kShapes[12], kShapes[17]};

using WorkspaceCase = std::tuple<std::string, Direction, Shape2d>;

class ConvWorkspaceTest : public ::testing::TestWithParam<WorkspaceCase> {};

TEST_P(ConvWorkspaceTest, PeakIncreaseIsWorkspaceBytes) {
  const auto& [name, dir, shape] = GetParam();
  const ConvSolver* solver = find_conv_solver(name);
  const ConvProblem p = shape.problem(dir, DType::f32);
  const ConvArgs args = make_args(p, 3);
  const std::size_t bytes = solver->workspace_bytes(p, {});
  Allocator& alloc = allocator_for(Device::cpu);
  alloc.reset_peak();
  const std::size_t before = alloc.stats().current_bytes;
  run_conv({solver, {}}, p, args);
  // run_conv always allocates one block, of at least one byte.
  EXPECT_EQ(alloc.stats().peak_bytes - before, Allocator::block_size(bytes)) << p.key();
}

TEST_P(ConvWorkspaceTest, UsesExactlyItsWorkspace) {
  const auto& [name, dir, shape] = GetParam();
  const ConvSolver* solver = find_conv_solver(name);
  const ConvProblem p = shape.problem(dir, DType::f32);
  const ConvArgs args = make_args(p, 3);
  const std::size_t bytes = solver->workspace_bytes(p, {});
  constexpr std::size_t kGuard = 256;
  constexpr unsigned char kSentinel = 0xA5;
  std::vector<unsigned char> buffer(bytes + kGuard, kSentinel);
  solver->run(p, {}, args, Workspace{bytes ? buffer.data() : nullptr, bytes});
  for (std::size_t i = bytes; i < buffer.size(); ++i)
    ASSERT_EQ(buffer[i], kSentinel) << "wrote past its workspace at byte " << i << ", " << p.key();
  std::size_t used = bytes;
  while (used > 0 && buffer[used - 1] == kSentinel) --used;
  // Slices are padded to a cache line; more unused tail than that means an overestimate.
  EXPECT_LT(bytes - used, 64u) << "workspace_bytes " << bytes << " but used " << used << ", "
                               << p.key();
}

std::string workspace_case_name(const ::testing::TestParamInfo<WorkspaceCase>& info) {
  const auto& [name, dir, shape] = info.param;
  return name + "_" + std::string(to_string(dir)) + "_" + shape.name;
}

INSTANTIATE_TEST_SUITE_P(AllSolvers, ConvWorkspaceTest,
                         ::testing::Combine(::testing::ValuesIn(solver_names()),
                                            ::testing::ValuesIn(kDirections),
                                            ::testing::ValuesIn(kWorkspaceShapes)),
                         workspace_case_name);

TEST(ConvWorkspace, Im2colNeedsColumnsExceptForPlain1x1) {
  const ConvSolver& im2col = *find_conv_solver("im2col_gemm");
  const ConvProblem k3 = kShapes[17].problem(Direction::fwd, DType::f32);
  const ConvProblem k1 = kShapes[6].problem(Direction::fwd, DType::f32);
  EXPECT_GE(im2col.workspace_bytes(k3, {}), std::size_t{16} * 25 * 14 * 14 * 4);
  EXPECT_EQ(im2col.workspace_bytes(k1, {}), 0u);
  EXPECT_EQ(direct_conv_solver().workspace_bytes(k3, {}), 0u);
}

TEST(ConvSolvers, Im2colBackwardWeightsIsDeterministic) {
  const ConvSolver& im2col = *find_conv_solver("im2col_gemm");
  const ConvProblem p = kShapes[17].problem(Direction::bwd_weights, DType::f32);
  const ConvArgs first = make_args(p, 9), second = make_args(p, 9);
  run_conv({&im2col, {}}, p, first);
  run_conv({&im2col, {}}, p, second);
  EXPECT_EQ(
      std::memcmp(first.diff_wei.raw_data(), second.diff_wei.raw_data(), first.diff_wei.nbytes()),
      0);
}

TEST(ConvSolvers, ApplicableToEveryWellFormedProblem) {
  for (const Shape2d& shape : kShapes)
    for (Direction dir : kDirections)
      for (const ConvSolver* solver : cpu_conv_solvers()) {
        std::string why;
        const ConvProblem p = shape.problem(dir, DType::f32);
        EXPECT_TRUE(solver->applicable(p, &why)) << solver->name() << " " << p.key() << ": " << why;
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
  const ConvProblem p = kShapes[0].problem(Direction::fwd, DType::f32);
  ConvArgs args = make_args(p, 1);
  args.wei = Tensor::zeros({4, 3, 5, 5});
  for (const ConvSolver* solver : cpu_conv_solvers()) {
    try {
      run_conv({solver, {}}, p, args);
      FAIL() << solver->name() << " accepted a wrong weight shape";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.key()), std::string::npos) << e.what();
    }
  }
}

TEST(ConvRegistry, OrderAndLookup) {
  EXPECT_EQ(solver_names(), (std::vector<std::string>{"im2col_gemm", "direct"}));
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
  ConvArgs want = make_args(p, 0);
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
