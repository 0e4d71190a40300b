// Central-difference gradient checks, in double, for every layer other than convolution.
#include <algorithm>
#include <numeric>

#include "ops/batch_norm.h"
#include "ops/dropout.h"
#include "ops/flatten.h"
#include "ops/global_avg_pool.h"
#include "ops/layout/to_layout.h"
#include "ops/linear.h"
#include "ops/pool/pool2d.h"
#include "ops/relu.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::gradcheck;
using testing::random_tensor;

// Distinct values at least 0.05 apart in shuffled order: no two are within the eps step of a tie,
// so the argmax of every window is stable under the finite-difference perturbation.
Tensor distinct_tensor(const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(shape, DType::f64);
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  std::iota(v.begin(), v.end(), 0.0);
  Rng rng(seed);
  std::shuffle(v.begin(), v.end(), rng.engine());
  for (std::size_t i = 0; i < v.size(); ++i) t.data<double>()[i] = 0.05 * v[i] - 1.0;
  return t;
}

// Uniform values with |x| >= 0.1, away from ReLU's kink.
Tensor away_from_zero(const Shape& shape, std::uint64_t seed) {
  Rng rng(seed);
  Tensor t = random_tensor(shape, rng, DType::f64, 0.1, 1.0);
  for (std::int64_t i = 0; i < t.numel(); i += 2) t.data<double>()[i] *= -1;
  return t;
}

constexpr Layout kLayouts[] = {Layout::NCHW, Layout::CHWN, Layout::NHWC};

// Runs `op` on the input converted to `layout` and converts its output back, so the check's NCHW
// inputs and probe meet the op in that layout.
template <class Op>
Variable in_layout(const Variable& x, Layout layout, Op op) {
  Variable y = op(to_layout(x, layout));
  return y.data().ndim() == 4 ? to_layout(y, Layout::NCHW) : y;
}

TEST(Gradcheck, Linear) {
  Rng rng(1);
  const auto fn = [](const std::vector<Variable>& in) { return linear(in[0], in[1], in[2]); };
  EXPECT_TRUE(
      gradcheck(fn, {random_tensor({3, 5}, rng, DType::f64), random_tensor({4, 5}, rng, DType::f64),
                     random_tensor({4}, rng, DType::f64)}));
}

TEST(Gradcheck, LinearWithoutBias) {
  Rng rng(2);
  const auto fn = [](const std::vector<Variable>& in) { return linear(in[0], in[1], Variable()); };
  EXPECT_TRUE(gradcheck(
      fn, {random_tensor({2, 3}, rng, DType::f64), random_tensor({6, 3}, rng, DType::f64)}));
}

TEST(Gradcheck, Relu) {
  const auto fn = [](const std::vector<Variable>& in) { return relu(in[0]); };
  EXPECT_TRUE(gradcheck(fn, {away_from_zero({3, 7}, 3)}));
}

// Written over its input's tensor, as a Sequential runs it after a layer whose output nothing
// else reads: the gradients through that layer too are unchanged.
TEST(Gradcheck, ReluInPlaceAfterLinearAndRelu6InPlaceAfterBatchNorm) {
  const auto after_linear = [](const std::vector<Variable>& in) {
    return relu_in_place(linear(in[0], in[1], in[2]));
  };
  EXPECT_TRUE(gradcheck(after_linear, {away_from_zero({3, 4}, 11), away_from_zero({5, 4}, 12),
                                       away_from_zero({5}, 13)}));
  const auto after_batch_norm = [](const std::vector<Variable>& in) {
    Tensor mean = Tensor::zeros({3}, DType::f64), var = Tensor::full({3}, 1.0, DType::f64);
    return relu_in_place(batch_norm(in[0], in[1], in[2], mean, var, true), 6.0);
  };
  EXPECT_TRUE(gradcheck(after_batch_norm, {away_from_zero({2, 3, 2, 2}, 14), away_from_zero({3}, 15),
                                           away_from_zero({3}, 16)}));
}

TEST(Gradcheck, Relu6AwayFromTheKinks) {
  Tensor x = away_from_zero({3, 8}, 20);
  // Every third value moved into (6.1, 6.9): the capped side, away from the kink at 6.
  for (std::int64_t i = 0; i < x.numel(); i += 3)
    x.data<double>()[i] = 6.5 + 0.4 * x.data<double>()[i];
  const auto fn = [](const std::vector<Variable>& in) { return relu(in[0], 6.0); };
  EXPECT_TRUE(gradcheck(fn, {x}));
}

// {8, 2, 1, 2} takes NCHW through batch_norm's rows shape (short runs over many rows).
TEST(Gradcheck, BatchNormTrainingInEveryLayout) {
  for (const Shape& shape : {Shape{2, 3, 3, 2}, Shape{8, 2, 1, 2}})
    for (Layout layout : kLayouts) {
      Rng rng(21);
      const std::int64_t c = shape[1];
      const auto fn = [layout, c](const std::vector<Variable>& in) {
        return in_layout(in[0], layout, [&](const Variable& x) {
          Tensor mean = Tensor::zeros({c}, DType::f64), var = Tensor::full({c}, 1.0, DType::f64);
          return batch_norm(x, in[1], in[2], mean, var, true);
        });
      };
      EXPECT_TRUE(gradcheck(
          fn, {random_tensor(shape, rng, DType::f64, -1.0, 2.0),
               random_tensor({c}, rng, DType::f64, 0.5, 1.5), random_tensor({c}, rng, DType::f64)}))
          << shape_str(shape) << " " << to_string(layout);
    }
}

// Outputs on both sides of 0 and of 6 (gamma 2-4, beta 1-3): the gate recomputed from x in
// backward must match where the forward clipped.
TEST(Gradcheck, BatchNormRelu6FusedInEveryLayoutAndMode) {
  for (const Shape& shape : {Shape{2, 3, 3, 2}, Shape{8, 2, 1, 2}})
    for (bool training : {true, false})
      for (Layout layout : kLayouts) {
        Rng rng(23);
        const std::int64_t c = shape[1];
        const Tensor mean = random_tensor({c}, rng, DType::f64);
        const Tensor var = random_tensor({c}, rng, DType::f64, 0.5, 2.0);
        const auto fn = [=](const std::vector<Variable>& in) {
          return in_layout(in[0], layout, [&](const Variable& x) {
            Tensor m = mean.clone(), v = var.clone();
            return batch_norm_relu(x, in[1], in[2], m, v, training, {}, 6.0);
          });
        };
        EXPECT_TRUE(gradcheck(
            fn, {random_tensor(shape, rng, DType::f64, -1.0, 2.0),
                 random_tensor({c}, rng, DType::f64, 2.0, 4.0), random_tensor({c}, rng, DType::f64, 1.0, 3.0)}))
            << shape_str(shape) << " " << to_string(layout) << (training ? " training" : " eval");
      }
}

TEST(Gradcheck, BatchNormEvalInEveryLayout) {
  for (Layout layout : kLayouts) {
    Rng rng(22);
    const Tensor mean = random_tensor({3}, rng, DType::f64);
    const Tensor var = random_tensor({3}, rng, DType::f64, 0.5, 2.0);
    const auto fn = [layout, mean, var](const std::vector<Variable>& in) {
      return in_layout(in[0], layout, [&](const Variable& x) {
        Tensor m = mean, v = var;
        return batch_norm(x, in[1], in[2], m, v, false);
      });
    };
    EXPECT_TRUE(gradcheck(
        fn, {random_tensor({2, 3, 2, 3}, rng, DType::f64),
             random_tensor({3}, rng, DType::f64, 0.5, 1.5), random_tensor({3}, rng, DType::f64)}))
        << to_string(layout);
  }
}

TEST(Gradcheck, GlobalAvgPoolInEveryLayout) {
  for (Layout layout : kLayouts) {
    Rng rng(23);
    const auto fn = [layout](const std::vector<Variable>& in) {
      return in_layout(in[0], layout, [](const Variable& x) { return global_avg_pool(x); });
    };
    EXPECT_TRUE(gradcheck(fn, {random_tensor({2, 3, 2, 3}, rng, DType::f64)})) << to_string(layout);
  }
}

TEST(Gradcheck, FlattenThenLinear) {
  Rng rng(4);
  const auto fn = [](const std::vector<Variable>& in) {
    return linear(flatten(in[0]), in[1], Variable());
  };
  EXPECT_TRUE(gradcheck(
      fn, {random_tensor({2, 2, 3, 2}, rng, DType::f64), random_tensor({3, 12}, rng, DType::f64)}));
}

TEST(Gradcheck, MaxPoolOverlappingAndPadded) {
  const auto overlapping = [](const std::vector<Variable>& in) {
    return max_pool2d(in[0], PoolGeometry::square(3, 2));
  };
  EXPECT_TRUE(gradcheck(overlapping, {distinct_tensor({2, 2, 7, 7}, 5)}));
  const auto padded = [](const std::vector<Variable>& in) {
    return max_pool2d(in[0], PoolGeometry::square(3, 2, 1));
  };
  EXPECT_TRUE(gradcheck(padded, {distinct_tensor({1, 3, 6, 5}, 6)}));
  const auto rectangular = [](const std::vector<Variable>& in) {
    return max_pool2d(in[0], PoolGeometry{2, 3, 1, 2, 1, 1});
  };
  EXPECT_TRUE(gradcheck(rectangular, {distinct_tensor({2, 1, 4, 6}, 7)}));
}

TEST(Gradcheck, AvgPoolOverlappingAndPadded) {
  Rng rng(8);
  for (bool include_pad : {false, true}) {
    const auto padded = [include_pad](const std::vector<Variable>& in) {
      return avg_pool2d(in[0], PoolGeometry::square(3, 2, 1), include_pad);
    };
    EXPECT_TRUE(gradcheck(padded, {random_tensor({2, 2, 6, 5}, rng, DType::f64)})) << include_pad;
  }
  const auto rectangular = [](const std::vector<Variable>& in) {
    return avg_pool2d(in[0], PoolGeometry{3, 2, 1, 2, 1, 0});
  };
  EXPECT_TRUE(gradcheck(rectangular, {random_tensor({1, 2, 5, 6}, rng, DType::f64)}));
}

TEST(Gradcheck, SoftmaxCrossEntropy) {
  Rng rng(9);
  const auto fn = [](const std::vector<Variable>& in) {
    return softmax_cross_entropy(in[0], {2, 0, 4, 4});
  };
  EXPECT_TRUE(gradcheck(fn, {random_tensor({4, 5}, rng, DType::f64, -3.0, 3.0)}));
}

TEST(Gradcheck, DropoutInTraining) {
  Rng rng(10);
  // A fresh RNG with the same seed on every evaluation: every evaluation draws the same mask.
  const auto fn = [](const std::vector<Variable>& in) {
    Rng mask_rng(11);
    return dropout(in[0], 0.4, true, mask_rng);
  };
  EXPECT_TRUE(gradcheck(fn, {random_tensor({3, 8}, rng, DType::f64)}));
}

TEST(Gradcheck, SmallNetworkEndToEnd) {
  Rng rng(12);
  const auto fn = [](const std::vector<Variable>& in) {
    Variable h = max_pool2d(relu(in[0]), PoolGeometry::square(2, 2));
    return softmax_cross_entropy(linear(flatten(h), in[1], in[2]), {1, 0});
  };
  EXPECT_TRUE(gradcheck(fn,
                        {away_from_zero({2, 1, 4, 4}, 13), random_tensor({3, 4}, rng, DType::f64),
                         random_tensor({3}, rng, DType::f64)},
                        {.differentiable = {false, true, true}}));
}

}  // namespace
}  // namespace tunecnn
