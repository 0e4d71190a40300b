#include "autotune/softmax_tuner.h"

#include <algorithm>
#include <cmath>
#include <memory>

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

class SoftmaxSearch {
 public:
  SoftmaxSearch(const SoftmaxProblem& problem, const TunerOptions& options)
      : problem_(problem), options_(options), search_(problem.key(), "softmax", options) {
    Rng rng(options.seed);
    timing_args_ = random_softmax_args(problem_, rng);
  }

  void try_solvers(const std::vector<std::string>& only = {}) {
    std::vector<SolverTrial> trials;
    for (const SoftmaxSolver* solver : softmax_solvers(problem_.device)) {
      const bool listed = only.empty() || std::find(only.begin(), only.end(), solver->name()) != only.end();
      if (listed && solver->applicable(problem_, nullptr)) trials.push_back(trial(*solver));
    }
    search_.try_trials(trials);
  }

  CandidateSearch& search() { return search_; }

 private:
  SolverTrial trial(const SoftmaxSolver& solver) {
    SolverTrial t;
    t.solver = std::string(solver.name());
    t.layout = Layout::NCHW;
    t.configs = {TuneConfig{}};
    t.verify = [this, &solver](const TuneConfig&) {
      if (!verifier_) verifier_ = std::make_unique<SoftmaxVerifier>(verification_problem(problem_), options_.seed);
      return verifier_->check(solver);
    };
    t.run = [this, &solver](const TuneConfig&, std::size_t) {
      solver.run(problem_, timing_args_.logits, timing_args_.labels, timing_args_.grad);
    };
    return t;
  }

  SoftmaxProblem problem_;
  const TunerOptions& options_;
  CandidateSearch search_;
  SoftmaxArgs timing_args_;
  std::unique_ptr<SoftmaxVerifier> verifier_;
};

}  // namespace

TuningEntry tune_softmax(const SoftmaxProblem& problem, const TunerOptions& options) {
  problem.validate();
  SoftmaxSearch search(problem, options);
  search.try_solvers();
  return search.search().entry();
}

TuningEntry retime_softmax_candidates(const SoftmaxProblem& problem,
                                      const std::vector<CandidateResult>& shortlist,
                                      const TunerOptions& options) {
  problem.validate();
  std::vector<std::string> names;
  for (const CandidateResult& c : shortlist) names.push_back(c.solver);
  SoftmaxSearch search(problem, options);
  if (!names.empty()) search.try_solvers(names);
  if (!search.search().has_correct()) {
    search.search().warn("softmax tuner: none of the " + std::to_string(shortlist.size()) +
                         " candidates carried over for " + problem.key() + " runs here; tuning it fully");
    return tune_softmax(problem, options);
  }
  return search.search().entry();
}

}  // namespace tunecnn
