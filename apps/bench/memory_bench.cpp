// `bench memory`: the model is built, planned as train plans it, and stepped on a fixed random
// batch as the trainer steps it (forward, loss, backward with each parameter's SGD step taken as
// its gradient is final). The allocator splits its peak by the use each block was made for
// (core/allocator.h); the resident set's growth over the run is measured from the state before
// the model existed, the same way for PyTorch in a child process (apps/bench/memory_pytorch.py),
// so the two compare like for like. With --device cuda the model steps on the GPU and the figures
// are the GPU allocator's (device memory); PyTorch's side and the resident set are the CPU's only.
#include "apps/bench/memory_bench.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "apps/bench/bench_device.h"
#include "apps/bench/conv_report.h"
#include "apps/bench/max_batch.h"
#include "apps/bench/process_memory.h"
#include "apps/common/cli.h"
#include "apps/common/device_check.h"
#include "apps/training/memory_budget.h"
#include "apps/training/step_memory.h"
#include "autotune/device_clock.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "autotune/tuning_cache_layers.h"
#include "core/allocator.h"
#include "core/cuda_runtime.h"
#include "core/error.h"
#include "core/init.h"
#include "core/sgd.h"
#include "core/threading.h"
#include "models/registry.h"
#include "ops/softmax_cross_entropy.h"

#ifndef TUNECNN_MEMORY_PYTORCH_SCRIPT
#define TUNECNN_MEMORY_PYTORCH_SCRIPT "apps/bench/memory_pytorch.py"
#endif

namespace tunecnn {
namespace {

constexpr double kMiB = 1048576.0;
const SgdOptions kBenchSgd{0.01, 0.9, 5e-4, false};

CommandLine memory_command_line() {
  CommandLine cli("bench memory",
                  "Measures what a training step holds at its peak: the allocator's peak split into "
                  "parameters, optimizer state, activations, gradients, workspaces and layout copies, "
                  "and the growth of the process's peak resident set over the run, beside PyTorch's "
                  "on the same network and batch (a /usr/bin/python3 child running "
                  "apps/bench/memory_pytorch.py).");
  cli.option("model", "lenet", "model (a built-in name or an ONNX file NAME.onnx)");
  cli.option("batch-size", "64", "examples per step");
  cli.option("threads", "2", "CPU threads (PyTorch gets the same)");
  add_allocator_cache_option(cli);
  add_recompute_activations_option(cli);
  cli.option("steps", "3", "steps after the first (the peak is the highest of them all)");
  cli.option("input", "", "C,H,W of one example (default: the model's own)");
  cli.option("classes", "", "number of classes (default: 10, or 1000 for alexnet and mobilenet, as "
                            "PyTorch's side builds them)");
  cli.option("tune", "off", "plan the layers as train does: off (the untuned defaults), cached, "
                            "verify or full");
  cli.option("tune-cache", "", "the tuning cache for --tune (default: train's)");
  cli.option("pytorch", "on", "on: measure PyTorch's side too; off");
  cli.option("python", "/usr/bin/python3", "the Python with torch (Debian's python3-torch)");
  cli.option("pytorch-script", TUNECNN_MEMORY_PYTORCH_SCRIPT, "PyTorch's side");
  cli.flag("max-batch", "instead of one batch: the largest batch whose step's resident-set growth fits "
                        "--memory-budget, ours and PyTorch's (doubling from 1, then bisecting; each try "
                        "builds the network afresh and runs 1 + --steps steps)");
  cli.option("memory-budget", "",
             "in bytes or with K, M or G (powers of 1024). Alone: plan the step within it as train "
             "--memory-budget does (the allocator's peak), then measure. With --max-batch: the resident-set "
             "budget each try must fit (default 4G)");
  cli.option("max-batch-limit", "1024", "with --max-batch: the largest batch tried");
  cli.option("device", "cpu", "cpu, or cuda: the model planned and stepped on the GPU, the figures its allocator's "
                              "(device memory; PyTorch's side and --max-batch are the CPU's only)");
  return cli;
}

int default_classes(const std::string& model) {
  return model == "alexnet" || model.rfind("mobilenet", 0) == 0 ? 1000 : 10;
}

std::shared_ptr<TunedPlanner> make_tuner(const CommandLine& cli, Device device) {
  const std::filesystem::path cache =
      cli.has("tune-cache") ? std::filesystem::path(cli.get("tune-cache")) : default_tuning_cache_path();
  DeviceIdentity identity = device_identity(device);
  TunerOptions options;
  if (device != Device::cpu) options.clock = device_clock(device);  // candidates timed by the GPU's clock
  return std::make_shared<TunedPlanner>(parse_tune_policy(cli.get("tune")), cache, options,
                                        std::move(identity.id), std::move(identity.fields),
                                        default_system_tuning_cache_path());
}

// --memory-budget alone: the budget for planning the step, as train takes it.
std::optional<std::size_t> planning_budget(const CommandLine& cli) {
  if (!cli.has("memory-budget") || cli.has("max-batch")) return std::nullopt;
  const std::optional<std::size_t> budget = parse_memory_size(cli.has("memory-budget") ? cli.get("memory-budget") : "4G");
  if (!budget || *budget == 0)
    throw UsageError("bench memory: --memory-budget must be a size such as 4G, 512M or 1048576, not '" +
                     cli.get("memory-budget") + "'");
  return budget;
}

// Plans the layers as train does (under --tune off without a budget: the layers' own defaults),
// within --memory-budget when there is one, and predicts the step's peak.
std::optional<StepPeak> plan_layers(const CommandLine& cli, Module& model, const Shape& batch_shape,
                                    const StepMemoryQuery& query, bool predicted) {
  const std::optional<std::size_t> budget = planning_budget(cli);
  std::shared_ptr<TunedPlanner> tuner;
  if (cli.get("tune") != "off" || budget) tuner = make_tuner(cli, query.device);
  if (tuner) NetworkPlanner(tuner).plan(model, batch_shape);
  if (!budget) {
    if (tuner) std::cout << "# " << tuner->summary() << "\n";
    return predicted ? std::optional(predict_step_peak(query)) : std::nullopt;
  }
  const MemoryBudgetFit fit =
      fit_memory_budget(*budget, network_budget_planning(query, model, batch_shape, tuner), query.device);
  std::cout << "# " << tuner->summary() << "\n# memory budget: " << fit.describe(*budget) << "\n";
  return fit.predicted;
}

struct OurPeak {
  MemoryStats allocator;
  std::optional<StepPeak> predicted;  // before the first step (apps/training/step_memory.h)
  std::optional<std::size_t> rss_growth;
  std::size_t last_step_system_allocations = 0;  // blocks the last step took from the system
};

// Builds, plans and steps the model; the resident set's growth counts from before the build.
OurPeak measure_ours(const CommandLine& cli, const Shape& input, int batch, int classes, bool predict,
                     Device device = Device::cpu) {
  const std::optional<std::size_t> baseline = process_status_bytes("VmRSS");
  const bool peak_reset = reset_peak_resident_set();
  Rng rng(1);
  auto model = build_model(cli.get("model"), ModelOptions{input, classes, {}, {}}, rng);
  model->to(device);  // as train --device does: built on the host, planned where it runs
  const Shape batch_shape{batch, input[0], input[1], input[2]};
  StepMemoryQuery query = model_step_query(cli.get("model"), *model, input, batch, classes, kBenchSgd);
  query.device = device;
  const std::optional<StepPeak> predicted = plan_layers(cli, *model, batch_shape, query, predict);
  Tensor images = Tensor::empty(batch_shape);
  uniform_fill(images, -1, 1, rng);
  images = images.to(device);
  std::vector<std::int32_t> labels(batch);
  for (auto& label : labels) label = static_cast<std::int32_t>(rng.next_u64() % classes);
  Sgd sgd(model->parameters(), kBenchSgd);

  Allocator& allocator = allocator_for(device);
  allocator.reset_peak();
  std::size_t system_allocations_before_last = 0;
  for (int step = 0; step <= cli.get_int("steps"); ++step) {  // as the trainer steps
    system_allocations_before_last = allocator.stats().system_allocations;
    sgd.zero_grad();
    Variable loss = softmax_cross_entropy(model->forward(Variable(images)), labels);
    sgd.backward_and_step(loss);
  }
  if (device != Device::cpu) cuda_synchronize();  // an asynchronous failure belongs to this run
  OurPeak peak{allocator.stats(), predicted, std::nullopt};
  peak.last_step_system_allocations = peak.allocator.system_allocations - system_allocations_before_last;
  const std::optional<std::size_t> high = process_status_bytes("VmHWM");
  if (baseline && high && peak_reset && device == Device::cpu) peak.rss_growth = *high - std::min(*high, *baseline);
  return peak;
}

struct TheirPeak {
  std::optional<std::size_t> rss_growth;
  std::string note;  // the torch version, or why there is no figure
};

TheirPeak measure_pytorch(const CommandLine& cli, int batch) {
  if (cli.get("pytorch") == "off") return {std::nullopt, "off"};
  const std::string command = cli.get("python") + " " + cli.get("pytorch-script") + " --model " +
                              cli.get("model") + " --batch-size " + std::to_string(batch) + " --threads " +
                              std::to_string(cli.get_int("threads")) + " --steps " + cli.get("steps") + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  TUNECNN_CHECK(pipe != nullptr, "bench memory: cannot start ", command);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  pclose(pipe);
  std::size_t growth = 0;
  char version[64] = {};
  if (const std::size_t ok = out.rfind("ok "); ok != std::string::npos &&
      std::sscanf(out.c_str() + ok, "ok %zu torch %63s", &growth, version) == 2)
    return {growth, std::string("torch ") + version};
  return {std::nullopt, "unavailable: " + out.substr(0, out.find('\n'))};
}

void print_trial(const char* side, const BatchTrial& trial) {
  const std::string peak =
      trial.bytes ? formatted("%.1f MiB, %s", *trial.bytes / kMiB, trial.fits ? "fits" : "over") : "not measured";
  std::printf("#   %-7s batch %5d: %s\n", side, trial.batch, peak.c_str());
  std::fflush(stdout);
}

std::string describe_search(const MaxBatch& found) {
  if (!found.stopped.empty()) return std::to_string(found.batch) + " (stopped: " + found.stopped + ")";
  return std::to_string(found.batch) + (found.at_limit ? " (the limit: larger may fit)" : "");
}

// --max-batch: the largest batch whose step's resident-set growth fits the budget, ours and
// PyTorch's, searched the same way (max_batch.h).
int report_max_batch(const CommandLine& cli, const std::string& model, const Shape& input, int classes) {
  const std::optional<std::size_t> budget = parse_memory_size(cli.has("memory-budget") ? cli.get("memory-budget") : "4G");
  if (!budget || *budget == 0)
    throw UsageError("bench memory: --memory-budget must be a size such as 4G, 512M or 1048576, not '" +
                     cli.get("memory-budget") + "'");
  const int limit = cli.get_int("max-batch-limit");
  if (limit < 1) throw UsageError("bench memory: --max-batch-limit must be at least 1");
  std::printf("# the largest batch within %.1f MiB of resident-set growth (up to %d):\n", *budget / kMiB, limit);
  const MaxBatch ours = largest_batch_within(
      *budget, limit,
      [&](int batch) {
        const std::optional<std::size_t> growth = measure_ours(cli, input, batch, classes, false).rss_growth;
        allocator_for(Device::cpu).release_cached();  // the next try starts from what the system holds
        return growth;
      },
      [](const BatchTrial& trial) { print_trial("ours", trial); });
  std::optional<MaxBatch> theirs;
  if (cli.get("pytorch") == "on")
    theirs = largest_batch_within(
        *budget, limit, [&](int batch) { return measure_pytorch(cli, batch).rss_growth; },
        [](const BatchTrial& trial) { print_trial("PyTorch", trial); });
  std::printf("%-26s %s\n", "largest batch, ours", describe_search(ours).c_str());
  std::printf("%-26s %s\n", "largest batch, PyTorch's", theirs ? describe_search(*theirs).c_str() : "- (off)");
  std::printf("result model=%s budget_mb=%.1f max_batch=%d at_limit=%d", model.c_str(), *budget / kMiB, ours.batch,
              ours.at_limit ? 1 : 0);
  if (theirs && theirs->stopped.empty()) {
    std::printf(" pytorch_max_batch=%d", theirs->batch);
    if (theirs->batch > 0) std::printf(" batch_ratio=%.3f", static_cast<double>(ours.batch) / theirs->batch);
  }
  std::printf("\n");
  return 0;
}

void print_report(const OurPeak& ours, const TheirPeak& theirs, Device device) {
  std::printf("%-26s %10s\n", device == Device::cpu ? "at the allocator's peak" : "at the GPU allocator's peak", "MiB");
  for (std::size_t use = 0; use < kMemoryUses; ++use)
    std::printf("  %-24s %10.2f\n", to_string(static_cast<MemoryUse>(use)),
                ours.allocator.at_peak_by_use[use] / kMiB);
  std::printf("  %-24s %10.2f\n", "total", ours.allocator.peak_bytes / kMiB);
  if (ours.predicted) {
    const double error = static_cast<double>(ours.predicted->bytes) / ours.allocator.peak_bytes - 1;
    std::printf("%-26s %10.2f  (%+.1f%%; at the peak, predicted:", "predicted before the step", ours.predicted->bytes / kMiB,
                100 * error);
    for (std::size_t use = 0; use < kMemoryUses; ++use)
      if (ours.predicted->by_use[use] > 0)
        std::printf(" %s %.2f", to_string(static_cast<MemoryUse>(use)), ours.predicted->by_use[use] / kMiB);
    std::printf(")\n");
  }
  std::printf("%-26s %10.2f\n", "held (live + cached) peak", ours.allocator.peak_held_bytes / kMiB);
  const auto mib = [](const std::optional<std::size_t>& bytes) {
    return bytes ? formatted("%.2f", *bytes / kMiB) : std::string("-");
  };
  if (device != Device::cpu) return;  // the host's resident set says nothing of device memory
  std::printf("%-26s %10s\n", "peak resident set growth", mib(ours.rss_growth).c_str());
  std::printf("%-26s %10s  (%s)\n", "PyTorch's", mib(theirs.rss_growth).c_str(), theirs.note.c_str());
}

}  // namespace

int bench_memory(int argc, const char* const* argv) {
  CommandLine cli = memory_command_line();
  if (!cli.parse(argc, argv)) return 0;
  TUNECNN_CHECK(cli.get("pytorch") == "on" || cli.get("pytorch") == "off",
                "bench memory: --pytorch must be on or off, not '", cli.get("pytorch"), "'");
  set_num_threads(cli.get_int("threads"));
  const Device device = parse_bench_device(cli.get("device"));
  if (device != Device::cpu && cli.has("max-batch"))
    throw UsageError("bench memory: --max-batch searches the CPU's resident set; leave it out with --device " +
                     std::string(to_string(device)));
  require_device(device);  // no GPU: an error that says why, before anything is printed
  allocator_for(device).set_cache_policy(allocator_cache_option(cli));
  set_recompute_activations(cli.has("recompute-activations"));
  const std::string model = cli.get("model");
  const Shape input = cli.has("input") ? parse_chw(cli.get("input"), "input") : model_input_shape(model);
  const int batch = cli.get_int("batch-size");
  const int classes = cli.has("classes") ? cli.get_int("classes") : default_classes(model);
  TUNECNN_CHECK(batch > 0 && classes > 1, "bench memory: --batch-size must be positive and --classes above 1");
  const bool max_batch = cli.has("max-batch");
  std::cout << "# " << cpu_fingerprint().summary() << "\n";
  print_gpu_fingerprint(std::cout, device);
  std::cout << "# " << model << ", " << (max_batch ? "largest batch" : "batch " + std::to_string(batch)) << ", "
            << classes << " classes, " << num_threads() << " threads, " << 1 + cli.get_int("steps")
            << " steps, --tune " << cli.get("tune") << ", --allocator-cache " << cli.get("allocator-cache")
            << (cli.has("recompute-activations") ? ", --recompute-activations" : "") << ", device "
            << to_string(device) << "\n";
  std::cout << std::flush;
  if (max_batch) return report_max_batch(cli, model, input, classes);
  const OurPeak ours = measure_ours(cli, input, batch, classes, true, device);
  const TheirPeak theirs = device == Device::cpu ? measure_pytorch(cli, batch) : TheirPeak{std::nullopt, "the CPU's only"};
  print_report(ours, theirs, device);
  std::printf("result model=%s batch=%d peak_mb=%.2f held_mb=%.2f", model.c_str(), batch,
              ours.allocator.peak_bytes / kMiB, ours.allocator.peak_held_bytes / kMiB);
  for (std::size_t use = 0; use < kMemoryUses; ++use) {
    std::string name = to_string(static_cast<MemoryUse>(use));
    for (char& c : name) c = c == ' ' ? '_' : c;
    std::printf(" %s_mb=%.2f", name.c_str(), ours.allocator.at_peak_by_use[use] / kMiB);
  }
  std::printf(" last_step_system_allocations=%zu cached_mb=%.2f", ours.last_step_system_allocations,
              ours.allocator.cached_bytes / kMiB);
  if (ours.predicted) std::printf(" predicted_peak_mb=%.2f", ours.predicted->bytes / kMiB);
  if (ours.rss_growth) std::printf(" rss_growth_mb=%.2f", *ours.rss_growth / kMiB);
  if (theirs.rss_growth) std::printf(" pytorch_rss_growth_mb=%.2f", *theirs.rss_growth / kMiB);
  if (ours.rss_growth && theirs.rss_growth && *theirs.rss_growth > 0)
    std::printf(" rss_ratio=%.3f", static_cast<double>(*ours.rss_growth) / *theirs.rss_growth);
  std::printf(" device=%s\n", std::string(to_string(device)).c_str());
  return 0;
}

}  // namespace tunecnn
