#include "autotune/softmax_tuner.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "autotune/family_search.h"
#include "autotune/reference_check.h"
#include "core/init.h"
#include "core/rng.h"
#include "ops/softmax/plan.h"
#include "ops/softmax/registry.h"

namespace tunecnn {
namespace {

// Candidates are checked on at most this many logits (the whole problem when it is smaller).
constexpr std::int64_t kMaxVerifyElements = 1 << 20;

// Logits spread wide enough that the max subtraction matters, and random labels.
struct SoftmaxArgs {
  Tensor logits, grad;
  std::vector<std::int32_t> labels;
};

SoftmaxArgs random_softmax_args(const SoftmaxProblem& p, Rng& rng) {
  SoftmaxArgs args{Tensor::empty(p.logits_shape(), p.dt), Tensor::empty(p.logits_shape(), p.dt), {}};
  uniform_fill(args.logits, -30, 30, rng);
  args.labels.resize(static_cast<std::size_t>(p.rows));
  for (auto& label : args.labels) label = static_cast<std::int32_t>(rng.next_u64() % static_cast<std::uint64_t>(p.classes));
  // Drawn on the host (the same numbers for either device), then put where the problem runs.
  args.logits = args.logits.to(p.device);
  args.grad = args.grad.to(p.device);
  return args;
}

// The loss and gradient in double precision, row by row: the obviously-right version.
struct Reference {
  double loss = 0;
  std::vector<double> grad;
};

Reference reference_softmax(const SoftmaxProblem& p, const SoftmaxArgs& args) {
  Reference ref;
  ref.grad.resize(static_cast<std::size_t>(p.rows) * p.classes);
  dispatch_dtype(p.dt, [&]<class T>() {
    const T* x = args.logits.data<T>();
    for (int r = 0; r < p.rows; ++r) {
      const T* row = x + static_cast<std::int64_t>(r) * p.classes;
      const double max = *std::max_element(row, row + p.classes);
      double sum = 0;
      for (int c = 0; c < p.classes; ++c) sum += std::exp(row[c] - max);
      const int label = args.labels[static_cast<std::size_t>(r)];
      ref.loss += (max + std::log(sum) - row[label]) / p.rows;
      for (int c = 0; c < p.classes; ++c)
        ref.grad[static_cast<std::size_t>(r) * p.classes + c] =
            (std::exp(row[c] - max) / sum - (c == label)) / p.rows;
    }
  });
  return ref;
}

class SoftmaxVerifier {
 public:
  SoftmaxVerifier(const SoftmaxProblem& problem, std::uint64_t seed) : problem_(problem) {
    Rng rng(seed);
    args_ = random_softmax_args(problem_, rng);
    SoftmaxArgs on_cpu = args_;
    on_cpu.logits = args_.logits.to(Device::cpu);
    reference_ = reference_softmax(problem_, on_cpu);
  }

  std::string check(const SoftmaxSolver& solver) const {
    return what_went_wrong([&] {
      Tensor grad = Tensor::full(problem_.logits_shape(), std::nan(""), problem_.dt).to(problem_.device);
      const double loss = solver.run(problem_, args_.logits, args_.labels, grad);
      grad = grad.to(Device::cpu);
      const double tol = problem_.dt == DType::f32 ? 1e-5 : 1e-12;
      if (!(std::abs(loss - reference_.loss) <= tol * std::max(1.0, std::abs(reference_.loss))))
        return "loss " + std::to_string(loss) + ", want " + std::to_string(reference_.loss);
      return dispatch_dtype(problem_.dt, [&]<class T>() -> std::string {
        const T* g = grad.data<T>();
        for (std::size_t i = 0; i < reference_.grad.size(); ++i)
          if (!(std::abs(g[i] - reference_.grad[i]) <= tol))
            return "gradient element " + std::to_string(i) + ": got " + std::to_string(double(g[i])) +
                   ", want " + std::to_string(reference_.grad[i]);
        return std::string();
      });
    });
  }

 private:
  SoftmaxProblem problem_;
  SoftmaxArgs args_;
  Reference reference_;
};

SoftmaxProblem verification_problem(const SoftmaxProblem& problem) {
  SoftmaxProblem p = problem;
  p.rows = static_cast<int>(std::clamp<std::int64_t>(kMaxVerifyElements / p.classes, 1, p.rows));
  return p;
}

// What the shared search scaffold (family_search.h) needs of softmax. Its candidates are checked
// by SoftmaxVerifier, not reference_check.h: the reference is in double precision and the loss
// is compared too.
struct SoftmaxFamily {
  using Problem = SoftmaxProblem;
  using Solver = SoftmaxSolver;
  using Args = SoftmaxArgs;
  static constexpr const char* kWhat = "softmax";

  // Logits are 2-D: every candidate runs in NCHW, the layout of plain row-major tensors, whatever
  // options.layouts says.
  static std::vector<Layout> layouts(const SoftmaxSolver&, const SoftmaxProblem&,
                                     const TunerOptions&) {
    return {Layout::NCHW};
  }
  static std::vector<TuneConfig> configs(const SoftmaxSolver&, const SoftmaxProblem&) {
    return {TuneConfig{}};
  }
  // Drawn like the check's arguments: the labels must be valid classes.
  static SoftmaxArgs timing_args(const SoftmaxProblem& p, std::uint64_t seed) {
    Rng rng(seed);
    return random_softmax_args(p, rng);
  }
  static SoftmaxArgs viewed_in_layout(const SoftmaxArgs& args, Layout) { return args; }
  static void run_timed(const SoftmaxSolver& solver, const SoftmaxProblem& p, const TuneConfig&,
                        SoftmaxArgs& args, std::size_t /*no workspace*/) {
    solver.run(p, args.logits, args.labels, args.grad);
  }
};

// One tune_softmax or retime_softmax_candidates call: the shared search, with softmax's check.
class SoftmaxSearch : public FamilySearch<SoftmaxFamily> {
 public:
  using FamilySearch::FamilySearch;

 private:
  SolverTrial trial(const SoftmaxSolver& solver, Layout layout) override {
    SolverTrial t = timed_trial(solver, layout);
    t.verify = [this, &solver](const TuneConfig&) { return verifier().check(solver); };
    return t;
  }

  SoftmaxVerifier& verifier() {
    if (!verifier_)
      verifier_ = std::make_unique<SoftmaxVerifier>(verification_problem(problem_), options_.seed);
    return *verifier_;
  }

  std::unique_ptr<SoftmaxVerifier> verifier_;  // built on first use
};

}  // namespace

TuningEntry tune_softmax(const SoftmaxProblem& problem, const TunerOptions& options) {
  problem.validate();
  SoftmaxSearch search(problem, options);
  search.try_solvers(softmax_solvers(problem.device));
  return search.entry();
}

TuningEntry retime_softmax_candidates(const SoftmaxProblem& problem,
                                      const std::vector<CandidateResult>& shortlist,
                                      const TunerOptions& options) {
  problem.validate();
  SoftmaxSearch search(problem, options);
  // The listed solvers in one pass, in the registry's order (each has a single config).
  const auto listed = [&](const SoftmaxSolver& s) {
    return std::any_of(shortlist.begin(), shortlist.end(),
                       [&](const CandidateResult& c) { return c.solver == s.name(); });
  };
  if (!shortlist.empty())
    search.try_solvers(solvers_where(softmax_solvers(problem.device), listed));
  return search.entry_or_full_tune(shortlist.size(),
                                   [&] { return tune_softmax(problem, options); });
}

}  // namespace tunecnn
