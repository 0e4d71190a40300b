// `bench depthwise` in two parts (Qin et al., PAPERS.md section 3).
// layers: MobileNet's depthwise layers (models/conv_layers.txt, set "mobilenet") at one batch,
//   every applicable solver x layout (their best config first, from a short sweep: diagonal's
//   group size S shows here), forward and backward (bwd_data + bwd_weights), timed side by side
//   in interleaved rounds, one call of each per round; PyTorch's time for the same layer beside
//   them (apps/bench/conv_pytorch.py, its own repeats).
// model: a whole training step of a MobileNet split by layer type, under the tuned plan and under
//   the same plan with each depthwise solver forced on the depthwise layers (model_split.h).
// --device cuda: the layers part with the GPU's solvers (cuDNN's grouped convolution,
//   depthwise_direct, diagonal at its best S, im2col_gemm where it applies), arguments on the GPU,
//   timed with CUDA events (autotune/device_clock.h); no PyTorch, no model part.
#include "apps/bench/depthwise_bench.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include "apps/bench/bench_device.h"
#include "autotune/device_clock.h"
#include "apps/bench/conv_options.h"
#include "apps/bench/model_split.h"
#include "apps/bench/pytorch_worker.h"
#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "apps/common/device_check.h"
#include "autotune/fingerprint.h"
#include "core/allocator.h"
#include "core/threading.h"
#include "models/conv_layers.h"
#include "ops/conv/registry.h"
#include "ops/conv/verify.h"

namespace tunecnn {
namespace {

constexpr const char* kSummary =
    "The depthwise methods of Qin et al. on MobileNet: (layers) every solver and layout on each "
    "depthwise layer, forward and backward, side by side with PyTorch, as their Table III; "
    "(model) a MobileNet training step split by layer type under the tuned plan and with each "
    "depthwise solver forced, as their Table IV. With --device cuda: the layers part on the GPU.";

constexpr Direction kDirections[] = {Direction::fwd, Direction::bwd_data, Direction::bwd_weights};

struct Method {
  const ConvSolver* solver;
  Layout layout;
  std::string name() const { return std::string(solver->name()) + "/" + std::string(to_string(layout)); }
};

// One method in one direction on one layer: its chosen config and timed calls.
struct Cell {
  Method method;
  Direction dir;
  TuneConfig config;
  std::size_t workspace = 0;
  std::vector<double> times;
};

// Seconds as the device sees them (device_clock: the steady clock on the CPU; CUDA events on the
// GPU's compute stream, since a call there only queues its kernels).
using Clock = std::function<double()>;

// The layers' problems are stamped with the device their solvers run on.
std::vector<ConvLayer> depthwise_layers(const std::string& names, int batch, Device device) {
  std::vector<ConvLayer> chosen;
  const std::vector<std::string> wanted = names.empty() ? std::vector<std::string>{} : split_commas(names);
  for (ConvLayer layer : conv_layer_set("mobilenet", batch)) {
    const ConvProblem& p = layer.problem;
    if (p.g != p.ic || p.g == 1) continue;
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), layer.name) == wanted.end()) continue;
    layer.problem.device = device;
    chosen.push_back(layer);
  }
  TUNECNN_CHECK(!chosen.empty(), "bench depthwise: no MobileNet depthwise layer matches --layers '", names,
                "' (dw1 ... dw13 in models/conv_layers.txt)");
  return chosen;
}

double call_seconds(const Cell& cell, const ConvProblem& fwd, const ConvArgs& args, Storage& ws,
                    const Clock& clock) {
  const ConvProblem p = fwd.with_dir(cell.dir);
  const double start = clock();
  cell.method.solver->run(p, cell.config, args, Workspace{ws.data(), cell.workspace});
  return clock() - start;
}

// The config with the lowest median of three calls (a one-config solver skips the sweep).
void choose_config(Cell& cell, const ConvProblem& fwd, const ConvArgs& args, const Clock& clock) {
  const ConvProblem p = fwd.with_dir(cell.dir);
  const std::vector<TuneConfig> configs = cell.method.solver->configs(p);
  double best = 0;
  for (const TuneConfig& config : configs) {
    Cell trial = cell;
    trial.config = config;
    trial.workspace = cell.method.solver->workspace_bytes(p, config);
    if (configs.size() == 1) {
      cell = trial;
      return;
    }
    Storage ws(trial.workspace, fwd.device);
    std::vector<double> t;
    for (int i = 0; i < 3; ++i) t.push_back(call_seconds(trial, fwd, args, ws, clock));
    if (best == 0 || median_of(t) < best) best = median_of(t), cell = trial;
  }
}

std::vector<Cell> cells_for(const ConvProblem& fwd) {
  std::vector<Cell> cells;
  for (const ConvSolver* solver : conv_solvers(fwd.device)) {
    if (solver == &direct_conv_solver(fwd.device)) continue;  // the reference: slower than the rest
    for (Direction dir : kDirections) {
      if (!solver->applicable(fwd.with_dir(dir), nullptr)) continue;
      for (Layout layout : solver->layouts(fwd.with_dir(dir))) cells.push_back({{solver, layout}, dir, {}, 0, {}});
    }
  }
  return cells;
}

double median_ms(const Cell& c) {
  return median_of(c.times) * 1e3;
}

// forward, and backward as bwd_data + bwd_weights; 0 when the method lacks a direction.
std::pair<double, double> fwd_bwd_ms(const std::vector<Cell>& cells, const std::string& method) {
  double fwd = 0, bwd_data = 0, bwd_weights = 0;
  for (const Cell& c : cells) {
    if (c.method.name() != method) continue;
    (c.dir == Direction::fwd ? fwd : c.dir == Direction::bwd_data ? bwd_data : bwd_weights) = median_ms(c);
  }
  return {fwd, bwd_data > 0 && bwd_weights > 0 ? bwd_data + bwd_weights : 0};
}

struct PytorchSide {
  std::unique_ptr<PytorchWorker> worker;
  std::string note = "off";
  RepeatPolicy policy;

  std::pair<double, double> fwd_bwd_ms(const ConvProblem& fwd) {
    if (!worker) return {0, 0};
    try {
      double ms[3] = {0, 0, 0};
      for (int d = 0; d < 3; ++d) ms[d] = worker->time(fwd.with_dir(kDirections[d]), policy).median_ms;
      return {ms[0], ms[1] + ms[2]};
    } catch (const Error& e) {
      std::cout << "# pytorch: " << user_message(e) << "; PyTorch is off for the rest of the run\n";
      worker.reset();
      return {0, 0};
    }
  }
};

std::string cell_text(double ms) {
  char text[32];
  if (ms <= 0) return "-";
  std::snprintf(text, sizeof text, "%.2f", ms);
  return text;
}

void bench_layer(const ConvLayer& layer, int rounds, PytorchSide& pytorch, const Clock& clock) {
  const ConvProblem& fwd = layer.problem;
  Rng rng(7);
  const ConvArgs nchw = random_conv_args(fwd, rng);
  std::map<Layout, ConvArgs> args;
  std::vector<Cell> cells = cells_for(fwd);
  std::size_t most = 0;
  for (Cell& c : cells) {
    if (!args.count(c.method.layout))
      args.emplace(c.method.layout, conv_args_on(conv_args_in_layout(nchw, c.method.layout), fwd.device));
    choose_config(c, fwd, args.at(c.method.layout), clock);
    most = std::max(most, c.workspace);
  }
  Storage ws(most, fwd.device);
  // A GPU kernel's first launch also loads it (CUDA's lazy loading): one untimed round first.
  if (fwd.device == Device::cuda)
    for (Cell& c : cells) call_seconds(c, fwd, args.at(c.method.layout), ws, clock);
  for (int round = 0; round < rounds; ++round)
    for (Cell& c : cells) c.times.push_back(call_seconds(c, fwd, args.at(c.method.layout), ws, clock));

  std::vector<std::string> methods;
  for (const Cell& c : cells)
    if (std::find(methods.begin(), methods.end(), c.method.name()) == methods.end()) methods.push_back(c.method.name());
  const auto [torch_fwd, torch_bwd] = pytorch.fwd_bwd_ms(fwd);
  std::printf("\n%s: %dx%dx%d, %dx%d stride %d, batch %d (ms per call%s)\n", layer.name.c_str(), fwd.ic,
              fwd.ih, fwd.iw, fwd.kh, fwd.kw, fwd.sh, fwd.mb, fwd.device == Device::cuda ? ", GPU" : "");
  std::printf("  %-26s %9s %9s\n", "method", "forward", "backward");
  std::string best_fwd, best_bwd;
  double best_fwd_ms = 0, best_bwd_ms = 0;
  for (const std::string& m : methods) {
    const auto [f, b] = fwd_bwd_ms(cells, m);
    std::string configs;
    for (const Cell& c : cells)
      if (c.method.name() == m && !c.config.values.empty())
        configs += " " + std::string(to_string(c.dir)) + ":" + c.config.str();
    std::printf("  %-26s %9s %9s %s\n", m.c_str(), cell_text(f).c_str(), cell_text(b).c_str(), configs.c_str());
    if (f > 0 && (best_fwd_ms == 0 || f < best_fwd_ms)) best_fwd_ms = f, best_fwd = m;
    if (b > 0 && (best_bwd_ms == 0 || b < best_bwd_ms)) best_bwd_ms = b, best_bwd = m;
  }
  std::printf("  %-26s %9s %9s\n", "pytorch", cell_text(torch_fwd).c_str(), cell_text(torch_bwd).c_str());
  std::printf("result layer=%s best_fwd=%s best_fwd_ms=%.3f best_bwd=%s best_bwd_ms=%.3f pytorch_fwd_ms=%.3f "
              "pytorch_bwd_ms=%.3f\n",
              layer.name.c_str(), best_fwd.c_str(), best_fwd_ms, best_bwd.c_str(), best_bwd_ms, torch_fwd, torch_bwd);
}

void print_split(const ModelSplitOptions& o, const std::vector<SplitVariant>& variants) {
  std::printf("\n%s training step at batch %d, split by layer type (ms per step, mean; share of the step)\n",
              o.model.c_str(), o.batch);
  for (const SplitVariant& v : variants) {
    double total = v.loss_s + v.update_s, depthwise = 0;
    for (const auto& [kind, s] : v.kind_s) total += s;
    const double step_ms = median_of(v.step_s) * 1e3;
    std::printf("%s: step %.1f ms median, %.1f images/s; depthwise %s\n", v.name.c_str(), step_ms,
                o.batch / median_of(v.step_s), v.depthwise_plans.c_str());
    for (const auto& [kind, s] : v.kind_s) {
      std::printf("  %-15s %9.2f %5.1f%%\n", kind.c_str(), s * 1e3, 100 * s / total);
      if (kind == "depthwise") depthwise = s;
    }
    std::printf("  %-12s %9.2f %5.1f%%\n  %-12s %9.2f %5.1f%%\n", "loss", v.loss_s * 1e3, 100 * v.loss_s / total,
                "update", v.update_s * 1e3, 100 * v.update_s / total);
    std::printf("result model=%s variant=%s batch=%d step_ms=%.2f images_per_s=%.2f depthwise_ms=%.2f "
                "depthwise_share=%.3f\n",
                o.model.c_str(), v.name.c_str(), o.batch, step_ms, o.batch / median_of(v.step_s), depthwise * 1e3,
                depthwise / total);
  }
}

// The solvers that run depthwise layers only: forcing one of them changes no other layer.
std::vector<std::string> depthwise_only_solvers() {
  const ConvProblem depthwise{Direction::fwd, 2, 32, 14, 14, 32, 3, 3, 1, 1, 1, 1, 32};
  ConvProblem dense = depthwise;
  dense.g = 1;
  std::vector<std::string> names;
  for (const ConvSolver* s : cpu_conv_solvers())
    if (s->applicable(depthwise, nullptr) && !s->applicable(dense, nullptr)) names.emplace_back(s->name());
  return names;
}

// The PyTorch side of the layer table: PyTorch's CPU times, so off on the GPU.
PytorchSide start_pytorch(const CommandLine& cli, bool quick, Device device) {
  PytorchSide pytorch;
  if (device == Device::cuda) {
    pytorch.note = "off (--device cuda: conv_pytorch.py times PyTorch on the CPU)";
  } else if (!quick && cli.get("pytorch") == "on") {
    try {
      pytorch.worker = std::make_unique<PytorchWorker>(cli.get("python"), cli.get("pytorch-script"),
                                                       num_threads());
      pytorch.note = pytorch.worker->description();
    } catch (const Error& e) {
      pytorch.note = "off: " + user_message(e);
    }
  }
  return pytorch;
}

void print_header(Device device) {
  std::cout << "# " << cpu_fingerprint().summary() << "\n";
  print_gpu_fingerprint(std::cout, device);
  if (device == Device::cuda)
    std::cout << "# device cuda: the GPU's solvers, arguments on the GPU, times in CUDA events on the "
                 "compute stream\n";
  std::cout << "# " << kSummary << "\n";
}

}  // namespace

int bench_depthwise(int argc, const char* const* argv) {
  CommandLine cli("bench depthwise", kSummary);
  cli.option("part", "both", "layers, model or both (with --device cuda: layers only)");
  cli.option("device", "cpu",
             "cpu, or cuda: the layer table with the GPU's solvers (cuDNN, depthwise_direct, diagonal, ...) "
             "on the first NVIDIA GPU, timed with CUDA events");
  cli.option("batch", "", "batch of the layer table and of the model step; default 16, with --device cuda 64");
  cli.option("layers", "", "comma list of depthwise layers (default: dw1 ... dw13 of models/conv_layers.txt)");
  cli.option("rounds", "5", "interleaved rounds (layers: one call per method per round; model: steps per "
                            "variant per round)");
  cli.option("model", "mobilenet-1.0-128", "the MobileNet of the model part");
  cli.option("steps", "3", "model part: timed steps per variant per round, after one warm-up step");
  cli.option("tune-cache", "", "model part: tuning cache (default: a fresh file, removed at the end)");
  cli.option("threads", "2", "CPU threads");
  cli.option("pytorch", "on", "layers part: time PyTorch on the same layers: on or off");
  cli.option("python", "/usr/bin/python3", "the Python with torch (Debian's python3-torch)");
  cli.option("pytorch-script", default_pytorch_script(), "the PyTorch side's script");
  cli.flag("quick", "a smoke run for the test suite: dw13 at batch 2, mobilenet-0.25-128, 1 round, no PyTorch");
  if (!cli.parse(argc, argv)) return 0;
  const std::string part = cli.get("part");
  TUNECNN_CHECK(part == "layers" || part == "model" || part == "both", "bench depthwise: --part must be layers, "
                "model or both, got '", part, "'");
  const Device device = parse_bench_device(cli.get("device"));
  require_device(device);
  const Clock clock = device_clock(device);
  const bool gpu = device == Device::cuda;
  TUNECNN_CHECK(!gpu || part != "model", "bench depthwise: the model part runs on the CPU only; with --device "
                "cuda use --part layers");
  const bool quick = cli.has("quick");
  set_num_threads(cli.get_int("threads"));
  const int batch = quick ? 2 : cli.has("batch") ? cli.get_int("batch") : gpu ? 64 : 16;
  const int rounds = quick ? 1 : cli.get_int("rounds");
  TUNECNN_CHECK(batch > 0 && rounds > 0, "bench depthwise: --batch and --rounds must be positive");
  print_header(device);

  if (part != "model") {
    PytorchSide pytorch = start_pytorch(cli, quick, device);
    std::cout << "# pytorch: " << pytorch.note << "\n";
    for (const ConvLayer& layer : depthwise_layers(quick ? "dw13" : cli.get("layers"), batch, device))
      bench_layer(layer, rounds, pytorch, clock);
  }
  if (gpu && part == "both") std::cout << "# model part: CPU only, not run with --device cuda\n";
  if (part != "layers" && !gpu) {
    ModelSplitOptions o;
    o.model = quick ? "mobilenet-0.25-128" : cli.get("model");
    o.batch = batch;
    o.rounds = rounds;
    o.steps = quick ? 1 : cli.get_int("steps");
    o.tune_cache = cli.get("tune-cache");
    o.forced = depthwise_only_solvers();
    print_split(o, split_model_step(o, std::cout));
  }
  return 0;
}

}  // namespace tunecnn
