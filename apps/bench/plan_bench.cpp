#include "apps/bench/plan_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "apps/bench/repeat_policy.h"
#include "apps/bench/tuning_breakdown.h"
#include "apps/common/cli.h"
#include "apps/bench/bench_device.h"
#include "apps/training/memory_budget.h"
#include "autotune/device_clock.h"
#include "autotune/fingerprint.h"
#include "autotune/network_planner.h"
#include "core/allocator.h"
#include "core/cuda_runtime.h"
#include "core/init.h"
#include "core/sgd.h"
#include "core/threading.h"
#include "core/variable.h"
#include "models/registry.h"
#include "ops/conv/conv2d.h"
#include "ops/conv/registry.h"
#include "ops/pool/plan.h"
#include "ops/pool/pool2d.h"
#include "ops/softmax_cross_entropy.h"

namespace tunecnn {
namespace {

double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void collect_layers(Module& module, std::vector<Conv2d*>& convs, std::vector<Pool2d*>& pools) {
  if (auto* conv = dynamic_cast<Conv2d*>(&module)) convs.push_back(conv);
  if (auto* pool = dynamic_cast<Pool2d*>(&module)) pools.push_back(pool);
  for (const auto& [name, child] : module.children()) collect_layers(*child, convs, pools);
}

// One way of running every conv and pooling layer, captured so it can be reinstalled between
// rounds.
struct Variant {
  std::string name;
  std::vector<std::pair<ConvProblem, ConvLayerPlan>> plans;  // one per conv layer, in order
  std::vector<std::pair<PoolProblem, PoolLayerPlan>> pool_plans;  // one per pooling layer
  std::vector<double> step_s;
  // Under --memory-budget: the budget its steps run within (the allocator's region while it
  // runs; 0: none), whether it recomputes activations, its predicted peak and the allocator's
  // peak of each round's timed steps.
  std::size_t memory_budget = 0;
  bool recompute = false;
  std::size_t predicted_peak = 0;
  std::vector<std::size_t> peaks;
  // Whether every conv layer runs one of `solvers` in every direction a step runs. The first
  // layer's input needs no gradient, so its bwd_data never runs (the planner leaves it untuned).
  bool runs_everywhere(const std::vector<std::string>& solvers) const {
    for (std::size_t i = 0; i < plans.size(); ++i)
      for (Direction dir : {Direction::fwd, Direction::bwd_data, Direction::bwd_weights}) {
        if (i == 0 && dir == Direction::bwd_data) continue;
        const std::string_view name = plans[i].second.for_direction(dir).solver->name();
        if (std::find(solvers.begin(), solvers.end(), name) == solvers.end()) return false;
      }
    return true;
  }
  std::string describe() const {
    std::string text;
    for (const auto& [problem, plan] : plans)
      text += (text.empty() ? "" : " | ") + std::string(plan.fwd.solver->name()) + "/" +
              std::string(to_string(plan.layout()));
    text += "; pools";
    for (const auto& [problem, plan] : pool_plans) text += " " + std::string(to_string(plan.layout));
    return text;
  }
};

const SgdOptions kSgd{0.01, 0.9, 5e-4, false};

struct Bench {
  std::shared_ptr<Sequential> model;
  std::vector<Conv2d*> convs;
  std::vector<Pool2d*> pools;
  Shape batch_shape;
  std::filesystem::path cache;
  TunerOptions options;
  std::string device;
  Device device_kind = Device::cpu;
  std::map<std::string, std::string> fields;

  std::shared_ptr<TunedPlanner> tuner(TunePolicy policy, std::vector<std::string> forced = {},
                                      std::vector<Layout> layouts = all_layouts()) const {
    TunerOptions o = options;
    o.only_solvers = std::move(forced);
    o.layouts = std::move(layouts);
    return std::make_shared<TunedPlanner>(policy, cache, o, device, fields);
  }

  Variant plan(const std::string& name, const std::shared_ptr<TunedPlanner>& tuner) {
    NetworkPlanner(tuner).plan(*model, batch_shape);
    return installed(name);
  }

  // The plans the layers hold now at this batch.
  Variant installed(const std::string& name) const {
    Variant v;
    v.name = name;
    for (Conv2d* conv : convs)
      for (const auto& entry : conv->plans())
        if (entry.first.mb == batch_shape[0]) v.plans.push_back(entry);
    for (Pool2d* pool : pools)
      for (const auto& entry : pool->plans())
        if (entry.first.mb == batch_shape[0]) v.pool_plans.push_back(entry);
    return v;
  }

  // Every conv layer by its device's untuned default (FirstApplicablePlanner: on the GPU cuDNN
  // with its own heuristic's algorithm) and every pool by its first solver, all NCHW, on the
  // problems of `like`: the "cuDNN only" baseline of Li et al.
  Variant untuned_nchw(const std::string& name, const Variant& like) const {
    Variant v;
    v.name = name;
    FirstApplicablePlanner convs_nchw(Layout::NCHW);
    FirstApplicablePoolPlanner pools_first;
    for (const auto& [problem, plan] : like.plans) v.plans.emplace_back(problem, convs_nchw.plan(problem));
    for (const auto& [problem, plan] : like.pool_plans)
      v.pool_plans.emplace_back(problem, pools_first.plan(problem, Layout::NCHW));
    return v;
  }

  // The tuned plan brought within `budget` as train --memory-budget brings it: the workspace
  // limit lowered and activations recomputed where the predicted peak demands it. Leaves the
  // process as it found it (no recomputing, no region); install sets them for the plan's steps.
  Variant within_budget(std::size_t budget, const std::string& model_name, int classes) {
    auto budgeted = tuner(TunePolicy::cached);
    NetworkPlanner(budgeted).plan(*model, batch_shape);
    const Shape example(batch_shape.begin() + 1, batch_shape.end());
    StepMemoryQuery query = model_step_query(model_name, *model, example, static_cast<int>(batch_shape[0]), classes, kSgd);
    query.device = device_kind;
    const MemoryBudgetFit fit =
        fit_memory_budget(budget, network_budget_planning(query, *model, batch_shape, budgeted), device_kind);
    std::cout << "# memory budget: " << fit.describe(budget) << "\n";
    Variant v = installed("memory-budget");
    v.memory_budget = budget;
    v.recompute = fit.recomputed_activations;
    v.predicted_peak = fit.predicted.bytes;
    leave_budget();
    return v;
  }

  void install(const Variant& v) {
    for (std::size_t i = 0; i < convs.size(); ++i) convs[i]->set_plan(v.plans[i].first, v.plans[i].second);
    for (std::size_t i = 0; i < pools.size(); ++i)
      pools[i]->set_plan(v.pool_plans[i].first, v.pool_plans[i].second);
    leave_budget();
    if (v.memory_budget == 0) return;
    set_recompute_activations(v.recompute);
    Allocator& allocator = allocator_for(device_kind);
    allocator.set_cache_policy(CachePolicy::bounded);
    allocator.set_cache_limit(v.memory_budget);  // the optimizer's state is live by now
  }

  void leave_budget() const {
    set_recompute_activations(false);
    Allocator& allocator = allocator_for(device_kind);
    if (allocator.cache_limit() == 0) return;
    allocator.set_cache_limit(0);
    allocator.set_cache_policy(CachePolicy::keep);
  }
};

}  // namespace

int bench_plans(int argc, const char* const* argv) {
  CommandLine cli("bench plans", "Measures the autotuner on one model: profiling cost, cached start, "
                                 "tuned plan against each conv algorithm forced on every layer and "
                                 "(in a build with oneDNN) against oneDNN everywhere, its fastest "
                                 "implementation per layer, and --tune verify under a changed fingerprint. With --device cuda on "
                                 "the GPU, against cuDNN's own choice on every layer as well.");
  cli.option("model", "lenet", "model to plan (" + std::to_string(model_names().size()) + " known, or an ONNX file NAME.onnx)");
  cli.option("batch-size", "64", "examples per step");
  cli.option("input", "", "C,H,W of one example (default: the model's own)");
  cli.option("classes", "10", "number of classes");
  cli.option("threads", "2", "CPU threads");
  cli.option("steps", "10", "timed steps per variant per round");
  cli.option("rounds", "3", "interleaved rounds over the variants");
  cli.option("tune-budget", "", "also plan under this tuning budget in seconds first (as train --tune-budget), "
                                "time that plan beside the fully tuned one (profiled after it, from where the "
                                "budget stopped) and print a 'result budget_...' line");
  cli.option("tune-cache", "", "tuning cache to use (default: a fresh file, so profiling is measured "
                               "from empty; it is removed at the end)");
  cli.option("device", "cpu", "cpu, or cuda: the model, the profiling and the steps on the GPU "
                             "(timed with CUDA events by the tuner, steps synchronised)");
  cli.option("breakdown", "", "where the profiling pass spends its time: keys (per kind and key) or "
                              "candidates (and per candidate)");
  cli.option("memory-budget", "", "also plan the tuned step within this many bytes (K, M or G) as train "
                                  "--memory-budget does, time it beside the others under its budget, and print a "
                                  "'result memory_budget...' line with its peak against the prediction (with --device cuda, "
                                  "of the GPU's memory)");
  if (!cli.parse(argc, argv)) return 0;
  const std::string breakdown_detail = cli.get("breakdown");
  check_breakdown_detail(breakdown_detail);
  set_num_threads(cli.get_int("threads"));
  const Device device_kind = parse_bench_device(cli.get("device"));
  const bool gpu = device_kind == Device::cuda;
  const std::function<double()> clock = device_clock(device_kind);
  const std::string model_name = cli.get("model");
  const Shape input =
      cli.has("input") ? parse_chw(cli.get("input"), "input") : model_input_shape(model_name);
  const int batch = cli.get_int("batch-size"), classes = cli.get_int("classes");
  const bool own_cache = !cli.has("tune-cache");
  std::size_t memory_budget = 0;
  if (cli.has("memory-budget")) {
    const std::optional<std::size_t> bytes = parse_memory_size(cli.get("memory-budget"));
    if (!bytes || *bytes == 0)
      throw UsageError("bench plans: --memory-budget must be a size such as 2G or 512M, not '" +
                       cli.get("memory-budget") + "'");
    memory_budget = *bytes;
  }

  Bench b;
  Rng rng(1);
  b.model = build_model(model_name, ModelOptions{input, classes, {}, {}}, rng);
  if (gpu) b.model->to(device_kind);  // the planner stamps each problem with its parameters' device
  collect_layers(*b.model, b.convs, b.pools);
  b.batch_shape = {batch, input[0], input[1], input[2]};
  b.cache = own_cache ? std::filesystem::temp_directory_path() /
                            ("tunecnn-bench-plans-" + std::to_string(getpid()) + ".yaml")
                      : std::filesystem::path(cli.get("tune-cache"));
  const DeviceIdentity identity = device_identity(device_kind);
  b.fields = identity.fields;
  b.device = identity.id;
  b.device_kind = device_kind;
  if (gpu) b.options.clock = clock;
  std::cout << "# " << cpu_fingerprint().summary() << "\n";
  print_gpu_fingerprint(std::cout, device_kind);
  std::cout << "# model " << model_name << ", batch " << batch << ", device " << to_string(device_kind)
            << ", cache " << b.cache.string() << "\n";

  // 0. Under --tune-budget: a pass that stops at the budget, whose plan is timed with the others.
  std::optional<Variant> budget_variant;
  double budget_pass_s = 0;
  if (cli.has("tune-budget")) {
    auto budgeted = b.tuner(TunePolicy::cached);
    budgeted->set_budget(cli.get_double("tune-budget"));
    const double budget_start = now_s();
    budget_variant = b.plan("budget", budgeted);
    budget_pass_s = now_s() - budget_start;
    std::cout << "# budget pass: " << budgeted->summary() << "\n";
  }

  // 1. Profiling (from empty when the cache is ours; after the budget pass, the rest).
  TuningBreakdown breakdown;
  auto tuner = [&] {
    TunerOptions reporting = b.options;
    if (!breakdown_detail.empty()) breakdown.attach(reporting);
    return std::make_shared<TunedPlanner>(TunePolicy::cached, b.cache, reporting, b.device, b.fields);
  }();
  double start = now_s();
  std::vector<Variant> variants{b.plan("tuned", tuner)};
  const double profile_s = now_s() - start;
  std::cout << "# " << tuner->summary() << "\n";
  if (!breakdown_detail.empty())
    breakdown.print(std::cout, breakdown_detail, profile_s, tuner->stats().profile_seconds);

  // 2. A fully cached start: load the file and plan every layer.
  start = now_s();
  b.plan("cached-start", b.tuner(TunePolicy::cached));
  const double cached_start_ms = (now_s() - start) * 1e3;

  // 3. The tuned plan with every layer in NCHW: what the mixed layouts gain, transforms counted.
  variants.push_back(b.plan("tuned-nchw", b.tuner(TunePolicy::cached, {}, {Layout::NCHW})));

  // 4. Every single algorithm that runs every conv layer, forced on all of them (from the same
  // cache: no profiling). One that cannot run some layer is not a fixed-algorithm plan.
  for (const ConvSolver* solver : conv_solvers(device_kind)) {
    const std::string name(solver->name());
    if (name == direct_conv_solver().name()) continue;  // the reference (the GPU's too)
    Variant v = b.plan(name, b.tuner(TunePolicy::cached, {name}));
    if (v.runs_everywhere({name}))
      variants.push_back(std::move(v));
    else
      std::cout << "# " << name << " does not run every conv layer of " << model_name << ": not a fixed plan\n";
  }
  // 5. The vendor library everywhere: each layer's fastest oneDNN implementation in NCHW or NHWC,
  // the layouts oneDNN runs (transforms where they change), the plan the tuned one must beat.
  const std::vector<std::string> onednn_solvers{"onednn_nchw", "onednn_nhwc"};
  bool onednn = find_conv_solver(onednn_solvers[0], device_kind) && find_conv_solver(onednn_solvers[1], device_kind);
  if (onednn) {
    Variant v = b.plan("onednn", b.tuner(TunePolicy::cached, onednn_solvers, {Layout::NCHW, Layout::NHWC}));
    onednn = v.runs_everywhere(onednn_solvers);
    if (onednn)
      variants.push_back(std::move(v));
    else
      std::cout << "# oneDNN does not run every conv layer of " << model_name << " in every direction: no oneDNN plan\n";
  }
  if (gpu) variants.push_back(b.untuned_nchw("cudnn-own", variants[1]));
  if (budget_variant) variants.push_back(*budget_variant);
  if (memory_budget > 0) variants.push_back(b.within_budget(memory_budget, model_name, classes));

  Sgd sgd(b.model->parameters(), kSgd);
  Tensor images = Tensor::empty(b.batch_shape);
  uniform_fill(images, -1, 1, rng);
  images = images.to(device_kind);
  std::vector<std::int32_t> labels(batch);
  for (auto& label : labels) label = static_cast<std::int32_t>(rng.next_u64() % classes);
  const auto step = [&] {
    Variable loss = softmax_cross_entropy(b.model->forward(Variable(images)), labels);
    sgd.zero_grad();
    sgd.backward_and_step(loss);  // as train does
    if (gpu) cuda_synchronize();  // the step's queued kernels belong to its time
  };
  for (int round = 0; round < cli.get_int("rounds"); ++round)
    for (Variant& v : variants) {
      b.install(v);
      step();  // warm-up: first touch of this plan's workspaces
      allocator_for(device_kind).reset_peak();
      for (int s = 0; s < cli.get_int("steps"); ++s) {
        const double t0 = now_s();
        step();
        v.step_s.push_back(now_s() - t0);
      }
      v.peaks.push_back(allocator_for(device_kind).stats().peak_bytes);
    }
  b.leave_budget();

  // 6. verify under a changed fingerprint: another "device" starting from this cache.
  std::map<std::string, std::string> changed = b.fields;
  changed["framework_version"] += "+changed";
  auto verifier = std::make_shared<TunedPlanner>(TunePolicy::verify, b.cache, b.options,
                                                     device_id(changed), changed);
  NetworkPlanner(verifier).plan(*b.model, b.batch_shape);
  const TunedPlannerStats vs = verifier->stats();
  std::size_t most_retimed = 0;
  const LoadedTuningCache after = load_tuning_cache(b.cache);
  if (auto it = after.cache.devices().find(device_id(changed)); it != after.cache.devices().end())
    for (const auto& [key, entry] : it->second.entries) most_retimed = std::max(most_retimed, entry.candidates.size());

  const double tuned_ms = median_of(variants[0].step_s) * 1e3;
  const double nchw_ms = median_of(variants[1].step_s) * 1e3;
  double best_fixed_ms = 1e300;
  std::string best_fixed;
  std::printf("%-14s %10s %10s %8s  %s\n", "plan", "step_ms", "images/s", "vs_tuned",
              "conv layers (fwd solver/layout); pool layouts");
  for (const Variant& v : variants) {
    const double ms = median_of(v.step_s) * 1e3;
    if (v.name != "tuned" && v.name != "tuned-nchw" && v.name != "cudnn-own" && v.name != "budget" &&
        v.name != "memory-budget" && ms < best_fixed_ms)
      best_fixed_ms = ms, best_fixed = v.name;
    std::printf("%-14s %10.2f %10.1f %8.2f  %s\n", v.name.c_str(), ms, batch * 1e3 / ms, ms / tuned_ms,
                v.describe().c_str());
  }
  std::printf("result model=%s batch=%d threads=%d tuned_step_ms=%.2f best_fixed=%s best_fixed_step_ms=%.2f "
              "fixed_over_tuned=%.3f nchw_over_tuned=%.3f profile_s=%.2f profile_steps=%.1f cached_start_ms=%.1f "
              "verify_keys=%d verify_retimed=%d verify_max_per_key=%zu\n",
              model_name.c_str(), batch, num_threads(), tuned_ms, best_fixed.c_str(), best_fixed_ms,
              best_fixed_ms / tuned_ms, nchw_ms / tuned_ms, profile_s, profile_s * 1e3 / tuned_ms, cached_start_ms, vs.verified,
              vs.retimed_candidates, most_retimed);
  if (budget_variant)  // the budget's plan as a share of the fully tuned plan's speed
    for (const Variant& v : variants)
      if (v.name == "budget")
        std::printf("result budget_s=%s budget_pass_s=%.2f budget_step_ms=%.2f budget_speed_of_tuned=%.3f\n",
                    cli.get("tune-budget").c_str(), budget_pass_s, median_of(v.step_s) * 1e3,
                    tuned_ms / (median_of(v.step_s) * 1e3));
  for (const Variant& v : variants)
    if (v.memory_budget > 0)  // the budget's plan: its peak against the prediction, its speed against the tuned
      std::printf("result memory_budget_mib=%.1f predicted_peak_mib=%.1f peak_mib=%.1f tuned_peak_mib=%.1f "
                  "budget_step_ms=%.2f budget_speed_of_tuned=%.3f recomputed=%d\n",
                  v.memory_budget / 1048576.0, v.predicted_peak / 1048576.0,
                  *std::max_element(v.peaks.begin(), v.peaks.end()) / 1048576.0,
                  *std::max_element(variants[0].peaks.begin(), variants[0].peaks.end()) / 1048576.0,
                  median_of(v.step_s) * 1e3, tuned_ms / (median_of(v.step_s) * 1e3), v.recompute ? 1 : 0);
  if (onednn)
    for (const Variant& v : variants)
      if (v.name == "onednn")
        std::printf("result onednn_step_ms=%.2f onednn_over_tuned=%.3f\n", median_of(v.step_s) * 1e3,
                    median_of(v.step_s) * 1e3 / tuned_ms);
  for (const Variant& v : variants)
    if (v.name == "cudnn-own")  // Li et al.'s comparison: the tuned plan against cuDNN's own choice, all NCHW
      std::printf("result device=cuda tuned_images_per_s=%.1f cudnn_own_images_per_s=%.1f cudnn_own_over_tuned=%.3f\n",
                  batch * 1e3 / tuned_ms, batch * 1e3 / (median_of(v.step_s) * 1e3), median_of(v.step_s) * 1e3 / tuned_ms);
  if (own_cache) {
    std::filesystem::remove(b.cache);
    std::filesystem::remove(b.cache.string() + ".lock");
  }
  return 0;
}

}  // namespace tunecnn
