// bench: measures speed and memory. `bench train` times whole training steps of a model on a
// fixed random batch (no data loading), and prints the median. `bench conv` times every conv
// solver on a set of layers side by side with PyTorch (apps/bench/conv_bench.h). `bench plans`
// measures the autotuner's targets on a model (apps/bench/plan_bench.h). `bench layout`,
// `bench pool` and `bench softmax` measure the memory-bound ops of Li et al. (PAPERS.md section 2);
// `bench depthwise` the depthwise methods of Qin et al. (section 3) on MobileNet.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "apps/bench/conv_bench.h"
#include "apps/bench/data_bench.h"
#include "apps/bench/depthwise_bench.h"
#include "apps/bench/layout_bench.h"
#include "apps/bench/plan_bench.h"
#include "apps/bench/pool_bench.h"
#include "apps/bench/softmax_bench.h"
#include "apps/training/cli.h"
#include "apps/training/step_timer.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "core/allocator.h"
#include "core/init.h"
#include "core/sgd.h"
#include "core/threading.h"
#include "models/registry.h"
#include "ops/softmax_cross_entropy.h"

namespace {

using namespace tunecnn;

int bench_train(int argc, const char* const* argv) {
  CommandLine cli("bench train", "Times training steps (forward, loss, backward, SGD update) of a model "
                                 "on a fixed random batch and reports the median step time and images/s.");
  cli.option("model", "lenet", "model to time");
  cli.option("batch-size", "64", "examples per step");
  cli.option("threads", "2", "CPU threads");
  cli.option("warmup", "5", "untimed steps first");
  cli.option("steps", "50", "timed steps");
  cli.option("input", "", "C,H,W of one example (default: the model's own, e.g. 1,28,28 for "
                          "lenet, 3,128,128 for mobilenet-0.5-128)");
  cli.option("classes", "10", "number of classes");
  cli.option("tune", "off", "plan the layers with the autotuner before timing, as train does: off "
                            "(the untuned defaults), cached, verify or full");
  cli.option("tune-cache", "", "the tuning cache for --tune (default: train's)");
  if (!cli.parse(argc, argv)) return 0;
  set_num_threads(cli.get_int("threads"));
  Rng rng(1);
  const Shape input =
      cli.has("input") ? parse_chw(cli.get("input"), "input") : model_input_shape(cli.get("model"));
  const int batch = cli.get_int("batch-size"), classes = cli.get_int("classes");
  auto model = build_model(cli.get("model"), ModelOptions{input, classes, {}}, rng);
  if (cli.get("tune") != "off") {
    const std::map<std::string, std::string> fields = cpu_fingerprint().fields();
    auto tuner = std::make_shared<TunedPlanner>(
        parse_tune_policy(cli.get("tune")),
        cli.has("tune-cache") ? std::filesystem::path(cli.get("tune-cache")) : default_tuning_cache_path(),
        TunerOptions{}, device_id(fields), fields);
    NetworkPlanner(tuner).plan(*model, {batch, input[0], input[1], input[2]});
    std::cout << "# " << tuner->summary() << "\n";
  }
  Sgd sgd(model->parameters(), SgdOptions{0.01, 0.9, 5e-4, false});
  Tensor images = Tensor::empty({batch, input[0], input[1], input[2]});
  uniform_fill(images, -1, 1, rng);
  std::vector<std::int32_t> labels(batch);
  for (auto& label : labels) label = static_cast<std::int32_t>(rng.next_u64() % classes);

  auto step = [&] {
    Variable loss = softmax_cross_entropy(model->forward(Variable(images)), labels);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
  };
  allocator_for(Device::cpu).reset_peak();
  const TimingStats t = time_repeated(step, cli.get_int("warmup"), cli.get_int("steps"));
  const MemoryStats mem = allocator_for(Device::cpu).stats();
  std::cout << "# " << cpu_fingerprint().summary() << "\n";
  std::printf("result model=%s batch=%d threads=%d median_ms=%.3f min_ms=%.3f max_ms=%.3f "
              "images_per_s=%.2f peak_mb=%.1f tune=%s\n",
              cli.get("model").c_str(), batch, num_threads(), 1e3 * t.median_s, 1e3 * t.min_s,
              1e3 * t.max_s, batch / t.median_s, mem.peak_bytes / 1048576.0, cli.get("tune").c_str());
  return 0;
}

void usage() {
  std::cout << "usage: bench COMMAND [options]\n\ncommands:\n"
               "  train   time training steps of a model (bench train --help)\n"
               "  conv    time every conv solver on a set of layers against PyTorch "
               "(bench conv --help)\n"
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
               "(bench data --help)\n";
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
    usage();
    if (command == "--help" || command == "-h") return 0;
    if (!command.empty()) std::cerr << "bench: unknown command '" << command << "'\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "bench: error: " << tunecnn::user_message(e) << "\n";
    return 1;
  }
}
