#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>

#include "core/allocator.h"
#include "core/tensor_math.h"
#include "ops/dropout.h"
#include "ops/flatten.h"
#include "ops/global_avg_pool.h"
#include "ops/layout/reference.h"
#include "ops/linear.h"
#include "ops/pool/pool2d.h"
#include "ops/pool/registry.h"
#include "ops/relu.h"
#include "ops/softmax_cross_entropy.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::random_tensor;
using testing::values;

Tensor iota(const Shape& shape, DType dtype = DType::f64) {
  Tensor t = Tensor::empty(shape, dtype);
  dispatch_dtype(dtype, [&]<class T>() {
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(i);
  });
  return t;
}

void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-12) {
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

// Runs backward with an all-ones gradient and returns the input's gradient.
Tensor grad_of_ones(const Tensor& input, const std::function<Variable(const Variable&)>& fn) {
  Variable x(input.clone(), true);
  Variable y = fn(x);
  y.backward(Tensor::full(y.shape(), 1.0, y.data().dtype()));
  return x.grad();
}

template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Linear

TEST(Linear, MatchesNaiveLoopInBothDtypes) {
  for (DType dt : {DType::f32, DType::f64}) {
    Rng rng(1);
    const Tensor x = random_tensor({5, 7}, rng, dt), w = random_tensor({4, 7}, rng, dt),
                 b = random_tensor({4}, rng, dt);
    const Tensor y = linear(Variable(x), Variable(w), Variable(b)).data();
    ASSERT_EQ(y.shape(), (Shape{5, 4}));
    const std::vector<double> xv = values(x), wv = values(w), bv = values(b), yv = values(y);
    for (int r = 0; r < 5; ++r)
      for (int o = 0; o < 4; ++o) {
        double expected = bv[o];
        for (int i = 0; i < 7; ++i) expected += xv[r * 7 + i] * wv[o * 7 + i];
        EXPECT_NEAR(yv[r * 4 + o], expected, dt == DType::f32 ? 1e-5 : 1e-12);
      }
  }
}

TEST(Linear, BackwardMatchesHandComputedValues) {
  Variable x(Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2}), true);
  Variable w(Tensor::from_vector(std::vector<double>{1, 0, -1, 2, 0.5, 1}, {3, 2}), true);
  Variable b(Tensor::zeros({3}, DType::f64), true);
  Variable y = linear(x, w, b);
  expect_values(y.data(), {1, 3, 2.5, 3, 5, 5.5});
  y.backward(Tensor::full({2, 3}, 1.0, DType::f64));
  expect_values(x.grad(), {0.5, 3, 0.5, 3});    // column sums of w
  expect_values(w.grad(), {4, 6, 4, 6, 4, 6});  // column sums of x, per output row
  expect_values(b.grad(), {2, 2, 2});
}

TEST(Linear, WithoutBiasAndModuleParameters) {
  Rng rng(2);
  Linear with_bias(6, 3, rng);
  Linear no_bias(6, 3, rng, false);
  const auto params = with_bias.parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[0].second.shape(), (Shape{3, 6}));
  EXPECT_EQ(params[1].first, "bias");
  EXPECT_EQ(sum(params[1].second.data()), 0.0);
  EXPECT_EQ(no_bias.parameters().size(), 1u);
  EXPECT_EQ(with_bias.describe(), "Linear(6->3)");
  EXPECT_EQ(no_bias.describe(), "Linear(6->3, no bias)");
  const Variable y = no_bias(Variable(Tensor::zeros({2, 6})));
  EXPECT_EQ(sum(y.data()), 0.0);
}

TEST(Linear, RejectsBadShapesNamingThem) {
  Rng rng(3);
  Linear layer(4, 2, rng);
  const std::string msg = error_of([&] { layer(Variable(Tensor::zeros({2, 2, 2}))); });
  EXPECT_NE(msg.find("[2, 2, 2]"), std::string::npos) << msg;
  const std::string wrong_in = error_of([&] { layer(Variable(Tensor::zeros({2, 5}))); });
  EXPECT_NE(wrong_in.find("[2, 5]"), std::string::npos) << wrong_in;
  EXPECT_THROW(Linear(0, 2, rng), Error);
}

// ReLU and Flatten

TEST(Relu, ForwardAndBackward) {
  const Tensor x = Tensor::from_vector(std::vector<double>{-2, -0.5, 0.5, 3}, {2, 2});
  expect_values(relu(Variable(x)).data(), {0, 0, 0.5, 3});
  expect_values(grad_of_ones(x, [](const Variable& v) { return relu(v); }), {0, 0, 1, 1});
  EXPECT_EQ(ReLU().describe(), "ReLU");
}

// In a Sequential, a ReLU after a layer whose output nothing else reads (Linear here) writes over
// that output: one activation block is held instead of two, with the same values and gradients.
TEST(Relu, InASequentialTakesTheMemoryOfTheLayerBefore) {
  Rng rng(5);
  auto linear = std::make_shared<Linear>(16, 1000, rng);
  auto relu_layer = std::make_shared<ReLU>();
  Sequential net;
  net.add(linear).add(relu_layer);
  const Tensor x = random_tensor({8, 16}, rng);
  Allocator& alloc = allocator_for(Device::cpu);
  const auto held_by = [&](const std::function<Variable()>& forward, Tensor* weight_grad) {
    linear->parameters()[0].second.zero_grad();
    const std::size_t before = alloc.stats().current_bytes;
    Variable y = forward();
    const std::size_t held = alloc.stats().current_bytes - before;
    y.backward(Tensor::full(y.data().shape(), 1.0));
    *weight_grad = linear->parameters()[0].second.grad().clone();
    return std::pair{held, y.data().clone()};
  };
  Tensor in_place_grad, separate_grad;
  const auto [in_place, in_place_y] = held_by([&] { return net.forward(Variable(x)); }, &in_place_grad);
  const auto [separate, separate_y] =
      held_by([&] { return relu_layer->forward(linear->forward(Variable(x))); }, &separate_grad);
  EXPECT_EQ(separate - in_place, Allocator::block_size(8 * 1000 * sizeof(float)));
  EXPECT_EQ(values(in_place_y), values(separate_y));
  EXPECT_EQ(values(in_place_grad), values(separate_grad));
}

TEST(Relu, InASequentialNeverWritesOverTheCallersInputOrAnOutputThatMayBeIt) {
  const Tensor x = Tensor::from_vector(std::vector<double>{-2, -0.5, 0.5, 3}, {2, 2});
  const std::vector<double> before = values(x);
  Sequential first;  // the Sequential's own input is the caller's
  first.add(std::make_shared<ReLU>());
  expect_values(first.forward(Variable(x)).data(), {0, 0, 0.5, 3});
  EXPECT_EQ(values(x), before);
  Sequential after_dropout;  // in evaluation, dropout hands its input on as it is
  after_dropout.add(std::make_shared<Dropout>(0.5, std::make_shared<Rng>(1))).add(std::make_shared<ReLU>());
  after_dropout.eval();
  expect_values(after_dropout.forward(Variable(x)).data(), {0, 0, 0.5, 3});
  EXPECT_EQ(values(x), before);
}

TEST(Relu, LargeTensorAcrossTasksInFloat) {
  Rng rng(4);
  const Tensor x = random_tensor({3, 100000}, rng);
  const Tensor y = relu(Variable(x)).data();
  const float* px = x.data<float>();
  const float* py = y.data<float>();
  for (std::int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(py[i], px[i] > 0 ? px[i] : 0.0f);
}

TEST(Relu6, ClampsAtZeroAndSixAndKeepsNaN) {
  for (DType dt : {DType::f32, DType::f64}) {
    const std::vector<double> raw{-3, -0.0, 0.25, 5.5, 6, 6.5, 1e9, std::nan("")};
    Tensor x = Tensor::empty({2, 4}, dt);
    dispatch_dtype(dt, [&]<class T>() {
      for (std::size_t i = 0; i < raw.size(); ++i) x.data<T>()[i] = static_cast<T>(raw[i]);
    });
    const std::vector<double> y = values(ReLU6()(Variable(x)).data());
    for (std::size_t i = 0; i + 1 < raw.size(); ++i)
      EXPECT_EQ(y[i], std::min(std::max(raw[i], 0.0), 6.0)) << "element " << i;
    EXPECT_TRUE(std::isnan(y.back()));
    expect_values(grad_of_ones(x, [](const Variable& v) { return relu(v, 6.0); }),
                  {0, 0, 1, 1, 0, 0, 0, 0});
  }
  EXPECT_EQ(ReLU6().describe(), "ReLU6");
}

// 67 values, so every special value meets the vectorised body (16 floats a packet with
// AVX-512, 8 with AVX2) and the scalar tail, in both dtypes.
TEST(Relu, EverySpecialValueKeepsItsRuleInPacketsAndTail) {
  const std::vector<double> special{-3, -0.0, 0.0, 0.25, 5.5, 6, 6.5, 1e9, -INFINITY, INFINITY, std::nan("")};
  for (DType dt : {DType::f32, DType::f64})
    for (double cap : {6.0, kNoCap}) {
      Tensor x = Tensor::empty({67}, dt);
      dispatch_dtype(dt, [&]<class T>() {
        for (std::int64_t i = 0; i < 67; ++i) x.data<T>()[i] = static_cast<T>(special[(i * 7) % special.size()]);
      });
      const std::vector<double> in = values(x), y = values(relu(Variable(x), cap).data());
      const std::vector<double> dx = values(grad_of_ones(x, [cap](const Variable& v) { return relu(v, cap); }));
      for (std::size_t i = 0; i < in.size(); ++i) {
        const std::string what = std::string(to_string(dt)) + " cap " + std::to_string(cap) + " x " + std::to_string(in[i]);
        if (std::isnan(in[i])) {
          EXPECT_TRUE(std::isnan(y[i])) << what;
        } else {
          EXPECT_EQ(y[i], std::min(std::max(in[i], 0.0), cap)) << what;
        }
        EXPECT_EQ(dx[i], in[i] > 0 && in[i] < cap ? 1.0 : 0.0) << what;
      }
    }
}

TEST(Flatten, IsAViewAndRoutesTheGradientBack) {
  const Tensor x = iota({2, 3, 2, 2});
  Variable xv(x, true);
  Variable y = flatten(xv);
  EXPECT_EQ(y.shape(), (Shape{2, 12}));
  EXPECT_TRUE(y.data().shares_storage(x));
  y.backward(iota({2, 12}));
  EXPECT_EQ(xv.grad().shape(), x.shape());
  expect_values(xv.grad(), values(x));
  EXPECT_THROW(flatten(Variable(Tensor::zeros({5}))), Error);
}

// Dropout

TEST(Dropout, KeepsTheExpectationAndDropsAboutP) {
  Rng rng(5);
  const Tensor x = Tensor::full({200000}, 1.0);
  const Tensor y = dropout(Variable(x), 0.3, true, rng).data();
  std::int64_t dropped = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i) {
    const float v = y.data<float>()[i];
    ASSERT_TRUE(v == 0.0f || std::abs(v - 1.0f / 0.7f) < 1e-6f) << v;
    dropped += v == 0.0f;
  }
  EXPECT_NEAR(static_cast<double>(dropped) / y.numel(), 0.3, 0.01);
  EXPECT_NEAR(sum(y) / y.numel(), 1.0, 0.01);
}

TEST(Dropout, GradientUsesTheSameMask) {
  Rng rng(6);
  const Tensor x = Tensor::full({1000}, 2.0, DType::f64);
  Variable xv(x, true);
  Variable y = dropout(xv, 0.5, true, rng);
  y.backward(Tensor::full({1000}, 1.0, DType::f64));
  const std::vector<double> yv = values(y.data()), gv = values(xv.grad());
  for (std::size_t i = 0; i < yv.size(); ++i) EXPECT_DOUBLE_EQ(gv[i], yv[i] / 2.0);
}

TEST(Dropout, IdentityInEvalModeAndAtZero) {
  auto rng = std::make_shared<Rng>(7);
  Dropout layer(0.5, rng);
  Variable x(random_tensor({4, 8}, *rng));
  const std::string before = rng->state();
  layer.eval();
  EXPECT_TRUE(layer(x).same_node(x));
  EXPECT_EQ(rng->state(), before) << "evaluation must not draw";
  EXPECT_TRUE(dropout(x, 0.0, true, *rng).same_node(x));
  layer.train();
  EXPECT_FALSE(layer(x).same_node(x));
  EXPECT_NE(rng->state(), before);
  EXPECT_EQ(layer.describe(), "Dropout(p=0.5)");
}

TEST(Dropout, SameRngStateGivesTheSameMask) {
  Rng a(8), b(8);
  const Tensor x = Tensor::full({300}, 1.0);
  expect_values(dropout(Variable(x), 0.4, true, a).data(),
                values(dropout(Variable(x), 0.4, true, b).data()));
}

TEST(Dropout, RejectsBadProbability) {
  Rng rng(9);
  EXPECT_THROW(dropout(Variable(Tensor::zeros({2})), 1.0, true, rng), Error);
  EXPECT_THROW(dropout(Variable(Tensor::zeros({2})), -0.1, false, rng), Error);
  EXPECT_THROW(Dropout(0.5, nullptr), Error);
}

// Pooling

TEST(PoolProblem, KeyAndValidation) {
  PoolProblem p;
  p.kind = PoolKind::max, p.mb = 64, p.c = 16, p.ih = 28, p.iw = 28;
  p.kh = p.kw = p.sh = p.sw = 2;
  EXPECT_EQ(p.key(), "pool max fwd mb64 c16 ih28 iw28 kh2 kw2 sh2 sw2 ph0 pw0");
  EXPECT_EQ(p.oh(), 14);
  PoolProblem a = p.with_dir(Direction::bwd_data);
  a.kind = PoolKind::avg, a.dt = DType::f64, a.count_include_pad = true;
  EXPECT_EQ(a.key(), "pool avg bwd_data mb64 c16 ih28 iw28 kh2 kw2 sh2 sw2 ph0 pw0 f64 incpad");
  PoolProblem too_big = p;
  too_big.kh = 31;
  const std::string msg = error_of([&] { too_big.validate(); });
  EXPECT_NE(msg.find("kh31"), std::string::npos) << msg;
  EXPECT_THROW(p.with_dir(Direction::bwd_weights).validate(), Error);
  PoolProblem padded = p;
  padded.ph = 2;
  EXPECT_THROW(padded.validate(), Error);
}

TEST(PoolRegistry, DirectIsLastAndFindable) {
  ASSERT_FALSE(cpu_pool_solvers().empty());
  EXPECT_EQ(cpu_pool_solvers().back(), &direct_pool_solver());
  EXPECT_EQ(find_pool_solver("pool_direct"), &direct_pool_solver());
  EXPECT_EQ(find_pool_solver("nope"), nullptr);
}

TEST(MaxPool, PaddedOverlappingWindows) {
  // 4x4 input 0..15, window 3, stride 2, pad 1: windows clip to rows/cols {0,1} and {1,2,3}.
  const Tensor x = iota({1, 1, 4, 4});
  const Tensor y = max_pool2d(Variable(x), PoolGeometry::square(3, 2, 1)).data();
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 2}));
  expect_values(y, {5, 7, 13, 15});
  expect_values(
      grad_of_ones(x,
                   [](const Variable& v) { return max_pool2d(v, PoolGeometry::square(3, 2, 1)); }),
      {0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1});
}

TEST(MaxPool, SharedMaximumCollectsEveryWindowsGradient) {
  // 5x5, window 3, stride 2: the centre lies in all four windows.
  Tensor x = iota({1, 1, 5, 5});
  x.data<double>()[12] = 100;
  Variable xv(x, true);
  Variable y = max_pool2d(xv, PoolGeometry::square(3, 2));
  expect_values(y.data(), {100, 100, 100, 100});
  y.backward(Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {1, 1, 2, 2}));
  EXPECT_EQ(values(xv.grad())[12], 10.0);
  EXPECT_EQ(sum(xv.grad()), 10.0);
}

TEST(MaxPool, TiesGoToTheFirstMaximum) {
  const Tensor x = Tensor::full({1, 1, 2, 2}, 1.0, DType::f64);
  expect_values(
      grad_of_ones(x, [](const Variable& v) { return max_pool2d(v, PoolGeometry::square(2, 2)); }),
      {1, 0, 0, 0});
}

TEST(MaxPool, NegativeInputsWithPaddingIgnoreThePadding) {
  Tensor x = iota({1, 1, 2, 2});
  for (int i = 0; i < 4; ++i) x.data<double>()[i] = -1.0 - i;
  expect_values(max_pool2d(Variable(x), PoolGeometry::square(2, 1, 1)).data(),
                {-1, -1, -2, -1, -1, -2, -3, -3, -4});
}

TEST(MaxPool, ManyPlanesInFloatMatchDouble) {
  Rng rng(10);
  const Tensor x64 = random_tensor({4, 5, 9, 7}, rng, DType::f64);
  Tensor x32 = Tensor::empty(x64.shape(), DType::f32);
  for (std::int64_t i = 0; i < x64.numel(); ++i)
    x32.data<float>()[i] = static_cast<float>(x64.data<double>()[i]);
  const PoolGeometry g{3, 2, 2, 1, 1, 0};
  const Tensor y64 = max_pool2d(Variable(x64), g).data();
  const Tensor y32 = max_pool2d(Variable(x32), g).data();
  EXPECT_EQ(y64.shape(), (Shape{4, 5, 5, 6}));
  expect_values(y32, values(y64), 1e-6);
}

TEST(AvgPool, PaddingIsExcludedByDefault) {
  const Tensor x = iota({1, 1, 4, 4});
  const PoolGeometry g = PoolGeometry::square(3, 2, 1);
  expect_values(avg_pool2d(Variable(x), g).data(), {2.5, 4, 8.5, 10});
  expect_values(avg_pool2d(Variable(x), g, true).data(), {10.0 / 9, 24.0 / 9, 51.0 / 9, 10});
  // Each pixel receives 1/count from every window holding it.
  expect_values(grad_of_ones(x, [&](const Variable& v) { return avg_pool2d(v, g); }),
                {0.25, 0.25 + 1.0 / 6, 1.0 / 6, 1.0 / 6,                                          //
                 0.25 + 1.0 / 6, 0.25 + 2.0 / 6 + 1.0 / 9, 1.0 / 6 + 1.0 / 9, 1.0 / 6 + 1.0 / 9,  //
                 1.0 / 6, 1.0 / 6 + 1.0 / 9, 1.0 / 9, 1.0 / 9,                                    //
                 1.0 / 6, 1.0 / 6 + 1.0 / 9, 1.0 / 9, 1.0 / 9});
}

TEST(Pool, ModulesAndErrors) {
  EXPECT_EQ(MaxPool2d(2, 2).describe(), "MaxPool2d(2x2, stride 2)");
  EXPECT_EQ(AvgPool2d(3, 2, 1).describe(), "AvgPool2d(3x3, stride 2, pad 1)");
  MaxPool2d pool(2, 2);
  EXPECT_EQ(pool(Variable(iota({2, 3, 6, 6}))).shape(), (Shape{2, 3, 3, 3}));
  const std::string not_4d = error_of([&] { pool(Variable(Tensor::zeros({3, 6, 6}))); });
  EXPECT_NE(not_4d.find("[3, 6, 6]"), std::string::npos) << not_4d;
  const std::string too_small = error_of([] {
    MaxPool2d(5, 1)(Variable(Tensor::zeros({1, 1, 3, 3})));
  });
  EXPECT_NE(too_small.find("larger than the padded input"), std::string::npos) << too_small;
}

// Global average pooling

TEST(GlobalAvgPool, MeansOfEachPlaneInEveryLayoutAndSpreadsTheGradient) {
  for (DType dt : {DType::f32, DType::f64}) {
    Rng rng(30);
    const Shape shape{3, 5, 4, 7};
    const Tensor x = random_tensor(shape, rng, dt);
    const Tensor dy = random_tensor({3, 5}, rng, dt);
    const std::vector<double> xv = values(x), dyv = values(dy);
    std::vector<double> expected(15, 0.0), expected_dx(xv.size());
    for (std::size_t i = 0; i < xv.size(); ++i) {
      expected[i / 28] += xv[i] / 28;
      expected_dx[i] = dyv[i / 28] / 28;
    }
    for (Layout layout : {Layout::NCHW, Layout::CHWN, Layout::NHWC}) {
      Variable in(convert_layout_reference(x, layout), true);
      Variable y = GlobalAvgPool()(in);
      ASSERT_EQ(y.shape(), (Shape{3, 5}));
      EXPECT_EQ(y.data().layout(), Layout::NCHW);
      expect_values(y.data(), expected, dt == DType::f32 ? 1e-6 : 1e-12);
      y.backward(dy);
      EXPECT_EQ(in.grad().layout(), layout);
      expect_values(convert_layout_reference(in.grad(), Layout::NCHW), expected_dx,
                    dt == DType::f32 ? 1e-7 : 1e-15);
    }
  }
  EXPECT_EQ(GlobalAvgPool().describe(), "GlobalAvgPool");
  EXPECT_THROW(global_avg_pool(Variable(Tensor::zeros({2, 3}))), Error);
}

// Softmax cross-entropy

TEST(SoftmaxCrossEntropy, ExtremeLogitsGiveFiniteLossAndExactGradient) {
  for (DType dt : {DType::f32, DType::f64}) {
    const std::vector<double> raw{1e4, -1e4, 0, 2, 2, 2};
    Tensor logits = Tensor::empty({2, 3}, dt);
    dispatch_dtype(dt, [&]<class T>() {
      for (int i = 0; i < 6; ++i) logits.data<T>()[i] = static_cast<T>(raw[i]);
    });
    Variable x(logits, true);
    Variable loss = softmax_cross_entropy(x, {1, 0});
    ASSERT_EQ(loss.shape(), (Shape{1}));
    EXPECT_NEAR(values(loss.data())[0], (2e4 + std::log(3.0)) / 2, 1e-2);
    loss.backward();
    ASSERT_TRUE(all_finite(x.grad()));
    const double third = 1.0 / 3;
    expect_values(x.grad(), {0.5, -0.5, 0, (third - 1) / 2, third / 2, third / 2}, 1e-6);
  }
}

TEST(SoftmaxCrossEntropy, AllEqualLogitsGiveLogClasses) {
  Variable x(Tensor::full({4, 10}, -1e4, DType::f64), true);
  Variable loss = softmax_cross_entropy(x, {0, 3, 9, 5});
  EXPECT_NEAR(values(loss.data())[0], std::log(10.0), 1e-12);
  loss.backward(Tensor::full({1}, 2.0, DType::f64));  // the incoming gradient scales it
  EXPECT_NEAR(values(x.grad())[0], 2 * (0.1 - 1) / 4, 1e-12);
  EXPECT_NEAR(values(x.grad())[1], 2 * 0.1 / 4, 1e-12);
}

TEST(SoftmaxCrossEntropy, BadLabelsNameTheLabelAndRow) {
  Variable x(Tensor::zeros({3, 4}));
  const std::string msg = error_of([&] { softmax_cross_entropy(x, {0, 1, 4}); });
  EXPECT_NE(msg.find("label 4 in row 2"), std::string::npos) << msg;
  EXPECT_THROW(softmax_cross_entropy(x, {0, -1, 2}), Error);
  EXPECT_THROW(softmax_cross_entropy(x, {0, 1}), Error);
  EXPECT_THROW(softmax_cross_entropy(Variable(Tensor::zeros({3, 4, 1})), {0, 1, 2}), Error);
}

TEST(Softmax, RowsSumToOneAndArgmaxTakesTheFirstTie) {
  const Tensor logits =
      Tensor::from_vector(std::vector<float>{1, 3, 3, 0, -1e4f, 1e4f, 5, 5, 5}, {3, 3});
  Tensor probs;
  softmax(logits, probs);
  const std::vector<double> p = values(probs);
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(p[r * 3] + p[r * 3 + 1] + p[r * 3 + 2], 1.0, 1e-6);
  EXPECT_NEAR(p[1], p[2], 1e-7);
  EXPECT_NEAR(p[5], 1.0, 1e-6);
  EXPECT_EQ(argmax_rows(logits), (std::vector<std::int32_t>{1, 2, 0}));
}

}  // namespace
}  // namespace tunecnn
