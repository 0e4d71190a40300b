#include "apps/bench/conv_options.h"

#include <algorithm>
#include <limits>

#include "apps/bench/bench_device.h"
#include "core/error.h"
#include "models/conv_layers.h"
#include "ops/conv/registry.h"

#ifndef TUNECNN_CONV_PYTORCH_SCRIPT
#define TUNECNN_CONV_PYTORCH_SCRIPT "apps/bench/conv_pytorch.py"
#endif

namespace tunecnn {

const char* default_pytorch_script() {
  return TUNECNN_CONV_PYTORCH_SCRIPT;
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// The batch when neither --batch nor --batch-size is given: the MEC paper's GPU runs use 32.
constexpr int kCpuBatch = 8, kCudaBatch = 32;

std::string known_solver_names(Device device) {
  std::vector<std::string> names;
  for (const ConvSolver* solver : conv_solvers(device)) names.emplace_back(solver->name());
  return joined(names);
}

// --batch and its spelling in `bench train` and `train`, --batch-size; both given must agree.
int batch_option(const CommandLine& cli, Device device) {
  int batch = device == Device::cuda ? kCudaBatch : kCpuBatch;
  if (cli.has("batch")) batch = cli.get_int("batch");
  if (cli.has("batch-size")) {
    const int other = cli.get_int("batch-size");
    TUNECNN_CHECK(!cli.has("batch") || other == batch, "--batch ", batch, " and --batch-size ",
                  other, " disagree; give one of them");
    batch = other;
  }
  TUNECNN_CHECK(batch >= 1, "--batch must be >= 1, got ", batch);
  return batch;
}

bool parse_on_off(const CommandLine& cli, const std::string& name) {
  const std::string value = cli.get(name);
  TUNECNN_CHECK(value == "on" || value == "off", "--", name, " expects on or off, got '", value,
                "'");
  return value == "on";
}

RepeatPolicy repeat_policy(const CommandLine& cli) {
  RepeatPolicy policy;
  policy.warmup = cli.get_int("warmup");
  policy.min_repeats = cli.get_int("min-repeats");
  policy.max_repeats = cli.get_int("max-repeats");
  policy.max_seconds = cli.get_double("max-seconds");
  policy.settle = cli.get_double("settle");
  TUNECNN_CHECK(policy.warmup >= 0, "--warmup must be >= 0");
  TUNECNN_CHECK(policy.max_repeats >= 1, "--max-repeats must be >= 1");
  TUNECNN_CHECK(policy.min_repeats >= 1 && policy.min_repeats <= policy.max_repeats,
                "--min-repeats must be between 1 and --max-repeats");
  TUNECNN_CHECK(policy.max_seconds > 0, "--max-seconds must be positive");
  TUNECNN_CHECK(policy.settle >= 0, "--settle must be >= 0");
  if (cli.has("repeats")) {
    // A fixed count for comparisons that want the same number of runs everywhere.
    policy.min_repeats = policy.max_repeats = cli.get_int("repeats");
    policy.max_seconds = std::numeric_limits<double>::infinity();
    TUNECNN_CHECK(policy.max_repeats >= 1, "--repeats must be >= 1");
  }
  return policy;
}

}  // namespace

void declare_conv_bench_options(CommandLine& cli) {
  cli.option("layers", "mec-paper", "layer set: " + joined(conv_layer_set_names()));
  cli.option("device", "cpu",
             "cpu, or cuda: the GPU's solvers (" + known_solver_names(Device::cuda) +
                 ") on the first NVIDIA GPU, each in its first layout (direct_chwn CHWN, the "
                 "others NCHW), arguments on the GPU, timed with CUDA events on the compute "
                 "stream; PyTorch is off and MEC is compared with im2col_gemm and cuDNN instead");
  cli.option("batch", "", "images per call (mb); default 8, with --device cuda 32");
  cli.option("batch-size", "", "the same as --batch");
  cli.option("direction", "all", "fwd, bwd-data, bwd-weights, all, or a comma list of them");
  cli.option("threads", "2", "CPU threads, ours and PyTorch's alike");
  cli.option("solvers", "all",
             "comma list of solvers to time (CPU: " + known_solver_names(Device::cpu) +
                 "; the GPU's under --device cuda); 'all' times every applicable one. On the "
                 "CPU the slow reference 'direct' is skipped on layers above --direct-max-mmacs "
                 "unless named here");
  cli.option("direct-max-mmacs", "50",
             "with --solvers all on the CPU, skip 'direct' on layers of more million "
             "multiply-adds (the GPU's direct is always timed)");
  cli.option("warmup", "1", "untimed calls before timing each solver and config");
  cli.option("repeats", "",
             "exactly this many timed calls, overriding the settle rule and the time cap");
  cli.option("min-repeats", "5", "timed calls before the median may count as settled");
  cli.option("max-repeats", "50", "timed calls at most");
  cli.option("max-seconds", "1",
             "time cap per solver x config x direction; at least one call always runs");
  cli.option("settle", "0.02",
             "stop once the last 2 calls moved the median by less than this fraction");
  cli.option("csv", "", "write one row per layer x solver x config x direction to this file");
  cli.option("pytorch", "on", "time the same layers in PyTorch side by side: on or off");
  cli.option("python", "/usr/bin/python3", "the Python with torch (Debian's python3-torch)");
  cli.option("pytorch-script", default_pytorch_script(), "the PyTorch side's script");
  cli.flag("mec-memory",
           "print the MEC paper's lowered-matrix sizes (always on for --layers mec-paper)");
}

ConvBenchOptions conv_bench_options(const CommandLine& cli) {
  ConvBenchOptions options;
  options.layers = cli.get("layers");
  conv_layer_set(options.layers, 1);  // throws, listing the known sets, on an unknown one
  options.device = parse_bench_device(cli.get("device"));
  options.batch = batch_option(cli, options.device);
  options.directions = parse_directions(cli.get("direction"));
  options.threads = cli.get_int("threads");
  TUNECNN_CHECK(options.threads >= 0, "--threads must be >= 0 (0: all hardware threads)");
  options.repeats = repeat_policy(cli);
  // A build without CUDA knows no GPU solvers: require_device says why, not "unknown".
  if (!conv_solvers(options.device).empty())
    options.solvers = parse_solver_list(cli.get("solvers"), options.device);
  options.direct_max_mmacs = cli.get_double("direct-max-mmacs");
  options.csv = cli.get("csv");
  options.pytorch = parse_on_off(cli, "pytorch") && options.device == Device::cpu;
  options.python = cli.get("python");
  options.pytorch_script = cli.get("pytorch-script");
  options.mec_memory = cli.has("mec-memory") || options.layers == "mec-paper";
  return options;
}

std::vector<Direction> parse_directions(const std::string& text) {
  std::vector<Direction> dirs;
  auto add = [&](Direction dir) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  };
  for (const std::string& name : split_commas(text)) {
    if (name == "all") {
      for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) add(dir);
    } else if (name == "fwd") {
      add(Direction::fwd);
    } else if (name == "bwd-data" || name == "bwd_data") {
      add(Direction::bwd_data);
    } else if (name == "bwd-weights" || name == "bwd_weights") {
      add(Direction::bwd_weights);
    } else {
      TUNECNN_FAIL("--direction: unknown direction '", name,
                   "' (expected fwd, bwd-data, bwd-weights or all)");
    }
  }
  TUNECNN_CHECK(!dirs.empty(), "--direction names no direction");
  return dirs;
}

std::vector<std::string> parse_solver_list(const std::string& text, Device device) {
  if (text.empty() || text == "all") return {};
  std::vector<std::string> names = split_commas(text);
  for (const std::string& name : names)
    TUNECNN_CHECK(find_conv_solver(name, device) != nullptr, "--solvers: unknown ",
                  to_string(device), " solver '", name, "' (known: ", known_solver_names(device),
                  ")");
  return names;
}

}  // namespace tunecnn
