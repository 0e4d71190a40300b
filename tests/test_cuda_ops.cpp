// The non-convolution layers on the GPU against the same ops on the CPU, from the same inputs:
// ReLU/ReLU6, dropout (the same mask from the same RNG state), linear, BatchNorm (with its
// running statistics over several steps), LRN, global average pooling, max/avg pooling (padding,
// strides, ties; pool_direct, and pool_tiled's every coarsening factor in NCHW and CHWN), softmax
// cross-entropy (loss, gradient, evaluation softmax), layout transforms, flatten, and a small chain
// of them all. Every GPU test skips cleanly without a GPU; the registry tests run everywhere.
// Failure messages name the op, dtype, shape, layout and direction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/cuda_runtime.h"
#include "core/tensor_math.h"
#include "core/variable.h"
#include "ops/batch_norm.h"
#include "ops/dropout.h"
#include "ops/flatten.h"
#include "ops/global_avg_pool.h"
#include "ops/layout/reference.h"
#include "ops/layout/to_layout.h"
#include "ops/layout/transform.h"
#include "ops/linear.h"
#include "ops/lrn.h"
#include "ops/pool/pool2d.h"
#include "ops/pool/registry.h"
#include "ops/pool/tiled.h"
#include "ops/relu.h"
#include "ops/softmax/plan.h"
#include "ops/softmax/registry.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/expect_error.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::random_tensor;
using testing::values;

constexpr DType kDTypes[] = {DType::f32, DType::f64};
constexpr Layout kLayouts[] = {Layout::NCHW, Layout::CHWN, Layout::NHWC};

class CudaOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_built()) GTEST_SKIP() << "built without CUDA (-DTUNECNN_CUDA=OFF or no nvcc)";
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device on this machine";
  }
};

// Relative to the values' size: f32 kernels may round differently on the two devices (other
// summation orders, double intermediates on the GPU), f64 ones only in the last bits.
double tolerance(DType dt) {
  return dt == DType::f64 ? 1e-10 : 5e-5;
}

std::string describe_case(const std::string& op, DType dt, const Shape& shape,
                          const std::string& extra = "") {
  std::string text = op + " " + std::string(to_string(dt)) + " " + shape_str(shape);
  return extra.empty() ? text : text + " " + extra;
}

double max_abs(const Tensor& t) {
  double most = 0;
  for (double v : values(t.to(Device::cpu))) most = std::max(most, std::abs(v));
  return most;
}

// A GPU result against the CPU one: same shape, dtype and layout, values within `tol` relative to
// the CPU values' size (0: bit for bit).
void expect_matches(const Tensor& gpu, const Tensor& cpu, double tol, const std::string& what) {
  ASSERT_TRUE(gpu.defined()) << what << ": no GPU result";
  ASSERT_TRUE(cpu.defined()) << what << ": no CPU result";
  EXPECT_EQ(gpu.device(), Device::cuda) << what << ": the result left the GPU";
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  EXPECT_EQ(gpu.layout(), cpu.layout()) << what;
  const double diff = max_abs_diff(gpu, cpu);
  const double bound = tol * (1 + max_abs(cpu));
  EXPECT_LE(diff, bound) << what << ": GPU and CPU differ by up to " << diff << " (allowed "
                         << bound << ")";
}

// The same leaf on both devices, requiring grad.
struct Leaf {
  Variable cpu, gpu;
};

Leaf leaf(const Tensor& t) {
  return {Variable(t.clone(), true), Variable(t.to(Device::cuda), true)};
}

void backward_both(Variable& cpu, Variable& gpu, const Tensor& dy) {
  cpu.backward(dy);
  gpu.backward(dy.to(Device::cuda));
}

TEST_F(CudaOps, ReluAndRelu6MatchTheCpuBitForBit) {
  for (DType dt : kDTypes)
    for (double cap : {kNoCap, 6.0}) {
      const Shape shape{2, 3, 5, 7};
      const std::string what = describe_case(cap == kNoCap ? "relu" : "relu6", dt, shape);
      Rng rng(1);
      Leaf x = leaf(random_tensor(shape, rng, dt, -9, 9));
      Variable yc = relu(x.cpu, cap), yg = relu(x.gpu, cap);
      expect_matches(yg.data(), yc.data(), 0, what + " forward");
      backward_both(yc, yg, random_tensor(shape, rng, dt));
      expect_matches(x.gpu.grad(), x.cpu.grad(), 0, what + " backward");
    }
}

// In place on the GPU as on the CPU: the output is the input's own memory, and forward and
// backward are the CPU's to the bit.
TEST_F(CudaOps, ReluInPlaceWritesOverItsInputAndMatchesTheCpu) {
  for (double cap : {kNoCap, 6.0}) {
    const Shape shape{2, 3, 5, 7};
    const std::string what = describe_case(cap == kNoCap ? "relu in place" : "relu6 in place", DType::f32, shape);
    Rng rng(3);
    Leaf x = leaf(random_tensor(shape, rng, DType::f32, -9, 9));
    const void* input_memory = x.gpu.data().raw_data();
    Variable yc = relu_in_place(x.cpu, cap), yg = relu_in_place(x.gpu, cap);
    EXPECT_EQ(yg.data().raw_data(), input_memory) << what;
    expect_matches(yg.data(), yc.data(), 0, what + " forward");
    backward_both(yc, yg, random_tensor(shape, rng, DType::f32));
    expect_matches(x.gpu.grad(), x.cpu.grad(), 0, what + " backward");
  }
}

TEST_F(CudaOps, DropoutDrawsTheCpuMaskFromTheSameRngState) {
  for (DType dt : kDTypes) {
    const Shape shape{4, 3, 6, 5};
    const std::string what = describe_case("dropout p 0.4", dt, shape);
    Rng data(2);
    Leaf x = leaf(random_tensor(shape, data, dt));
    Rng cpu_rng(77), gpu_rng(77);
    Variable yc = dropout(x.cpu, 0.4, true, cpu_rng), yg = dropout(x.gpu, 0.4, true, gpu_rng);
    expect_matches(yg.data(), yc.data(), 0, what + " forward (the mask)");
    EXPECT_EQ(cpu_rng.next_u64(), gpu_rng.next_u64()) << what << ": the RNGs drifted apart";
    const std::vector<double> kept = values(yc.data());
    const auto dropped = std::count(kept.begin(), kept.end(), 0.0);
    EXPECT_GT(dropped, 0) << what;
    EXPECT_LT(dropped, static_cast<long>(kept.size())) << what;
    backward_both(yc, yg, random_tensor(shape, data, dt));
    expect_matches(x.gpu.grad(), x.cpu.grad(), 0, what + " backward");
    Variable same = dropout(x.gpu, 0.4, false, gpu_rng);
    EXPECT_TRUE(same.data().shares_storage(x.gpu.data())) << what << ": evaluation is the identity";
  }
}

TEST_F(CudaOps, LinearMatchesTheCpuWithAndWithoutBias) {
  struct Case {
    int batch, in, out;
    bool bias;
  };
  for (DType dt : kDTypes)
    for (const Case& c : {Case{5, 37, 11, true}, Case{1, 8, 3, true}, Case{64, 120, 10, false},
                          Case{3, 1, 7, true}}) {
      const std::string what =
          describe_case("linear", dt, {c.batch, c.in}, "-> " + std::to_string(c.out) +
                                                           (c.bias ? " with bias" : " no bias"));
      Rng rng(3);
      Leaf x = leaf(random_tensor({c.batch, c.in}, rng, dt));
      Leaf w = leaf(random_tensor({c.out, c.in}, rng, dt));
      Leaf b = c.bias ? leaf(random_tensor({c.out}, rng, dt)) : Leaf{};
      Variable yc = linear(x.cpu, w.cpu, b.cpu), yg = linear(x.gpu, w.gpu, b.gpu);
      const double tol = tolerance(dt) * std::sqrt(c.in);
      expect_matches(yg.data(), yc.data(), tol, what + " forward");
      backward_both(yc, yg, random_tensor({c.batch, c.out}, rng, dt));
      expect_matches(x.gpu.grad(), x.cpu.grad(), tol, what + " backward_data");
      expect_matches(w.gpu.grad(), w.cpu.grad(), tol * std::sqrt(c.batch), what + " backward_weights");
      if (c.bias)
        expect_matches(b.gpu.grad(), b.cpu.grad(), tol * std::sqrt(c.batch), what + " backward_bias");
    }
}

// Running statistics of `channels` channels, on the CPU and a copy on the GPU.
struct RunningStats {
  RunningStats(std::int64_t channels, DType dt)
      : mean_c(Tensor::zeros({channels}, dt)), var_c(Tensor::full({channels}, 1.0, dt)),
        mean_g(mean_c.to(Device::cuda)), var_g(var_c.to(Device::cuda)) {}
  Tensor mean_c, var_c, mean_g, var_g;
};

// A batch_norm input: its shape (channels second), dtype, layout and the range of its values.
struct BatchNormInput {
  Shape shape;
  DType dt;
  Layout layout;
  double lo, hi;
};

// One training step of batch_norm on the CPU and on the GPU from the same running statistics,
// with random input, gamma, beta and output gradient: the output, the updated statistics and the
// three gradients must match.
void expect_training_step_matches(const BatchNormInput& in, Rng& rng, RunningStats& stats,
                                  const BatchNormOptions& options, const std::string& at) {
  const std::int64_t channels = in.shape[1];
  const double tol = tolerance(in.dt);
  Leaf x = leaf(convert_layout(random_tensor(in.shape, rng, in.dt, in.lo, in.hi), in.layout));
  Leaf gamma = leaf(random_tensor({channels}, rng, in.dt, 0.5, 1.5));
  Leaf beta = leaf(random_tensor({channels}, rng, in.dt));
  Variable yc = batch_norm(x.cpu, gamma.cpu, beta.cpu, stats.mean_c, stats.var_c, true, options);
  Variable yg = batch_norm(x.gpu, gamma.gpu, beta.gpu, stats.mean_g, stats.var_g, true, options);
  expect_matches(yg.data(), yc.data(), tol, at + " forward");
  expect_matches(stats.mean_g, stats.mean_c, tol, at + " running_mean");
  expect_matches(stats.var_g, stats.var_c, tol, at + " running_var");
  backward_both(yc, yg, convert_layout(random_tensor(in.shape, rng, in.dt), in.layout));
  expect_matches(x.gpu.grad(), x.cpu.grad(), tol, at + " backward dx");
  expect_matches(gamma.gpu.grad(), gamma.cpu.grad(), tol, at + " backward dgamma");
  expect_matches(beta.gpu.grad(), beta.cpu.grad(), tol, at + " backward dbeta");
}

TEST_F(CudaOps, BatchNormMatchesTheCpuIncludingRunningStatisticsOverSteps) {
  const Shape shape{4, 5, 3, 6};
  const BatchNormOptions options{0.2, 1e-5};
  for (DType dt : kDTypes)
    for (Layout layout : kLayouts) {
      const std::string what =
          describe_case("batch_norm", dt, shape, std::string(to_string(layout)));
      Rng rng(4);
      RunningStats stats(5, dt);
      for (int step = 0; step < 3; ++step) {
        // A mean well away from zero, as after a ReLU, checks the variance does not cancel.
        const BatchNormInput input{shape, dt, layout, 2, 5};
        expect_training_step_matches(input, rng, stats, options, what + " step " + std::to_string(step));
      }
      Leaf x = leaf(convert_layout(random_tensor(shape, rng, dt, 2, 5), layout));
      Leaf gamma = leaf(random_tensor({5}, rng, dt, 0.5, 1.5));
      Leaf beta = leaf(random_tensor({5}, rng, dt));
      Variable yc = batch_norm(x.cpu, gamma.cpu, beta.cpu, stats.mean_c, stats.var_c, false, options);
      Variable yg = batch_norm(x.gpu, gamma.gpu, beta.gpu, stats.mean_g, stats.var_g, false, options);
      expect_matches(yg.data(), yc.data(), tolerance(dt), what + " evaluation forward");
      backward_both(yc, yg, convert_layout(random_tensor(shape, rng, dt), layout));
      expect_matches(x.gpu.grad(), x.cpu.grad(), tolerance(dt), what + " evaluation backward dx");
      expect_matches(gamma.gpu.grad(), gamma.cpu.grad(), tolerance(dt),
                     what + " evaluation backward dgamma");
      expect_matches(stats.mean_g, stats.mean_c, tolerance(dt), what + " evaluation leaves running_mean");
    }
}

// BatchNorm with its ReLU (ReLU6) on the GPU: the ReLU runs over the output in place and backward
// masks from the output made again, as the CPU's fused op does; with recompute_activations() the
// output is rebuilt after it was released. Each matches the CPU's fused op.
TEST_F(CudaOps, BatchNormReluMatchesTheCpuKeptOrRecomputed) {
  const Shape shape{4, 5, 3, 6};
  for (bool recompute : {false, true})
    for (double cap : {kNoCap, 6.0})
      for (Layout layout : kLayouts) {
        const std::string what = describe_case(std::string(cap == kNoCap ? "batch_norm_relu" : "batch_norm_relu6") +
                                                   (recompute ? " recomputed" : ""),
                                               DType::f32, shape, std::string(to_string(layout)));
        set_recompute_activations(recompute);
        Rng rng(9);
        RunningStats stats(5, DType::f32);
        Leaf x = leaf(convert_layout(random_tensor(shape, rng, DType::f32, -4, 8), layout));
        Leaf gamma = leaf(random_tensor({5}, rng, DType::f32, 0.5, 1.5));
        Leaf beta = leaf(random_tensor({5}, rng, DType::f32));
        Variable yc = batch_norm_relu(x.cpu, gamma.cpu, beta.cpu, stats.mean_c, stats.var_c, true, {}, cap);
        Variable yg = batch_norm_relu(x.gpu, gamma.gpu, beta.gpu, stats.mean_g, stats.var_g, true, {}, cap);
        expect_matches(yg.data(), yc.data(), tolerance(DType::f32), what + " forward");
        EXPECT_EQ(yg.recomputable(), recompute) << what;
        if (recompute) {
          const Tensor forward = yc.data().clone();
          yg.release_data();
          yc.release_data();
          expect_matches(yg.data(), forward, tolerance(DType::f32), what + " rebuilt");  // data() rebuilds it
          yg.release_data();  // and backward must not need it
        }
        backward_both(yc, yg, convert_layout(random_tensor(shape, rng, DType::f32), layout));
        set_recompute_activations(false);
        expect_matches(x.gpu.grad(), x.cpu.grad(), tolerance(DType::f32), what + " backward dx");
        expect_matches(gamma.gpu.grad(), gamma.cpu.grad(), tolerance(DType::f32), what + " backward dgamma");
        expect_matches(beta.gpu.grad(), beta.cpu.grad(), tolerance(DType::f32), what + " backward dbeta");
      }
}

// More values per channel than the statistics kernels have threads (256), so each thread sums
// several, and odd sizes everywhere.
TEST_F(CudaOps, BatchNormMatchesTheCpuWithMoreValuesPerChannelThanThreads) {
  const Shape shape{3, 4, 13, 11};  // 429 values per channel
  for (DType dt : kDTypes)
    for (Layout layout : kLayouts) {
      const std::string what =
          describe_case("batch_norm", dt, shape, std::string(to_string(layout)));
      Rng rng(14);
      RunningStats stats(4, dt);
      expect_training_step_matches({shape, dt, layout, -1, 3}, rng, stats, {}, what);
    }
}

// Elementwise kernels launch at most 32 blocks per SM and loop over the rest: a tensor larger
// than one grid (about 1.1M elements on an H200) takes more than one trip round that loop.
TEST_F(CudaOps, ElementwiseKernelsAndReductionsCoverTensorsLargerThanOneGrid) {
  const Shape shape{5, 1 << 20};
  Rng rng(15);
  Leaf x = leaf(random_tensor(shape, rng, DType::f32, -1, 1));
  Variable yc = relu(x.cpu), yg = relu(x.gpu);
  expect_matches(yg.data(), yc.data(), 0, "relu of 5M values forward");
  EXPECT_NEAR(sum(yg.data()), sum(yc.data()), 1e-9 * static_cast<double>(yc.data().numel()));
  EXPECT_EQ(max_abs_diff(yg.data(), yc.data().to(Device::cuda)), 0.0);
}

TEST_F(CudaOps, LrnMatchesTheCpuInEveryLayout) {
  const Shape shape{2, 7, 3, 4};
  const LrnParams alexnet{};
  const LrnParams even{4, 0.5, 0.6, 1.5};  // an even window, a visible alpha, beta not 0.75
  for (DType dt : kDTypes)
    for (const LrnParams& p : {alexnet, even})
      for (Layout layout : kLayouts) {
        const std::string what = describe_case(
            "lrn n" + std::to_string(p.size) + " beta " + std::to_string(p.beta), dt, shape,
            std::string(to_string(layout)));
        Rng rng(5);
        Leaf x = leaf(convert_layout(random_tensor(shape, rng, dt, -3, 3), layout));
        Variable yc = local_response_norm(x.cpu, p), yg = local_response_norm(x.gpu, p);
        expect_matches(yg.data(), yc.data(), tolerance(dt), what + " forward");
        backward_both(yc, yg, convert_layout(random_tensor(shape, rng, dt), layout));
        expect_matches(x.gpu.grad(), x.cpu.grad(), tolerance(dt), what + " backward");
      }
}

// Under --recompute-activations the GPU's LRN keeps no base either: its backward sums each s
// again from the input, the same bits as with the base kept.
TEST_F(CudaOps, LrnWithoutItsBaseGivesTheSameGradientOnTheGpu) {
  const Shape shape{2, 7, 3, 4};
  for (const LrnParams& p : {LrnParams{}, LrnParams{4, 0.5, 0.6, 1.5}})
    for (Layout layout : kLayouts) {
      const std::string what = describe_case("lrn n" + std::to_string(p.size), DType::f32, shape,
                                             std::string(to_string(layout)));
      Rng rng(5);
      const Tensor input = convert_layout(random_tensor(shape, rng, DType::f32, -3, 3), layout).to(Device::cuda);
      const Tensor probe = convert_layout(random_tensor(shape, rng, DType::f32), layout).to(Device::cuda);
      Tensor grads[2];
      std::size_t held[2];
      for (bool recompute : {false, true}) {
        set_recompute_activations(recompute);
        Variable x(input.clone(), true);
        const std::size_t before = allocator_for(Device::cuda).stats().current_bytes;
        Variable y = local_response_norm(x, p);
        held[recompute] = allocator_for(Device::cuda).stats().current_bytes - before;
        y.backward(probe);
        grads[recompute] = x.grad();
      }
      set_recompute_activations(false);
      expect_matches(grads[1], grads[0], 0, what + " backward");
      EXPECT_EQ(held[0] - held[1], Allocator::block_size(input.nbytes())) << what << ": the base is not kept";
    }
}

TEST_F(CudaOps, GlobalAvgPoolMatchesTheCpuInEveryLayout) {
  const Shape shape{3, 5, 4, 6};
  for (DType dt : kDTypes)
    for (Layout layout : kLayouts) {
      const std::string what =
          describe_case("global_avg_pool", dt, shape, std::string(to_string(layout)));
      Rng rng(6);
      Leaf x = leaf(convert_layout(random_tensor(shape, rng, dt), layout));
      Variable yc = global_avg_pool(x.cpu), yg = global_avg_pool(x.gpu);
      expect_matches(yg.data(), yc.data(), tolerance(dt), what + " forward");
      backward_both(yc, yg, random_tensor({3, 5}, rng, dt));
      expect_matches(x.gpu.grad(), x.cpu.grad(), tolerance(dt), what + " backward");
    }
}

// Few distinct values, so windows hold ties and max pooling must pick the CPU's pixel.
Tensor with_ties(const Shape& shape, Rng& rng, DType dt) {
  std::vector<double> v = values(random_tensor(shape, rng, DType::f64, -2, 2));
  for (double& x : v) x = std::round(x);
  if (dt == DType::f64) return Tensor::from_vector(v, shape);
  return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
}

TEST_F(CudaOps, PoolingMatchesPoolDirectWithPaddingStridesAndTies) {
  struct Case {
    Shape shape;
    PoolGeometry g;
  };
  const Case cases[] = {
      {{2, 3, 9, 9}, PoolGeometry::square(3, 2, 1)},   // the CIFAR net's pools
      {{2, 2, 8, 8}, PoolGeometry::square(2, 2)},      // LeNet's
      {{1, 2, 13, 13}, PoolGeometry::square(3, 2)},    // AlexNet's, floor mode drops a column
      {{2, 2, 7, 6}, PoolGeometry::square(3, 1, 1)},   // overlapping windows
      {{1, 3, 7, 9}, PoolGeometry{2, 3, 1, 2, 1, 0}},  // rectangular, mixed strides
  };
  const PoolPlan direct{&direct_pool_solver(), TuneConfig{}};
  const PoolLayerPlan cpu_plan{direct, direct, Layout::NCHW};
  // pool_direct on the GPU by name: the default planner now prefers pool_tiled, tested below.
  const PoolPlan gpu_direct{find_pool_solver("pool_direct", Device::cuda), TuneConfig{}};
  ASSERT_NE(gpu_direct.solver, nullptr);
  ASSERT_EQ(gpu_direct.solver->device(), Device::cuda);
  const PoolLayerPlan gpu_plan{gpu_direct, gpu_direct, Layout::NCHW};
  for (DType dt : kDTypes)
    for (const Case& c : cases)
      for (PoolKind kind : {PoolKind::max, PoolKind::avg})
        for (bool include_pad : {false, true}) {
          if (kind == PoolKind::max && include_pad) continue;
          const PoolProblem problem = pool_problem(c.shape, dt, kind, c.g, include_pad);
          const std::string what = problem.key();
          Rng rng(8);
          Leaf x = leaf(kind == PoolKind::max ? with_ties(c.shape, rng, dt)
                                              : random_tensor(c.shape, rng, dt));
          Variable yc = pool2d(x.cpu, problem, cpu_plan);
          PoolProblem gpu_problem = pool_problem(x.gpu.data(), kind, c.g, include_pad);
          ASSERT_EQ(gpu_problem.device, Device::cuda) << what;
          Variable yg = pool2d(x.gpu, gpu_problem, gpu_plan);
          // Max copies values and adds gradients in pool_direct's order: exact. Average divides
          // and sums in that order too, but leaves a margin for the compilers' contractions.
          const double tol = kind == PoolKind::max ? 0 : tolerance(dt);
          expect_matches(yg.data(), yc.data(), tol, what + " forward");
          backward_both(yc, yg, random_tensor(problem.dst_shape(), rng, dt));
          expect_matches(x.gpu.grad(), x.cpu.grad(), tol, what + " backward");
        }
}

// NHWC has no GPU pool solver: the input is transformed to NCHW on the GPU. CHWN is pooled as it
// is, by pool_tiled.
TEST_F(CudaOps, PoolingAnInputInAnotherLayoutTransformsItOnTheGpu) {
  const Shape shape{3, 4, 8, 8};
  for (Layout layout : {Layout::CHWN, Layout::NHWC}) {
    const std::string what = describe_case("max_pool2d 2x2", DType::f32, shape,
                                           std::string(to_string(layout)) + " input");
    Rng rng(9);
    Leaf x = leaf(convert_layout(random_tensor(shape, rng), layout));
    Variable yc = max_pool2d(x.cpu, PoolGeometry::square(2, 2));
    Variable yg = max_pool2d(x.gpu, PoolGeometry::square(2, 2));
    const Layout pooled_in = layout == Layout::CHWN ? Layout::CHWN : Layout::NCHW;
    EXPECT_EQ(yg.data().layout(), pooled_in) << what << ": the GPU solvers run NCHW and CHWN";
    expect_matches(yg.data(), convert_layout(yc.data(), pooled_in), 0, what + " forward");
    Tensor dy = random_tensor({3, 4, 4, 4}, rng);
    yc.backward(convert_layout(dy, yc.data().layout()));
    yg.backward(convert_layout(dy, pooled_in).to(Device::cuda));
    EXPECT_EQ(x.gpu.grad().layout(), layout) << what;
    expect_matches(x.gpu.grad(), x.cpu.grad(), 0, what + " backward");
  }
}

// pool_tiled on the GPU against pool_direct on the CPU: the pooling test's shapes, a CHWN batch of
// 35 (a warp of images and 3 more), output rows of 29 (a multiple of no factor; 3/1 windows
// overlap, so neighbouring outputs share inputs), and a stride over the window (pixels in no window
// get a zero gradient).
struct GpuPoolCase {
  Shape shape;
  PoolGeometry g;
};
const GpuPoolCase kGpuPoolCases[] = {
    {{2, 3, 9, 9}, PoolGeometry::square(3, 2, 1)},
    {{2, 2, 8, 8}, PoolGeometry::square(2, 2)},
    {{1, 2, 13, 13}, PoolGeometry::square(3, 2)},
    {{2, 2, 7, 6}, PoolGeometry::square(3, 1, 1)},
    {{1, 3, 7, 9}, PoolGeometry{2, 3, 1, 2, 1, 0}},
    {{35, 2, 11, 13}, PoolGeometry::square(3, 2, 1)},
    {{3, 2, 6, 29}, PoolGeometry::square(3, 1, 1)},
    {{2, 3, 10, 17}, PoolGeometry::square(2, 3)},
};

// A max-pooling input of few levels, so windows tie; with `specials`, NaN, -inf and -0.0 are
// sprinkled in and the first plane is all -inf, so its windows tie at -inf.
Tensor max_pool_input(const Shape& shape, Rng& rng, DType dt, bool specials) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = values(random_tensor(shape, rng, DType::f64, -2, 2));
  for (std::size_t i = 0; i < v.size(); ++i) {
    v[i] = std::round(v[i]);
    if (!specials) continue;
    const std::uint64_t r = rng.next_u64() % 16;
    if (r == 0) v[i] = nan;
    if (r == 1 || r == 2) v[i] = -inf;
    if (r == 3) v[i] = -0.0;
    if (static_cast<std::int64_t>(i) < shape[2] * shape[3]) v[i] = -inf;
  }
  if (dt == DType::f64) return Tensor::from_vector(v, shape);
  return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), shape);
}

// Element by element in NCHW order. tol 0: bit for bit (the sign of a zero too), a NaN matching a
// NaN; else within tol relative to the wanted values' size.
::testing::AssertionResult same_values(const Tensor& got, const Tensor& want, double tol) {
  const std::vector<double> g = testing::nchw_values(got), w = testing::nchw_values(want);
  if (g.size() != w.size()) return ::testing::AssertionFailure() << "sizes differ";
  double most = 0;
  for (double x : w) most = std::isfinite(x) ? std::max(most, std::abs(x)) : most;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    const bool ok = both_nan || (tol == 0 ? g[i] == w[i] && std::signbit(g[i]) == std::signbit(w[i])
                                          : std::abs(g[i] - w[i]) <= tol * (1 + most));
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g[i] << ", want " << w[i];
  }
  return ::testing::AssertionSuccess();
}

// The output of one call of `solver` on the problem's device, in `layout`, from NCHW inputs on the
// CPU; returned on the CPU. The output starts at 777, a value no pooling here gives, so an element
// the solver skips shows up.
Tensor pool_output_of(const PoolSolver& solver, const TuneConfig& config, const PoolProblem& p,
                      Layout layout, const Tensor& src, const Tensor& diff_dst) {
  const auto input = [&](const Tensor& t) {
    return convert_layout_reference(t, layout).to(p.device);
  };
  const bool fwd = p.dir == Direction::fwd;
  Tensor out = Tensor::empty(fwd ? p.dst_shape() : p.src_shape(), p.dt, p.device, layout);
  out.fill(777);
  PoolArgs args;
  if (reads_src(p)) args.src = input(src);
  if (fwd) {
    args.dst = out;
  } else {
    args.diff_dst = input(diff_dst);
    args.diff_src = out;
  }
  run_pool({&solver, config}, p, args);
  return out.to(Device::cpu);
}

TEST_F(CudaOps, PoolTiledMatchesPoolDirectForEveryFactorLayoutAndDirection) {
  const PoolSolver* tiled = find_pool_solver("pool_tiled", Device::cuda);
  ASSERT_NE(tiled, nullptr);
  std::set<int> factors_run;
  for (DType dt : kDTypes)
    for (const GpuPoolCase& c : kGpuPoolCases)
      for (PoolKind kind : {PoolKind::max, PoolKind::avg})
        for (int variant = 0; variant < 2; ++variant) {  // max: NaN and -inf; avg: include_pad
          const bool is_max = kind == PoolKind::max;
          PoolProblem problem = pool_problem(c.shape, dt, kind, c.g, !is_max && variant == 1);
          Rng rng(16);
          const Tensor src = is_max ? max_pool_input(c.shape, rng, dt, variant == 1)
                                    : random_tensor(c.shape, rng, dt);
          const Tensor diff_dst = random_tensor(problem.dst_shape(), rng, dt);
          for (Direction dir : {Direction::fwd, Direction::bwd_data}) {
            PoolProblem on_cpu = problem.with_dir(dir), on_gpu = on_cpu;
            on_gpu.device = Device::cuda;
            const Tensor want =
                pool_output_of(direct_pool_solver(), {}, on_cpu, Layout::NCHW, src, diff_dst);
            const std::vector<TuneConfig> configs = tiled->configs(on_gpu);
            ASSERT_FALSE(configs.empty()) << on_gpu.key();
            EXPECT_EQ(configs.front().str(), "fx=1") << on_gpu.key();
            for (Layout layout : tiled->layouts(on_gpu))
              for (const TuneConfig& config : configs) {
                factors_run.insert(config.get("fx", 0));
                const Tensor got = pool_output_of(*tiled, config, on_gpu, layout, src, diff_dst);
                EXPECT_EQ(got.layout(), layout);
                // Max copies values and adds gradients in pool_direct's order: exact. Average
                // sums in its order too, with a margin for the compilers.
                EXPECT_TRUE(same_values(got, want, is_max ? 0 : tolerance(dt)))
                    << on_gpu.key() << " " << to_string(layout) << " " << config.str();
              }
          }
        }
  EXPECT_EQ(factors_run, std::set<int>(kGpuPoolFactors.begin(), kGpuPoolFactors.end()));
}

TEST_F(CudaOps, SoftmaxCrossEntropyLossAndGradientMatchTheCpu) {
  struct Case {
    int rows, classes;
    double scale;  // logits in [-scale, scale]
  };
  const Case cases[] = {{1, 10, 3},     {64, 10, 3},   {3, 1000, 5},
                        {2, 5000, 5},   {300, 7, 2},   {4, 10, 1e4},
                        {5000, 3, 2}};  // more rows than blocks: the kernels' row loop
  for (DType dt : kDTypes)
    for (const Case& c : cases) {
      const std::string what = describe_case("softmax_cross_entropy", dt, {c.rows, c.classes},
                                             "logits +-" + std::to_string(c.scale));
      Rng rng(10);
      Leaf logits = leaf(random_tensor({c.rows, c.classes}, rng, dt, -c.scale, c.scale));
      std::vector<std::int32_t> labels(static_cast<std::size_t>(c.rows));
      for (std::int32_t& label : labels)
        label = static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(c.classes));
      EXPECT_EQ(FirstApplicableSoftmaxPlanner().plan(softmax_problem_of(logits.gpu.data())).device(),
                Device::cuda)
          << what;
      Variable lc = softmax_cross_entropy(logits.cpu, labels);
      Variable lg = softmax_cross_entropy(logits.gpu, labels);
      ASSERT_EQ(lg.data().device(), Device::cpu) << what << ": the loss must come back to the host";
      const double loss_c = sum(lc.data()), loss_g = sum(lg.data());
      EXPECT_TRUE(std::isfinite(loss_g)) << what;
      EXPECT_NEAR(loss_g, loss_c, tolerance(dt) * (1 + std::abs(loss_c))) << what << " loss";
      const Tensor seed = Tensor::full({1}, 2.5, dt);  // backward scales by the incoming gradient
      lc.backward(seed);
      lg.backward(seed);
      expect_matches(logits.gpu.grad(), logits.cpu.grad(), tolerance(dt), what + " gradient");
      Tensor probs_c, probs_g;
      softmax(logits.cpu.data(), probs_c);
      softmax(logits.gpu.data(), probs_g);
      expect_matches(probs_g, probs_c, tolerance(dt), what + " evaluation softmax");
      EXPECT_EQ(argmax_rows(logits.gpu.data()), argmax_rows(logits.cpu.data())) << what;
    }
}

// Each GPU softmax solver on its own (the fused kernel and the five-kernel baseline), against
// the CPU's softmax_fused: the loss it returns and the gradient it writes.
TEST_F(CudaOps, EveryGpuSoftmaxSolverMatchesTheCpu) {
  const SoftmaxSolver* cpu_fused = find_softmax_solver("softmax_fused", Device::cpu);
  ASSERT_NE(cpu_fused, nullptr);
  ASSERT_EQ(softmax_solvers(Device::cuda).size(), 2u) << "softmax_fused and softmax_five_pass";
  const std::pair<int, int> shapes[] = {{1, 10}, {64, 1000}, {3, 5000}, {5000, 3}, {7, 1}};
  for (const SoftmaxSolver* solver : softmax_solvers(Device::cuda))
    for (DType dt : kDTypes)
      for (const auto& [rows, classes] : shapes) {
        const std::string what = describe_case(std::string(solver->name()), dt, {rows, classes}, "");
        Rng rng(11);
        const Tensor logits = random_tensor({rows, classes}, rng, dt, -4, 4);
        std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
        for (std::int32_t& label : labels)
          label = static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(classes));
        SoftmaxProblem problem = softmax_problem_of(logits);
        Tensor grad_c = Tensor::zeros(logits.shape(), dt);
        const double loss_c = cpu_fused->run(problem, logits, labels, grad_c);
        problem.device = Device::cuda;
        ASSERT_TRUE(solver->applicable(problem, nullptr)) << what;
        const Tensor logits_g = logits.to(Device::cuda);
        Tensor grad_g = Tensor::zeros(logits.shape(), dt, Device::cuda);
        const double loss_g = solver->run(problem, logits_g, labels, grad_g);
        EXPECT_NEAR(loss_g, loss_c, tolerance(dt) * (1 + std::abs(loss_c))) << what << " loss";
        expect_matches(grad_g, grad_c, tolerance(dt), what + " gradient");
      }
}

TEST_F(CudaOps, SoftmaxSolverChecksLabelsOnTheHost) {
  Tensor logits = Tensor::zeros({2, 4}, DType::f32, Device::cuda);
  testing::expect_error([&] { softmax_cross_entropy(Variable(logits, true), {1, 4}); },
                        {"label 4", "row 1"});
}

// Shapes for the tiled transform (32 x 32 tiles): smaller than one tile, ragged edges on both
// sides of each pair's transpose, N = 64 (whole tiles along N), 300 x 300 planes, whose
// NHWC <-> CHWN transform is a batch of 90000 transposes, more than one grid dimension launches,
// and no elements at all. The float2 kernel (CHWN <-> NCHW, f32, even N >= 64, 64-image tiles):
// N = 64, 66 and 130 (a ragged last tile, a pair at the edge of the data) and the odd N = 65,
// which takes the plain tiles. Thin transposes (a side of at most 8, no tiles): 3 channels of
// 40 x 37 planes (NCHW <-> NHWC of an RGB batch, more than one block of threads), and 8 and 9
// channels on either side of that bound.
const Shape kTransformShapes[] = {{3, 4, 5, 6},   {64, 35, 7, 9}, {33, 65, 2, 3}, {2, 1, 300, 300},
                                  {0, 3, 4, 5},   {66, 5, 3, 7},  {130, 3, 11, 1}, {65, 3, 2, 2},
                                  {4, 3, 40, 37}, {9, 8, 6, 7},   {8, 9, 7, 6}};

TEST_F(CudaOps, LayoutTransformsMatchTheReferenceForEveryPair) {
  for (const Shape& shape : kTransformShapes)
    for (DType dt : kDTypes)
      for (Layout from : kLayouts)
        for (Layout to : kLayouts) {
          const std::string what = describe_case("convert_layout", dt, shape,
                                                 std::string(to_string(from)) + " -> " +
                                                     std::string(to_string(to)));
          Rng rng(11);
          const Tensor src = convert_layout_reference(random_tensor(shape, rng, dt), from);
          const Tensor on_gpu = src.to(Device::cuda);
          const Tensor got = convert_layout(on_gpu, to);
          expect_matches(got, convert_layout_reference(src, to), 0, what);
          if (from == to) {
            EXPECT_TRUE(got.shares_storage(on_gpu)) << what << ": not the identity";
            continue;
          }
          Tensor naive = Tensor::empty(shape, dt, Device::cuda, to);
          convert_layout_naive_into(on_gpu, naive);
          expect_matches(got, naive, 0, what + " (tiled against the naive kernel)");
        }
}

TEST_F(CudaOps, ToLayoutAndFlattenRouteGradientsBackOnTheGpu) {
  const Shape shape{2, 3, 4, 5};
  Rng rng(12);
  Leaf x = leaf(random_tensor(shape, rng));
  Variable yc = flatten(to_layout(x.cpu, Layout::CHWN));
  Variable yg = flatten(to_layout(x.gpu, Layout::CHWN));
  expect_matches(yg.data(), yc.data(), 0, "flatten of a CHWN tensor forward");
  backward_both(yc, yg, random_tensor({2, 60}, rng));
  expect_matches(x.gpu.grad(), x.cpu.grad(), 0, "flatten of a CHWN tensor backward");
}

// The layers of the four models in one chain, one training step on each device from the same
// parameters and the same dropout RNG state: the loss and every gradient agree.
TEST_F(CudaOps, AChainOfEveryLayerTrainsAStepLikeTheCpu) {
  for (DType dt : kDTypes) {
    const std::string what = describe_case("chain", dt, {4, 6, 11, 11});
    Rng rng(13);
    Leaf x = leaf(random_tensor({4, 6, 11, 11}, rng, dt));
    Leaf gamma = leaf(random_tensor({6}, rng, dt, 0.5, 1.5));
    Leaf beta = leaf(random_tensor({6}, rng, dt));
    Leaf w1 = leaf(random_tensor({16, 6 * 4 * 4}, rng, dt, -0.2, 0.2));
    Leaf b1 = leaf(random_tensor({16}, rng, dt));
    Leaf w2 = leaf(random_tensor({5, 16}, rng, dt));
    Leaf b2 = leaf(random_tensor({5}, rng, dt));
    Tensor mean_c = Tensor::zeros({6}, dt), var_c = Tensor::full({6}, 1.0, dt);
    Tensor mean_g = mean_c.to(Device::cuda), var_g = var_c.to(Device::cuda);
    const std::vector<std::int32_t> labels{0, 3, 4, 1};
    Rng drop_c(99), drop_g(99);
    auto step = [&](const Variable& input, const Variable& g, const Variable& b, Tensor& mean,
                    Tensor& var, const Variable& wa, const Variable& ba, const Variable& wb,
                    const Variable& bb, Rng& drop) {
      Variable h = batch_norm(input, g, b, mean, var, true);
      h = relu(h, 6.0);
      h = local_response_norm(h, LrnParams{3, 0.3, 0.75, 2.0});
      h = max_pool2d(h, PoolGeometry::square(3, 2, 1));  // 11 -> 6
      h = avg_pool2d(h, PoolGeometry::square(3, 1));     // 6 -> 4
      h = flatten(h);
      h = relu(linear(h, wa, ba));
      h = dropout(h, 0.25, true, drop);
      return softmax_cross_entropy(linear(h, wb, bb), labels);
    };
    Variable lc = step(x.cpu, gamma.cpu, beta.cpu, mean_c, var_c, w1.cpu, b1.cpu, w2.cpu, b2.cpu,
                       drop_c);
    Variable lg = step(x.gpu, gamma.gpu, beta.gpu, mean_g, var_g, w1.gpu, b1.gpu, w2.gpu, b2.gpu,
                       drop_g);
    const double tol = 10 * tolerance(dt);
    EXPECT_NEAR(sum(lg.data()), sum(lc.data()), tol * (1 + std::abs(sum(lc.data())))) << what;
    lc.backward();
    lg.backward();
    expect_matches(x.gpu.grad(), x.cpu.grad(), tol, what + " d input");
    expect_matches(gamma.gpu.grad(), gamma.cpu.grad(), tol, what + " d gamma");
    expect_matches(beta.gpu.grad(), beta.cpu.grad(), tol, what + " d beta");
    expect_matches(w1.gpu.grad(), w1.cpu.grad(), tol, what + " d fc1 weight");
    expect_matches(b2.gpu.grad(), b2.cpu.grad(), tol, what + " d fc2 bias");
    expect_matches(var_g, var_c, tol, what + " running_var");
  }
}

// These run everywhere: which solvers each device has, and that no solver takes a problem that
// lives on the other device.
TEST(CudaOpsRegistry, GpuSolverListsAreEmptyExactlyWithoutCuda) {
  EXPECT_EQ(pool_solvers(Device::cuda).empty(), !cuda_built());
  EXPECT_EQ(softmax_solvers(Device::cuda).empty(), !cuda_built());
  EXPECT_EQ(pool_solvers(Device::cpu).size(), cpu_pool_solvers().size());
  EXPECT_EQ(softmax_solvers(Device::cpu).size(), cpu_softmax_solvers().size());
  for (const PoolSolver* solver : pool_solvers(Device::cuda)) {
    EXPECT_EQ(solver->device(), Device::cuda) << solver->name();
    EXPECT_EQ(find_pool_solver(solver->name(), Device::cuda), solver);
  }
  for (const SoftmaxSolver* solver : softmax_solvers(Device::cuda)) {
    EXPECT_EQ(solver->device(), Device::cuda) << solver->name();
    EXPECT_EQ(find_softmax_solver(solver->name(), Device::cuda), solver);
  }
  // The one-argument forms keep meaning the CPU solvers, whose names the GPU twins share.
  ASSERT_NE(find_pool_solver("pool_direct"), nullptr);
  EXPECT_EQ(find_pool_solver("pool_direct")->device(), Device::cpu);
  EXPECT_EQ(find_pool_solver("pool_direct", Device::cpu), &direct_pool_solver());
  ASSERT_NE(find_softmax_solver("softmax_fused"), nullptr);
  EXPECT_EQ(find_softmax_solver("softmax_fused")->device(), Device::cpu);
  EXPECT_EQ(find_pool_solver("pool_direct", Device::cuda) != nullptr, cuda_built());
  EXPECT_EQ(find_softmax_solver("softmax_fused", Device::cuda) != nullptr, cuda_built());
  EXPECT_EQ(find_softmax_solver("softmax_five_pass", Device::cuda) != nullptr, cuda_built());
  EXPECT_EQ(find_pool_solver("pool_tiled", Device::cuda) != nullptr, cuda_built());
}

// Host code only, so it runs on a CUDA build without a GPU too.
TEST(CudaOpsRegistry, GpuPoolTiledComesFirstWithFactorsUpToItsRow) {
  if (!cuda_built()) GTEST_SKIP() << "built without CUDA";
  const auto solvers = cuda_pool_solvers();
  ASSERT_EQ(solvers.size(), 2u);
  EXPECT_EQ(solvers.front()->name(), "pool_tiled");
  EXPECT_EQ(solvers.back()->name(), "pool_direct");  // the reference stays last
  PoolProblem p =
      pool_problem({2, 3, 9, 9}, DType::f32, PoolKind::max, PoolGeometry::square(3, 2, 1));
  p.device = Device::cuda;  // 5 outputs per row, 9 inputs
  const PoolSolver& tiled = *solvers.front();
  EXPECT_TRUE(tiled.applicable(p, nullptr));
  EXPECT_EQ(tiled.layouts(p), (std::vector<Layout>{Layout::NCHW, Layout::CHWN}));
  const auto factors = [&](const PoolProblem& problem) {
    std::vector<int> out;
    for (const TuneConfig& c : tiled.configs(problem)) out.push_back(c.get("fx", 0));
    return out;
  };
  // Forward coarsens output rows, backward input rows.
  EXPECT_EQ(factors(p), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(factors(p.with_dir(Direction::bwd_data)), (std::vector<int>{1, 2, 4, 8}));
  p.iw = 2;  // 1 output per row
  EXPECT_EQ(factors(p), std::vector<int>{1});
  EXPECT_FALSE(tiled.applicable(p.with_dir(Direction::bwd_weights), nullptr));
}

TEST(CudaOpsRegistry, PlannersPickSolversOfTheProblemsDevice) {
  PoolProblem pool = pool_problem({2, 3, 8, 8}, DType::f32, PoolKind::max,
                                  PoolGeometry::square(2, 2));
  SoftmaxProblem loss{16, 10, DType::f32, Device::cpu};
  EXPECT_EQ(FirstApplicablePoolPlanner().plan(pool, Layout::NCHW).fwd.solver->device(),
            Device::cpu);
  EXPECT_EQ(FirstApplicableSoftmaxPlanner().plan(loss).device(), Device::cpu);
  pool.device = Device::cuda;
  loss.device = Device::cuda;
  for (const PoolSolver* solver : cpu_pool_solvers()) {
    std::string why;
    EXPECT_FALSE(solver->applicable(pool, &why)) << solver->name() << " took a GPU problem";
    EXPECT_NE(why.find("cuda"), std::string::npos) << solver->name() << ": " << why;
  }
  for (const SoftmaxSolver* solver : cpu_softmax_solvers()) {
    std::string why;
    EXPECT_FALSE(solver->applicable(loss, &why)) << solver->name() << " took a GPU problem";
    EXPECT_NE(why.find("cuda"), std::string::npos) << solver->name() << ": " << why;
  }
  if (!cuda_built()) {
    EXPECT_TRUE(pool_layouts(pool).empty());
    testing::expect_error([&] { FirstApplicablePoolPlanner().plan(pool, Layout::NCHW); },
                          {pool.key(), "no CUDA backend"});
    testing::expect_error([&] { FirstApplicableSoftmaxPlanner().plan(loss); },
                          {loss.key(), "no CUDA backend"});
    return;
  }
  EXPECT_EQ(pool_layouts(pool), (std::vector<Layout>{Layout::NCHW, Layout::CHWN}));
  const PoolLayerPlan plan = FirstApplicablePoolPlanner().plan(pool, Layout::NCHW);
  EXPECT_EQ(plan.fwd.solver->device(), Device::cuda);
  EXPECT_EQ(plan.bwd_data.solver->device(), Device::cuda);
  EXPECT_EQ(FirstApplicableSoftmaxPlanner().plan(loss).device(), Device::cuda);
  for (const PoolSolver* solver : cuda_pool_solvers()) {
    std::string why;
    pool.device = Device::cpu;
    EXPECT_FALSE(solver->applicable(pool, &why)) << solver->name() << " took a CPU problem";
    EXPECT_NE(why.find("cpu"), std::string::npos) << solver->name() << ": " << why;
  }
}

}  // namespace
}  // namespace tunecnn
