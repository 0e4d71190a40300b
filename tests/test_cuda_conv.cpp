// The CUDA conv solvers: every one x every layout x every config x every direction x every shape
// (the edge cases and MobileNet-like depthwise layers in f32 and f64, the scaled-down model
// layers in f32) against the CPU direct reference; direct_chwn also on batches and channel counts
// around its register blocks, every config twice for the same bits;
// the GPU direct against the CPU direct bit for bit (f32) or to rounding (f64); conv2d with bias
// on the GPU against the CPU; the workspace contract; every config on a NaN-filled workspace, run
// twice for the same bits; cuDNN's configs each once. Those need a GPU and skip without one.
// The registry checks at the end run everywhere: they never touch a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

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
  const std::string layout = c.layout == Layout::NCHW ? "" : "_" + std::string(to_string(c.layout));
  return std::string(c.solver->name()) + "_" + std::string(to_string(c.dir)) + "_" + c.shape.name +
         "_" + std::string(to_string(c.dt)) + layout;
}

ConvShape depthwise_3x3(const char* name, int mb, int c, int ih, int iw, int stride) {
  return {name, ConvProblem{Direction::fwd, mb, c, ih, iw, c, 3, 3, stride, stride, 1, 1, c}};
}

// MobileNet's depthwise layers in small: 3x3, padding 1, stride 1 and 2, C = 8, 32, 48 (diagonal's
// group sizes 8; 8, 16, 32; 8 ... 48), batch 1 and 3, odd sizes. C = 48 leaves 16 channels after
// the NHWC bwd_weights kernel's 32-channel block; the 57x57 outputs are 3 * 57 * 57 > 8192
// positions per channel, so depthwise_direct's bwd_weights adds two chunks through its workspace.
const std::vector<ConvShape>& mobilenet_depthwise_shapes() {
  static const std::vector<ConvShape> shapes = {
      depthwise_3x3("mb1_c8_15x15_s1", 1, 8, 15, 15, 1),
      depthwise_3x3("mb3_c8_15x13_s2", 3, 8, 15, 13, 2),
      depthwise_3x3("mb1_c32_17x17_s2", 1, 32, 17, 17, 2),
      depthwise_3x3("mb3_c32_13x11_s1", 3, 32, 13, 11, 1),
      depthwise_3x3("mb1_c48_9x9_s1", 1, 48, 9, 9, 1),
      depthwise_3x3("mb3_c48_11x15_s2", 3, 48, 11, 15, 2),
      depthwise_3x3("mb3_c8_57x57_s1", 3, 8, 57, 57, 1),
      depthwise_3x3("mb3_c8_113x113_s2", 3, 8, 113, 113, 2),
  };
  return shapes;
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
    for (const auto* shapes : {&edge_case_shapes(), &mobilenet_depthwise_shapes()})
      for (const ConvShape& shape : *shapes) {
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
  const auto& depthwise = mobilenet_depthwise_shapes();
  // ..., mb3_c48_11x15_s2, mb3_c8_57x57_s1 (two bwd_weights chunks for depthwise_direct)
  return applicable_cases({edges[0], edges[2], edges[8], edges[17], edges[18], layers[1], layers[8],
                           depthwise[5], depthwise[6]},
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
// which must give the same bits (one stream, fixed sums), except for the solvers that run cuDNN,
// some of whose algorithms add with atomics.
std::vector<CudaCase> poisoned_workspace_cases() {
  const auto& edges = edge_case_shapes();
  const auto& depthwise = mobilenet_depthwise_shapes();
  // odd_batch5, stride2_pad1, k5_s2_p2, pad3_k3, groups4_s2_p2, depthwise_x2, aniso_k5x3,
  // dw_s2_odd, dw_k5_s2, and the two-chunk mb3_c8_57x57_s1 and mb3_c8_113x113_s2
  return applicable_cases({edges[2], edges[5], edges[6], edges[13], edges[17], edges[19], edges[21],
                           edges[22], edges[25], depthwise[6], depthwise[7]},
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
    // What the tuner is told (ConvSolver::deterministic: cuDNN's atomic algorithms and diagonal
    // over one of them say no) is what a second run shows.
    if (c.solver->deterministic(p, config)) {
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

// cuDNN's non-fused Winograd missed the reference on an H100 on 5x5 kernels in f32 (all three
// directions), so it is not offered there; on 3x3 kernels, and in f64, it stays.
TEST(CudaCudnn, OffersNoNonFusedWinogradOnKernelsOtherThan3x3InF32) {
  SKIP_WITHOUT_GPU();
  const ConvSolver* cudnn = find_conv_solver("cudnn", Device::cuda);
  ASSERT_NE(cudnn, nullptr);
  // CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, ..._BWD_DATA_..., ..._BWD_FILTER_...: cuDNN's
  // enum values, spelled out so that this file compiles without cuDNN's headers (CUDA off).
  const std::map<Direction, int> winograd_nonfused = {
      {Direction::fwd, 7}, {Direction::bwd_data, 5}, {Direction::bwd_weights, 5}};
  int checked = 0;
  for (const ConvShape& shape : edge_case_shapes())
    for (Direction dir : kAllDirections) {
      const ConvProblem p = on_device(shape.with(dir, DType::f32), Device::cuda);
      if ((p.kh == 3 && p.kw == 3) || !cudnn->applicable(p, nullptr)) continue;
      ++checked;
      for (const TuneConfig& config : cudnn->configs(p))
        EXPECT_NE(config.get("algo", -1), winograd_nonfused.at(dir)) << p.key();
    }
  EXPECT_GT(checked, 0) << "no shape with a kernel other than 3x3";
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

// --- direct_chwn on the GPU: the batch across a warp's lanes, B images x F channels a thread. ---

// Batches around a warp (32 images) and its register blocks (32 B = 32, 64, 128 images), channel
// counts that are no multiple of F (1, 2, 4, 8), more reduction channels than one shared-memory
// weight tile holds at the larger F and in f64 (c70 in fwd, k70 in bwd_data, and 11x11 in f64), a
// kernel of 121 taps, and the geometry: padding, stride 2, 5x5, 1x3, 5x3, a 1x1 stride 2 whose
// skipped input pixels get zero gradients.
const std::vector<ConvShape>& chwn_batch_shapes() {
  const auto shape = [](const char* name, int mb, int ic, int ih, int iw, int oc, int kh, int kw,
                        int sh, int sw, int ph, int pw) {
    return ConvShape{name,
                     ConvProblem{Direction::fwd, mb, ic, ih, iw, oc, kh, kw, sh, sw, ph, pw, 1}};
  };
  // clang-format off
  static const std::vector<ConvShape> shapes = {
      //     name              mb  ic  ih  iw  oc  kh  kw sh sw ph pw
      shape("n1_p1",            1,  3,  6,  5,  5,  3,  3, 1, 1, 1, 1),
      shape("n31_p1",          31,  3,  5,  6,  5,  3,  3, 1, 1, 1, 1),
      shape("n33_s2_p1",       33,  5,  7,  6,  3,  3,  3, 2, 2, 1, 1),
      shape("n64_k5_p2",       64,  3,  6,  7,  9,  5,  5, 1, 1, 2, 2),
      shape("n65_k1_s2",       65,  6,  7,  7,  5,  1,  1, 2, 2, 0, 0),
      shape("n97_c9_k17",      97,  9,  4,  5, 17,  3,  3, 1, 1, 1, 1),
      shape("n130_k1x3_s1x2", 130,  5,  5,  8,  7,  1,  3, 1, 2, 0, 1),
      shape("n200_k5x3_s2x1", 200,  2,  9,  7,  3,  5,  3, 2, 1, 2, 1),
      shape("n40_k11_s4",      40,  3, 23, 23,  6, 11, 11, 4, 4, 0, 0),
      shape("n33_c70_k5_p2",   33, 70,  6,  6,  5,  5,  5, 1, 1, 2, 2),
      shape("n31_k70_p1",      31,  4,  5,  5, 70,  3,  3, 1, 1, 1, 1),
  };
  // clang-format on
  return shapes;
}

// direct_chwn (GPU) on those shapes, every direction, f32 and f64; none in a build without CUDA.
std::vector<CudaCase> chwn_cases() {
  std::vector<CudaCase> cases;
  const ConvSolver* chwn = find_conv_solver("direct_chwn", Device::cuda);
  if (chwn == nullptr) return cases;
  for (const ConvShape& shape : chwn_batch_shapes())
    for (DType dt : {DType::f32, DType::f64}) add_if_applicable(cases, chwn, shape, dt);
  return cases;
}

INSTANTIATE_TEST_SUITE_P(DirectChwnBatches, CudaConvSolverTest, ::testing::ValuesIn(chwn_cases()),
                         case_name);

class CudaDirectChwnTest : public ::testing::TestWithParam<CudaCase> {};

// Fixed sums with no atomics (bwd_weights reduces by a shuffle tree, then the warps and the pixel
// slices in order): a config gives the same bits on every run.
TEST_P(CudaDirectChwnTest, EveryConfigGivesTheSameBitsTwice) {
  SKIP_WITHOUT_GPU();
  const CudaCase& c = GetParam();
  const ConvProblem p = c.problem();
  const ConvArgs gpu_args = gpu_args_in(make_conv_args(on_device(p, Device::cpu), 9), c.layout);
  for (const TuneConfig& config : c.solver->configs(p)) {
    const Tensor first = run_on_gpu(*c.solver, config, p, gpu_args, c.layout);
    EXPECT_TRUE(close_relative(run_on_gpu(*c.solver, config, p, gpu_args, c.layout), first, 0.0))
        << "not repeatable: " << describe(*c.solver, config, p);
  }
}

INSTANTIATE_TEST_SUITE_P(DirectChwnBatches, CudaDirectChwnTest, ::testing::ValuesIn(chwn_cases()),
                         case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CudaDirectChwnTest);

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
  EXPECT_EQ(names, (std::vector<std::string>{"cudnn", "im2col_gemm", "mec", "depthwise_direct",
                                             "diagonal", "direct_chwn", "direct"}));
  ASSERT_NE(find_conv_solver("cudnn", Device::cuda), nullptr);
  EXPECT_EQ(&direct_conv_solver(Device::cuda), find_conv_solver("direct", Device::cuda));
  EXPECT_NE(&direct_conv_solver(Device::cuda), &direct_conv_solver());
  EXPECT_NE(find_conv_solver("mec", Device::cuda), find_conv_solver("mec"));
  EXPECT_NE(find_conv_solver("direct_chwn", Device::cuda), find_conv_solver("direct_chwn"));
}

// Each solver on the first edge case it runs on the GPU (batch1; depthwise for the depthwise-only
// solvers) refuses the same problem on the CPU.
TEST(CudaConvRegistry, CudaSolversRejectCpuProblemsWithAReason) {
  if (!cuda_built()) GTEST_SKIP() << "this build has no CUDA backend";
  for (const ConvSolver* solver : conv_solvers(Device::cuda))
    for (Direction dir : kAllDirections) {
      const auto& shapes = edge_case_shapes();
      const auto runs_on_gpu = [&](const ConvShape& shape) {
        return solver->applicable(on_device(shape.problem.with_dir(dir), Device::cuda), nullptr);
      };
      const auto shape = std::find_if(shapes.begin(), shapes.end(), runs_on_gpu);
      ASSERT_NE(shape, shapes.end()) << solver->name() << " runs no edge case on the GPU";
      std::string why;
      EXPECT_FALSE(solver->applicable(shape->problem.with_dir(dir), &why)) << solver->name();
      EXPECT_NE(why.find("CUDA"), std::string::npos) << solver->name() << ": " << why;
    }
}

// The depthwise-only solvers take exactly the depthwise problems of multiplier 1, and say why
// they refuse the rest; listing needs no GPU.
TEST(CudaConvRegistry, DepthwiseSolversTakeOnlyDepthwiseProblems) {
  if (!cuda_built()) GTEST_SKIP() << "this build has no CUDA backend";
  for (const char* name : {"depthwise_direct", "diagonal"}) {
    const ConvSolver* solver = find_conv_solver(name, Device::cuda);
    ASSERT_NE(solver, nullptr) << name;
    EXPECT_NE(solver, find_conv_solver(name)) << name << ": the GPU's is its own solver";
    for (const ConvShape& shape : edge_case_shapes()) {
      const ConvProblem p = on_device(shape.problem, Device::cuda);
      const bool depthwise = p.g == p.ic && p.oc == p.ic;  // every edge case has ic > 1
      std::string why;
      EXPECT_EQ(solver->applicable(p, &why), depthwise) << name << " " << shape.name << ": " << why;
      if (!depthwise) {
        EXPECT_FALSE(why.empty()) << name << " " << shape.name;
      }
    }
  }
  const ConvSolver* diagonal = find_conv_solver("diagonal", Device::cuda);
  const ConvProblem c48 = on_device(mobilenet_depthwise_shapes()[4].problem, Device::cuda);
  if (cuda_device_count() == 0) {  // else cuDNN decides which group sizes stay
    std::vector<int> sizes;
    for (const TuneConfig& config : diagonal->configs(c48)) sizes.push_back(config.get("S", 0));
    EXPECT_EQ(sizes, (std::vector<int>{8, 12, 16, 24, 48}));
  }
  EXPECT_TRUE(diagonal->sweep_configs());
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

// direct_chwn's configs (no GPU needed): B only where the batch fills more than half of the
// smaller block, F likewise by the channels the direction writes and only while one channel's
// weights fit in 48 KiB of shared memory, S (bwd_weights) at most the output pixels; the
// default first (the most images, up to 4 channels, one slice: no workspace).
std::set<int> config_values(const std::vector<TuneConfig>& configs, std::string_view key) {
  std::set<int> values;
  for (const TuneConfig& c : configs) values.insert(c.get(key, -1));
  return values;
}

TEST(CudaDirectChwnConfigs, OfferOnlyBlocksTheProblemFills) {
  const ConvSolver* chwn = find_conv_solver("direct_chwn", Device::cuda);
  if (chwn == nullptr) GTEST_SKIP() << "this build has no CUDA backend";
  ConvProblem p{Direction::fwd, 1, 3, 8, 8, 3, 3, 3, 1, 1, 1, 1, 1};
  p.device = Device::cuda;
  const auto configs_for = [&](Direction dir, int mb, int ic, int oc) {
    ConvProblem q = p.with_dir(dir);
    q.mb = mb, q.ic = ic, q.oc = oc;
    return chwn->configs(q);
  };
  using Set = std::set<int>;
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 1, 3, 3), "B"), Set({1}));
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 33, 3, 3), "B"), Set({1, 2}));
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 64, 3, 3), "B"), Set({1, 2}));
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 65, 3, 3), "B"), Set({1, 2, 4}));
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 8, 3, 1), "F"), Set({1}));
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 8, 1, 3), "F"), Set({1, 2, 4}));
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 8, 1, 5), "F"), Set({1, 2, 4, 8}));
  EXPECT_EQ(config_values(configs_for(Direction::bwd_data, 8, 1, 5), "F"), Set({1}));
  EXPECT_EQ(config_values(configs_for(Direction::bwd_weights, 8, 1, 5), "F"), Set({1, 2, 4, 8}));
  EXPECT_EQ(config_values(configs_for(Direction::fwd, 8, 3, 3), "S"), Set({-1}));
  EXPECT_EQ(config_values(configs_for(Direction::bwd_weights, 8, 3, 3), "S"), Set({1, 4, 16}));

  const std::vector<TuneConfig> all = configs_for(Direction::bwd_weights, 130, 3, 5);
  EXPECT_EQ(all.size(), 3u * 4u * 3u);
  EXPECT_EQ(all.front().str(), "B=4,F=4,S=1");
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(all[i], all[j]) << all[i].str() << " twice";

  ConvProblem one_pixel = p.with_dir(Direction::bwd_weights);
  one_pixel.ih = one_pixel.iw = 3, one_pixel.ph = one_pixel.pw = 0;
  EXPECT_EQ(config_values(chwn->configs(one_pixel), "S"), Set({1}));
}

TEST(CudaDirectChwnConfigs, WorkspaceHoldsOnePartialGradientPerSlice) {
  const ConvSolver* chwn = find_conv_solver("direct_chwn", Device::cuda);
  if (chwn == nullptr) GTEST_SKIP() << "this build has no CUDA backend";
  ConvProblem p{Direction::bwd_weights, 16, 3, 8, 8, 5, 3, 3, 1, 1, 1, 1, 1};
  p.device = Device::cuda;
  EXPECT_EQ(chwn->workspace_bytes(p, chwn->configs(p).front()), 0u);
  EXPECT_EQ(chwn->workspace_bytes(p, TuneConfig{{{"B", 1}, {"F", 4}, {"S", 4}}}),
            align_workspace(4 * 5 * 3 * 3 * 3 * sizeof(float)));
  p.dt = DType::f64;
  EXPECT_EQ(chwn->workspace_bytes(p, TuneConfig{{{"B", 1}, {"F", 4}, {"S", 16}}}),
            align_workspace(16 * 5 * 3 * 3 * 3 * sizeof(double)));
  EXPECT_EQ(chwn->workspace_bytes(p.with_dir(Direction::fwd), TuneConfig{{{"B", 1}, {"F", 4}}}),
            0u);
  EXPECT_THROW((void)chwn->workspace_bytes(p, TuneConfig{{{"B", 3}, {"F", 4}, {"S", 1}}}), Error);
}

TEST(CudaDirectChwnConfigs, RejectsGroupsAndOversizedKernelsWithAReason) {
  const ConvSolver* chwn = find_conv_solver("direct_chwn", Device::cuda);
  if (chwn == nullptr) GTEST_SKIP() << "this build has no CUDA backend";
  ConvProblem p{Direction::fwd, 4, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1};
  p.device = Device::cuda;
  EXPECT_EQ(chwn->layouts(p), std::vector<Layout>{Layout::CHWN});
  std::string why;
  for (Direction dir : kAllDirections) EXPECT_TRUE(chwn->applicable(p.with_dir(dir), &why)) << why;
  ConvProblem grouped = p;
  grouped.g = 2;
  for (Direction dir : kAllDirections) {
    EXPECT_FALSE(chwn->applicable(grouped.with_dir(dir), &why));
    EXPECT_NE(why.find("groups"), std::string::npos) << why;
  }
  // 80x80 f64 weights are 51200 bytes a channel: no tile for fwd and bwd_data, and bwd_weights
  // stages none. 40x40 f32 ones fit up to F = 4 (F = 8 would take 51200 bytes).
  ConvProblem big = p;
  big.ih = big.iw = 80, big.kh = big.kw = 80, big.ph = big.pw = 0, big.dt = DType::f64;
  EXPECT_FALSE(chwn->applicable(big, &why));
  EXPECT_NE(why.find("shared memory"), std::string::npos) << why;
  EXPECT_FALSE(chwn->applicable(big.with_dir(Direction::bwd_data), nullptr));
  EXPECT_TRUE(chwn->applicable(big.with_dir(Direction::bwd_weights), nullptr));
  ConvProblem wide = big;
  wide.ih = wide.iw = 40, wide.kh = wide.kw = 40, wide.dt = DType::f32, wide.oc = 8;
  EXPECT_EQ(config_values(chwn->configs(wide), "F"), (std::set<int>{1, 2, 4}));
}

}  // namespace
}  // namespace tunecnn
