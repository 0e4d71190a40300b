// bench: measures speed and memory; this file only dispatches to the subcommands, each in its own
// file under apps/bench/. `bench train` times whole training steps of a model on a fixed random
// batch (apps/bench/train_bench.h). `bench scaling` runs it under mpirun with 1, 2, ... processes
// and reports the speedup (apps/bench/scaling_bench.h). `bench conv` times every conv solver on a
// set of layers side by side with PyTorch (apps/bench/conv_bench.h). `bench plans` measures the
// autotuner's targets on a model (apps/bench/plan_bench.h). `bench layout`, `bench pool` and
// `bench softmax` measure the memory-bound ops of Li et al. (PAPERS.md section 2); `bench
// depthwise` the depthwise methods of Qin et al. (section 3) on MobileNet; `bench data` the input
// pipeline alone (apps/bench/data_bench.h). `bench threads` how oneDNN's OpenMP and our TBB
// share the cores (apps/bench/threads_bench.h).
#include <iostream>
#include <string>

#include "apps/bench/conv_bench.h"
#include "apps/bench/data_bench.h"
#include "apps/bench/depthwise_bench.h"
#include "apps/bench/layout_bench.h"
#include "apps/bench/memory_bench.h"
#include "apps/bench/plan_bench.h"
#include "apps/bench/pool_bench.h"
#include "apps/bench/scaling_bench.h"
#include "apps/bench/softmax_bench.h"
#include "apps/bench/threads_bench.h"
#include "apps/bench/train_bench.h"
#include "apps/common/cli.h"
#include "apps/common/openmp_wait.h"
#include "core/error.h"

namespace {

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
               "images/s, speedup and efficiency (bench scaling --help)\n"
               "  threads oneDNN's OpenMP team and our TBB pool on the same cores: each solver alone "
               "and alternating (bench threads --help)\n"
               "  memory  a training step's peak memory split by use, and PyTorch's on the same "
               "network (bench memory --help)\n\n"
               "Exit status: 0 done, 1 error, 2 bad command line.\n";
}

}  // namespace

int main(int argc, char** argv) {
  tunecnn::use_passive_openmp_threads(argv);
  try {
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "train") return tunecnn::bench_train(argc - 1, argv + 1);
    if (command == "conv") return tunecnn::bench_conv(argc - 1, argv + 1);
    if (command == "plans") return tunecnn::bench_plans(argc - 1, argv + 1);
    if (command == "layout") return tunecnn::bench_layout(argc - 1, argv + 1);
    if (command == "pool") return tunecnn::bench_pool(argc - 1, argv + 1);
    if (command == "softmax") return tunecnn::bench_softmax(argc - 1, argv + 1);
    if (command == "depthwise") return tunecnn::bench_depthwise(argc - 1, argv + 1);
    if (command == "data") return tunecnn::bench_data(argc - 1, argv + 1);
    if (command == "scaling") return tunecnn::bench_scaling(argc - 1, argv + 1);
    if (command == "threads") return tunecnn::bench_threads(argc - 1, argv + 1);
    if (command == "memory") return tunecnn::bench_memory(argc - 1, argv + 1);
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
