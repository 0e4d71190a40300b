#pragma once
// The options of `bench conv`, parsed from the command line into a plain struct so the tests can
// check the parsing without timing anything.
#include <optional>
#include <string>
#include <vector>

#include "apps/bench/repeat_policy.h"
#include "apps/common/cli.h"
#include "ops/conv/problem.h"

namespace tunecnn {

struct ConvBenchOptions {
  std::string layers = "mec-paper";
  // Where the solvers run: the CPU's registry, or (--device cuda) the GPU's, with its arguments
  // on the GPU and the CUDA-event clock.
  Device device = Device::cpu;
  int batch = 8;  // --batch, else 8 on the CPU and 32 on the GPU
  std::vector<Direction> directions;
  int threads = 2;
  RepeatPolicy repeats;
  std::vector<std::string> solvers;  // empty: every applicable solver
  // direct is the slow reference: skipped above this many multiply-adds unless named in solvers.
  // On the GPU direct is timed everywhere (one thread per output stays fast enough).
  double direct_max_mmacs = 50;
  std::string csv;  // "" for none
  bool pytorch = true;  // always off on the GPU: conv_pytorch.py times PyTorch on the CPU
  std::string python, pytorch_script;
  bool mec_memory = false;  // print the MEC paper's lowered-matrix comparison
};

// Declares every option of `bench conv` with its default and help line.
void declare_conv_bench_options(CommandLine& cli);
// Reads the parsed options; throws Error naming the option that is wrong.
ConvBenchOptions conv_bench_options(const CommandLine& cli);

// apps/bench/conv_pytorch.py in the source tree, the default --pytorch-script.
const char* default_pytorch_script();

// "fwd", "bwd-data" / "bwd_data", "bwd-weights" / "bwd_weights", "all", or a comma list of them.
std::vector<Direction> parse_directions(const std::string& text);
// A comma list of solver names, each checked against `device`'s registry; "" or "all" gives {}.
std::vector<std::string> parse_solver_list(const std::string& text, Device device = Device::cpu);

}  // namespace tunecnn
