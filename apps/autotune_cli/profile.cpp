// autotune profile: the profiling pass over one model at one batch size, ahead of training, so
// `train` later finds every layer in the cache. Prints each layer's decision and what it gains.
#include <cstdio>
#include <ostream>

#include "apps/autotune_cli/options.h"
#include "apps/autotune_cli/subcommands.h"
#include "apps/autotune_cli/text_table.h"
#include "apps/common/device_check.h"
#include "apps/training/memory_budget.h"
#include "apps/training/trainer.h"
#include "autotune/device_clock.h"
#include "autotune/network_planner.h"
#include "autotune/tuned_planner.h"
#include "autotune/tuning_cache_layers.h"
#include "models/registry.h"

namespace tunecnn {
namespace {

// What a model needs to know of a data set: one example's shape and the number of classes.
// train loads the data itself; profiling only needs the shapes. An image-folder set has no size
// of its own: train crops it to the model's input side, so its example is 3 x side x side.
struct DataShape {
  std::string_view name;
  Shape example;  // {3, 0, 0} where the side is the model's
  int classes;
  bool model_side = false;
};
const DataShape kDataShapes[] = {{"fashion-mnist", {1, 28, 28}, 10},
                                 {"mnist", {1, 28, 28}, 10},
                                 {"cifar10", {3, 24, 24}, 10},  // the training crops
                                 {"imagenet", {3, 0, 0}, 1000, true}};

const DataShape& data_shape(const std::string& name) {
  std::string known;
  for (const DataShape& data : kDataShapes) {
    if (data.name == name) return data;
    known += (known.empty() ? "" : ", ") + std::string(data.name);
  }
  throw UsageError("unknown --data '" + name + "' (expected " + known + ")");
}

// The example `train --data NAME --model MODEL` would feed the model.
Shape example_shape(const DataShape& data, const std::string& model) {
  if (!data.model_side) return data.example;
  const Shape own = model_input_shape(model);  // an unknown model is an Error, as in build_model
  return {data.example[0], own[1], own[2]};
}

std::size_t parse_bytes(const std::string& text) {
  const std::optional<std::size_t> bytes = parse_byte_count(text);
  if (!bytes) throw UsageError("--max-workspace must be a number of bytes, got '" + text + "'");
  return *bytes;
}

int positive(const CommandLine& options, const std::string& name) {
  int value = 0;
  try {
    value = options.get_int(name);
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
  if (value <= 0) throw UsageError("--" + name + " must be positive, got " + std::to_string(value));
  return value;
}

double positive_seconds(const CommandLine& options, const std::string& name) {
  double value = 0;
  try {
    value = options.get_double(name);
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
  if (!(value > 0)) throw UsageError("--" + name + " must be a positive number of seconds, got " + options.get(name));
  return value;
}

std::string plan_text(std::string_view solver, const TuneConfig& config) {
  const std::string name(solver);
  return config.values.empty() ? name : name + " " + config.str();
}

std::string plan_text(const ConvPlan& plan) {
  return plan_text(plan.solver->name(), plan.config);
}

std::string plan_text(const PoolPlan& plan) {
  return plan_text(plan.solver->name(), plan.config);
}

std::string ms_or_dash(double ms) {
  return ms > 0 ? format_ms(ms) : "-";
}

void print_layers(const NetworkPlanReport& report, std::ostream& out) {
  TextTable table({"layer", "key", "candidates", "layout", "fwd", "bwd_data", "bwd_weights",
                   "tuned ms", "default ms", "speedup", "workspace"},
                  {"candidates", "tuned ms", "default ms", "speedup", "workspace"});
  for (const ConvLayerReport& layer : report.layers) {
    const bool timed = layer.tuned_ms > 0 && layer.default_ms > 0;
    table.add_row({layer.layer, layer.problem.key(), std::to_string(layer.candidates),
                   std::string(to_string(layer.plan.layout())), plan_text(layer.plan.fwd),
                   layer.input_gradient ? plan_text(layer.plan.bwd_data) : "-", plan_text(layer.plan.bwd_weights),
                   ms_or_dash(layer.tuned_ms), ms_or_dash(layer.default_ms),
                   timed ? format_speedup(layer.default_ms / layer.tuned_ms) : "-",
                   format_bytes(layer.workspace_bytes)});
  }
  table.print(out, "");
  if (report.pools.empty()) return;
  TextTable pools({"layer", "key", "layout", "fwd", "bwd_data", "tuned ms", "default ms", "speedup"},
                  {"tuned ms", "default ms", "speedup"});
  for (const PoolLayerReport& layer : report.pools) {
    const bool timed = layer.tuned_ms > 0 && layer.default_ms > 0;
    pools.add_row({layer.layer, layer.problem.key(), std::string(to_string(layer.plan.layout)),
                   plan_text(layer.plan.fwd), plan_text(layer.plan.bwd_data), ms_or_dash(layer.tuned_ms),
                   ms_or_dash(layer.default_ms),
                   timed ? format_speedup(layer.default_ms / layer.tuned_ms) : "-"});
  }
  out << "\n";
  pools.print(out, "");
  if (report.softmax) out << "\nloss: " << report.softmax_solver << "  (" << report.softmax->key() << ")\n";
}

std::size_t parse_budget(const std::string& text) {
  const std::optional<std::size_t> bytes = parse_memory_size(text);
  if (!bytes || *bytes == 0)
    throw UsageError("--memory-budget must be a size such as 2G, 512M or 1048576, got '" + text + "'");
  return *bytes;
}

// --memory-budget: the layers planned as `train --memory-budget` plans them, for a step of
// `train` with its default optimizer at the profiled batch; `report` becomes the plan's as fitted.
// Returns what the fitting did, in words. The cache keeps every measurement, not the choice:
// train fits its budget again from them.
std::string fit_budget(std::size_t budget, const std::string& model_name, Sequential& model, const Shape& input,
                       int classes, const std::shared_ptr<TunedPlanner>& tuner, std::size_t max_workspace,
                       Device device, NetworkPlanReport& report) {
  const TrainOptions train;
  const Shape example(input.begin() + 1, input.end());
  StepMemoryQuery query = model_step_query(model_name, model, example, static_cast<int>(input[0]), classes,
                                           SgdOptions{0.01, train.momentum, train.weight_decay, train.nesterov});
  query.batches_in_flight = train_batches_in_flight(device);
  query.device = device;
  const MemoryBudgetPlanning planning = network_budget_planning(
      query, model, input, tuner, max_workspace, [&report](const NetworkPlanReport& fitted) { report = fitted; });
  return fit_memory_budget(budget, planning, device).describe(budget);
}

TunePolicy profile_policy(const std::string& text) {
  TunePolicy policy = TunePolicy::cached;
  try {
    policy = parse_tune_policy(text);
  } catch (const Error& e) {
    throw UsageError(e.message());
  }
  if (policy == TunePolicy::off)
    throw UsageError("--tune off times nothing; use cached, full or verify");
  return policy;
}

}  // namespace

SubcommandLine profile_command_line() {
  std::string models;
  for (const std::string& name : model_names()) models += (models.empty() ? "" : ", ") + name;
  SubcommandLine cli("autotune profile",
                     "Profiles every conv layer (forward, backward data and backward weights) and "
                     "pooling layer (forward, backward) of a model at one batch size, each distinct "
                     "problem once, picks each layer's solver and the network's layouts, and stores the measurements in the tuning "
                     "cache for `train`. Progress goes to stderr.");
  cli.option("model", "lenet", "model to profile: " + models + " (also mobilenet-W-R, e.g. "
                               "mobilenet-0.5-128, or an ONNX file NAME.onnx)");
  cli.option("batch", "64", "images per step, as `train --batch-size` will use");
  cli.option("data", "fashion-mnist",
             "data set giving the input shape and classes: fashion-mnist, mnist (1x28x28), "
             "cifar10 (3x24x24 crops), imagenet (1000 classes, cropped to the model's input "
             "side as `train` does: 3x224x224 for mobilenet, 3x128x128 for mobilenet-0.5-128, "
             "3x227x227 for alexnet)");
  cli.option("tune", "cached",
             "cached (profile what the cache lacks), full (profile everything), verify (re-time "
             "the best candidates another device measured)");
  cli.option("max-workspace", "", "largest conv workspace a candidate may use, in bytes");
  cli.option("memory-budget", "",
             "plan the layers so that a training step at --batch (train's default optimizer, SGD with momentum) "
             "fits this many bytes (K, M or G) as `train --memory-budget` will, and print that plan (with --device "
             "cuda, of the GPU's memory)");
  cli.option("tune-budget", "", "seconds of profiling at most (as train's): the layers with the most work "
                                "first, the rest left to the device thresholds and a later run");
  device_option(cli, "the model moves there and is profiled with the GPU's solvers, timed with "
                     "CUDA events, into the GPU's own section of the cache");
  cli.common_options();
  return cli;
}

int run_profile(const SubcommandArgs& args, std::ostream& out, std::ostream& err) {
  SubcommandLine cli = profile_command_line();
  if (!cli.parse(args, out, 0, 0)) return 0;
  const CommandLine& o = cli.options();
  const DataShape& data = data_shape(o.get("data"));
  const int batch = positive(o, "batch");
  const TunePolicy policy = profile_policy(o.get("tune"));
  const Device device_kind = parse_device_option(o);
  require_device(device_kind);
  const std::size_t memory_budget = o.has("memory-budget") ? parse_budget(o.get("memory-budget")) : 0;  // 0: none
  TunerOptions options;
  // On the GPU a call only queues kernels: candidates are timed by the GPU's own clock.
  if (device_kind != Device::cpu) options.clock = device_clock(device_kind);
  if (o.has("max-workspace")) options.max_workspace_bytes = parse_bytes(o.get("max-workspace"));
  options.warn = [&err](std::string_view message) { err << "warning: " << message << "\n"; };
  apply_threads(o);
  const DeviceIdentity device = this_device(device_kind);

  auto tuner = std::make_shared<TunedPlanner>(policy, tune_cache_path(o), options, device.id,
                                              device.fields, default_system_tuning_cache_path());
  if (o.has("tune-budget")) tuner->set_budget(positive_seconds(o, "tune-budget"));
  Rng rng(1);
  const Shape example = example_shape(data, o.get("model"));
  auto model = build_model(o.get("model"),
                           ModelOptions{.input_shape = example,
                                        .num_classes = data.classes,
                                        .dropout_rng = nullptr,
                                        .planners = Planners::all(tuner)},
                           rng);
  // As `train --device cuda` does: the planner traces the model where its parameters are and
  // stamps every problem with that device.
  if (device_kind != Device::cpu) model->to(device_kind);
  NetworkPlanner planner(tuner);
  planner.on_profile = [&err](int index, int count, const std::string& key) {
    err << "[" << index << "/" << count << "] " << key << "\n" << std::flush;
  };
  Shape input = example;
  input.insert(input.begin(), batch);
  NetworkPlanReport report = planner.plan(*model, input);
  const std::string budget_fit =
      memory_budget > 0 ? fit_budget(memory_budget, o.get("model"), *model, input, data.classes, tuner,
                                 options.max_workspace_bytes, device_kind, report)
                    : "";

  out << o.get("model") << " at batch " << batch << " on " << device.id << " (cache "
      << tuner->cache_path().string() << ")\n";
  if (!budget_fit.empty()) out << "memory budget: " << budget_fit << "\n";
  print_layers(report, out);
  out << "conv and pooling layers plus transforms: " << format_ms(report.total_ms) << " ms per step, of which "
      << format_ms(report.transform_ms) << " ms transforms\n";
  const TunedPlannerStats stats = tuner->stats();
  if (stats.verified > 0)
    out << "verified " << stats.verified << " keys from other devices (" << stats.retimed_candidates
        << " candidates re-timed)\n";
  char seconds[32];
  // Two decimals: a small model's whole pass now takes a few hundredths of a second.
  std::snprintf(seconds, sizeof seconds, "%.2f", stats.profile_seconds);
  out << "profiled " << stats.profiled << ", reused " << stats.from_cache << ", seconds " << seconds
      << "\n";
  return 0;
}

}  // namespace tunecnn
