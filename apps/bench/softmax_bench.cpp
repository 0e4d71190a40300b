// `bench softmax`: the fused one-pass softmax cross-entropy solver against the five-pass baseline
// (Li et al., SC'16; PAPERS.md section 2), on batches x classes. Both solvers run on the same
// logits and labels, their results are checked against each other first, then they are timed in
// interleaved rounds (each round calls both, the order alternating) so both see the same machine
// noise. Reports the median ms per call, GB/s over the bytes the op must move (logits read once,
// gradient written once) and the ratio five_pass / fused. With --device cuda the GPU's twins run
// on device tensors, timed with CUDA events (Li et al. Fig. 13).
#include "apps/bench/softmax_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>

#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "apps/bench/bench_device.h"
#include "autotune/device_clock.h"
#include "autotune/fingerprint.h"
#include "core/init.h"
#include "core/threading.h"
#include "ops/softmax/plan.h"
#include "ops/softmax/registry.h"

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "Times the softmax cross-entropy solvers (softmax_fused, one pass per row; softmax_five_pass, "
    "five sweeps over the batch as cuDNN's softmax plus a loss sweep) side by side on batches x "
    "classes, in interleaved rounds. Reports the median ms per call, GB/s (logits read + "
    "gradient written) and the ratio five_pass / fused (> 1: fused is faster). With --device cuda "
    "the GPU's kernels, timed with CUDA events.";

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
  std::vector<int> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    std::size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    TUNECNN_CHECK(used == item.size() && !item.empty() && value > 0, "--", option,
                  " expects positive integers separated by commas, got '", text, "'");
    values.push_back(value);
  }
  TUNECNN_CHECK(!values.empty(), "--", option, " is empty");
  return values;
}

struct Case {
  SoftmaxProblem problem;
  Tensor logits;
  std::vector<std::int32_t> labels;
};

// Logits made on the host and moved to the problem's device.
Case make_case(const SoftmaxProblem& p, Rng& rng) {
  Tensor host = Tensor::empty(p.logits_shape(), p.dt);
  uniform_fill(host, -4, 4, rng);
  Case c{p, host.to(p.device), {}};
  c.labels.resize(static_cast<std::size_t>(p.rows));
  for (auto& label : c.labels) label = static_cast<std::int32_t>(rng.next_u64() % p.classes);
  return c;
}

// Both solvers must agree before their times mean anything.
void check_agree(const Case& c, const SoftmaxSolver& a, const SoftmaxSolver& b) {
  Tensor ga = Tensor::empty_like(c.logits), gb = Tensor::empty_like(c.logits);
  const double la = run_softmax(a, c.problem, c.logits, c.labels, ga);
  const double lb = run_softmax(b, c.problem, c.logits, c.labels, gb);
  ga = ga.to(Device::cpu), gb = gb.to(Device::cpu);
  double worst = 0;
  dispatch_dtype(c.problem.dt, [&]<class T>() {
    for (std::int64_t i = 0; i < ga.numel(); ++i)
      worst = std::max(worst, std::abs(static_cast<double>(ga.data<T>()[i] - gb.data<T>()[i])));
  });
  const double tol = c.problem.dt == DType::f32 ? 1e-4 : 1e-10;
  TUNECNN_CHECK(std::abs(la - lb) <= tol * std::max(1.0, std::abs(la)) && worst <= tol,
                a.name(), " and ", b.name(), " disagree on ", c.problem.key(), ": loss ", la,
                " vs ", lb, ", gradient max |diff| ", worst);
}

struct Timing {
  double fused_s, five_pass_s;
};

// Seconds `fn` took by `clock` (the device's: CUDA events on the GPU).
double timed_by(const std::function<double()>& clock, const std::function<void()>& fn) {
  const double start = clock();
  fn();
  return clock() - start;
}

// Rounds of `calls` calls per solver; the order alternates every round. Returns the medians of
// the per-call times.
Timing time_interleaved(const Case& c, const SoftmaxSolver& fused, const SoftmaxSolver& five,
                        int rounds, double round_seconds, const std::function<double()>& clock) {
  Tensor grad = Tensor::empty_like(c.logits);
  auto call = [&](const SoftmaxSolver& s) { run_softmax(s, c.problem, c.logits, c.labels, grad); };
  call(fused), call(five);  // warm-up: first touches of the buffers, TBB's threads
  const double one = std::max(1e-7, timed_by(clock, [&] { call(fused); }));
  const int calls = std::clamp(static_cast<int>(round_seconds / one), 1, 10000);
  std::vector<double> tf, t5;
  auto timed = [&](const SoftmaxSolver& s, std::vector<double>& out) {
    out.push_back(timed_by(clock, [&] {
                    for (int i = 0; i < calls; ++i) call(s);
                  }) /
                  calls);
  };
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      timed(fused, tf), timed(five, t5);
    } else {
      timed(five, t5), timed(fused, tf);
    }
  }
  return {median_of(tf), median_of(t5)};
}

}  // namespace

int bench_softmax(int argc, const char* const* argv) {
  CommandLine cli("bench softmax", kSummary);
  cli.option("batches", "", "rows (batch sizes), comma-separated; default 128,64,32 (8 with --quick)");
  cli.option("classes", "", "classes, comma-separated; default 10,100,1000,10000 (10,1000 with "
                            "--quick)");
  cli.option("threads", "2", "CPU threads");
  cli.option("rounds", "", "interleaved timing rounds per problem; default 15 (3 with --quick)");
  cli.option("dtype", "f32", "f32 or f64");
  cli.option("device", "cpu", "cpu, or cuda: the GPU's softmax kernels");
  cli.flag("quick", "a few small problems and rounds, for the test suite");
  if (!cli.parse(argc, argv)) return 0;
  const bool quick = cli.has("quick");
  const std::vector<int> batches =
      parse_int_list(cli.get("batches").empty() ? (quick ? "8" : "128,64,32") : cli.get("batches"),
                     "batches");
  const std::vector<int> classes = parse_int_list(
      cli.get("classes").empty() ? (quick ? "10,1000" : "10,100,1000,10000") : cli.get("classes"),
      "classes");
  const int rounds = cli.get("rounds").empty() ? (quick ? 3 : 15) : cli.get_int("rounds");
  TUNECNN_CHECK(rounds > 0, "--rounds must be positive, got ", rounds);
  const std::string dtype = cli.get("dtype");
  TUNECNN_CHECK(dtype == "f32" || dtype == "f64", "--dtype expects f32 or f64, got '", dtype, "'");
  const DType dt = dtype == "f64" ? DType::f64 : DType::f32;
  const double round_seconds = quick ? 2e-4 : 2e-3;
  set_num_threads(cli.get_int("threads"));
  const Device device = parse_bench_device(cli.get("device"));
  const std::function<double()> clock = device_clock(device);

  const SoftmaxSolver* fused = find_softmax_solver("softmax_fused", device);
  const SoftmaxSolver* five = find_softmax_solver("softmax_five_pass", device);
  TUNECNN_CHECK(fused && five, "bench softmax: a ", to_string(device),
                " solver is missing from the registry");

  std::cout << "# " << cpu_fingerprint().summary() << "\n";
  print_gpu_fingerprint(std::cout, device);
  std::cout << "# bench softmax: device " << to_string(device) << ", threads " << num_threads() << ", " << dtype << ", " << rounds
            << " interleaved rounds per problem (order alternating), each >= "
            << round_seconds * 1e3 << " ms of back-to-back calls per solver; median ms per call\n"
            << "# GB/s: (logits read + gradient written) bytes / median time; ratio = "
               "five_pass_ms / fused_ms (> 1: fused is faster); results checked equal first\n";
  std::printf("%6s %8s %10s %13s %11s %14s %7s\n", "batch", "classes", "fused_ms", "five_pass_ms",
              "fused_GBps", "five_pass_GBps", "ratio");
  Rng rng(1);
  for (int batch : batches) {
    for (int n : classes) {
      const Case c = make_case(SoftmaxProblem{batch, n, dt, device}, rng);
      check_agree(c, *fused, *five);
      const Timing t = time_interleaved(c, *fused, *five, rounds, round_seconds, clock);
      const double gb = 2.0 * static_cast<double>(c.logits.nbytes()) / 1e9;
      std::printf("%6d %8d %10.4f %13.4f %11.2f %14.2f %7.2f\n", batch, n, 1e3 * t.fused_s,
                  1e3 * t.five_pass_s, gb / t.fused_s, gb / t.five_pass_s,
                  t.five_pass_s / t.fused_s);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace tunecnn
