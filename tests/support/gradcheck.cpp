#include "tests/support/gradcheck.h"

#include <cmath>
#include <sstream>

#include "core/init.h"

namespace tunecnn::testing {
namespace {

double probed_sum(const Variable& out, const Tensor& probe) {
  const double* y = out.data().data<double>();
  const double* r = probe.data<double>();
  double total = 0;
  for (std::int64_t i = 0; i < probe.numel(); ++i) total += y[i] * r[i];
  return total;
}

double evaluate(const GraphFn& fn, const std::vector<Tensor>& inputs, const Tensor& probe) {
  NoGradGuard no_grad;
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t, false);
  return probed_sum(fn(vars), probe);
}

}  // namespace

::testing::AssertionResult gradcheck(const GraphFn& fn, const std::vector<Tensor>& inputs,
                                     const GradcheckOptions& options) {
  std::vector<Tensor> working;
  std::vector<Variable> vars;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != DType::f64)
      return ::testing::AssertionFailure() << "gradcheck input " << i << " must be f64";
    working.push_back(inputs[i].clone());
    const bool diff = options.differentiable.empty() || options.differentiable[i];
    vars.emplace_back(working.back(), diff);
  }
  Variable out = fn(vars);
  Rng rng(options.seed);
  Tensor probe = Tensor::empty(out.data().shape(), DType::f64);
  uniform_fill(probe, -1.0, 1.0, rng);
  out.backward(probe);

  std::ostringstream failures;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!vars[i].requires_grad()) continue;
    if (!vars[i].has_grad()) {
      failures << "input " << i << ": no gradient reached it\n";
      continue;
    }
    const double* analytic = vars[i].grad().data<double>();
    double* x = working[i].data<double>();
    double worst = 0;
    std::int64_t worst_at = -1;
    double worst_a = 0, worst_n = 0;
    for (std::int64_t j = 0; j < working[i].numel(); ++j) {
      const double saved = x[j];
      x[j] = saved + options.eps;
      const double plus = evaluate(fn, working, probe);
      x[j] = saved - options.eps;
      const double minus = evaluate(fn, working, probe);
      x[j] = saved;
      const double numeric = (plus - minus) / (2 * options.eps);
      const double excess =
          std::abs(analytic[j] - numeric) - (options.atol + options.rtol * std::abs(numeric));
      if (!(excess <= worst)) worst = excess, worst_at = j, worst_a = analytic[j], worst_n = numeric;
    }
    if (worst_at >= 0)
      failures << "input " << i << " " << working[i].describe() << ": element " << worst_at
               << " analytic " << worst_a << " numeric " << worst_n << "\n";
  }
  if (failures.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures.str();
}

}  // namespace tunecnn::testing
