// bench: measures speed and memory. `bench train` times whole training steps of a model on a
// fixed random batch (no data loading), and prints the median; under mpirun, data-parallel steps
// on each process's share of the batch. `bench scaling` runs it under mpirun with 1, 2, ...
// processes and reports the speedup (apps/bench/scaling_bench.h). `bench conv` times every conv
// solver on a set of layers side by side with PyTorch (apps/bench/conv_bench.h). `bench plans`
// measures the autotuner's targets on a model (apps/bench/plan_bench.h). `bench layout`,
// `bench pool` and `bench softmax` measure the memory-bound ops of Li et al. (PAPERS.md section 2);
// `bench depthwise` the depthwise methods of Qin et al. (section 3) on MobileNet.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include "apps/bench/conv_bench.h"
#include "apps/bench/data_bench.h"
#include "apps/bench/depthwise_bench.h"
#include "apps/bench/layout_bench.h"
#include "apps/bench/plan_bench.h"
#include "apps/bench/pool_bench.h"
#include "apps/bench/repeat_policy.h"
#include "apps/bench/scaling_bench.h"
#include "apps/bench/softmax_bench.h"
#include "apps/bench/step_timer.h"
#include "apps/common/cli.h"
#include "apps/training/data_parallel.h"
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

namespace {

using namespace tunecnn;

// The untuned defaults, or the autotuner's plan for every batch this run steps on. Under mpirun,
// as train does: rank 0 tunes, for every rank's share of the global batch, and sends its entries;
// the other ranks plan from them without timing anything, so every rank runs rank 0's plan.
void plan_layers(const CommandLine& cli, Module& model, const Shape& input, std::int64_t global_batch,
                 DataParallel& dp) {
  if (cli.get("tune") == "off") return;
  const std::filesystem::path cache =
      cli.has("tune-cache") ? std::filesystem::path(cli.get("tune-cache")) : default_tuning_cache_path();
  const std::shared_ptr<TunedPlanner> tuner =
      dp.make_tuner(parse_tune_policy(cli.get("tune")), cache, TunerOptions{});
  NetworkPlanner planner(tuner);
  for (std::int64_t batch : dp.rank_shares({global_batch}))
    planner.plan(model, {batch, input[0], input[1], input[2]});
  if (!dp.comm().is_root()) return;
  std::cout << "# " << tuner->summary() << "\n";
  if (dp.active()) dp.send_tuning(*tuner);
}

// One training step on this rank's share; with several ranks the gradients are averaged exactly
// as the trainer does (the loss summed before backward, then the bucketed allreduce started from
// backward's hook), which also keeps the ranks in step. Records the allreduce wait of each step.
class TrainStep {
 public:
  TrainStep(Sequential& model, const DataParallel& dp, Tensor images, std::vector<std::int32_t> labels,
            std::int64_t global_batch)
      : model_(model),
        sgd_(model.parameters(), SgdOptions{0.01, 0.9, 5e-4, false}),
        dp_(dp),
        images_(std::move(images)),
        labels_(std::move(labels)),
        global_batch_(global_batch) {
    if (dp.active()) allreduce_ = std::make_unique<GradientAllreduce>(model.parameters(), dp.comm_ptr());
  }

  void operator()() {
    Variable loss = softmax_cross_entropy(model_.forward(Variable(images_)), labels_);
    sgd_.zero_grad();
    if (!allreduce_) {
      loss.backward();
      sgd_.step();
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

int bench_train(int argc, const char* const* argv) {
  CommandLine cli("bench train", "Times training steps (forward, loss, backward, SGD update) of a model "
                                 "on a fixed random batch and reports the median step time and images/s. "
                                 "Under mpirun (bench scaling runs it so) each process steps on its share "
                                 "of the global batch and the gradients are averaged as train does; rank 0 "
                                 "reports the global images/s and the allreduce's bytes and wait per step.");
  cli.option("model", "lenet", "model to time");
  cli.option("batch-size", "64", "examples per step (under mpirun: the global batch, shared by the processes)");
  cli.option("threads", "", "CPU threads per process (default 2; under mpirun 1 per process)");
  cli.option("warmup", "5", "untimed steps first");
  cli.option("steps", "50", "timed steps");
  cli.option("input", "", "C,H,W of one example (default: the model's own, e.g. 1,28,28 for "
                          "lenet, 3,128,128 for mobilenet-0.5-128)");
  cli.option("classes", "10", "number of classes");
  cli.option("tune", "off", "plan the layers with the autotuner before timing, as train does: off "
                            "(the untuned defaults), cached, verify or full");
  cli.option("tune-cache", "", "the tuning cache for --tune (default: train's)");
  if (!cli.parse(argc, argv)) return 0;
  DataParallel dp(make_communicator());
  const bool talk = dp.comm().is_root();
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
  plan_layers(cli, *model, input, global_batch, dp);
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
              "images_per_s=%.2f peak_mb=%.1f tune=%s",
              cli.get("model").c_str(), global_batch, num_threads(), 1e3 * t.median_s, 1e3 * t.min_s,
              1e3 * t.max_s, global_batch / t.median_s, mem.peak_bytes / 1048576.0, cli.get("tune").c_str());
  print_data_parallel_fields(dp, step, steps);
  std::printf("\n");
  return 0;
}

void usage() {
  std::cout << "usage: bench COMMAND [options]\n\ncommands:\n"
               "  train   time training steps of a model (bench train --help)\n"
               "  conv    time every conv solver on a set of layers against PyTorch, or with "
               "--device cuda the GPU's solvers, MEC against im2col and cuDNN (bench conv --help)\n"
               "  plans   the autotuner's targets on a model: profiling cost, cached start, tuned "
               "plan vs each single algorithm, --tune verify (bench plans --help)\n"
               "  layout  layout transforms in GB/s against memcpy of the same bytes "
               "(bench layout --help)\n"
               "  pool    pooling solvers and coarsening factors on the papers' pools "
               "(bench pool --help)\n"
               "  softmax fused softmax cross-entropy against the five-pass version "
               "(bench softmax --help)\n"
               "  depthwise  depthwise methods on MobileNet's layers and a MobileNet step split by "
               "layer type (bench depthwise --help)\n"
               "  data    the input pipeline alone: images/s a DataLoader serves for train --data "
               "(bench data --help)\n"
               "  scaling data-parallel scaling: bench train under mpirun with 1, 2, ... processes, "
               "images/s, speedup and efficiency (bench scaling --help)\n\n"
               "Exit status: 0 done, 1 error, 2 bad command line.\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "train") return bench_train(argc - 1, argv + 1);
    if (command == "conv") return tunecnn::bench_conv(argc - 1, argv + 1);
    if (command == "plans") return tunecnn::bench_plans(argc - 1, argv + 1);
    if (command == "layout") return tunecnn::bench_layout(argc - 1, argv + 1);
    if (command == "pool") return tunecnn::bench_pool(argc - 1, argv + 1);
    if (command == "softmax") return tunecnn::bench_softmax(argc - 1, argv + 1);
    if (command == "depthwise") return tunecnn::bench_depthwise(argc - 1, argv + 1);
    if (command == "data") return tunecnn::bench_data(argc - 1, argv + 1);
    if (command == "scaling") return tunecnn::bench_scaling(argc - 1, argv + 1);
    usage();
    if (command == "--help" || command == "-h") return 0;
    if (!command.empty()) std::cerr << "bench: unknown command '" << command << "'\n";
    return 2;
  } catch (const tunecnn::UsageError& e) {
    std::cerr << "bench: error: " << e.message() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench: error: " << tunecnn::user_message(e) << "\n";
    return 1;
  }
}
