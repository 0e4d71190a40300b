// Local response normalisation against a naive double-precision formula, forward and backward, in
// every layout: channel counts below the window, even window sizes, planes split into several
// chunks; values worked by hand; central-difference gradient checks; the same numbers at any
// thread count and in every layout; no state (evaluation equals training); bad parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/threading.h"
#include "core/variable.h"
#include "ops/layout/reference.h"
#include "ops/layout/to_layout.h"
#include "ops/lrn.h"
#include "tests/support/gradcheck.h"
#include "tests/support/test_data.h"

namespace tunecnn {
namespace {

using testing::random_tensor;
using testing::values;
using testing::nchw_values;

constexpr Layout kLayouts[] = {Layout::NCHW, Layout::CHWN, Layout::NHWC};

void expect_near(const std::vector<double>& got, const std::vector<double>& expected, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], tol * (1 + std::abs(expected[i]))) << what << " element " << i;
}

std::string name_of(const Shape& shape, const LrnParams& p, Layout layout) {
  return shape_str(shape) + " n" + std::to_string(p.size) + " alpha " + std::to_string(p.alpha) +
         " beta " + std::to_string(p.beta) + " k " + std::to_string(p.k) + " " +
         std::string(to_string(layout));
}

// The naive formulas on NCHW values, written straight from the definition: the window of c is
// [c - n/2, c + (n-1)/2] clipped to the channels.
struct Naive {
  const Shape& shape;
  const LrnParams& p;

  std::int64_t at(std::int64_t n, std::int64_t c, std::int64_t i) const {
    return (n * shape[1] + c) * shape[2] * shape[3] + i;
  }
  // Channels within n of c: a superset of every window that touches c, to keep the loops short.
  std::int64_t near(std::int64_t c) const { return std::max<std::int64_t>(0, c - p.size); }
  std::int64_t far(std::int64_t c) const {
    return std::min<std::int64_t>(shape[1], c + p.size + 1);
  }
  bool in_window(std::int64_t j, std::int64_t c) const {
    return j >= c - p.size / 2 && j <= c + (p.size - 1) / 2;
  }
  // s for every element: k + alpha/n * sum of squares over the window.
  std::vector<double> base(const std::vector<double>& a) const {
    std::vector<double> s(a.size());
    for (std::int64_t n = 0; n < shape[0]; ++n)
      for (std::int64_t c = 0; c < shape[1]; ++c)
        for (std::int64_t i = 0; i < shape[2] * shape[3]; ++i) {
          double sum = 0;
          for (std::int64_t j = near(c); j < far(c); ++j)
            if (in_window(j, c)) sum += a[at(n, j, i)] * a[at(n, j, i)];
          s[at(n, c, i)] = p.k + p.alpha / p.size * sum;
        }
    return s;
  }
  std::vector<double> forward(const std::vector<double>& a) const {
    const std::vector<double> s = base(a);
    std::vector<double> b(a.size());
    for (std::size_t e = 0; e < a.size(); ++e) b[e] = a[e] * std::pow(s[e], -p.beta);
    return b;
  }
  // da_j = g_j s_j^-beta - 2 beta alpha/n a_j sum_{c: j in window(c)} g_c a_c s_c^(-beta-1)
  std::vector<double> backward(const std::vector<double>& a, const std::vector<double>& g) const {
    const std::vector<double> s = base(a);
    std::vector<double> da(a.size());
    for (std::int64_t n = 0; n < shape[0]; ++n)
      for (std::int64_t j = 0; j < shape[1]; ++j)
        for (std::int64_t i = 0; i < shape[2] * shape[3]; ++i) {
          double sum = 0;
          for (std::int64_t c = near(j); c < far(j); ++c)
            if (in_window(j, c))
              sum += g[at(n, c, i)] * a[at(n, c, i)] * std::pow(s[at(n, c, i)], -p.beta - 1);
          const std::int64_t e = at(n, j, i);
          da[e] = g[e] * std::pow(s[e], -p.beta) - 2 * p.beta * p.alpha / p.size * a[e] * sum;
        }
    return da;
  }
};

struct Step {
  Tensor y, dx;
};

// Forward and backward of the op on x (NCHW) converted to `layout`, seeded with `probe` (NCHW).
Step run(const Tensor& x_nchw, const Tensor& probe_nchw, Layout layout, const LrnParams& p) {
  Variable x(convert_layout_reference(x_nchw, layout), true);
  Variable y = local_response_norm(x, p);
  EXPECT_EQ(y.data().layout(), layout);
  EXPECT_EQ(y.shape(), x_nchw.shape());
  y.backward(convert_layout_reference(probe_nchw, layout));
  return {y.data(), x.grad()};
}

const LrnParams kAlexNet{};
// Large alpha and a beta other than 0.75 make the cross-channel term of the gradient as large as
// the direct one, and take the exp/log path of the power.
const LrnParams kStrong{.size = 5, .alpha = 2.0, .beta = 0.6, .k = 1.0};

// Channels below, at and above the window; NCHW planes short enough to be one run, and planes
// split into several chunks ({2, 256, 9, 9}: 81 positions of 256 channels; CHWN 162).
const Shape kShapes[] = {{2, 7, 3, 4}, {3, 3, 2, 5}, {1, 1, 2, 2}, {2, 5, 1, 1}, {2, 256, 9, 9}};
const LrnParams kParams[] = {kAlexNet,
                             kStrong,
                             {.size = 3, .alpha = 1.0, .beta = 0.75, .k = 0.5},
                             {.size = 4, .alpha = 1.5, .beta = 0.75, .k = 1.0},
                             {.size = 2, .alpha = 1.0, .beta = 1.0, .k = 1.0},
                             {.size = 1, .alpha = 0.5, .beta = 0.5, .k = 2.0}};

TEST(Lrn, ForwardAndBackwardMatchTheNaiveFormulaInEveryLayout) {
  for (const Shape& shape : kShapes)
    for (const LrnParams& p : kParams)
      for (DType dt : {DType::f32, DType::f64}) {
        Rng rng(1);
        // Values up to 3 in size: with AlexNet's alpha the base still moves, with kStrong's it
        // ranges over two orders of magnitude.
        const Tensor x = random_tensor(shape, rng, dt, -3.0, 3.0);
        const Tensor probe = random_tensor(shape, rng, dt);
        const Naive naive{shape, p};
        const std::vector<double> y = naive.forward(values(x));
        const std::vector<double> dx = naive.backward(values(x), values(probe));
        const double tol = dt == DType::f32 ? 2e-6 : 1e-13;
        for (Layout layout : kLayouts) {
          const std::string what = name_of(shape, p, layout) + " " + std::string(to_string(dt));
          const Step s = run(x, probe, layout, p);
          expect_near(nchw_values(s.y), y, tol, what + " y");
          expect_near(nchw_values(s.dx), dx, 4 * tol, what + " dx");
        }
      }
}

TEST(Lrn, ValuesWorkedByHand) {
  // PyTorch's nn.LocalResponseNorm gives these values too.
  // n = 3, alpha/n = 1, beta = 1, k = 1 on channels 1, 2, 3, 4 (one pixel): s = 1 + 1 + 4 = 6,
  // 1 + 1 + 4 + 9 = 15, 1 + 4 + 9 + 16 = 30, 1 + 9 + 16 = 26.
  const LrnParams odd{.size = 3, .alpha = 3.0, .beta = 1.0, .k = 1.0};
  const Tensor four = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {1, 4, 1, 1});
  expect_near(values(local_response_norm(Variable(four), odd).data()),
              {1.0 / 6, 2.0 / 15, 3.0 / 30, 4.0 / 26}, 1e-7, "n = 3");

  // n = 2: the window of c is {c - 1, c}: s = 1 + 1 = 2, 1 + 1 + 4 = 6, 1 + 4 + 9 = 14.
  const LrnParams even{.size = 2, .alpha = 2.0, .beta = 1.0, .k = 1.0};
  const Tensor three = Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3, 1, 1});
  expect_near(values(local_response_norm(Variable(three), even).data()),
              {1.0 / 2, 2.0 / 6, 3.0 / 14}, 1e-7, "n = 2");

  // AlexNet's parameters on two channels 1 and 2, both in each other's window:
  // s = 2 + 1e-4 / 5 * (1 + 4) = 2.0001, and 2.0001^-0.75 = 0.594581260843431.
  const Tensor two = Tensor::from_vector(std::vector<float>{1, 2}, {1, 2, 1, 1});
  expect_near(values(local_response_norm(Variable(two)).data()),
              {0.594581260843431, 2 * 0.594581260843431}, 1e-7, "AlexNet");
}

// in_layout: the check's NCHW input and probe meet the op in `layout`.
Variable lrn_in_layout(const Variable& x, Layout layout, const LrnParams& p) {
  return to_layout(local_response_norm(to_layout(x, layout), p), Layout::NCHW);
}

TEST(Lrn, GradientsMatchCentralDifferencesInEveryLayout) {
  const LrnParams cases[] = {kStrong,
                             {.size = 3, .alpha = 1.0, .beta = 0.75, .k = 0.5},
                             {.size = 4, .alpha = 1.5, .beta = 0.75, .k = 1.0},
                             kAlexNet};
  for (const LrnParams& p : cases)
    for (const Shape& shape : {Shape{2, 4, 3, 2}, Shape{1, 7, 2, 1}})
      for (Layout layout : kLayouts) {
        Rng rng(2);
        const auto fn = [layout, p](const std::vector<Variable>& in) {
          return lrn_in_layout(in[0], layout, p);
        };
        EXPECT_TRUE(testing::gradcheck(fn, {random_tensor(shape, rng, DType::f64, -2.0, 2.0)}))
            << name_of(shape, p, layout);
      }
}

TEST(Lrn, EveryLayoutAndThreadCountGivesTheSameNumbers) {
  const int saved = num_threads();
  for (const Shape& shape : {Shape{4, 96, 13, 13}, Shape{2, 256, 9, 9}})
    for (const LrnParams& p : {kAlexNet, kStrong}) {
      Rng rng(3);
      const Tensor x = random_tensor(shape, rng, DType::f32, -3.0, 3.0);
      const Tensor probe = random_tensor(shape, rng);
      set_num_threads(1);
      const Step one = run(x, probe, Layout::NCHW, p);
      set_num_threads(0);
      for (Layout layout : kLayouts) {
        const std::string what = name_of(shape, p, layout);
        const Step all = run(x, probe, layout, p);
        if (layout == Layout::NCHW) {
          // The units do not depend on the thread count: the same bits.
          EXPECT_EQ(values(all.y), values(one.y)) << what;
          EXPECT_EQ(values(all.dx), values(one.dx)) << what;
        }
        // Other layouts sum in the same order; only the vector/scalar split of a run differs.
        expect_near(nchw_values(all.y), values(one.y), 1e-6, what + " y");
        expect_near(nchw_values(all.dx), values(one.dx), 1e-6, what + " dx");
      }
    }
  set_num_threads(saved);
}

// --recompute-activations: forward keeps nothing beside its output (s is summed again in
// backward, unit by unit as forward summed it), and the gradient is the same to the bit.
TEST(Lrn, RecomputingTheBaseGivesTheSameGradientAndKeepsNothingMore) {
  const bool saved = recompute_activations();
  for (const Shape& shape : {Shape{2, 96, 13, 13}, Shape{2, 7, 3, 4}})
    for (const LrnParams& p : {kAlexNet, kStrong, LrnParams{.size = 4, .alpha = 1.5, .beta = 0.75, .k = 1.0}})
      for (Layout layout : kLayouts) {
        const std::string what = name_of(shape, p, layout);
        Rng rng(4);
        const Tensor x = random_tensor(shape, rng, DType::f32, -3.0, 3.0);
        const Tensor probe = random_tensor(shape, rng);
        set_recompute_activations(false);
        const Step kept = run(x, probe, layout, p);
        set_recompute_activations(true);
        const Step recomputed = run(x, probe, layout, p);
        EXPECT_EQ(values(recomputed.y), values(kept.y)) << what;
        EXPECT_EQ(values(recomputed.dx), values(kept.dx)) << what;

        // What the forward pass holds: the output, and s only when it is kept.
        Allocator& allocator = allocator_for(Device::cpu);
        Variable input(convert_layout_reference(x, layout), true);
        for (bool recompute : {false, true}) {
          set_recompute_activations(recompute);
          const std::size_t before = allocator.stats().current_bytes;
          Variable y = local_response_norm(input, p);
          const std::size_t held = allocator.stats().current_bytes - before;
          const std::size_t one = Allocator::block_size(x.numel() * sizeof(float));
          EXPECT_EQ(held, recompute ? one : 2 * one) << what << (recompute ? " recomputed" : " kept");
        }
      }
  set_recompute_activations(saved);
}

TEST(Lrn, EvaluationEqualsTrainingAndTheModuleHasNoState) {
  LocalResponseNorm lrn;
  EXPECT_EQ(lrn.describe(), "LocalResponseNorm(5, alpha 0.0001, beta 0.75, k 2)");
  EXPECT_TRUE(lrn.parameters().empty());
  EXPECT_TRUE(lrn.buffers().empty());
  EXPECT_EQ(lrn.input_layouts({2, 96, 55, 55}).size(), 3u);
  Rng rng(4);
  const Tensor x = random_tensor({2, 6, 5, 5}, rng, DType::f32, -20.0, 20.0);
  const std::vector<double> training = values(lrn(Variable(x)).data());
  lrn.eval();
  EXPECT_EQ(values(lrn(Variable(x)).data()), training);
  NoGradGuard no_grad;
  EXPECT_EQ(values(lrn(Variable(x, true)).data()), training);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Lrn, RejectsBadParametersAndNon4dInputsSayingWhy) {
  for (const LrnParams& bad : {LrnParams{.size = 0}, LrnParams{.alpha = -1.0}, LrnParams{.k = 0.0},
                               LrnParams{.beta = NAN}}) {
    const std::string message = error_of([&] { (void)LocalResponseNorm(bad); });
    EXPECT_NE(message.find("local_response_norm: size"), std::string::npos) << message;
    EXPECT_NE(message.find("use size >= 1, alpha >= 0, k > 0"), std::string::npos) << message;
  }
  const std::string not_4d = error_of([] {
    local_response_norm(Variable(Tensor::zeros({2, 3, 4})));
  });
  EXPECT_NE(not_4d.find("local_response_norm expects a 4-D input"), std::string::npos) << not_4d;
  EXPECT_NE(not_4d.find("[2, 3, 4]"), std::string::npos) << not_4d;
}

}  // namespace
}  // namespace tunecnn
