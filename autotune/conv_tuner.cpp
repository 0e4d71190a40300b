#include "autotune/conv_tuner.h"

#include <algorithm>
#include <memory>

#include "autotune/family_search.h"
#include "autotune/reference_check.h"
#include "core/rng.h"
#include "ops/conv/registry.h"
#include "ops/conv/verify.h"

namespace tunecnn {
namespace {

// The reference runs this many multiply-adds in about a millisecond: it is built for every
// direction of every layer, so on a small net it cost more than the timing once did at 3M.
constexpr std::int64_t kMaxVerifyMacs = 1'000'000;
bool is_direct(const ConvSolver& solver) {
  return &solver == &direct_conv_solver() || solver.name() == direct_conv_solver().name();
}

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// ---- small-data verification ---------------------------------------------------------------

// Halves one spatial size while the output keeps at least four rows (columns) and the padded
// input still covers the kernel. Height goes first: MEC's solution choice depends on the width.
bool shrink(ConvProblem& p, bool along_h) {
  int& size = along_h ? p.ih : p.iw;
  const int k = along_h ? p.kh : p.kw, pad = along_h ? p.ph : p.pw, s = along_h ? p.sh : p.sw;
  const int out = along_h ? p.oh() : p.ow();
  if (out < 8 || size / 2 < std::max(1, k - 2 * pad + s)) return false;
  size /= 2;
  return true;
}

// Layers with many channels (AlexNet's 384, MobileNet's 1024, even CIFAR's 64) keep the
// reference well above 1M multiply-adds after the spatial cut (CIFAR's conv2 at 7M was a fifth of
// its checks). Kernels block channels by 6 (direct_chwn) and vectors of up to 16: the same
// remainder modulo 48, their least common multiple, runs the same tail code, and at least 16
// channels still run full blocks and a full vector.
constexpr int kChannelQuantum = 48, kMinVerifyChannels = 16;
int fewer_channels(int channels) {
  int cut = channels % kChannelQuantum;
  while (cut < kMinVerifyChannels) cut += kChannelQuantum;
  return std::min(cut, channels);
}

// ---- the conv family -------------------------------------------------------------------------

// What the shared scaffold needs of conv: reference_check.h checks candidates with it,
// family_search.h makes and times the trials.
struct ConvFamily {
  using Problem = ConvProblem;
  using Solver = ConvSolver;
  using Args = ConvArgs;
  static constexpr const char* kWhat = "conv";

  static ConvArgs random_args(const ConvProblem& p, Rng& rng) { return random_conv_args(p, rng); }
  static ConvArgs in_layout(const ConvArgs& nchw, Layout layout, Device device) {
    return conv_args_on(conv_args_in_layout(nchw, layout), device);
  }
  static const Tensor& output(const ConvArgs& args, Direction d) { return conv_output(args, d); }
  static const ConvSolver& reference_solver() { return direct_conv_solver(); }
  static void run_plan(const ConvSolver& solver, const TuneConfig& config, Layout layout,
                       const ConvProblem& p, const ConvArgs& args) {
    run_conv({&solver, config, layout}, p, args);
  }
  static double tolerance(DType dt) { return dt == DType::f32 ? 1e-4 : 1e-10; }

  static std::vector<Layout> layouts(const ConvSolver& solver, const ConvProblem& p,
                                     const TunerOptions& options) {
    return allowed_layouts(solver.layouts(p), options);
  }
  static std::vector<TuneConfig> configs(const ConvSolver& solver, const ConvProblem& p) {
    return solver.configs(p);
  }
  static ConvArgs timing_args(const ConvProblem& p, std::uint64_t seed);
  static ConvArgs viewed_in_layout(const ConvArgs& args, Layout layout);
  // With the workspace the config needs, allocated for the call on the problem's device.
  static void run_timed(const ConvSolver& solver, const ConvProblem& p, const TuneConfig& config,
                        const ConvArgs& args, std::size_t bytes) {
    Storage storage(bytes, p.device);
    solver.run(p, config, args, Workspace{bytes ? storage.data() : nullptr, bytes});
  }
};

// What a candidate is timed on: only the tensors its direction reads and writes, inputs
// hash-filled, outputs zero. As large as a training batch, so this is kept cheap: drawing them
// from the RNG and converting all six to every layout took longer than timing some candidates.
ConvArgs ConvFamily::timing_args(const ConvProblem& p, std::uint64_t seed) {
  const auto input = [&](const Shape& shape, std::uint64_t stream) { return timing_input(shape, p.dt, p.device, seed + stream); };
  const auto output = [&](const Shape& shape) { return timing_output(shape, p.dt, p.device); };
  ConvArgs args;
  if (p.dir != Direction::bwd_data) args.src = input(p.src_shape(), 0);
  if (p.dir != Direction::bwd_weights) args.wei = input(p.wei_shape(), 1);
  if (p.dir != Direction::fwd) args.diff_dst = input(p.dst_shape(), 2);
  if (p.dir == Direction::fwd) args.dst = output(p.dst_shape());
  if (p.dir == Direction::bwd_data) args.diff_src = output(p.src_shape());
  if (p.dir == Direction::bwd_weights) args.diff_wei = output(p.wei_shape());
  return args;
}

// Weights have one layout; the activations are viewed in `layout` (family_search.h says why).
ConvArgs ConvFamily::viewed_in_layout(const ConvArgs& args, Layout layout) {
  const auto view = [layout](const Tensor& t) { return t.defined() ? t.with_layout(layout) : t; };
  return {view(args.src), args.wei, view(args.dst), view(args.diff_src), args.diff_wei, view(args.diff_dst)};
}

// One tune_conv or retime_candidates call: the shared search, with conv's checks.
class ConvSearch : public FamilySearch<ConvFamily> {
 public:
  using FamilySearch::FamilySearch;

 private:
  using Check = ReferenceCheck<ConvFamily>;

  // The search also weighs a conv candidate's workspace, its determinism and the solver's wish
  // for a sweep; the direct reference is not checked against itself.
  SolverTrial trial(const ConvSolver& solver, Layout layout) override {
    SolverTrial t = timed_trial(solver, layout);
    t.sweep = solver.sweep_configs();
    t.workspace_bytes = [this, &solver](const TuneConfig& c) { return solver.workspace_bytes(problem_, c); };
    t.deterministic = [this, &solver](const TuneConfig& c) { return solver.deterministic(problem_, c); };
    if (!is_direct(solver))
      t.verify = [this, &solver, layout](const TuneConfig& c) { return verify(solver, layout, c); };
    return t;
  }

  // On the small problem when the solver takes it, else (rarely) on the real one.
  std::string verify(const ConvSolver& solver, Layout layout, const TuneConfig& config) {
    if (!small_) small_ = std::make_unique<Check>(verification_problem(problem_), options_.seed);
    if (solver.applicable(small_->problem(), nullptr)) return small_->check(solver, config, layout);
    if (!full_) full_ = std::make_unique<Check>(problem_, options_.seed);
    return full_->check(solver, config, layout);
  }

  std::unique_ptr<Check> small_, full_;  // built on first use: the reference is not free
};

std::vector<const ConvSolver*> all_solvers(const TunerOptions& options, Device device) {
  if (!options.solvers.empty()) return options.solvers;
  const auto registry = conv_solvers(device);
  return {registry.begin(), registry.end()};
}

// A forced name this build does not have is a typo on the command line: say so.
void check_forced_names(const TunerOptions& options,
                        const std::vector<const ConvSolver*>& solvers) {
  for (const std::string& name : options.only_solvers) {
    const bool known = std::any_of(solvers.begin(), solvers.end(),
                                   [&](const ConvSolver* s) { return s->name() == name; });
    if (known) continue;
    std::string names;
    for (const ConvSolver* s : solvers)
      names += (names.empty() ? "" : ", ") + std::string(s->name());
    TUNECNN_FAIL("forced conv solver '", name, "' is unknown; known solvers: ", names);
  }
}

}  // namespace

ConvProblem verification_problem(const ConvProblem& problem) {
  ConvProblem p = problem;
  p.mb = std::min(p.mb, 2);
  while (p.macs() > kMaxVerifyMacs && shrink(p, true)) {
  }
  while (p.macs() > kMaxVerifyMacs && shrink(p, false)) {
  }
  if (p.macs() > kMaxVerifyMacs && p.g == 1) {  // grouped configs (diagonal's S) depend on channels
    p.ic = fewer_channels(p.ic);
    p.oc = fewer_channels(p.oc);
  }
  return p;
}

// Passes: the forced solvers (or every solver but the slow reference); all of them again when
// the forced ones give nothing correct; the reference last, when nothing else is correct.
TuningEntry tune_conv(const ConvProblem& problem, const TunerOptions& options) {
  problem.validate();
  const std::vector<const ConvSolver*> solvers = all_solvers(options, problem.device);
  check_forced_names(options, solvers);
  const auto non_direct = solvers_where(solvers, [](const ConvSolver& s) { return !is_direct(s); });
  ConvSearch search(problem, options);
  if (!options.only_solvers.empty()) {
    search.try_solvers(solvers_where(
        solvers, [&](const ConvSolver& s) { return contains(options.only_solvers, s.name()); }));
    if (!search.has_correct()) {
      search.warn("conv tuner: no forced solver runs " + problem.key() + "; trying all solvers");
      search.try_solvers(solvers_where(non_direct, [&](const ConvSolver& s) {
        return !contains(options.only_solvers, s.name());
      }));
    }
  } else {
    search.try_solvers(non_direct);
  }
  if (!search.has_correct())
    search.try_solvers(solvers_where(solvers, [&](const ConvSolver& s) {
      return is_direct(s) && !contains(options.only_solvers, s.name());
    }));
  return search.entry();
}

ConvPlan plan_from_entry(const TuningEntry& entry) {
  const ConvSolver* solver = find_conv_solver(entry.solver);
  TUNECNN_CHECK(solver != nullptr, "tuning entry for '", entry.key, "' names conv solver '",
                entry.solver, "', which this build does not have");
  return {solver, entry.config, entry.layout};
}

TuningEntry retime_candidates(const ConvProblem& problem, const std::vector<CandidateResult>& shortlist,
                              const TunerOptions& options) {
  problem.validate();
  ConvSearch search(problem, options);
  search.try_listed(shortlist, all_solvers(options, problem.device));
  return search.entry_or_full_tune(shortlist.size(), [&] { return tune_conv(problem, options); });
}

}  // namespace tunecnn
