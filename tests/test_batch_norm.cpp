// BatchNorm2d against a plain double-precision reference, in every layout and both dtypes, with
// the running statistics, evaluation mode, the module's state names and a large-mean input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "core/threading.h"
#include "ops/batch_norm.h"
#include "ops/layout/reference.h"
#include "ops/relu.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::random_tensor;
using testing::values;
using testing::nchw_values;

constexpr Layout kLayouts[] = {Layout::NCHW, Layout::CHWN, Layout::NHWC};

Tensor from_doubles(const std::vector<double>& v, DType dtype) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(v.size())}, dtype);
  dispatch_dtype(dtype, [&]<class T>() {
    for (std::size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = static_cast<T>(v[i]);
  });
  return t;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& expected, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], tol * (1 + std::abs(expected[i]))) << what << " element " << i;
}

// Per channel, from logical NCHW values: mean and biased variance.
struct ReferenceStats {
  std::vector<double> mean, var;
};

ReferenceStats reference_stats(const std::vector<double>& x, const Shape& s) {
  const std::int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  ReferenceStats r{std::vector<double>(c, 0.0), std::vector<double>(c, 0.0)};
  for (std::int64_t ch = 0; ch < c; ++ch) {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t p = 0; p < hw; ++p) r.mean[ch] += x[(i * c + ch) * hw + p];
    r.mean[ch] /= static_cast<double>(n * hw);
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t p = 0; p < hw; ++p) {
        const double d = x[(i * c + ch) * hw + p] - r.mean[ch];
        r.var[ch] += d * d;
      }
    r.var[ch] /= static_cast<double>(n * hw);
  }
  return r;
}

std::vector<double> reference_normalise(const std::vector<double>& x, const Shape& s,
                                        const std::vector<double>& mean,
                                        const std::vector<double>& var,
                                        const std::vector<double>& gamma,
                                        const std::vector<double>& beta, double eps = 1e-5) {
  const std::int64_t c = s[1], hw = s[2] * s[3];
  std::vector<double> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t ch = static_cast<std::size_t>((static_cast<std::int64_t>(i) / hw) % c);
    y[i] = (x[i] - mean[ch]) / std::sqrt(var[ch] + eps) * gamma[ch] + beta[ch];
  }
  return y;
}

struct Step {
  Tensor y, dx, dgamma, dbeta, running_mean, running_var;
};

// One training step of the functional op in `layout`, backward seeded with `probe`.
Step train_step(const Tensor& x_nchw, const Tensor& gamma, const Tensor& beta,
                const Tensor& probe_nchw, Layout layout) {
  const std::int64_t c = x_nchw.dim(1);
  Step s{
      {}, {}, {}, {}, Tensor::zeros({c}, x_nchw.dtype()), Tensor::full({c}, 1.0, x_nchw.dtype())};
  Variable x(convert_layout_reference(x_nchw, layout), true);
  Variable g(gamma.clone(), true), b(beta.clone(), true);
  Variable y = batch_norm(x, g, b, s.running_mean, s.running_var, true);
  EXPECT_EQ(y.data().layout(), layout);
  y.backward(convert_layout_reference(probe_nchw, layout));
  s.y = y.data();
  s.dx = x.grad();
  s.dgamma = g.grad();
  s.dbeta = b.grad();
  return s;
}

double tolerance(DType dtype) {
  return dtype == DType::f32 ? 2e-5 : 1e-12;
}

// Both loop shapes and their edges: runs cut into pieces ({2, 3, 4, 5} NCHW and CHWN, several
// pieces per run in {4, 3, 80, 80} NCHW and CHWN); NHWC and short runs over many rows as rows,
// in several row tasks ({4, 3, 80, 80} NHWC, {70, 300, 2, 2} NCHW and NHWC) and several channel
// groups ({70, 300, 2, 2} NCHW, {4, 1100, 1, 1}).
const Shape kShapes[] = {
    {2, 3, 4, 5}, {5, 7, 1, 1}, {4, 3, 80, 80}, {70, 300, 2, 2}, {4, 1100, 1, 1}};

TEST(BatchNorm, TrainingForwardMatchesDoubleReferenceInEveryLayout) {
  for (const Shape& shape : kShapes)
    for (DType dt : {DType::f32, DType::f64}) {
      Rng rng(1);
      const Tensor x = random_tensor(shape, rng, dt, -2.0, 3.0);
      const Tensor gamma = random_tensor({shape[1]}, rng, dt, 0.5, 1.5);
      const Tensor beta = random_tensor({shape[1]}, rng, dt);
      const std::vector<double> xv = values(x);
      const ReferenceStats r = reference_stats(xv, shape);
      const std::vector<double> expected =
          reference_normalise(xv, shape, r.mean, r.var, values(gamma), values(beta));
      const double m = static_cast<double>(shape_numel(shape) / shape[1]);
      std::vector<double> running_mean, running_var;
      for (std::size_t ch = 0; ch < r.mean.size(); ++ch) {
        running_mean.push_back(0.1 * r.mean[ch]);
        running_var.push_back(0.9 + 0.1 * r.var[ch] * m / (m - 1));
      }
      const Tensor probe = random_tensor(shape, rng, dt);
      std::vector<double> nchw_y;
      for (Layout layout : kLayouts) {
        const std::string what = shape_str(shape) + " " + std::string(to_string(dt)) + " " +
                                 std::string(to_string(layout));
        const Step s = train_step(x, gamma, beta, probe, layout);
        const std::vector<double> y = nchw_values(s.y);
        expect_near(y, expected, tolerance(dt), what + " y");
        expect_near(values(s.running_mean), running_mean, tolerance(dt), what + " running_mean");
        expect_near(values(s.running_var), running_var, tolerance(dt), what + " running_var");
        // Every layout gives the same numbers, up to the order of the float sums.
        if (layout == Layout::NCHW) nchw_y = y;
        expect_near(y, nchw_y, dt == DType::f32 ? 1e-6 : 1e-14, what + " vs NCHW");
      }
    }
}

TEST(BatchNorm, FloatGradientsMatchDoubleInEveryLayout) {
  for (const Shape& shape : kShapes) {
    Rng rng(2);
    const Tensor x = random_tensor(shape, rng, DType::f64, -2.0, 3.0);
    const Tensor gamma = random_tensor({shape[1]}, rng, DType::f64, 0.5, 1.5);
    const Tensor beta = random_tensor({shape[1]}, rng, DType::f64);
    const Tensor probe = random_tensor(shape, rng, DType::f64);
    const auto f32 = [](const Tensor& t) {
      const std::vector<double> v = values(t);
      return Tensor::from_vector(std::vector<float>(v.begin(), v.end()), t.shape());
    };
    const Step ref = train_step(x, gamma, beta, probe, Layout::NCHW);
    for (Layout layout : kLayouts) {
      const std::string what = shape_str(shape) + " " + std::string(to_string(layout));
      const Step s = train_step(f32(x), f32(gamma), f32(beta), f32(probe), layout);
      expect_near(nchw_values(s.dx), values(ref.dx), 1e-4, what + " dx");
      expect_near(values(s.dgamma), values(ref.dgamma), 1e-4, what + " dgamma");
      expect_near(values(s.dbeta), values(ref.dbeta), 1e-4, what + " dbeta");
    }
  }
}

TEST(BatchNorm, ResultsDoNotDependOnTheThreadCount) {
  const int saved = num_threads();
  for (const Shape& shape : {Shape{4, 3, 80, 80}, Shape{70, 300, 2, 2}})
    for (Layout layout : kLayouts) {
      Rng rng(3);
      const Tensor x = random_tensor(shape, rng);
      const Tensor gamma = random_tensor({shape[1]}, rng), beta = random_tensor({shape[1]}, rng);
      const Tensor probe = random_tensor(shape, rng);
      set_num_threads(1);
      const Step one = train_step(x, gamma, beta, probe, layout);
      set_num_threads(0);
      const Step all = train_step(x, gamma, beta, probe, layout);
      const std::string what = shape_str(shape) + " " + std::string(to_string(layout));
      EXPECT_EQ(values(one.y), values(all.y)) << what;
      EXPECT_EQ(values(one.dx), values(all.dx)) << what;
      EXPECT_EQ(values(one.dgamma), values(all.dgamma)) << what;
      EXPECT_EQ(values(one.running_var), values(all.running_var)) << what;
    }
  set_num_threads(saved);
}

TEST(BatchNorm, RunningStatsAfterTwoStepsFollowTheMomentumRule) {
  const Shape shape{3, 2, 4, 4};
  const double momentum = 0.25;
  for (Layout layout : kLayouts) {
    BatchNorm2d bn(2, {.momentum = momentum});
    Rng rng(4);
    std::vector<double> mean(2, 0.0), var(2, 1.0);
    for (int step = 0; step < 2; ++step) {
      const Tensor x = random_tensor(shape, rng, DType::f32, -1.0 + step, 2.0 + 3 * step);
      bn(Variable(convert_layout_reference(x, layout)));
      const ReferenceStats r = reference_stats(values(x), shape);
      const double m = 3 * 4 * 4;
      for (int c = 0; c < 2; ++c) {
        mean[c] = (1 - momentum) * mean[c] + momentum * r.mean[c];
        var[c] = (1 - momentum) * var[c] + momentum * r.var[c] * m / (m - 1);  // unbiased
      }
    }
    const std::vector<NamedTensor> buffers = bn.buffers();
    expect_near(values(buffers[0].second), mean, 1e-6, "running_mean");
    expect_near(values(buffers[1].second), var, 1e-6, "running_var");
  }
}

TEST(BatchNorm, EvalModeUsesRunningStatsAndChangesNoBuffer) {
  const Shape shape{2, 3, 3, 5};
  for (Layout layout : kLayouts) {
    BatchNorm2d bn(3);
    std::vector<NamedTensor> buffers = bn.buffers();
    const std::vector<double> mean{0.5, -1.0, 2.0}, var{0.25, 4.0, 1.5};
    buffers[0].second.copy_from(from_doubles(mean, DType::f32));
    buffers[1].second.copy_from(from_doubles(var, DType::f32));
    std::vector<NamedVariable> params = bn.parameters();
    params[0].second.data().copy_from(from_doubles({2.0, 0.5, -1.0}, DType::f32));
    params[1].second.data().copy_from(from_doubles({0.1, 0.2, 0.3}, DType::f32));
    bn.eval();
    Rng rng(5);
    const Tensor x = random_tensor(shape, rng, DType::f32, -3.0, 3.0);
    const Tensor y = bn(Variable(convert_layout_reference(x, layout))).data();
    expect_near(nchw_values(y),
                reference_normalise(values(x), shape, mean, var, {2.0, 0.5, -1.0}, {0.1, 0.2, 0.3}),
                1e-6, std::string(to_string(layout)));
    EXPECT_EQ(values(buffers[0].second), mean);
    EXPECT_EQ(values(buffers[1].second), var);
  }
}

// batch_norm_relu against batch_norm then relu: the same output and running statistics, the same
// gradients up to rounding, with outputs on both sides of 0 and of the cap of 6.
TEST(BatchNormRelu, MatchesBatchNormThenReluInEveryLayoutModeAndDtype) {
  for (const Shape& shape : kShapes)
    for (DType dtype : {DType::f32, DType::f64})
      for (bool training : {true, false})
        for (double cap : {6.0, kNoCap})
          for (Layout layout : kLayouts) {
            Rng rng(7);
            const std::int64_t c = shape[1];
            const Tensor x = convert_layout_reference(random_tensor(shape, rng, dtype, -2.0, 3.0), layout);
            const Tensor gamma = random_tensor({c}, rng, dtype, 1.0, 4.0);
            const Tensor beta = random_tensor({c}, rng, dtype, 0.0, 4.0);
            const Tensor probe = convert_layout_reference(random_tensor(shape, rng, dtype), layout);
            const Tensor mean = random_tensor({c}, rng, dtype), var = random_tensor({c}, rng, dtype, 0.5, 2.0);
            const auto step = [&](bool fused) {
              Step s{{}, {}, {}, {}, mean.clone(), var.clone()};
              Variable in(x.clone(), true), g(gamma.clone(), true), b(beta.clone(), true);
              Variable y = fused ? batch_norm_relu(in, g, b, s.running_mean, s.running_var, training, {}, cap)
                                 : relu(batch_norm(in, g, b, s.running_mean, s.running_var, training), cap);
              y.backward(probe);
              return Step{y.data(), in.grad(), g.grad(), b.grad(), s.running_mean, s.running_var};
            };
            const Step two_ops = step(false), fused = step(true);
            const std::string what = shape_str(shape) + " " + std::string(to_string(layout)) + " " +
                                     std::string(to_string(dtype)) + (training ? " training" : " eval") + " cap " +
                                     std::to_string(cap);
            EXPECT_EQ(fused.y.layout(), layout) << what;
            EXPECT_EQ(values(fused.y), values(two_ops.y)) << what;
            EXPECT_EQ(values(fused.running_mean), values(two_ops.running_mean)) << what;
            EXPECT_EQ(values(fused.running_var), values(two_ops.running_var)) << what;
            const double tol = tolerance(dtype);
            expect_near(values(fused.dx), values(two_ops.dx), tol, what + " dx");
            expect_near(values(fused.dgamma), values(two_ops.dgamma), tol, what + " dgamma");
            expect_near(values(fused.dbeta), values(two_ops.dbeta), tol, what + " dbeta");
            const std::vector<double> y = values(fused.y);
            if (cap == 6.0 && training && x.numel() > 1000) {
              EXPECT_GT(std::count(y.begin(), y.end(), 0.0), 0) << what;
              EXPECT_GT(std::count(y.begin(), y.end(), 6.0), 0) << what;
            }
          }
}

TEST(BatchNormRelu, ABatchNormLayerFusesTheReluAfterItAndNothingElse) {
  BatchNorm2d bn(3);
  Rng rng(8);
  const Variable x(random_tensor({2, 3, 4, 4}, rng, DType::f32, -2.0, 3.0));
  const std::optional<Variable> fused = bn.forward_fused(x, ReLU6());
  ASSERT_TRUE(fused.has_value());
  BatchNorm2d twin(3);
  EXPECT_EQ(values(fused->data()), values(relu(twin.forward(x), 6.0).data()));
  EXPECT_FALSE(bn.forward_fused(x, BatchNorm2d(3)).has_value());
  EXPECT_THROW(batch_norm_relu(x, bn.parameters()[0].second, bn.parameters()[1].second,
                               bn.buffers()[0].second, bn.buffers()[1].second, true, {}, 0.0),
               Error);
}

TEST(BatchNorm, ModuleNamesItsParametersAndBuffers) {
  BatchNorm2d bn(64);
  EXPECT_EQ(bn.describe(), "BatchNorm2d(64)");
  const std::vector<NamedVariable> params = bn.parameters();
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[1].first, "bias");
  EXPECT_EQ(values(params[0].second.data()), std::vector<double>(64, 1.0));
  EXPECT_EQ(values(params[1].second.data()), std::vector<double>(64, 0.0));
  EXPECT_TRUE(params[0].second.requires_grad() && params[1].second.requires_grad());
  const std::vector<NamedTensor> buffers = bn.buffers();
  ASSERT_EQ(buffers.size(), 2u);
  EXPECT_EQ(buffers[0].first, "running_mean");
  EXPECT_EQ(buffers[1].first, "running_var");
  EXPECT_EQ(values(buffers[0].second), std::vector<double>(64, 0.0));
  EXPECT_EQ(values(buffers[1].second), std::vector<double>(64, 1.0));
  EXPECT_EQ(bn.input_layouts({1, 64, 4, 4}).size(), 3u);

  // The buffers are the module's live state: what a checkpoint saves is what training updated.
  Rng rng(6);
  bn(Variable(random_tensor({2, 64, 2, 2}, rng, DType::f32, 1.0, 2.0)));
  EXPECT_GT(values(buffers[0].second)[0], 0.09);
}

TEST(BatchNorm, LargeMeanStillNormalisesToUnitVariance) {
  const Shape shape{16, 4, 6, 6};  // NCHW and NHWC as rows, CHWN as pieces
  Rng rng(7);
  Tensor x = Tensor::empty(shape, DType::f32);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>(1e4 + rng.normal());
  const ReferenceStats input = reference_stats(values(x), shape);
  const double m = 16 * 6 * 6;
  for (Layout layout : kLayouts) {
    Tensor mean = Tensor::zeros({4}), var = Tensor::full({4}, 1.0);
    const Tensor y =
        batch_norm(Variable(convert_layout_reference(x, layout)), Variable(Tensor::full({4}, 1.0)),
                   Variable(Tensor::zeros({4})), mean, var, true)
            .data();
    const ReferenceStats r = reference_stats(nchw_values(y), shape);
    for (int c = 0; c < 4; ++c) {
      EXPECT_NEAR(r.mean[c], 0.0, 1e-3) << to_string(layout) << " channel " << c;
      EXPECT_NEAR(r.var[c], 1.0, 1e-3) << to_string(layout) << " channel " << c;
      EXPECT_NEAR(values(mean)[c], 0.1 * input.mean[c], 1e-3) << to_string(layout) << " " << c;
      EXPECT_NEAR(values(var)[c], 0.9 + 0.1 * input.var[c] * m / (m - 1), 1e-5)
          << to_string(layout) << " channel " << c;
    }
  }
}

TEST(BatchNorm, RejectsNon4dInputsAndChannelMismatchesNamingThem) {
  BatchNorm2d bn(3);
  const auto error_of = [](auto fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  const std::string not_4d = error_of([&] { bn(Variable(Tensor::zeros({2, 3, 4}))); });
  EXPECT_NE(not_4d.find("[2, 3, 4]"), std::string::npos) << not_4d;
  EXPECT_NE(not_4d.find("BatchNorm2d(3)"), std::string::npos) << not_4d;
  const std::string channels = error_of([&] { bn(Variable(Tensor::zeros({2, 4, 3, 3}))); });
  EXPECT_NE(channels.find("[2, 4, 3, 3]"), std::string::npos) << channels;
  Tensor mean = Tensor::zeros({3}), var = Tensor::full({3}, 1.0);
  const std::string functional = error_of([&] {
    batch_norm(Variable(Tensor::zeros({2, 4, 3, 3})), Variable(Tensor::zeros({3})),
               Variable(Tensor::zeros({3})), mean, var, true);
  });
  EXPECT_NE(functional.find("does not match the 4 channels"), std::string::npos) << functional;
  const std::string one_value = error_of([&] {
    batch_norm(Variable(Tensor::zeros({1, 3, 1, 1})), Variable(Tensor::zeros({3})),
               Variable(Tensor::zeros({3})), mean, var, true);
  });
  EXPECT_NE(one_value.find("more than one value per channel"), std::string::npos) << one_value;
  EXPECT_THROW(
      batch_norm(Variable(Tensor::zeros({2, 3, 2, 2}, DType::f64)), Variable(Tensor::zeros({3})),
                 Variable(Tensor::zeros({3})), mean, var, true),
      Error);
}

}  // namespace
}  // namespace tunecnn
