#include "apps/bench/threads_bench.h"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "autotune/fingerprint.h"
#include "core/init.h"
#include "core/rng.h"
#include "core/threading.h"
#include "models/conv_layers.h"
#include "ops/conv/plan.h"
#include "ops/conv/registry.h"
#include "ops/conv/verify.h"

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "Times one of our conv solvers and oneDNN's first implementation on each layer of a set, each "
    "alone (calls back to back) and alternating call by call, as a plan that mixes them runs. "
    "An alternating median above the alone one is what each pool costs the other: OpenMP's "
    "threads spinning after oneDNN's call while TBB's work, or either pool slow to wake. "
    "oneDNN's team is set to TBB's width before each call (ops/conv/onednn_primitive.cpp).";

struct Side {
  ConvPlan plan;
  Layout layout;
  ConvArgs args;
};

Side side(const ConvSolver& solver, const ConvProblem& p, const ConvArgs& nchw) {
  const Layout layout = solver.layouts(p).front();
  return {{&solver, solver.configs(p).front()}, layout, conv_args_in_layout(nchw, layout)};
}

// Medians of `a` and `b` calls, alternating a, b, a, b, ... `rounds` times after a warm-up pair.
std::pair<double, double> alternating(const Side& a, const Side& b, const ConvProblem& p, int rounds) {
  std::vector<double> ta, tb;
  run_conv(a.plan, p, a.args);
  run_conv(b.plan, p, b.args);
  for (int i = 0; i < rounds; ++i) {
    ta.push_back(seconds_of([&] { run_conv(a.plan, p, a.args); }));
    tb.push_back(seconds_of([&] { run_conv(b.plan, p, b.args); }));
  }
  return {median_of(ta), median_of(tb)};
}

double alone(const Side& s, const ConvProblem& p, int rounds) {
  return time_repeated([&] { run_conv(s.plan, p, s.args); }, 1, rounds).median_s;
}

void bench_layer(const ConvLayer& layer, Direction dir, const ConvSolver& ours, const ConvSolver& onednn,
                 int rounds, Rng& rng) {
  const ConvProblem p = layer.problem.with_dir(dir);
  if (!ours.applicable(p, nullptr) || !onednn.applicable(p, nullptr)) return;
  const ConvArgs nchw = random_conv_args(p, rng);
  const Side a = side(ours, p, nchw), b = side(onednn, p, nchw);
  const double a_alone = alone(a, p, rounds), b_alone = alone(b, p, rounds);
  const auto [a_mixed, b_mixed] = alternating(a, b, p, rounds);
  std::printf("%-8s %-11s %10.3f %10.3f %6.3f %10.3f %10.3f %6.3f\n", layer.name.c_str(),
              std::string(to_string(dir)).c_str(), a_alone * 1e3, a_mixed * 1e3, a_mixed / a_alone,
              b_alone * 1e3, b_mixed * 1e3, b_mixed / b_alone);
}

const ConvSolver& named_solver(const std::string& name) {
  const ConvSolver* solver = find_conv_solver(name);
  if (solver == nullptr) throw UsageError("no CPU conv solver named '" + name + "' (" + conv_solver_names(Device::cpu) + ")");
  return *solver;
}

}  // namespace

int bench_threads(int argc, const char* const* argv) {
  CommandLine cli("bench threads", kSummary);
  cli.option("layers", "alexnet", "layer set of models/conv_layers.txt");
  cli.option("batch", "8", "batch size");
  cli.option("solver", "im2col_gemm", "our solver (its first config)");
  cli.option("onednn", "onednn_nchw", "oneDNN's solver: onednn_nchw or onednn_nhwc");
  cli.option("rounds", "21", "timed calls per side and measurement");
  cli.option("threads", "2", "CPU threads, TBB's and OpenMP's");
  if (!cli.parse(argc, argv)) return 0;
  const ConvSolver& ours = named_solver(cli.get("solver"));
  const ConvSolver& onednn = named_solver(cli.get("onednn"));
  const int rounds = cli.get_int("rounds");
  set_num_threads(cli.get_int("threads"));
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  std::cout << "# " << cpu_fingerprint().summary() << "\n"
            << "# bench threads: " << ours.name() << " against " << onednn.name() << ", batch "
            << cli.get("batch") << ", threads " << num_threads() << ", " << rounds
            << " timed calls each, medians; OMP_WAIT_POLICY " << (wait_policy ? wait_policy : "unset")
            << "\n# mixed/alone > 1: slower when the other pool ran just before\n";
  std::printf("%-8s %-11s %10s %10s %6s %10s %10s %6s\n", "layer", "direction", "ours_ms", "mixed_ms",
              "ratio", "onednn_ms", "mixed_ms", "ratio");
  Rng rng(1);
  for (const ConvLayer& layer : conv_layer_set(cli.get("layers"), cli.get_int("batch")))
    for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights})
      bench_layer(layer, dir, ours, onednn, rounds, rng);
  return 0;
}

}  // namespace tunecnn
