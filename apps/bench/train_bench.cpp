// `bench train`: a fixed random batch, so the step time is the model's alone (no data loading);
// plan_layers plans it as train would, TrainStep steps it as the trainer does, and time_repeated
// reports the median. Under mpirun, rank 0 prints the global images/s and the allreduce fields.
#include "apps/bench/train_bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "apps/bench/repeat_policy.h"
#include "apps/bench/step_timer.h"
#include "apps/common/cli.h"
#include "apps/training/data_parallel.h"
#include "apps/training/memory_budget.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "core/allocator.h"
#include "core/communicator.h"
#include "core/error.h"
#include "core/gradient_allreduce.h"
#include "core/init.h"
#include "core/sgd.h"
#include "core/threading.h"
#include "datasets/data_loader.h"
#include "models/registry.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {
namespace {

// The untuned defaults, or the autotuner's plan for every batch this run steps on. Under mpirun,
// as train does: rank 0 tunes, for every rank's share of the global batch, and sends its entries;
// the other ranks plan from them without timing anything, so every rank runs rank 0's plan.
std::shared_ptr<TunedPlanner> plan_layers(const CommandLine& cli, Module& model, const Shape& input,
                                          std::int64_t global_batch, DataParallel& dp) {
  if (cli.get("tune") == "off") return nullptr;
  const std::filesystem::path cache =
      cli.has("tune-cache") ? std::filesystem::path(cli.get("tune-cache")) : default_tuning_cache_path();
  const std::shared_ptr<TunedPlanner> tuner =
      dp.make_tuner(parse_tune_policy(cli.get("tune")), cache, TunerOptions{});
  NetworkPlanner planner(tuner);
  for (std::int64_t batch : dp.rank_shares({global_batch}))
    planner.plan(model, {batch, input[0], input[1], input[2]});
  if (!dp.comm().is_root()) return tuner;
  std::cout << "# " << tuner->summary() << "\n";
  if (dp.active()) dp.send_tuning(*tuner);
  return tuner;
}

const SgdOptions kBenchSgd{0.01, 0.9, 5e-4, false};

// --memory-budget: the step brought within it as train brings it (memory_budget.h); the workspace
// limit needs the tuner's plans (--tune other than off).
void fit_budget(const CommandLine& cli, Sequential& model, const Shape& input, int batch, int classes,
                const std::shared_ptr<TunedPlanner>& tuner) {
  const std::optional<std::size_t> budget = parse_memory_size(cli.get("memory-budget"));
  if (!budget || *budget == 0)
    throw UsageError("bench train: --memory-budget must be a size such as 2G or 512M, not '" +
                     cli.get("memory-budget") + "'");
  const StepMemoryQuery query = model_step_query(cli.get("model"), model, input, batch, classes, kBenchSgd);
  const MemoryBudgetPlanning planning =
      network_budget_planning(query, model, {batch, input[0], input[1], input[2]}, tuner);
  std::cout << "# memory budget: " << fit_memory_budget(*budget, planning).describe(*budget) << "\n";
}

// One training step on this rank's share; with several ranks the gradients are averaged exactly
// as the trainer does (the loss summed before backward, then the bucketed allreduce started from
// backward's hook), which also keeps the ranks in step. Records the allreduce wait of each step.
class TrainStep {
 public:
  TrainStep(Sequential& model, const DataParallel& dp, Tensor images, std::vector<std::int32_t> labels,
            std::int64_t global_batch)
      : model_(model),
        sgd_(model.parameters(), kBenchSgd),
        dp_(dp),
        images_(std::move(images)),
        labels_(std::move(labels)),
        global_batch_(global_batch) {
    if (dp.active()) allreduce_ = std::make_unique<GradientAllreduce>(model.parameters(), dp.comm_ptr());
  }

  void operator()() {
    Variable loss = softmax_cross_entropy(model_.forward(Variable(images_)), labels_);
    sgd_.zero_grad();
    if (!allreduce_) {  // each parameter steps as its gradient is final, as train does
      sgd_.backward_and_step(loss);
      return;
    }
    double loss_sum = loss.data().data<float>()[0] * static_cast<double>(labels_.size());
    dp_.comm().allreduce_sum(&loss_sum, 1, "summing the step's loss");
    const double waited_before = allreduce_->stats().wait_seconds;
    allreduce_->backward(loss, static_cast<std::int64_t>(labels_.size()), global_batch_);
    wait_seconds_.push_back(allreduce_->stats().wait_seconds - waited_before);
    sgd_.step();
  }

  const GradientAllreduce* allreduce() const { return allreduce_.get(); }
  // The median allreduce wait over the last `steps` steps (the timed ones, after the warm-up).
  double median_wait_seconds(int steps) const {
    const std::size_t timed = std::min<std::size_t>(steps, wait_seconds_.size());
    return median_of(std::vector<double>(wait_seconds_.end() - static_cast<std::ptrdiff_t>(timed),
                                         wait_seconds_.end()));
  }

 private:
  Sequential& model_;
  Sgd sgd_;
  const DataParallel& dp_;
  Tensor images_;
  std::vector<std::int32_t> labels_;
  std::int64_t global_batch_;
  std::unique_ptr<GradientAllreduce> allreduce_;  // only with more than one rank
  std::vector<double> wait_seconds_;
};

// " procs=2 bytes_per_step=246824 buckets=1 allreduce_wait_ms=0.412": what `bench scaling` reads.
void print_data_parallel_fields(const DataParallel& dp, const TrainStep& step, int timed_steps) {
  if (!step.allreduce()) return;
  const AllreduceStats& stats = step.allreduce()->stats();
  std::printf(" procs=%d bytes_per_step=%zu buckets=%zu allreduce_wait_ms=%.3f", dp.comm().size(),
              stats.bytes_per_step, stats.buckets, 1e3 * step.median_wait_seconds(timed_steps));
}

// The options of `bench train`, with its --help.
CommandLine train_command_line() {
  CommandLine cli("bench train", "Times training steps (forward, loss, backward, SGD update) of a model "
                                 "on a fixed random batch and reports the median step time and images/s. "
                                 "Under mpirun (bench scaling runs it so) each process steps on its share "
                                 "of the global batch and the gradients are averaged as train does; rank 0 "
                                 "reports the global images/s and the allreduce's bytes and wait per step.");
  cli.option("model", "lenet", "model to time (a built-in name or an ONNX file NAME.onnx)");
  cli.option("batch-size", "64", "examples per step (under mpirun: the global batch, shared by the processes)");
  cli.option("threads", "", "CPU threads per process (default 2; under mpirun 1 per process)");
  add_allocator_cache_option(cli);
  add_recompute_activations_option(cli);
  cli.option("memory-budget", "", "plan the step within this many bytes (K, M or G), as train --memory-budget "
                                  "does; one process only");
  cli.option("warmup", "5", "untimed steps first");
  cli.option("steps", "50", "timed steps");
  cli.option("input", "", "C,H,W of one example (default: the model's own, e.g. 1,28,28 for "
                          "lenet, 3,128,128 for mobilenet-0.5-128)");
  cli.option("classes", "10", "number of classes");
  cli.option("tune", "off", "plan the layers with the autotuner before timing, as train does: off "
                            "(the untuned defaults), cached, verify or full");
  cli.option("tune-cache", "", "the tuning cache for --tune (default: train's)");
  return cli;
}

}  // namespace

int bench_train(int argc, const char* const* argv) {
  CommandLine cli = train_command_line();
  if (!cli.parse(argc, argv)) return 0;
  DataParallel dp(make_communicator());
  const bool talk = dp.comm().is_root();
  allocator_for(Device::cpu).set_cache_policy(allocator_cache_option(cli));
  set_recompute_activations(cli.has("recompute-activations"));
  set_num_threads(cli.has("threads") ? cli.get_int("threads") : dp.active() ? 1 : 2);
  Rng rng(1);  // the same on every rank: the ranks start from the same weights, as in train
  const Shape input =
      cli.has("input") ? parse_chw(cli.get("input"), "input") : model_input_shape(cli.get("model"));
  const int global_batch = cli.get_int("batch-size"), classes = cli.get_int("classes");
  TUNECNN_CHECK(global_batch >= dp.comm().size(), "bench train: --batch-size ", global_batch,
                " leaves some of the ", dp.comm().size(), " processes without examples; give at least one "
                "example per process");
  const auto [share_begin, share_end] = shard_slice(global_batch, dp.comm().rank(), dp.comm().size());
  const std::int64_t batch = share_end - share_begin;  // this rank's share (all of it alone)
  auto model = build_model(cli.get("model"), ModelOptions{input, classes, {}, {}}, rng);
  const std::shared_ptr<TunedPlanner> tuner = plan_layers(cli, *model, input, global_batch, dp);
  if (cli.has("memory-budget")) {
    TUNECNN_CHECK(!dp.active(), "bench train: --memory-budget is for one process, not under mpirun");
    fit_budget(cli, *model, input, global_batch, classes, tuner);
  }
  Tensor images = Tensor::empty({batch, input[0], input[1], input[2]});
  uniform_fill(images, -1, 1, rng);
  std::vector<std::int32_t> labels(batch);
  for (auto& label : labels) label = static_cast<std::int32_t>(rng.next_u64() % classes);
  TrainStep step(*model, dp, std::move(images), std::move(labels), global_batch);

  allocator_for(Device::cpu).reset_peak();
  const int steps = cli.get_int("steps");
  // The ranks leave each step's allreduce together, so rank 0's step times are the job's.
  const TimingStats t = time_repeated(std::ref(step), cli.get_int("warmup"), steps);
  const MemoryStats mem = allocator_for(Device::cpu).stats();
  if (!talk) return 0;
  std::cout << "# " << cpu_fingerprint().summary() << "\n";
  if (dp.active()) std::cout << "# " << dp.describe(global_batch, num_threads()) << "\n";
  std::printf("result model=%s batch=%d threads=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f "
              "images_per_s=%.2f peak_mb=%.1f held_mb=%.1f tune=%s",
              cli.get("model").c_str(), global_batch, num_threads(), 1e3 * t.median_s, 1e3 * t.min_s,
              1e3 * t.max_s, global_batch / t.median_s, mem.peak_bytes / 1048576.0,
              mem.peak_held_bytes / 1048576.0, cli.get("tune").c_str());
  print_data_parallel_fields(dp, step, steps);
  std::printf("\n");
  return 0;
}

}  // namespace tunecnn
