// Central-difference gradient checks, in double, for every layer other than convolution.
#include <algorithm>
#include <numeric>

#include "ops/dropout.h"
#include "ops/flatten.h"
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
