// The CUDA conv solvers: every one x every layout x every config x every direction x every shape
// (the edge cases in f32 and f64, the scaled-down model layers in f32) against the CPU direct
// reference;
// the GPU direct against the CPU direct bit for bit (f32) or to rounding (f64); conv2d with bias
// on the GPU against the CPU; the workspace contract; every config on a NaN-filled workspace, run
// twice for the same bits; cuDNN's configs each once. Those need a GPU and skip without one.
// The registry checks at the end run everywhere: they never touch a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "core/allocator.h"
#include "core/cuda_runtime.h"
#include "core/variable.h"
#include "ops/conv/conv2d.h"
#include "ops/conv/registry.h"
#include "ops/layout/reference.h"
#include "tests/support/conv_testing.h"

namespace tunecnn {
namespace {

using namespace tunecnn::testing;

// A GPU test's first line: skips, saying why, on machines without a usable GPU.
#define SKIP_WITHOUT_GPU()                                                                       \
  do {                                                                                           \
    if (cuda_device_count() == 0)                                                                \
      GTEST_SKIP() << (cuda_built() ? "no CUDA device is present"                                \
                                    : "this build has no CUDA backend (-DTUNECNN_CUDA=ON)");      \
  } while (0)

struct CudaCase {
  const ConvSolver* solver;
  ConvShape shape;
  Direction dir;
  DType dt;
  Layout layout = Layout::NCHW;  // of the activations, one of the solver's layouts
  ConvProblem problem() const { return on_device(shape.with(dir, dt), Device::cuda); }
};

void PrintTo(const CudaCase& c, std::ostream* os) {
  *os << c.solver->name() << " " << c.problem().key() << " in " << to_string(c.layout);
}

// NCHW cases keep their names from before solvers had other layouts on the GPU.
std::string case_name(const ::testing::TestParamInfo<CudaCase>& info) {
  const CudaCase& c = info.param;
  return std::string(c.solver->name()) + "_" + std::string(to_string(c.dir)) + "_" + c.shape.name +
         "_" + std::string(to_string(c.dt)) +
         (c.layout == Layout::NCHW ? "" : "_" + std::string(to_string(c.layout)));
}

// applicable() needs no GPU (cudnn asks cuDNN only where one is present), so the cases are
// listed on any machine: one per direction and layout the solver runs.
void add_if_applicable(std::vector<CudaCase>& cases, const ConvSolver* solver,
                       const ConvShape& shape, DType dt) {
  for (Direction dir : kAllDirections) {
    const CudaCase c{solver, shape, dir, dt};
    if (!solver->applicable(c.problem(), nullptr)) continue;
    for (Layout layout : solver->layouts(c.problem())) {
      CudaCase in_layout = c;
      in_layout.layout = layout;
      cases.push_back(in_layout);
    }
  }
}

// Every GPU solver on each of `shapes` in each of `dtypes`, wherever it applies.
std::vector<CudaCase> applicable_cases(const std::vector<ConvShape>& shapes,
                                       std::initializer_list<DType> dtypes) {
  std::vector<CudaCase> cases;
  for (const ConvSolver* solver : conv_solvers(Device::cuda))
    for (const ConvShape& shape : shapes)
      for (DType dt : dtypes) add_if_applicable(cases, solver, shape, dt);
  return cases;
}

std::vector<CudaCase> all_cases() {
  std::vector<CudaCase> cases;
  for (const ConvSolver* solver : conv_solvers(Device::cuda)) {
    for (const ConvShape& shape : edge_case_shapes()) {
      add_if_applicable(cases, solver, shape, DType::f32);
      add_if_applicable(cases, solver, shape, DType::f64);
    }
    for (const ConvShape& shape : model_layer_shapes())
      add_if_applicable(cases, solver, shape, DType::f32);
  }
  return cases;
}

Tensor& output_of(ConvArgs& args, Direction dir) {
  if (dir == Direction::fwd) return args.dst;
  return dir == Direction::bwd_data ? args.diff_src : args.diff_wei;
}

// The CPU reference's output for the problem, in a tensor of its own: cpu_args keep their NaN
// outputs for the GPU copy.
Tensor cpu_reference(const ConvProblem& gpu_problem, const ConvArgs& cpu_args) {
  const ConvProblem p = on_device(gpu_problem, Device::cpu);
  ConvArgs args = cpu_args;
  Tensor& out = output_of(args, p.dir);
  out = out.clone();
  run_conv({&direct_conv_solver(), {}}, p, args);
  return out;
}

// Runs one config on the GPU args (stored in `layout`), after refilling the output with NaN so
// an element the config forgets shows up even when an earlier config wrote it; returns the
// output on the CPU, in the layout it was written in.
Tensor run_on_gpu(const ConvSolver& solver, const TuneConfig& config, const ConvProblem& p,
                  const ConvArgs& gpu_args, Layout layout = Layout::NCHW) {
  Tensor out = conv_output(gpu_args, p.dir);
  out.fill(std::numeric_limits<double>::quiet_NaN());
  run_conv({&solver, config, layout}, p, gpu_args);
  return out.to(Device::cpu);
}

// NCHW CPU arguments as a solver running in `layout` takes them on the GPU (weights keep their
// one layout).
ConvArgs gpu_args_in(const ConvArgs& cpu_args, Layout layout) {
  return conv_args_on(conv_args_in_layout(cpu_args, layout), Device::cuda);
}

std::string describe(const ConvSolver& solver, const TuneConfig& config, const ConvProblem& p) {
  return std::string(solver.name()) + " [" + config.str() + "] " + std::string(to_string(p.dir)) +
         " " + p.key() + " on cuda";
}

class CudaConvSolverTest : public ::testing::TestWithParam<CudaCase> {};

// A problem's random arguments on the GPU in `layout`, the CPU reference's result for them in
// the memory order the GPU writes it (diff_wei is [oc, ic/g, kh, kw] in every layout), and how
// close a GPU result must come (relative, by the dtype).
struct ReferenceCheck {
  ConvArgs gpu_args;
  Tensor want;
  double tol = 0;
};

ReferenceCheck reference_check(const ConvProblem& p, std::uint64_t seed, Layout layout) {
  const ConvArgs cpu_args = make_conv_args(on_device(p, Device::cpu), seed);
  ConvArgs gpu_args = gpu_args_in(cpu_args, layout);
  Tensor want = convert_layout_reference(cpu_reference(p, cpu_args),
                                         conv_output(gpu_args, p.dir).layout());
  return {std::move(gpu_args), std::move(want), p.dt == DType::f64 ? 1e-12 : 1e-4};
}

TEST_P(CudaConvSolverTest, MatchesCpuReferenceInEveryConfig) {
  SKIP_WITHOUT_GPU();
  const CudaCase& c = GetParam();
  const ConvProblem p = c.problem();
  const ReferenceCheck check = reference_check(p, 42, c.layout);
  const std::vector<TuneConfig> configs = c.solver->configs(p);
  ASSERT_FALSE(configs.empty()) << c.solver->name() << " has no config for " << p.key();
  for (const TuneConfig& config : configs)
    EXPECT_TRUE(close_relative(run_on_gpu(*c.solver, config, p, check.gpu_args, c.layout),
                               check.want, check.tol))
        << describe(*c.solver, config, p) << " in " << to_string(c.layout);
}

INSTANTIATE_TEST_SUITE_P(CudaSolvers, CudaConvSolverTest, ::testing::ValuesIn(all_cases()),
                         case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaConvSolverTest);

// Same sums in the same order in double: f32 results are identical (a product of two floats is
// exact in double, fused or not), f64 ones differ only where the compilers fuse differently.
TEST(CudaDirect, MatchesCpuDirectBitForBitInF32) {
  SKIP_WITHOUT_GPU();
  const ConvSolver& gpu_direct = direct_conv_solver(Device::cuda);
  for (const ConvShape& shape : edge_case_shapes())
    for (Direction dir : kAllDirections)
      for (DType dt : {DType::f32, DType::f64}) {
        const ConvProblem p = on_device(shape.with(dir, dt), Device::cuda);
        const ConvArgs cpu_args = make_conv_args(on_device(p, Device::cpu), 7);
        const Tensor want = cpu_reference(p, cpu_args);
        const Tensor got = run_on_gpu(gpu_direct, {}, p, conv_args_on(cpu_args, Device::cuda));
        EXPECT_TRUE(close_relative(got, want, dt == DType::f32 ? 0.0 : 1e-12))
            << describe(gpu_direct, {}, p);
      }
}

// conv2d forward and backward with bias on the GPU (default planner: cuDNN's choices) against
// the same on the CPU.
TEST(CudaConv2d, ForwardAndBackwardWithBiasMatchCpu) {
  SKIP_WITHOUT_GPU();
  const ConvGeometry geo{2, 1, 2};  // stride, padding, groups
  const ConvProblem problem{Direction::fwd, 3, 4, 9, 7, 6, 3, 3, 2, 2, 1, 1, 2};
  const ConvArgs cpu_args = make_conv_args(problem, 11);
  const Tensor bias = Tensor::from_vector(std::vector<float>{0.5f, -1, 2, 0, 0.25f, -0.75f}, {6});
  const Tensor dy = cpu_args.diff_dst;
  FirstApplicablePlanner planner;
  struct Grads {
    Tensor y, dx, dw, db;
  };
  auto run_on = [&](Device device) {
    Variable x(cpu_args.src.to(device), true), w(cpu_args.wei.to(device), true),
        b(bias.to(device), true);
    const ConvLayerPlan plan = planner.plan(conv_problem(x.data(), w.data(), geo));
    Variable y = conv2d(x, w, b, geo, plan);
    y.backward(dy.to(device));
    return Grads{y.data().to(Device::cpu), x.grad().to(Device::cpu), w.grad().to(Device::cpu),
                 b.grad().to(Device::cpu)};
  };
  const Grads cpu = run_on(Device::cpu), gpu = run_on(Device::cuda);
  EXPECT_TRUE(close_relative(gpu.y, cpu.y, 1e-5)) << "y";
  EXPECT_TRUE(close_relative(gpu.dx, cpu.dx, 1e-5)) << "dx";
  EXPECT_TRUE(close_relative(gpu.dw, cpu.dw, 1e-5)) << "dw";
  EXPECT_TRUE(close_relative(gpu.db, cpu.db, 1e-6)) << "db";
}

// The workspace contract, per config: run_conv allocates what workspace_bytes() promises, on the
// GPU (libraries' own allocations bypass tunecnn's allocator and are not counted).
std::vector<CudaCase> workspace_cases() {
  const auto& edges = edge_case_shapes();
  const auto& layers = model_layer_shapes();
  return applicable_cases({edges[0], edges[2], edges[8], edges[17], edges[18], layers[1], layers[8]},
                          {DType::f32});
}

class CudaConvWorkspaceTest : public ::testing::TestWithParam<CudaCase> {};

TEST_P(CudaConvWorkspaceTest, RunConvAllocatesWorkspaceBytesOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const CudaCase& c = GetParam();
  const ConvProblem p = c.problem();
  const ConvArgs args = gpu_args_in(make_conv_args(on_device(p, Device::cpu), 3), c.layout);
  Allocator& alloc = allocator_for(Device::cuda);
  for (const TuneConfig& config : c.solver->configs(p)) {
    const std::size_t bytes = c.solver->workspace_bytes(p, config);
    alloc.reset_peak();
    const std::size_t before = alloc.stats().current_bytes;
    run_conv({c.solver, config, c.layout}, p, args);
    cuda_synchronize();
    EXPECT_EQ(alloc.stats().peak_bytes - before, Allocator::block_size(bytes))
        << describe(*c.solver, config, p);
  }
}

INSTANTIATE_TEST_SUITE_P(CudaSolvers, CudaConvWorkspaceTest, ::testing::ValuesIn(workspace_cases()),
                         case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaConvWorkspaceTest);

// Every config with a workspace full of NaN, which a fresh cudaMalloc block (what the tests above
// mostly get) hides: a solver that reads scratch it has not written (a buffer it should have
// cleared, a region it should have filled) shows NaN. Then once more with a zeroed workspace,
// which must give the same bits (one stream, fixed sums), except for cuDNN, some of whose
// algorithms add with atomics.
std::vector<CudaCase> poisoned_workspace_cases() {
  const auto& edges = edge_case_shapes();
  // odd_batch5, stride2_pad1, k5_s2_p2, pad3_k3, groups4_s2_p2, depthwise_x2, aniso_k5x3
  return applicable_cases({edges[2], edges[5], edges[6], edges[13], edges[17], edges[19], edges[21]},
                          {DType::f32, DType::f64});
}

class CudaConvPoisonedWorkspaceTest : public ::testing::TestWithParam<CudaCase> {};

TEST_P(CudaConvPoisonedWorkspaceTest, NanWorkspaceChangesNothingAndRunsRepeat) {
  SKIP_WITHOUT_GPU();
  const CudaCase& c = GetParam();
  const ConvProblem p = c.problem();
  const ReferenceCheck check = reference_check(p, 5, c.layout);
  const ConvArgs& gpu_args = check.gpu_args;
  for (const TuneConfig& config : c.solver->configs(p)) {
    const std::size_t bytes = c.solver->workspace_bytes(p, config);
    // f32 NaNs: any 8 aligned bytes of them are a double NaN too.
    Tensor scratch = Tensor::empty({static_cast<std::int64_t>(bytes / 4 + 1)}, DType::f32,
                                   Device::cuda);
    const auto run_with = [&](double fill) {
      scratch.fill(fill);
      Tensor out = conv_output(gpu_args, p.dir);
      out.fill(std::numeric_limits<double>::quiet_NaN());
      c.solver->run(p, config, gpu_args, Workspace{bytes ? scratch.raw_data() : nullptr, bytes});
      return out.to(Device::cpu);
    };
    const Tensor poisoned = run_with(std::numeric_limits<double>::quiet_NaN());
    EXPECT_TRUE(close_relative(poisoned, check.want, check.tol)) << describe(*c.solver, config, p);
    if (c.solver->name() != "cudnn") {
      EXPECT_TRUE(close_relative(run_with(0.0), poisoned, 0.0))
          << "not repeatable: " << describe(*c.solver, config, p);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CudaSolvers, CudaConvPoisonedWorkspaceTest,
                         ::testing::ValuesIn(poisoned_workspace_cases()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaConvPoisonedWorkspaceTest);

// cuDNN's configs are its algorithms for the direction, each once (its heuristic may list one
// algorithm once per math type), and each has a workspace size.
TEST(CudaCudnn, ConfigsNameEachAlgorithmOnce) {
  SKIP_WITHOUT_GPU();
  const ConvSolver* cudnn = find_conv_solver("cudnn", Device::cuda);
  ASSERT_NE(cudnn, nullptr);
  for (const ConvShape& shape : edge_case_shapes())
    for (Direction dir : kAllDirections)
      for (DType dt : {DType::f32, DType::f64}) {
        const ConvProblem p = on_device(shape.with(dir, dt), Device::cuda);
        const std::vector<TuneConfig> configs = cudnn->configs(p);
        EXPECT_FALSE(configs.empty()) << p.key();
        for (std::size_t i = 0; i < configs.size(); ++i) {
          EXPECT_NO_THROW((void)cudnn->workspace_bytes(p, configs[i]))
              << p.key() << " [" << configs[i].str() << "]";
          for (std::size_t j = 0; j < i; ++j)
            EXPECT_NE(configs[i], configs[j]) << p.key() << " lists [" << configs[i].str()
                                              << "] twice";
        }
      }
}

// applicable() says yes exactly when configs() has an algorithm, so the tuners, which call
// configs() only for applicable solvers, skip cuDNN instead of failing where it has none; a second
// call (from its per-key cache) gives the same answer.
TEST(CudaCudnn, ApplicableExactlyWhenAnAlgorithmIsSupported) {
  SKIP_WITHOUT_GPU();
  const ConvSolver* cudnn = find_conv_solver("cudnn", Device::cuda);
  ASSERT_NE(cudnn, nullptr);
  for (const ConvShape& shape : edge_case_shapes())
    for (Direction dir : kAllDirections)
      for (DType dt : {DType::f32, DType::f64}) {
        const ConvProblem p = on_device(shape.with(dir, dt), Device::cuda);
        std::string why;
        const bool applicable = cudnn->applicable(p, &why);
        EXPECT_EQ(cudnn->applicable(p, nullptr), applicable) << p.key();
        if (applicable) {
          EXPECT_FALSE(cudnn->configs(p).empty()) << p.key();
        } else {
          EXPECT_FALSE(why.empty()) << p.key();
          EXPECT_THROW((void)cudnn->configs(p), Error) << p.key() << ": " << why;
        }
      }
}

// --- Everywhere: the registry, without touching a GPU. ---

TEST(CudaConvRegistry, CudaListIsEmptyExactlyWithoutCuda) {
  EXPECT_EQ(conv_solvers(Device::cuda).empty(), !cuda_built());
  EXPECT_EQ(conv_solvers(Device::cpu).size(), cpu_conv_solvers().size());
  EXPECT_EQ(find_conv_solver("cudnn", Device::cpu), nullptr);
  if (!cuda_built()) {
    EXPECT_THROW(direct_conv_solver(Device::cuda), Error);
  }
}

TEST(CudaConvRegistry, ListsCudnnFirstAndDirectLast) {
  if (!cuda_built()) GTEST_SKIP() << "this build has no CUDA backend";
  std::vector<std::string> names;
  for (const ConvSolver* solver : conv_solvers(Device::cuda)) names.emplace_back(solver->name());
  EXPECT_EQ(names, (std::vector<std::string>{"cudnn", "im2col_gemm", "mec", "direct"}));
  ASSERT_NE(find_conv_solver("cudnn", Device::cuda), nullptr);
  EXPECT_EQ(&direct_conv_solver(Device::cuda), find_conv_solver("direct", Device::cuda));
  EXPECT_NE(&direct_conv_solver(Device::cuda), &direct_conv_solver());
  EXPECT_NE(find_conv_solver("mec", Device::cuda), find_conv_solver("mec"));
}

TEST(CudaConvRegistry, CudaSolversRejectCpuProblemsWithAReason) {
  if (!cuda_built()) GTEST_SKIP() << "this build has no CUDA backend";
  const ConvProblem cpu_problem = edge_case_shapes()[0].problem;
  for (const ConvSolver* solver : conv_solvers(Device::cuda))
    for (Direction dir : kAllDirections) {
      std::string why;
      EXPECT_FALSE(solver->applicable(cpu_problem.with_dir(dir), &why)) << solver->name();
      EXPECT_NE(why.find("CUDA"), std::string::npos) << solver->name() << ": " << why;
      EXPECT_TRUE(solver->applicable(on_device(cpu_problem.with_dir(dir), Device::cuda), nullptr))
          << solver->name();
    }
}

// run_conv refuses a registered solver of the other device before it allocates or runs.
TEST(CudaConvRegistry, RunConvRefusesASolverOfTheOtherDevice) {
  if (!cuda_built()) GTEST_SKIP() << "this build has no CUDA backend";
  const ConvProblem p = edge_case_shapes()[0].problem;
  const ConvArgs args = make_conv_args(p, 1);
  EXPECT_THROW(run_conv({find_conv_solver("im2col_gemm", Device::cuda), {}}, p, args), Error);
  const ConvProblem gpu = on_device(p, Device::cuda);
  EXPECT_THROW(run_conv({find_conv_solver("im2col_gemm"), {}}, gpu, args), Error);
}

}  // namespace
}  // namespace tunecnn
