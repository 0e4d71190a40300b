#include "autotune/pool_tuner.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "autotune/family_search.h"
#include "autotune/reference_check.h"
#include "core/init.h"
#include "core/rng.h"
#include "ops/layout/reference.h"
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

// What the shared scaffold needs of pooling: reference_check.h checks candidates with it,
// family_search.h makes and times the trials.
struct PoolFamily {
  using Problem = PoolProblem;
  using Solver = PoolSolver;
  using Args = PoolArgs;
  static constexpr const char* kWhat = "pool";

  static PoolArgs random_args(const PoolProblem& p, Rng& rng) { return random_pool_args(p, rng); }
  static PoolArgs in_layout(const PoolArgs& nchw, Layout layout, Device device) {
    return pool_args_in_layout(nchw, layout, device);
  }
  static const Tensor& output(const PoolArgs& args, Direction d) { return pool_output(args, d); }
  static const PoolSolver& reference_solver() { return direct_pool_solver(); }
  static void run_plan(const PoolSolver& solver, const TuneConfig& config, Layout,
                       const PoolProblem& p, const PoolArgs& args) {
    run_pool({&solver, config}, p, args);
  }
  // Sums in another order round differently; a max is exact either way.
  static double tolerance(DType dt) { return dt == DType::f32 ? 1e-5 : 1e-12; }

  static std::vector<Layout> layouts(const PoolSolver& solver, const PoolProblem& p,
                                     const TunerOptions& options) {
    return allowed_layouts(solver.layouts(p), options);
  }
  static std::vector<TuneConfig> configs(const PoolSolver& solver, const PoolProblem& p) {
    return solver.configs(p);
  }
  static PoolArgs timing_args(const PoolProblem& p, std::uint64_t seed);
  static PoolArgs viewed_in_layout(const PoolArgs& args, Layout layout) {
    const auto view = [layout](const Tensor& t) { return t.defined() ? t.with_layout(layout) : t; };
    return {view(args.src), view(args.dst), view(args.diff_src), view(args.diff_dst)};
  }
  static void run_timed(const PoolSolver& solver, const PoolProblem& p, const TuneConfig& config,
                        const PoolArgs& args, std::size_t /*no workspace*/) {
    solver.run(p, config, args);
  }
};

// What a candidate is timed on: inputs hash-filled, outputs zero, on the problem's device.
PoolArgs PoolFamily::timing_args(const PoolProblem& p, std::uint64_t seed) {
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

// One tune_pool or retime_pool_candidates call: the shared search, with pooling's check.
class PoolSearch : public FamilySearch<PoolFamily> {
 public:
  using FamilySearch::FamilySearch;

 private:
  using Check = ReferenceCheck<PoolFamily>;

  // The CPU reference is not checked against itself.
  SolverTrial trial(const PoolSolver& solver, Layout layout) override {
    SolverTrial t = timed_trial(solver, layout);
    if (&solver != &direct_pool_solver())
      t.verify = [this, &solver, layout](const TuneConfig& c) {
        return reference().check(solver, c, layout);
      };
    return t;
  }

  Check& reference() {
    if (!reference_)
      reference_ = std::make_unique<Check>(pool_verification_problem(problem_), options_.seed);
    return *reference_;
  }

  std::unique_ptr<Check> reference_;  // built on first use
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
  const auto solvers = pool_solvers(problem.device);
  search.try_solvers(solvers_where(solvers, [&](const PoolSolver& s) { return !is_reference(s); }));
  if (!search.has_correct()) search.try_solvers(solvers_where(solvers, is_reference));
  return search.entry();
}

TuningEntry retime_pool_candidates(const PoolProblem& problem,
                                   const std::vector<CandidateResult>& shortlist,
                                   const TunerOptions& options) {
  problem.validate();
  PoolSearch search(problem, options);
  search.try_listed(shortlist, pool_solvers(problem.device));
  return search.entry_or_full_tune(shortlist.size(), [&] { return tune_pool(problem, options); });
}

}  // namespace tunecnn
