#include "autotune/pool_tuner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "autotune/reference_check.h"
#include "core/init.h"
#include "core/rng.h"
#include "ops/layout/reference.h"
#include "ops/layout/to_layout.h"
#include "ops/pool/registry.h"

namespace tunecnn {
namespace {

// A fraction of a millisecond of the direct reference, and of each candidate's check: with a
// dozen coarsening factors per layout, checks at 2^18 elements cost more than their timing.
constexpr std::int64_t kMaxVerifyElements = 1 << 16;

// Inputs uniform in [-1, 1), NCHW; the outputs NaN-filled so an unwritten element shows up.
PoolArgs random_pool_args(const PoolProblem& p, Rng& rng) {
  PoolArgs args;
  const auto input = [&](const Shape& shape) {
    Tensor t = Tensor::empty(shape, p.dt);
    uniform_fill(t, -1, 1, rng);
    return t;
  };
  const auto output = [&](const Shape& shape) { return Tensor::full(shape, std::nan(""), p.dt); };
  args.src = input(p.src_shape());
  if (p.dir == Direction::fwd) {
    args.dst = output(p.dst_shape());
  } else {
    args.diff_dst = input(p.dst_shape());
    args.diff_src = output(p.src_shape());
  }
  return args;
}

// The same arguments in `layout` (reference transform: the check must not trust the fast one),
// on `device`.
PoolArgs pool_args_in_layout(const PoolArgs& nchw, Layout layout, Device device = Device::cpu) {
  const auto in = [&](const Tensor& t) {
    return t.defined() ? convert_layout_reference(t, layout).to(device) : t;
  };
  return {in(nchw.src), in(nchw.dst), in(nchw.diff_src), in(nchw.diff_dst)};
}

const Tensor& pool_output(const PoolArgs& args, Direction dir) {
  return dir == Direction::fwd ? args.dst : args.diff_src;
}

// What checking a pool candidate against the direct reference needs (reference_check.h).
struct PoolFamily {
  using Problem = PoolProblem;
  using Solver = PoolSolver;
  using Args = PoolArgs;
  static PoolArgs random_args(const PoolProblem& p, Rng& rng) { return random_pool_args(p, rng); }
  static PoolArgs in_layout(const PoolArgs& nchw, Layout layout, Device device) {
    return pool_args_in_layout(nchw, layout, device);
  }
  static const Tensor& output(const PoolArgs& args, Direction dir) { return pool_output(args, dir); }
  static const PoolSolver& reference_solver() { return direct_pool_solver(); }
  static void run_plan(const PoolSolver& solver, const TuneConfig& config, Layout,
                       const PoolProblem& p, const PoolArgs& args) {
    run_pool({&solver, config}, p, args);
  }
  // Sums in another order round differently; a max is exact either way.
  static double tolerance(DType dt) { return dt == DType::f32 ? 1e-5 : 1e-12; }
};

// What a candidate is timed on: inputs hash-filled, outputs zero, on the problem's device. One
// set serves every layout, viewed in it (see the conv tuner's viewed_in_layout).
PoolArgs timing_pool_args(const PoolProblem& p, std::uint64_t seed) {
  PoolArgs args;
  args.src = timing_input(p.src_shape(), p.dt, p.device, seed);
  if (p.dir == Direction::fwd) {
    args.dst = timing_output(p.dst_shape(), p.dt, p.device);
  } else {
    args.diff_dst = timing_input(p.dst_shape(), p.dt, p.device, seed + 1);
    args.diff_src = timing_output(p.src_shape(), p.dt, p.device);
  }
  return args;
}

PoolArgs viewed_in_layout(const PoolArgs& args, Layout layout) {
  const auto view = [layout](const Tensor& t) { return t.defined() ? t.with_layout(layout) : t; };
  return {view(args.src), view(args.dst), view(args.diff_src), view(args.diff_dst)};
}

class PoolSearch {
 public:
  PoolSearch(const PoolProblem& problem, const TunerOptions& options)
      : problem_(problem), options_(options), search_(problem.key(), "pool", options) {}

  // Every solver that `keep` accepts in every layout, in one search pass, so the likely winner is
  // timed first.
  void try_solvers(const std::function<bool(const PoolSolver&)>& keep) {
    std::vector<SolverTrial> trials;
    for (const PoolSolver* solver : pool_solvers(problem_.device)) {
      if (!keep(*solver) || !solver->applicable(problem_, nullptr)) continue;
      for (Layout layout : solver->layouts(problem_))
        if (contains_layout(options_.layouts, layout)) trials.push_back(trial(*solver, layout));
    }
    search_.try_trials(trials);
  }

  void try_listed(const std::vector<CandidateResult>& listed) {
    for (const CandidateResult& c : listed) {
      const PoolSolver* solver = find_pool_solver(c.solver, problem_.device);
      if (solver == nullptr || !solver->applicable(problem_, nullptr) ||
          !contains_layout(solver->layouts(problem_), c.layout) || !contains_layout(options_.layouts, c.layout))
        continue;
      search_.try_configs(trial(*solver, c.layout), {c.config});
    }
  }

  CandidateSearch& search() { return search_; }

 private:
  SolverTrial trial(const PoolSolver& solver, Layout layout) {
    SolverTrial t;
    t.solver = std::string(solver.name());
    t.layout = layout;
    t.configs = solver.configs(problem_);
    if (&solver != &direct_pool_solver())
      t.verify = [this, &solver, layout](const TuneConfig& c) { return verifier().check(solver, c, layout); };
    // Made before timing: see the conv tuner.
    const PoolArgs* args = &timing_args(layout);
    t.run = [this, &solver, args](const TuneConfig& c, std::size_t) {
      solver.run(problem_, c, *args);
    };
    return t;
  }

  ReferenceCheck<PoolFamily>& verifier() {
    if (!verifier_)
      verifier_ = std::make_unique<ReferenceCheck<PoolFamily>>(pool_verification_problem(problem_), options_.seed);
    return *verifier_;
  }

  const PoolArgs& timing_args(Layout layout) {
    if (!timing_base_.src.defined()) timing_base_ = timing_pool_args(problem_, options_.seed);
    auto it = timing_args_.find(layout);
    if (it == timing_args_.end()) it = timing_args_.emplace(layout, viewed_in_layout(timing_base_, layout)).first;
    return it->second;
  }

  PoolProblem problem_;
  const TunerOptions& options_;
  CandidateSearch search_;
  PoolArgs timing_base_;                   // NCHW
  std::map<Layout, PoolArgs> timing_args_;  // views of timing_base_
  std::unique_ptr<ReferenceCheck<PoolFamily>> verifier_;
};

}  // namespace

PoolProblem pool_verification_problem(const PoolProblem& problem) {
  PoolProblem p = problem;
  const std::int64_t per_channel = static_cast<std::int64_t>(p.mb) * p.ih * p.iw;
  p.c = static_cast<int>(std::clamp<std::int64_t>(kMaxVerifyElements / per_channel, 1, p.c));
  return p;
}

TuningEntry tune_pool(const PoolProblem& problem, const TunerOptions& options) {
  problem.validate();
  PoolSearch search(problem, options);
  // The direct reference is 10-50x slower than the tiled kernels: timing it cost more than the
  // whole search of a small layer, so it runs only when nothing else is correct (as in tune_conv).
  const auto is_reference = [](const PoolSolver& s) { return s.name() == direct_pool_solver().name(); };
  search.try_solvers([&](const PoolSolver& s) { return !is_reference(s); });
  if (!search.search().has_correct()) search.try_solvers(is_reference);
  return search.search().entry();
}

TuningEntry retime_pool_candidates(const PoolProblem& problem,
                                   const std::vector<CandidateResult>& shortlist,
                                   const TunerOptions& options) {
  problem.validate();
  PoolSearch search(problem, options);
  search.try_listed(shortlist);
  if (!search.search().has_correct()) {
    search.search().warn("pool tuner: none of the " + std::to_string(shortlist.size()) +
                         " candidates carried over for " + problem.key() + " runs here; tuning it fully");
    return tune_pool(problem, options);
  }
  return search.search().entry();
}

}  // namespace tunecnn
